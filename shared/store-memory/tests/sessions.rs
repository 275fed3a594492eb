//! The session contract suite against the in-memory adapters.

use std::sync::Arc;
use workspace_contract::sessions::SessionBackend;
use workspace_contract::{sessions_contract_tests, Backend};
use workspace_store_memory::sessions::MemorySessions;
use workspace_store_memory::{MemoryBlobs, MemoryBodies, MemoryCache, MemoryMeta, MemorySecrets};

async fn backend() -> SessionBackend {
    let meta = MemoryMeta::default();
    let bodies = MemoryBodies::default();
    let (cache, blobs) = (MemoryCache::default(), MemoryBlobs::default());
    SessionBackend {
        files: Backend {
            meta: Arc::new(meta.clone()),
            bodies: Arc::new(bodies.clone()),
            secrets: Arc::new(MemorySecrets::default()),
            guard: Box::new(()),
        },
        sessions: Arc::new(MemorySessions::new(meta)),
        eraser: Arc::new(bodies),
        caps: workspace_contract::Capabilities {
            cache: Arc::new(cache.clone()),
            blobs: Arc::new(blobs.clone()),
        },
        more_erasers: vec![Arc::new(cache), Arc::new(blobs)],
    }
}

sessions_contract_tests!(backend);
