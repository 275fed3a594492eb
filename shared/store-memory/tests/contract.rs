//! The shared contract suite against the in-memory adapter.

use std::sync::Arc;
use workspace_contract::{contract_tests, Backend};
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

async fn backend() -> Backend {
    Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    }
}

contract_tests!(backend);
