//! Contract cases for snapshots and forks as points in history (`service/points.rs`):
//! what the previous build stored (snapshots and fork bases pinned file by file) keeps
//! reading and expiring after the upgrade, and a snapshot taken while writers rewrite the
//! workspace reads one state that existed.

use crate::harness::{scope, Backend, Harness, KEY_A, KEY_TENANT, LIMITS};
use http::Method;
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_core::forks::{base_snapshot_id, ForkRecord, FORK_RECORD_KEY, FORK_RECORD_KIND};
use workspace_core::model::{Pin, Snapshot, SnapshotFile};
use workspace_core::ports::{Clock, Expect, StoredRecord};
use workspace_core::FilePath;

/// A snapshot and a fork base as the previous build stored them, on `paths`' heads: a pin
/// per head (`set_pins`), then the record listing every file (a fork base's with each
/// file's lineage and body), and for the fork its record. Returns the snapshot's id.
async fn pinned_the_old_way(
    h: &Harness,
    id: &str,
    paths: &[&str],
    until: i64,
    fork_base: bool,
) -> Snapshot {
    let main = scope("acme", "main");
    let mut files = Vec::new();
    for path in paths {
        let p = FilePath::parse(path).expect("path");
        let head = h.meta.head(&main, &p).await.expect("head").expect("exists");
        let mut pins = head.pins.clone();
        pins.push(Pin {
            seq: head.seq,
            snapshot: id.to_owned(),
            until,
            span: None,
        });
        assert!(h
            .meta
            .set_pins(&main, &p, Expect::of(Some(&head)), pins, None)
            .await
            .expect("set_pins"));
        let mut file = SnapshotFile::of_head(&head);
        if !fork_base {
            file.lineage = String::new();
            file.body = None;
        }
        files.push(file);
    }
    let snapshot = Snapshot {
        id: id.to_owned(),
        created_at: h.clock.now_ms(),
        expires_at: until,
        files,
        workflow_id: None,
        principal: None,
        label: None,
        keep: false,
        covers: Vec::new(),
        point: None,
    };
    h.meta
        .put_snapshot(&main, &snapshot)
        .await
        .expect("put_snapshot");
    snapshot
}

fn content(r: &crate::harness::Reply) -> Value {
    r.assert_ok()["content"].clone()
}

/// Data the previous build wrote (versions without points, a snapshot and a fork base
/// pinned file by file, a fork record without its base's count) reads as it did after the
/// upgrade: through the snapshot and the fork, after the parent rewrote every file past
/// `maxVersions` and deleted one; the fork diffs and merges; deleting the snapshot (and the
/// merge moving the fork's base) releases what they held; a snapshot taken after the
/// upgrade sits beside them.
pub async fn what_the_previous_build_stored_keeps_reading_and_expiring(h: Harness) {
    let main = scope("acme", "main");
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    let now = h.clock.now_ms();
    let until = now + 3_600_000;
    let legacy = format!("s{now:013}-legacy");
    pinned_the_old_way(&h, &legacy, &["a.md", "b.md"], until, false).await;
    let suffix = "0123456789abcdef";
    let base_id = base_snapshot_id(now, suffix, 0);
    pinned_the_old_way(&h, &base_id, &["a.md", "b.md"], until, true).await;
    let fork = format!("main~{suffix}");
    let record = ForkRecord {
        base_snapshot: base_id.clone(),
        base_created_at: now,
        label: None,
        created_at: now,
        expires_at: until,
        generation: 0,
        base_files: None,
    };
    let value = serde_json::to_string(&record).expect("json");
    let stored = StoredRecord {
        value: value.replace(",\"baseFiles\":null", ""),
        expires_at: until,
    };
    h.meta
        .put_record(
            &scope("acme", &fork),
            FORK_RECORD_KIND,
            FORK_RECORD_KEY,
            &stored,
        )
        .await
        .expect("fork record");

    // The upgraded build: a point snapshot beside them, then the parent moves on.
    let point = h.snapshot(KEY_A).await.assert_ok();
    let point = point["snapshotId"].as_str().expect("id").to_owned();
    for i in 2..=LIMITS.max_versions + 3 {
        h.put(KEY_A, "a.md", &format!("a{i}")).await.assert_ok();
    }
    assert_eq!(h.delete(KEY_A, "b.md").await.status, 204);

    for id in [&legacy, &point] {
        assert_eq!(content(&h.get_in(KEY_A, id, "a.md").await), "a1", "{id}");
        assert_eq!(content(&h.get_in(KEY_A, id, "b.md").await), "b1", "{id}");
        let listed = h.get_snapshot(KEY_A, id).await.assert_ok();
        let rows: Vec<(&str, u64)> = listed["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| (f["path"].as_str().unwrap(), f["version"].as_u64().unwrap()))
            .collect();
        assert_eq!(rows, [("a.md", 1), ("b.md", 1)], "{id}");
    }

    // The fork reads its pinned base, diffs against it, and merges.
    assert_eq!(content(&h.fork_get(KEY_A, &fork, "a.md").await), "a1");
    assert_eq!(content(&h.fork_get(KEY_A, &fork, "b.md").await), "b1");
    h.fork_put(KEY_A, &fork, "c.md", "from the fork")
        .await
        .assert_ok();
    let diff = h.fork_diff(KEY_A, &fork, "").await.assert_ok();
    let changes: Vec<(&str, &str, &str)> = diff["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap(),
                c["fork"].as_str().unwrap_or("?"),
                c["parent"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("a.md", "unchanged", "modified"),
            ("b.md", "unchanged", "deleted"),
            ("c.md", "added", "unchanged")
        ],
        "{diff}"
    );
    h.merge(KEY_A, &fork, json!({})).await.assert_ok();
    assert_eq!(
        content(&h.get(KEY_A, "c.md").await),
        "from the fork",
        "merged into the parent"
    );
    // The merge moved the fork's base to a point: the fork now reads the parent as it is.
    let a_now = format!("a{}", LIMITS.max_versions + 3);
    assert_eq!(content(&h.fork_get(KEY_A, &fork, "a.md").await), a_now);

    // Ending the pinned snapshot (and the fork, whose base is now a point) releases what
    // they held with the next writes; the point snapshot still holds version 1 until it
    // ends too.
    let discarded = h
        .call(
            Method::DELETE,
            &format!("/v1/host/workspace/forks/{fork}"),
            Some(KEY_A),
        )
        .send()
        .await;
    assert_eq!(discarded.status, 204);
    assert_eq!(h.delete_snapshot(KEY_A, &legacy).await.status, 204);
    for i in 0..2 {
        h.put(KEY_A, "a.md", &format!("after {i}"))
            .await
            .assert_ok();
    }
    assert_eq!(content(&h.get_in(KEY_A, &point, "a.md").await), "a1");
    assert_eq!(h.delete_snapshot(KEY_A, &point).await.status, 204);
    for i in 2..4 {
        h.put(KEY_A, "a.md", &format!("after {i}"))
            .await
            .assert_ok();
    }
    let history = h
        .call(Method::GET, "/v1/host/workspace/versions/a.md", Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let kept = history["versions"].as_array().map_or(0, Vec::len) as u64;
    assert_eq!(kept, LIMITS.max_versions, "{history}");
    let head = h
        .meta
        .head(&main, &FilePath::parse("a.md").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert!(
        head.pins.iter().all(|p| p.until > h.clock.now_ms()),
        "no ended pin left behind: {:?}",
        head.pins
    );
}

/// Snapshots and forks taken while a writer in another process (its own kept registry, as
/// another Lambda container has) rewrites two files in turn (`a.md` then `b.md`, each to the
/// round's number) each read one state that existed between their request and their
/// answer: `b <= a <= b + 1`, no older than the last round acknowledged before the request,
/// no newer than the round begun when it answered.
pub async fn snapshots_taken_while_writers_run_read_one_state_that_existed(h: Harness) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let h = Arc::new(h);
    h.put(KEY_A, "a.md", "0").await.assert_ok();
    h.put(KEY_A, "b.md", "0").await.assert_ok();
    let other = Harness::new(crate::harness::Backend {
        meta: h.meta.clone(),
        bodies: h.bodies.clone(),
        secrets: h.secrets.clone(),
        guard: Box::new(()),
    })
    .await;
    // Its first write keeps the registry as it is now, before any snapshot.
    other.put(KEY_A, "c.md", "x").await.assert_ok();
    let rounds = 30u64;
    let (begun, acked) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let writer = {
        let (begun, acked) = (begun.clone(), acked.clone());
        tokio::spawn(async move {
            for i in 1..=rounds {
                begun.store(i, Ordering::SeqCst);
                other.put(KEY_A, "a.md", &i.to_string()).await.assert_ok();
                other.put(KEY_A, "b.md", &i.to_string()).await.assert_ok();
                acked.store(i, Ordering::SeqCst);
            }
        })
    };
    // Snapshots and forks in turn: (snapshot id or fork workspace, is a fork, lo, hi).
    let mut taken = Vec::new();
    while !writer.is_finished() {
        let lo = acked.load(Ordering::SeqCst);
        let fork = taken.len() % 2 == 1;
        let id = if fork {
            h.new_fork(KEY_A).await
        } else {
            let snap = h.snapshot(KEY_A).await.assert_ok();
            snap["snapshotId"].as_str().expect("id").to_owned()
        };
        let hi = begun.load(Ordering::SeqCst);
        taken.push((id, fork, lo, hi));
    }
    writer.await.expect("writer");
    for (id, fork, lo, hi) in &taken {
        let read = |path: &'static str| {
            let (h, id, fork) = (&h, id.clone(), *fork);
            async move {
                let r = if fork {
                    h.fork_get(KEY_A, &id, path).await
                } else {
                    h.get_in(KEY_A, &id, path).await
                };
                content(&r)
                    .as_str()
                    .expect("text")
                    .parse::<u64>()
                    .expect("number")
            }
        };
        let (a, b) = (read("a.md").await, read("b.md").await);
        assert!(b <= a && a <= b + 1, "snapshot {id}: a = {a}, b = {b}");
        assert!(
            *lo <= b && a <= *hi,
            "snapshot {id} reads a = {a}, b = {b}: not between round {lo} (acknowledged \
             before it was asked for) and round {hi} (begun when it answered)"
        );
    }
    assert!(
        taken.len() >= 2,
        "only {} snapshots raced the writer",
        taken.len()
    );
}

/// A snapshot and a fork of workspaces of 0, 1 and 1,000 files cost the same number of
/// store calls (counted at the ports, below the service): a point in history, not a copy
/// of the heads. The same on every backend; the moto counts are in
/// `shared/store-aws/tests/fork_calls.rs` (1,000 commits through moto take minutes).
pub async fn snapshots_and_forks_cost_the_same_store_calls_at_any_size(backend: Backend) {
    use crate::faults::{FaultPlan, FaultyBodies, FaultyMeta};
    let plan = Arc::new(FaultPlan::default());
    let counted = Backend {
        meta: Arc::new(FaultyMeta(backend.meta.clone(), plan.clone())),
        bodies: Arc::new(FaultyBodies(backend.bodies.clone(), plan.clone())),
        secrets: backend.secrets.clone(),
        guard: backend.guard,
    };
    let limits = workspace_core::Limits {
        max_files: 2_000,
        ..LIMITS
    };
    let h = Harness::with_limits(counted, limits).await;
    let mut costs = Vec::new();
    for n in [0usize, 1, 1000] {
        let ws = format!("size{n}");
        let send = |method: Method, uri: &str, body: Option<Value>| {
            let mut c = h
                .call(method, uri, Some(KEY_TENANT))
                .header("x-workspace-id", &ws);
            if let Some(b) = &body {
                c = c.json(b);
            }
            c.send()
        };
        // The files, twenty per atomic commit (`maxCommitOperations`).
        let paths: Vec<String> = (0..n).map(|i| format!("d/{i:05}.md")).collect();
        for chunk in paths.chunks(20) {
            let ops: Vec<Value> = chunk
                .iter()
                .map(|p| json!({"op": "put", "path": p, "content": "x"}))
                .collect();
            send(
                Method::POST,
                "/v1/host/workspace/commits",
                Some(json!({ "operations": ops })),
            )
            .await
            .assert_ok();
        }
        let before = plan.calls();
        let snap = send(Method::POST, "/v1/host/workspace/snapshots", None)
            .await
            .assert_ok();
        let snapshot_calls = plan.calls() - before;
        let before = plan.calls();
        let fork = send(Method::POST, "/v1/host/workspace/forks", Some(json!({})))
            .await
            .assert_ok();
        let fork_calls = plan.calls() - before;
        // Both read every file as it was, after it changed.
        if let Some(last) = paths.last() {
            send(
                Method::PUT,
                &format!("/v1/host/workspace/files/{last}"),
                Some(json!({"content": "changed"})),
            )
            .await
            .assert_ok();
            let id = snap["snapshotId"].as_str().expect("id");
            let through = send(
                Method::GET,
                &format!("/v1/host/workspace/files/{last}?snapshot={id}"),
                None,
            )
            .await;
            assert_eq!(content(&through), "x");
            let fork = fork["workspaceId"].as_str().expect("fork").to_owned();
            let forked = h
                .call(
                    Method::GET,
                    &format!("/v1/host/workspace/files/{last}"),
                    Some(KEY_TENANT),
                )
                .header("x-workspace-id", &fork)
                .send()
                .await;
            assert_eq!(content(&forked), "x");
        }
        costs.push((n, snapshot_calls, fork_calls));
    }
    let (_, s0, f0) = costs[0];
    for (n, s, f) in &costs {
        assert_eq!(
            (*s, *f),
            (s0, f0),
            "{n} files cost other calls than none: {costs:?}"
        );
    }
    assert!(s0 <= 4 && f0 <= 4, "{costs:?}");
}
