//! A workspace whose snapshot record would not fit one DynamoDB item (400 KB) is refused
//! with 413 before anything is pinned (checked here on the fast in-memory adapter; the
//! rule is the service's, the same on every backend).

use std::sync::Arc;
use workspace_contract::harness::{Backend, Harness, KEY_A, LIMITS};
use workspace_core::service::MAX_SNAPSHOT_RECORD_BYTES;
use workspace_core::Limits;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

#[tokio::test]
async fn a_snapshot_too_large_for_one_record_is_413_and_pins_nothing() {
    let files = 1200u64;
    let h = Harness::with_limits(
        Backend {
            meta: Arc::new(MemoryMeta::default()),
            bodies: Arc::new(MemoryBodies::default()),
            secrets: Arc::new(MemorySecrets::default()),
            guard: Box::new(()),
        },
        Limits {
            max_files: files,
            ..LIMITS
        },
    )
    .await;
    let long = "d".repeat(240);
    for i in 0..files {
        h.put(KEY_A, &format!("{long}/{i:05}.md"), "x")
            .await
            .assert_ok();
    }
    let e = h
        .snapshot(KEY_A)
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(e["details"]["limit"], MAX_SNAPSHOT_RECORD_BYTES as u64);
    let scope = workspace_contract::harness::scope("acme", "main");
    let path = workspace_core::FilePath::parse(&format!("{long}/00000.md")).unwrap();
    let head = h.meta.head(&scope, &path).await.unwrap().unwrap();
    assert!(head.pins.is_empty(), "nothing was pinned");

    // Below the limit it works.
    for i in 600..files {
        assert_eq!(
            h.delete(KEY_A, &format!("{long}/{i:05}.md")).await.status,
            204
        );
    }
    let snap = h.snapshot(KEY_A).await;
    assert_eq!(snap.status.as_u16(), 201);
}
