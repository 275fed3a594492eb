//! Contract cases for the snapshot pin protocol under concurrency, through the router and
//! step by step at the `MetaStore` port.

use crate::harness::{Harness, KEY_A, LIMITS};
use std::sync::Arc;

/// Snapshots taken while writers hammer a file past its retention window: each
/// snapshot must read back exactly the version it lists, never a pruned one.
pub async fn snapshots_taken_during_pruning_writes_stay_readable(h: Harness) {
    let h = Arc::new(h);
    h.put(KEY_A, "hot.md", "w0-0").await.assert_ok();
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let h = h.clone();
            tokio::spawn(async move {
                for i in 0..8 {
                    h.put(KEY_A, "hot.md", &format!("w{w}-{i}"))
                        .await
                        .assert_ok();
                }
            })
        })
        .collect();
    let mut snaps = Vec::new();
    for _ in 0..4 {
        snaps.push(h.snapshot(KEY_A).await.assert_ok());
    }
    for w in writers {
        w.await.expect("writer");
    }
    for snap in snaps {
        let id = snap["snapshotId"].as_str().unwrap();
        let pinned = &snap["files"][0];
        let got = h.get_in(KEY_A, id, "hot.md").await.assert_ok();
        assert_eq!(got["version"], pinned["version"]);
        assert_eq!(got["etag"], pinned["etag"]);
        let n = pinned["version"].as_u64().unwrap();
        assert_eq!(
            h.get_version(KEY_A, "hot.md", n).await.assert_ok()["content"],
            got["content"]
        );
    }
}

/// The interleavings of the pin protocol, step by step at the port: a pin against a head
/// that moved, or naming a pruned item, is refused; a commit prepared before a pin landed
/// is refused; a pinned item survives the writes that would prune it.
pub async fn pins_and_commits_compare_and_swap_on_the_head(h: Harness) {
    use workspace_core::model::{Pin, VersionRecord};
    use workspace_core::ports::{Commit, CommitOutcome, Expect};
    use workspace_core::FilePath;
    let scope = crate::harness::scope("acme", "main");
    let path = FilePath::parse("cas.md").expect("path");
    let pin = |seq: u64| Pin {
        seq,
        snapshot: "manual".into(),
        until: i64::MAX,
        span: None,
    };
    for i in 1..=4 {
        h.put(KEY_A, "cas.md", &format!("v{i}")).await.assert_ok();
    }
    let head = |h: &Harness| {
        let (meta, scope, path) = (h.meta.clone(), scope.clone(), path.clone());
        async move {
            meta.head(&scope, &path)
                .await
                .expect("head")
                .expect("exists")
        }
    };
    let set = |expect: Expect, pins: Vec<Pin>, must: Option<u64>| {
        let (meta, scope, path) = (h.meta.clone(), scope.clone(), path.clone());
        async move {
            meta.set_pins(&scope, &path, expect, pins, must)
                .await
                .expect("set_pins")
        }
    };
    let old = head(&h).await;
    assert_eq!(old.seq, 4);
    assert!(
        !set(Expect::of(Some(&old)), vec![pin(1)], Some(1)).await,
        "item 1 fell out of retention: no pin may name it"
    );
    h.put(KEY_A, "cas.md", "v5").await.assert_ok(); // prunes item 2
    assert!(
        !set(Expect::of(Some(&old)), vec![pin(3)], Some(3)).await,
        "the head moved since it was read"
    );
    let fresh = head(&h).await;
    assert!(!set(Expect::of(Some(&fresh)), vec![pin(2)], Some(2)).await);
    assert!(set(Expect::of(Some(&fresh)), vec![pin(3)], Some(3)).await);
    let pinned = head(&h).await;
    assert_eq!(
        (pinned.seq, pinned.pin_rev, pinned.pins.clone()),
        (fresh.seq, fresh.pin_rev + 1, vec![pin(3)])
    );

    // A commit prepared from the head before the pin landed would prune item 3: refused.
    let seq = fresh.seq + 1;
    let stale = Commit {
        scope: scope.clone(),
        path: path.clone(),
        expect: Expect::of(Some(&fresh)),
        head: workspace_core::model::Head {
            seq,
            version: fresh.version + 1,
            pins: Vec::new(),
            ..fresh.clone()
        },
        version: VersionRecord {
            seq,
            lineage: fresh.lineage.clone(),
            version: fresh.version + 1,
            etag: "\"x\"".into(),
            size: 0,
            sha256: String::new(),
            content_type: fresh.content_type.clone(),
            body: fresh.body.clone(),
            updated_at: fresh.updated_at,
            principal: "test".into(),
            deleted: false,
            erased: None,
            merge: None,
            point: 0,
        },
        live_delta: 0,
        max_files: LIMITS.max_files,
        idempotency: None,
        idempotency_valid_after: 0,
        retain_from_seq: seq + 1 - LIMITS.max_versions,
        released: Vec::new(),
        secrets_epoch: None,
        points_rev: 0,
    };
    assert_eq!(
        h.meta.commit(stale).await.expect("commit"),
        CommitOutcome::HeadMoved
    );
    // Writes through the service re-read the head and keep the pinned item.
    for i in 6..=9 {
        h.put(KEY_A, "cas.md", &format!("v{i}")).await.assert_ok();
    }
    assert!(h
        .meta
        .version(&scope, &path, 3)
        .await
        .expect("read")
        .is_some());
    assert!(h
        .meta
        .version(&scope, &path, 4)
        .await
        .expect("read")
        .is_none());
    assert_eq!(
        h.get_version(KEY_A, "cas.md", 3).await.assert_ok()["content"],
        "v3"
    );
    assert_eq!(head(&h).await.pins, vec![pin(3)]);
}
