//! AWS calls of fork creation and of a merge, counted on the emulator with an SDK
//! interceptor: creating a fork copies no body (no S3 call) and costs one pin per live file
//! of the parent; a merge's cost grows by a fixed number of calls per merged file.

use workspace_core::forks::three_way::Strategy;
use workspace_core::ports::{HeadStore, HistoryStore, SnapshotStore, SystemClock};
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

fn count(calls: &[String], name: &str) -> usize {
    calls.iter().filter(|c| c.as_str() == name).count()
}

/// Calls of (fork creation, a merge of `n` changed files) in a workspace of `n` files.
async fn measure(n: usize) -> (Vec<String>, Vec<String>) {
    measure_with(n, None).await
}

/// [`measure`], the merge under `Idempotency-Key` `key` when given.
async fn measure_with(n: usize, key: Option<&str>) -> (Vec<String>, Vec<String>) {
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let svc = env.service_with_secrets(Limits::default());
    let parent = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    for i in 0..n {
        svc.put(&parent, put(&format!("f{i}.md"), "base"))
            .await
            .unwrap();
    }
    log.reset();
    let fork = svc
        .create_fork(&parent, ForkRequest::default())
        .await
        .unwrap();
    let created = log.calls();
    let in_fork = Identity::read_write(
        Scope::new(parent.scope.tenant.clone(), fork.workspace.clone()),
        "alice",
    );
    for i in 0..n {
        svc.put(&in_fork, put(&format!("f{i}.md"), "fork"))
            .await
            .unwrap();
    }
    log.reset();
    let merged = svc
        .merge_fork(
            &parent,
            fork.workspace.as_str(),
            MergeRequest {
                strategy: Strategy::Fail,
                resolutions: Default::default(),
                dry_run: false,
                discard_fork: false,
                idempotency_key: key.map(str::to_owned),
            },
        )
        .await
        .unwrap();
    assert!(matches!(merged, MergeOutcome::Merged(ref r) if r.applied.len() == n));
    (created, log.calls())
}

#[tokio::test]
async fn forks_copy_no_body_and_merges_cost_a_fixed_number_of_calls_per_file() {
    let (created2, merged2) = measure(2).await;
    let (created4, merged4) = measure(4).await;
    // Creating a fork of `n` live files is `2 + q + n + b` DynamoDB calls and no S3 call:
    // the fork record and the base record (2 PutItem), the parent's heads listed (q Query:
    // one per MB of head items and per 1,000 files), one pin per file (n UpdateItem), and
    // the base's parts when its file list is over one item (b = 1 BatchWriteItem, else 0;
    // see the 1,000-file case below). Small: 3 + n.
    for (created, n) in [(&created2, 2), (&created4, 4)] {
        assert_eq!(
            (
                count(created, "DynamoDB.PutItem"),
                count(created, "DynamoDB.Query"),
                count(created, "DynamoDB.UpdateItem"),
            ),
            (2, 1, n),
            "{created:?}"
        );
        assert_eq!(count(created, "DynamoDB.BatchWriteItem"), 0);
        assert_eq!(created.len(), 3 + n, "{created:?}");
        assert!(created.iter().all(|c| !c.starts_with("S3.")), "{created:?}");
    }
    // A merge: per merged file, one read of the fork's body and one upload to the parent
    // (and a fixed number of metadata calls, the same for every file).
    let per_file = (merged4.len() - merged2.len()) / 2;
    assert_eq!(
        merged4.len() - merged2.len(),
        2 * per_file,
        "{merged2:?}\n{merged4:?}"
    );
    assert_eq!(
        count(&merged4, "S3.GetObject") - count(&merged2, "S3.GetObject"),
        2
    );
    assert_eq!(
        count(&merged4, "S3.PutObject") - count(&merged2, "S3.PutObject"),
        2
    );
    // ... and all of them in one transaction, whatever their number (while it fits).
    for merged in [&merged2, &merged4] {
        assert_eq!(
            count(merged, "DynamoDB.TransactWriteItems"),
            1,
            "{merged:?}"
        );
    }
    println!(
        "fork of n files: {} calls (n=2), {} (n=4); merge of n files: {} calls (n=2), {} (n=4), {per_file} per file",
        created2.len(),
        created4.len(),
        merged2.len(),
        merged4.len()
    );
}

/// A merge of more changes than one `TransactWriteItems` takes (100 actions: 3 per changed
/// file, and the secrets check): its plan is recorded first (one `PutItem`), the changes go
/// in as few transactions as hold them, and the plan is ended once the report is recorded
/// (one more `PutItem`); per file the calls are those of a small merge.
#[tokio::test]
async fn a_merge_over_one_transaction_records_its_plan_and_commits_in_batches() {
    let (_, small) = measure_with(2, Some("small")).await;
    let (_, large) = measure_with(40, Some("large")).await;
    // 40 files: 120 actions and the secrets check, in two transactions.
    assert_eq!(count(&large, "DynamoDB.TransactWriteItems"), 2, "{large:?}");
    assert_eq!(count(&small, "DynamoDB.TransactWriteItems"), 1);
    // The plan, and its end: two more PutItem than a merge in one transaction needs.
    let puts = |calls: &[String]| count(calls, "DynamoDB.PutItem");
    assert_eq!(puts(&large) - puts(&small), 2, "{small:?}\n{large:?}");
    assert_eq!(
        count(&large, "S3.PutObject") - count(&small, "S3.PutObject"),
        38
    );
    println!(
        "merge of 2 files: {} calls; of 40 files (plan, 2 transactions): {} calls",
        small.len(),
        large.len()
    );
}

/// Writes a head and a version item for each of `paths` that has none, copies of those of
/// `template` (same body), and counts them in the live-file counter.
async fn seed_copies(env: &common::Env, scope: &Scope, template: &str, paths: Vec<String>) {
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
        if meta
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

/// A workspace at the default file limit (`WORKSPACE_MAX_FILES`, 1,000 files) with the
/// longest paths (256 bytes) is forked: its base (about 700 KB of file list) is split over
/// part items written with one `BatchWriteItem`; still no S3 call and one pin per file.
/// The fork reads through its split base, its diff reads it whole, and deleting the base
/// deletes every part.
#[tokio::test]
async fn a_fork_of_a_thousand_files_with_long_paths_splits_its_base() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let started = std::time::Instant::now();
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let limits = Limits::default();
    let n = limits.max_files as usize;
    assert_eq!(n, 1000);
    let svc = env.service_with_secrets(limits);
    let parent = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    let long = "d".repeat(246);
    let path = |i: usize| format!("{long}/{i:05}.md");
    assert_eq!(path(0).len(), workspace_core::path::MAX_PATH_LEN - 1);
    // Three files through the service (the ones read and merged below); the other 997
    // as the same head and version items written straight to the table (moto copies the
    // whole table for each transaction: a thousand commits would take minutes).
    for i in [0, 7, n - 1] {
        svc.put(&parent, put(&path(i), "base")).await.unwrap();
    }
    seed_copies(&env, &parent.scope, &path(0), (0..n).map(path).collect()).await;
    let seeded = started.elapsed();

    log.reset();
    let t = std::time::Instant::now();
    let fork = svc
        .create_fork(&parent, ForkRequest::default())
        .await
        .unwrap();
    let created = log.calls();
    let fork_time = t.elapsed();
    // The fork record and the base record (PutItem), the parent's heads listed (Query, a
    // page per MB of head items), one pin per file (UpdateItem), the base's parts (one
    // BatchWriteItem). No S3 call.
    let queries = count(&created, "DynamoDB.Query");
    assert_eq!(
        (
            count(&created, "DynamoDB.PutItem"),
            count(&created, "DynamoDB.UpdateItem"),
            count(&created, "DynamoDB.BatchWriteItem"),
        ),
        (2, n, 1),
        "{:?}",
        created
            .iter()
            .filter(|c| *c != "DynamoDB.UpdateItem")
            .collect::<Vec<_>>()
    );
    assert!((1..=4).contains(&queries), "{queries} queries");
    assert_eq!(created.len(), 3 + n + queries, "no other call");
    assert!(created.iter().all(|c| !c.starts_with("S3.")));

    // The base is in parts, each under the item limit.
    let pk = "acme#main".to_owned();
    let parts = env
        .clients
        .dynamodb
        .query()
        .table_name(&env.table)
        .key_condition_expression("pk = :pk AND begins_with(sk, :p)")
        .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
        .expression_attribute_values(":p", AttributeValue::S("snapfiles#".into()))
        .send()
        .await
        .unwrap();
    let sizes: Vec<usize> = parts
        .items()
        .iter()
        .map(|i| i["files"].as_s().unwrap().len())
        .collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    assert!(sizes.iter().all(|s| *s <= 300_000), "{sizes:?}");

    // The fork reads through its base, first file and last.
    let in_fork = Identity::read_write(
        Scope::new(parent.scope.tenant.clone(), fork.workspace.clone()),
        "alice",
    );
    for i in [0, n - 1] {
        let file = svc
            .get(&in_fork, &FilePath::parse(&path(i)).unwrap(), None)
            .await
            .unwrap();
        assert_eq!(file.content, b"base");
    }
    // A change in the fork: the three-way diff reads the split base and names it alone.
    svc.put(&in_fork, put(&path(7), "fork")).await.unwrap();
    let diff = svc
        .fork_diff(
            &parent,
            fork.workspace.as_str(),
            &Default::default(),
            None,
            None,
        )
        .await
        .unwrap();
    let changed: Vec<&str> = diff.changes.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(changed, vec![path(7).as_str()]);

    // Deleting the base record deletes its parts (one BatchWriteItem). (Discarding the
    // fork does that and ends each pin: a thousand more calls the emulator is slow at;
    // the contract suite discards and merges on every backend.)

    let meta = DynamoMeta::new(env.clients.dynamodb.clone(), &env.table);
    let base = meta
        .snapshot(&parent.scope, &fork.base_snapshot)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(base.files.len(), n);
    assert!(base.files.windows(2).all(|w| w[0].path < w[1].path));
    log.reset();
    assert!(meta
        .delete_snapshot(&parent.scope, &fork.base_snapshot)
        .await
        .unwrap());
    let mut deleted = log.calls();
    deleted.sort();
    assert_eq!(
        deleted,
        vec!["DynamoDB.BatchWriteItem", "DynamoDB.DeleteItem"]
    );
    let left = env
        .clients
        .dynamodb
        .query()
        .table_name(&env.table)
        .key_condition_expression("pk = :pk AND begins_with(sk, :p)")
        .expression_attribute_values(":pk", AttributeValue::S(pk))
        .expression_attribute_values(":p", AttributeValue::S("snap".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(left.count(), 0, "{:?}", left.items());
    println!(
        "fork of {n} files with 255-byte paths: {} calls ({queries} Query, {} parts) in \
         {fork_time:?}; seeded in {seeded:?}, whole test {:?}",
        created.len(),
        sizes.len(),
        started.elapsed()
    );
}

/// The scheduled sweeper erases ended forks: one that wrote files (found by its keys in
/// the bucket) and one that wrote nothing (found by its parent's base snapshots) lose
/// their whole partition, every S3 version under their prefix and their base snapshot;
/// a live fork and the parent are untouched.
#[tokio::test]
async fn the_sweeper_erases_expired_forks_and_nothing_else() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use workspace_core::ports::Clock;
    let env = common::fresh(None).await;
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
    assert!(items(pk(&busy), "").await >= 7 && objects(&busy).await == 2);
    assert!(items(pk(&idle), "").await >= 1);
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
/// calls of forking a workspace of 10, 100 and 1,000 files (short paths), and of merging
/// 1 and 10 changed files back into the 1,000-file one. Prints one `BENCH {json}` line.
#[tokio::test]
#[ignore = "bench rows: run by bench/run.py"]
async fn bench_fork_and_merge_calls_by_workspace_size() {
    let sizes = [10usize, 100, 1000];
    let changed = [1usize, 10];
    let mut created = serde_json::Map::new();
    let mut merged = serde_json::Map::new();
    for (k, &size) in sizes.iter().enumerate() {
        let log = CallLog::default();
        let env = common::fresh(Some(log.interceptor())).await;
        let svc = env.service_with_secrets(Limits::default());
        let parent = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
        let path = |i: usize| format!("bench/{i:05}.md");
        svc.put(&parent, put(&path(0), "base")).await.unwrap();
        seed_copies(&env, &parent.scope, &path(0), (0..size).map(path).collect()).await;
        log.reset();
        let fork = svc
            .create_fork(&parent, ForkRequest::default())
            .await
            .unwrap();
        let calls = log.calls();
        assert!(calls.iter().all(|c| !c.starts_with("S3.")));
        created.insert(size.to_string(), calls.len().into());
        if k + 1 < sizes.len() {
            continue;
        }
        let mut fork = fork;
        for &c in &changed {
            let in_fork = Identity::read_write(
                Scope::new(parent.scope.tenant.clone(), fork.workspace.clone()),
                "alice",
            );
            for i in 0..c {
                svc.put(&in_fork, put(&path(i), &format!("fork {c}")))
                    .await
                    .unwrap();
            }
            log.reset();
            let out = svc
                .merge_fork(
                    &parent,
                    fork.workspace.as_str(),
                    MergeRequest {
                        strategy: Strategy::Fail,
                        resolutions: Default::default(),
                        dry_run: false,
                        discard_fork: false,
                        idempotency_key: None,
                    },
                )
                .await
                .unwrap();
            assert!(matches!(out, MergeOutcome::Merged(ref r) if r.applied.len() == c));
            merged.insert(c.to_string(), log.calls().len().into());
            fork = svc
                .create_fork(&parent, ForkRequest::default())
                .await
                .unwrap();
        }
    }
    println!(
        "BENCH {}",
        serde_json::json!({ "created": created, "merged": merged, "mergeWorkspace": 1000 })
    );
}
