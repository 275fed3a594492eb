//! The merge model (`workspace_contract::merge_model`) on the AWS adapters (moto); fewer
//! cases than on the local stores.

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::merge_model::{op, run_case, CONTENTS, PATHS, STRATEGIES};
use workspace_contract::{Backend, Harness};
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

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
                let env = common::fresh(None).await;
                let backend = Backend {
                    meta: Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), env.table.clone())),
                    bodies: Arc::new(S3Bodies::new(env.clients.s3.clone(), env.bucket)),
                    secrets: Arc::new(DynamoSecrets::new(env.clients.dynamodb.clone(), env.table.clone())),
                    guard: Box::new(()),
                };
                run_case(Harness::new(backend).await, seed, ops, STRATEGIES[strategy]).await
            });
    }
}
