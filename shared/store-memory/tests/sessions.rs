//! The session contract suite against the in-memory adapters.

use std::sync::Arc;
use workspace_contract::sessions::SessionBackend;
use workspace_contract::{sessions_contract_tests, Backend};
use workspace_store_memory::sessions::MemorySessions;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

async fn backend() -> SessionBackend {
    let meta = MemoryMeta::default();
    let bodies = MemoryBodies::default();
    SessionBackend {
        files: Backend {
            meta: Arc::new(meta.clone()),
            bodies: Arc::new(bodies.clone()),
            secrets: Arc::new(MemorySecrets::default()),
            guard: Box::new(()),
        },
        sessions: Arc::new(MemorySessions::new(meta)),
        eraser: Arc::new(bodies),
    }
}

sessions_contract_tests!(backend);
