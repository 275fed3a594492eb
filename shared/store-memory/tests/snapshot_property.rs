//! Issue 46's property on the in-memory store: every read through every live snapshot and
//! fork equals the model (`workspace_contract::snapshot_model`).

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::snapshot_model::{harness, op, run_case};
use workspace_contract::Backend;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_read_through_every_live_snapshot_and_fork_equals_the_model(
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let backend = Backend {
                    meta: Arc::new(MemoryMeta::default()),
                    bodies: Arc::new(MemoryBodies::default()),
                    secrets: Arc::new(MemorySecrets::default()),
                    guard: Box::new(()),
                };
                run_case(harness(backend).await, ops).await
            });
    }
}
