//! AWS calls of snapshots, forks, diffs and merges, counted on the emulator with an SDK
//! interceptor: a snapshot or a fork is a point in history (a constant number of calls
//! whatever the number of files, no S3 call), and a fork's diff and merge cost what changed
//! (the same calls in a workspace of 100 files as in one of 10,000).

use workspace_core::forks::three_way::Strategy;
use workspace_core::ports::{HeadStore, HistoryStore, SystemClock};
use workspace_core::service::{ForkRequest, MergeOutcome, MergeRequest};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Scope};
use workspace_store_aws::calls::CallLog;
use workspace_store_aws::testing as common;
use workspace_store_aws::DynamoMeta;

fn put(path: &str, content: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        ..PutRequest::default()
    }
}

fn parent() -> Identity {
    Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice")
}

fn in_fork(fork: &workspace_core::service::Fork) -> Identity {
    Identity::read_write(
        Scope::new(parent().scope.tenant, fork.workspace.clone()),
        "alice",
    )
}

fn merge_request() -> MergeRequest {
    MergeRequest {
        strategy: Strategy::Fail,
        resolutions: Default::default(),
        dry_run: false,
        discard_fork: false,
        idempotency_key: None,
    }
}

/// A workspace of `n` files `f00000.md`…: three through the service, the rest as copies
/// of their items written straight to the table (moto copies the whole table for each
/// transaction: thousands of commits would take minutes).
async fn seeded(n: usize, log: &CallLog) -> (common::Env, workspace_core::WorkspaceService) {
    let env = common::fresh(Some(log.interceptor())).await;
    let limits = Limits {
        max_files: 20_000,
        ..Limits::default()
    };
    let svc = env.service_with_secrets(limits);
    let path = |i: usize| format!("f{i:05}.md");
    for i in 0..n.min(3) {
        svc.put(&parent(), put(&path(i), "base")).await.unwrap();
    }
    if n > 3 {
        copy_items(
            &env,
            &parent().scope,
            &path(0),
            (3..n).map(path).collect(),
            false,
        )
        .await;
    }
    (env, svc)
}

/// Snapshots and forks of 0, 1 and 1,000 files (the longest paths for the last) cost the
/// same calls: a snapshot reads the point registry, swaps it with its record in one
/// transaction and lists one page for its answer; a fork reads the live count and the
/// registry, swaps it with the base's record and the fork's record, then leaves its marker
/// in the bucket (one empty S3 object, so the sweeper finds it). No call per file.
#[tokio::test]
async fn snapshots_and_forks_cost_the_same_calls_at_any_size() {
    let mut seen: Vec<(usize, Vec<String>, Vec<String>)> = Vec::new();
    for n in [0usize, 1, 1000] {
        let log = CallLog::default();
        let (_env, svc) = seeded(n, &log).await;
        log.reset();
        let snap = svc.create_snapshot(&parent()).await.unwrap();
        let snapshot_calls = log.calls();
        log.reset();
        let fork = svc
            .create_fork(&parent(), ForkRequest::default())
            .await
            .unwrap();
        let fork_calls = log.calls();
        assert_eq!(
            snapshot_calls,
            [
                "DynamoDB.GetItem",
                "DynamoDB.Query",
                "DynamoDB.TransactWriteItems"
            ],
            "snapshot of {n} files"
        );
        assert_eq!(
            fork_calls,
            [
                "DynamoDB.GetItem",
                "DynamoDB.GetItem",
                "DynamoDB.TransactWriteItems",
                "S3.PutObject"
            ],
            "fork of {n} files"
        );
        // Both read every file as it was.
        if n > 0 {
            let last = FilePath::parse(&format!("f{:05}.md", n - 1)).unwrap();
            svc.put(&parent(), put(last.as_str(), "changed"))
                .await
                .unwrap();
            let through = svc
                .get_in_snapshot(&parent(), &snap.id, &last)
                .await
                .unwrap();
            assert_eq!(through.content, b"base");
            let forked = svc.get(&in_fork(&fork), &last, None).await.unwrap();
            assert_eq!(forked.content, b"base");
            let listed = svc
                .list(&in_fork(&fork), &Default::default(), Some(1000), None)
                .await
                .unwrap();
            assert_eq!(listed.files.len(), n.min(1000));
        }
        seen.push((n, snapshot_calls, fork_calls));
    }
    for (n, s, f) in &seen {
        println!(
            "n = {n}: snapshot {} calls {s:?}; fork {} calls {f:?}",
            s.len(),
            f.len()
        );
    }
}

/// What a fork's diff, counts and merge cost for `c` changed paths in a parent of `n`
/// files: (diff, get, merge) calls.
type Costs = Vec<(usize, Vec<String>, Vec<String>, Vec<String>)>;

async fn change_costs(n: usize) -> Costs {
    let log = CallLog::default();
    let (env, svc) = seeded(n, &log).await;
    let fork = svc
        .create_fork(&parent(), ForkRequest::default())
        .await
        .unwrap();
    let mut out = Vec::new();
    for c in [1usize, 10, 100] {
        // The first `c` files, changed in the fork: one through the service, the others
        // as copies of its items (a transaction per write is what moto is slow at).
        svc.put(&in_fork(&fork), put("f00000.md", &format!("fork {c}")))
            .await
            .unwrap();
        let others = (1..c).map(|i| format!("f{i:05}.md")).collect();
        copy_items(&env, &in_fork(&fork).scope, "f00000.md", others, true).await;
        log.reset();
        let diff = svc
            .fork_diff(
                &parent(),
                fork.workspace.as_str(),
                &Default::default(),
                None,
                None,
            )
            .await
            .unwrap();
        let diff_calls = log.calls();
        assert_eq!(diff.changes.len(), c, "n = {n}, c = {c}");
        log.reset();
        let (_, counts) = svc
            .get_fork(&parent(), fork.workspace.as_str())
            .await
            .unwrap();
        let get_calls = log.calls();
        assert_eq!(counts.fork, c);
        log.reset();
        let merged = svc
            .merge_fork(&parent(), fork.workspace.as_str(), merge_request())
            .await
            .unwrap();
        let merge_calls = log.calls();
        assert!(matches!(merged, MergeOutcome::Merged(ref r) if r.applied.len() == c));
        out.push((c, diff_calls, get_calls, merge_calls));
    }
    out
}

/// Diff, counts and merge of c ∈ {1, 10, 100} changed paths cost the same calls in
/// workspaces of 100, 1,000 and 10,000 files: they read the fork's own heads and the
/// parent's change log since the base, then each changed path (never every file).
#[tokio::test]
async fn diffs_and_merges_cost_what_changed_whatever_the_workspace_size() {
    let small = change_costs(100).await;
    for n in [1_000usize, 10_000] {
        let big = change_costs(n).await;
        for ((c, d1, g1, m1), (_, d2, g2, m2)) in small.iter().zip(&big) {
            assert_eq!(d1, d2, "diff of {c} paths: 100 files vs {n}");
            assert_eq!(g1, g2, "counts of {c} paths: 100 files vs {n}");
            assert_eq!(m1, m2, "merge of {c} paths: 100 files vs {n}");
        }
    }
    for (c, d, g, m) in &small {
        println!(
            "c = {c}: diff {} calls, counts {} calls, merge {} calls ({} S3)",
            d.len(),
            g.len(),
            m.len(),
            m.iter().filter(|x| x.starts_with("S3.")).count()
        );
    }
}

/// Writes a head and a version item for each of `paths`, copies of those of `template`
/// (same body): over what is there when `replace`, else only where a path has no head,
/// counted in the live-file counter.
async fn copy_items(
    env: &common::Env,
    scope: &Scope,
    template: &str,
    paths: Vec<String>,
    replace: bool,
) {
    use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};

    use workspace_store_aws::{items, layout};
    let meta = DynamoMeta::new(env.clients.dynamodb.clone(), &env.table);
    let t = FilePath::parse(template).unwrap();
    let head = meta.head(scope, &t).await.unwrap().unwrap();
    let version = meta.version(scope, &t, head.seq).await.unwrap().unwrap();
    let pk = layout::partition(scope);
    let mut requests = Vec::new();
    let mut added = 0;
    for p in paths {
        if !replace
            && meta
                .head(scope, &FilePath::parse(&p).unwrap())
                .await
                .unwrap()
                .is_some()
        {
            continue;
        }
        let h = workspace_core::model::Head {
            path: p.clone(),
            ..head.clone()
        };
        for item in [
            items::head_item(scope, pk.clone(), layout::head_sk(&p), &h),
            items::version_item(
                scope,
                pk.clone(),
                layout::version_sk(&p, version.seq),
                &p,
                &version,
            ),
        ] {
            requests.push(
                WriteRequest::builder()
                    .put_request(PutRequest::builder().set_item(Some(item)).build().unwrap())
                    .build(),
            );
        }
        added += 1;
    }
    for chunk in requests.chunks(25) {
        let out = env
            .clients
            .dynamodb
            .batch_write_item()
            .request_items(&env.table, chunk.to_vec())
            .send()
            .await
            .unwrap();
        assert!(out.unprocessed_items().is_none_or(|u| u.is_empty()));
    }
    if replace {
        return;
    }
    env.clients
        .dynamodb
        .update_item()
        .table_name(&env.table)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(layout::COUNT_SK.into()))
        .update_expression("ADD live :n")
        .expression_attribute_values(":n", AttributeValue::N(added.to_string()))
        .send()
        .await
        .unwrap();
}

/// The scheduled sweeper erases ended forks: one that wrote small files and one that wrote
/// nothing (each found by the marker it left in the bucket: with inline bodies neither it
/// nor its parent has another key there) lose their whole partition, every S3 version
/// under their prefix and their base snapshot; a live fork and the parent are untouched.
#[tokio::test]
async fn the_sweeper_erases_expired_forks_and_nothing_else() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use workspace_core::ports::Clock;
    let env = common::fresh(None).await;
    // Small bodies, kept inline: the sweep finds each fork by the marker it leaves in
    // the bucket (`mark_fork`), and its parent has no key there at all.
    let svc = env.service(Limits::default());
    let parent = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    for p in ["a.md", "b.md"] {
        svc.put(&parent, put(p, "base")).await.unwrap();
    }
    let fork = |ttl| ForkRequest {
        ttl_seconds: Some(ttl),
        ..ForkRequest::default()
    };
    let busy = svc.create_fork(&parent, fork(60)).await.unwrap();
    let idle = svc.create_fork(&parent, fork(60)).await.unwrap();
    let live = svc.create_fork(&parent, fork(3600)).await.unwrap();
    let scope_of = |f: &workspace_core::service::Fork| {
        Identity::read_write(
            Scope::new(parent.scope.tenant.clone(), f.workspace.clone()),
            "alice",
        )
    };
    for f in [&busy, &live] {
        let who = scope_of(f);
        svc.put(&who, put("a.md", "fork")).await.unwrap();
        svc.put(&who, put("new.md", "new")).await.unwrap();
        svc.delete(&who, &FilePath::parse("b.md").unwrap(), None)
            .await
            .unwrap();
    }
    let ddb = &env.clients.dynamodb;
    let table = &env.table;
    // Items of a partition under a sort-key prefix ("": all of them).
    let items = |pk: String, prefix: &'static str| async move {
        let q = ddb
            .query()
            .table_name(table)
            .expression_attribute_values(":pk", AttributeValue::S(pk));
        let q = if prefix.is_empty() {
            q.key_condition_expression("pk = :pk")
        } else {
            q.key_condition_expression("pk = :pk AND begins_with(sk, :p)")
                .expression_attribute_values(":p", AttributeValue::S(prefix.into()))
        };
        q.send().await.unwrap().count() as usize
    };
    let objects = |f: &workspace_core::service::Fork| {
        let prefix = format!("t/acme/w/{}/", f.workspace);
        let s3 = env.clients.s3.clone();
        let bucket = env.bucket.clone();
        async move {
            s3.list_object_versions()
                .bucket(bucket)
                .prefix(prefix)
                .send()
                .await
                .unwrap()
                .versions()
                .len()
        }
    };
    let pk = |f: &workspace_core::service::Fork| format!("acme#{}", f.workspace);
    // Each fork's only key in the bucket is its marker (its bodies are inline).
    assert!(items(pk(&busy), "").await >= 7 && objects(&busy).await == 1);
    assert!(items(pk(&idle), "").await >= 1 && objects(&idle).await == 1);
    assert_eq!(items("acme#main".into(), "snap#fork-").await, 3);

    let sweeper = workspace_store_aws::sweeper::Sweeper {
        s3: env.clients.s3.clone(),
        dynamodb: env.clients.dynamodb.clone(),
        bucket: env.bucket.clone(),
        table: env.table.clone(),
    };
    let now = SystemClock.now_ms();
    // Before they expire: nothing.
    let report = sweeper.sweep(now, 0).await.unwrap();
    assert_eq!((report.forks_swept, report.deleted), (0, 0), "{report:?}");
    // After: the two ended forks, and nothing else.
    let report = sweeper.sweep(now + 61_000, 0).await.unwrap();
    assert_eq!((report.forks_swept, report.deleted), (2, 0), "{report:?}");
    for f in [&busy, &idle] {
        assert_eq!(items(pk(f), "").await, 0, "{} left items", f.workspace);
        assert_eq!(objects(f).await, 0, "{} left bodies", f.workspace);
    }
    assert_eq!(items("acme#main".into(), "snap#fork-").await, 1);
    // The live fork reads as before; the parent too.
    let who = scope_of(&live);
    let read = |who: &Identity, p: &str| {
        let p = FilePath::parse(p).unwrap();
        let who = who.clone();
        let svc = &svc;
        async move { svc.get(&who, &p, None).await.map(|f| f.content) }
    };
    assert_eq!(read(&who, "a.md").await.unwrap(), b"fork");
    assert_eq!(read(&who, "new.md").await.unwrap(), b"new");
    assert!(read(&who, "b.md").await.is_err());
    for p in ["a.md", "b.md"] {
        assert_eq!(read(&parent, p).await.unwrap(), b"base");
    }
    // A second run finds nothing more.
    let report = sweeper.sweep(now + 61_000, 0).await.unwrap();
    assert_eq!(report.forks_swept, 0);
}

/// The bench's AWS rows (`bench/run.py` runs this when an emulator is configured): the
/// calls of taking a snapshot and of forking a workspace of 10, 1,000 and 10,000 files, and
/// of merging 1, 10 and 100 changed paths (and discarding the fork, as the bench's HTTP
/// merge does) into the 1,000- and the 10,000-file one. Prints one `BENCH {json}` line:
/// `{"snapshot": {size: n}, "fork": {size: n}, "merge": {size: {changed: {"calls", "s3"}}}}`.
#[tokio::test]
#[ignore = "bench rows: run by bench/run.py"]
async fn bench_fork_and_merge_calls_by_workspace_size() {
    let sizes = [10usize, 1_000, 10_000];
    let merge_sizes = [1_000usize, 10_000];
    let changed = [1usize, 10, 100];
    let mut snapshot = serde_json::Map::new();
    let mut forked = serde_json::Map::new();
    let mut merged = serde_json::Map::new();
    let parent = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    let path = |i: usize| format!("bench/{i:05}.md");
    for &size in &sizes {
        let log = CallLog::default();
        let env = common::fresh(Some(log.interceptor())).await;
        // Room for the largest workspace (the default quota is 1,000 files).
        let svc = env.service_with_secrets(Limits {
            max_files: 20_000,
            ..Limits::default()
        });
        // One file through the service, the rest as copies of its items: moto copies the
        // whole table for each transaction, so thousands of commits would take minutes.
        svc.put(&parent, put(&path(0), "base")).await.unwrap();
        copy_items(
            &env,
            &parent.scope,
            &path(0),
            (1..size).map(path).collect(),
            false,
        )
        .await;
        log.reset();
        svc.create_snapshot(&parent).await.unwrap();
        let calls = log.calls();
        assert!(calls.iter().all(|c| !c.starts_with("S3.")), "{calls:?}");
        snapshot.insert(size.to_string(), calls.len().into());
        log.reset();
        svc.create_fork(&parent, ForkRequest::default())
            .await
            .unwrap();
        let calls = log.calls();
        // The fork's empty marker under its prefix (the orphan sweep finds forks by it), one
        // whatever the size; nothing else in S3.
        let s3: Vec<_> = calls.iter().filter(|c| c.starts_with("S3.")).collect();
        assert_eq!(s3, ["S3.PutObject"], "{calls:?}");
        forked.insert(size.to_string(), calls.len().into());
        if !merge_sizes.contains(&size) {
            continue;
        }
        let mut by_changed = serde_json::Map::new();
        for &c in &changed {
            // A fresh fork each time, its first `c` files changed: one through the service,
            // the others as copies of its items (as `change_costs` does).
            let fork = svc
                .create_fork(&parent, ForkRequest::default())
                .await
                .unwrap();
            let in_fork = Identity::read_write(
                Scope::new(parent.scope.tenant.clone(), fork.workspace.clone()),
                "alice",
            );
            svc.put(&in_fork, put(&path(0), &format!("fork {c}")))
                .await
                .unwrap();
            copy_items(
                &env,
                &in_fork.scope,
                &path(0),
                (1..c).map(path).collect(),
                true,
            )
            .await;
            log.reset();
            let out = svc
                .merge_fork(
                    &parent,
                    fork.workspace.as_str(),
                    MergeRequest {
                        strategy: Strategy::Fail,
                        resolutions: Default::default(),
                        dry_run: false,
                        discard_fork: true,
                        idempotency_key: None,
                    },
                )
                .await
                .unwrap();
            let calls = log.calls();
            assert!(matches!(out, MergeOutcome::Merged(ref r) if r.applied.len() == c));
            let s3 = calls.iter().filter(|x| x.starts_with("S3.")).count();
            by_changed.insert(
                c.to_string(),
                serde_json::json!({ "calls": calls.len(), "s3": s3 }),
            );
        }
        merged.insert(size.to_string(), by_changed.into());
    }
    println!(
        "BENCH {}",
        serde_json::json!({ "snapshot": snapshot, "fork": forked, "merge": merged })
    );
}
