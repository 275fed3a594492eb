//! The model properties (`workspace_contract::snapshot_model`, `merge_model`) on the in-memory store:
//! every read through every live snapshot and fork equals the model, and a fork's merge
//! leaves the workspace as the merge model says.

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::merge_model::{self, CONTENTS, PATHS, STRATEGIES};
use workspace_contract::snapshot_model;
use workspace_contract::{Backend, Harness};
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

async fn backend() -> Backend {
    Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    }
}

/// Runs `case` on a runtime of its own (proptest cases are synchronous).
fn block_on(case: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(case);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_read_through_every_live_snapshot_and_fork_equals_the_model(
        ops in proptest::collection::vec(snapshot_model::op(), 1..24),
    ) {
        block_on(async {
            snapshot_model::run_case(snapshot_model::harness(backend().await).await, ops).await
        });
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_merge_leaves_the_workspace_as_the_model_says(
        seed in proptest::collection::vec((0..PATHS.len(), 0..CONTENTS.len()), 0..4),
        ops in proptest::collection::vec(merge_model::op(), 0..10),
        strategy in 0..STRATEGIES.len(),
    ) {
        block_on(async {
            let h = Harness::new(backend().await).await;
            merge_model::run_case(h, seed, ops, STRATEGIES[strategy]).await
        });
    }
}
