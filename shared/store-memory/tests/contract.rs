//! The shared contract suite against the in-memory adapter.

use std::sync::Arc;
use workspace_contract::{contract_tests, Backend};
use workspace_store_memory::{MemoryBodies, MemoryMeta};

async fn backend() -> Backend {
    Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        guard: Box::new(()),
    }
}

contract_tests!(backend);

/// The RFC 0019 cases (blobs, presigning, cache) on the in-memory ports.
async fn with_capabilities() -> (Backend, workspace_contract::Capabilities) {
    let caps = workspace_contract::Capabilities {
        cache: Arc::new(workspace_store_memory::MemoryCache::default()),
        blobs: Arc::new(workspace_store_memory::MemoryBlobs::default()),
    };
    (backend().await, caps)
}

mod capabilities {
    use super::with_capabilities;
    workspace_contract::capability_tests!(with_capabilities);
}
