//! The session contract suite against the embedded (redb) adapter, each case in a fresh
//! database file.

use std::sync::Arc;
use workspace_contract::sessions::SessionBackend;
use workspace_contract::{sessions_contract_tests, Backend};
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;

async fn backend() -> SessionBackend {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    SessionBackend {
        files: Backend {
            meta: store.clone(),
            bodies: store.clone(),
            secrets: Arc::new(SecretFile::new(dir.path())),
            guard: Box::new(dir),
        },
        sessions: store.clone(),
        eraser: store.clone(),
        // Blobs and cache live in the same file: the store's own eraser covers them.
        caps: workspace_contract::Capabilities {
            cache: store.clone(),
            blobs: store,
        },
        more_erasers: Vec::new(),
    }
}

sessions_contract_tests!(backend);
