//! The model properties (`workspace_contract::snapshot_model`, `merge_model`) on the AWS adapters on moto (fewer cases: each step is several emulator calls):
//! every read through every live snapshot and fork equals the model, and a fork's merge
//! leaves the workspace as the merge model says.

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::merge_model::{self, CONTENTS, PATHS, STRATEGIES};
use workspace_contract::snapshot_model;
use workspace_contract::{Backend, Harness};
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

async fn backend() -> Backend {
    let env = common::fresh(None).await;
    Backend {
        meta: Arc::new(DynamoMeta::new(
            env.clients.dynamodb.clone(),
            env.table.clone(),
        )),
        bodies: Arc::new(S3Bodies::new(env.clients.s3.clone(), env.bucket)),
        secrets: Arc::new(DynamoSecrets::new(
            env.clients.dynamodb.clone(),
            env.table.clone(),
        )),
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
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

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
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

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
