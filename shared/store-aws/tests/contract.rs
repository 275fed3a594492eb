//! The shared contract suite, unchanged, against the AWS adapters on the moto emulator.

use std::sync::Arc;
use workspace_contract::{contract_tests, Backend};
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

contract_tests!(backend);
