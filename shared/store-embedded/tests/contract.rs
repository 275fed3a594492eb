//! The shared contract suite against the embedded (redb) adapter, each case in a fresh
//! database file.

use std::sync::Arc;
use workspace_contract::{contract_tests, Backend};
use workspace_core::ports::Staging;
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;

async fn backend() -> Backend {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    Backend {
        meta: store.clone(),
        bodies: store,
        secrets: Arc::new(SecretFile::new(dir.path())),
        guard: Box::new(dir),
    }
}

contract_tests!(backend);
workspace_contract::semantic_tests!(backend);

/// WSR-1 at the byte level: the database file itself never holds a written secret.
#[tokio::test]
async fn the_database_file_never_holds_a_written_secret() {
    use workspace_contract::protocol::{SECRET_AWS_KEY_ID, SECRET_GITHUB};
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
        let h = workspace_contract::Harness::new(Backend {
            meta: store.clone(),
            bodies: store,
            secrets: Arc::new(SecretFile::new(dir.path())),
            guard: Box::new(()),
        })
        .await;
        for i in 0..3 {
            let text = format!("v{i} {SECRET_AWS_KEY_ID} {SECRET_GITHUB}");
            h.put(workspace_contract::harness::KEY_A, "creds.md", &text)
                .await
                .assert_ok();
        }
    }
    let raw = std::fs::read(dir.path().join(workspace_store_embedded::DB_FILE)).expect("db file");
    let holds = |text: &str| workspace_contract::raw_holds(&raw, text);
    for secret in [SECRET_AWS_KEY_ID, SECRET_GITHUB] {
        assert!(!holds(secret), "{secret} found in the database file");
    }
    assert!(holds("REDACTED:"), "the redacted text is what was stored");
}

/// The RFC 0019 cases (blobs, presigning, cache) on the same database file.
async fn with_capabilities() -> (Backend, workspace_contract::Capabilities) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    let caps = workspace_contract::Capabilities {
        cache: store.clone(),
        blobs: store.clone(),
    };
    let backend = Backend {
        meta: store.clone(),
        bodies: store,
        secrets: Arc::new(SecretFile::new(dir.path())),
        guard: Box::new(dir),
    };
    (backend, caps)
}

mod capabilities {
    use super::with_capabilities;
    workspace_contract::capability_tests!(with_capabilities);
}

/// WSR-1 for the cache at the byte level: a cached secret never reaches the database file.
#[tokio::test]
async fn the_database_file_never_holds_a_cached_secret() {
    use workspace_contract::protocol::{SECRET_AWS_KEY_ID, SECRET_GITHUB};
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
        let h = workspace_contract::Harness::with_capabilities(
            Backend {
                meta: store.clone(),
                bodies: store.clone(),
                secrets: Arc::new(SecretFile::new(dir.path())),
                guard: Box::new(()),
            },
            workspace_contract::Capabilities {
                cache: store.clone(),
                blobs: store,
            },
        )
        .await;
        let value = serde_json::json!({ "a": SECRET_AWS_KEY_ID, "b": [SECRET_GITHUB] });
        h.call(
            http::Method::PUT,
            "/v1/host/cache/creds",
            Some(workspace_contract::harness::KEY_A),
        )
        .json(&serde_json::json!({ "value": value, "ttlSeconds": 60 }))
        .send()
        .await
        .assert_ok();
    }
    let raw = std::fs::read(dir.path().join(workspace_store_embedded::DB_FILE)).expect("db file");
    for secret in [SECRET_AWS_KEY_ID, SECRET_GITHUB] {
        assert!(
            !raw.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} found in the database file"
        );
    }
}

/// Uploads never committed leave nothing behind for long: the next upload of the workspace
/// prunes staged objects older than a day (on AWS the sweeper does it), and only those.
#[tokio::test]
async fn abandoned_uploads_are_pruned_by_the_next_upload() {
    use http::Method;
    use serde_json::json;
    use workspace_contract::harness::{scope, KEY_A};
    use workspace_core::model::sha256_hex;

    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    let h = workspace_contract::Harness::new(Backend {
        meta: store.clone(),
        bodies: store.clone(),
        secrets: Arc::new(SecretFile::new(dir.path())),
        guard: Box::new(()),
    })
    .await;
    let start = || async {
        h.call(Method::POST, "/v1/host/workspace/uploads", Some(KEY_A))
            .json(&json!({"path": "a.bin", "size": 1, "sha256": sha256_hex(b"x")}))
            .send()
            .await
            .assert_ok()["uploadId"]
            .as_str()
            .expect("uploadId")
            .to_owned()
    };
    let declared = |id: &str| {
        format!(
            "{}uploads/{id}/declared",
            scope("acme", "main").key_prefix()
        )
    };
    let old = start().await;
    h.clock.advance(23 * 60 * 60 * 1000);
    let recent = start().await;
    h.clock.advance(2 * 60 * 60 * 1000);
    let newest = start().await;
    assert!(store
        .get_staged(&declared(&old), 4096)
        .await
        .unwrap()
        .is_none());
    for id in [&recent, &newest] {
        assert!(store
            .get_staged(&declared(id), 4096)
            .await
            .unwrap()
            .is_some());
    }
}

/// Crash points on one database file; the sweep is the one the local server runs at start.
async fn with_recovery() -> (Backend, workspace_contract::faults::Recovery) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    let swept = store.clone();
    let recovery = workspace_contract::faults::Recovery {
        sweep: Box::new(move || {
            let s = swept.clone();
            Box::pin(async move {
                workspace_core::service::sweep::sweep_unreferenced_bodies(
                    s.as_ref(),
                    s.as_ref(),
                    s.as_ref(),
                )
                .await
            })
        }),
        inventory: store.clone(),
        events: Some(store.clone()),
    };
    let backend = Backend {
        meta: store.clone(),
        bodies: store,
        secrets: Arc::new(SecretFile::new(dir.path())),
        guard: Box::new(dir),
    };
    (backend, recovery)
}

mod faults {
    use super::with_recovery;
    workspace_contract::fault_tests!(with_recovery);
    workspace_contract::merge_fault_tests!(with_recovery, usize::MAX);
    workspace_contract::merge_atomicity_tests!(with_recovery, 8);
}

mod one_commit {
    use super::backend;
    workspace_contract::one_commit_merge_tests!(backend);
}

#[tokio::test]
async fn snapshots_and_forks_cost_the_same_store_calls_at_any_size() {
    workspace_contract::points::snapshots_and_forks_cost_the_same_store_calls_at_any_size(
        backend().await,
    )
    .await;
}
