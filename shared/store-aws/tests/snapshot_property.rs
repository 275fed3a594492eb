//! Issue 46's property on the AWS adapters (DynamoDB and S3 on moto): every read through
//! every live snapshot and fork equals the model (`workspace_contract::snapshot_model`).
//! Fewer and shorter cases than on the local stores: each step is several emulator calls.

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::snapshot_model::{harness, op, run_case};
use workspace_contract::Backend;
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_read_through_every_live_snapshot_and_fork_equals_the_model(
        ops in proptest::collection::vec(op(), 1..16),
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
                run_case(harness(backend).await, ops).await
            });
    }
}
