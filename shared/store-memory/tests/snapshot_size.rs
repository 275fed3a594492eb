//! A snapshot is a point in history, not a record of its files: one of a workspace whose
//! file list would not fit one DynamoDB item (400 KB) is taken like any other, and pins
//! nothing. A kept checkpoint still copies each file (its record lists them), so it keeps
//! the record's bound. (Checked here on the fast in-memory adapter; the rule is the
//! service's, the same on every backend.)

use std::sync::Arc;
use workspace_contract::harness::{Backend, Harness, KEY_A, LIMITS};
use workspace_core::service::{MAX_SNAPSHOT_RECORD_BYTES, SNAPSHOT_ANSWER_FILES};
use workspace_core::Limits;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

#[tokio::test]
async fn a_snapshot_past_one_records_size_is_taken_and_pins_nothing() {
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
    let snap = h.snapshot(KEY_A).await.assert_ok();
    // The answer shows the first files and says more follow; GET lists every one.
    assert_eq!(
        snap["files"].as_array().map(Vec::len),
        Some(SNAPSHOT_ANSWER_FILES)
    );
    assert_eq!(snap["moreFiles"], true);
    let id = snap["snapshotId"].as_str().unwrap().to_owned();
    let scope = workspace_contract::harness::scope("acme", "main");
    let path = workspace_core::FilePath::parse(&format!("{long}/00000.md")).unwrap();
    let head = h.meta.head(&scope, &path).await.unwrap().unwrap();
    assert!(head.pins.is_empty(), "nothing was pinned");
    h.put(KEY_A, &format!("{long}/00000.md"), "changed")
        .await
        .assert_ok();
    let whole = h.get_snapshot(KEY_A, &id).await.assert_ok();
    let listed = whole["files"].as_array().unwrap();
    assert_eq!(listed.len() as u64, files);
    assert_eq!(listed[0]["version"], 1, "the file as it was at the point");
    assert_eq!(
        h.get_in(KEY_A, &id, &format!("{long}/00000.md"))
            .await
            .assert_ok()["content"],
        "x"
    );

    // A kept checkpoint lists (and copies) its files in its record: bounded by it.
    let e = h
        .call(
            http::Method::POST,
            "/v1/host/workspace/snapshots",
            Some(KEY_A),
        )
        .json(&serde_json::json!({"keep": true}))
        .send()
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(e["details"]["limit"], MAX_SNAPSHOT_RECORD_BYTES as u64);
}
