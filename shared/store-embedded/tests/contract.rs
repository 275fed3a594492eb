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
