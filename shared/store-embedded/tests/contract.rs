//! The shared contract suite against the embedded (redb) adapter, each case in a fresh
//! database file.

use std::sync::Arc;
use workspace_contract::{contract_tests, Backend};
use workspace_store_embedded::EmbeddedStore;

async fn backend() -> Backend {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    Backend {
        meta: store.clone(),
        bodies: store,
        guard: Box::new(dir),
    }
}

contract_tests!(backend);
