//! The merge model (`workspace_contract::merge_model`) on the in-memory store.

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::merge_model::{op, run_case, CONTENTS, PATHS, STRATEGIES};
use workspace_contract::{Backend, Harness};
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_merge_leaves_the_workspace_as_the_model_says(
        seed in proptest::collection::vec((0..PATHS.len(), 0..CONTENTS.len()), 0..4),
        ops in proptest::collection::vec(op(), 0..10),
        strategy in 0..STRATEGIES.len(),
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
                run_case(Harness::new(backend).await, seed, ops, STRATEGIES[strategy]).await
            });
    }
}
