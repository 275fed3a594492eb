//! The session contract suite against the AWS adapters on the moto emulator.

use std::sync::Arc;
use workspace_contract::sessions::SessionBackend;
use workspace_contract::{sessions_contract_tests, Backend};
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::sessions::{DynamoSessions, S3Eraser};
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

async fn backend() -> SessionBackend {
    let env = common::fresh(None).await;
    let ddb = env.clients.dynamodb.clone();
    SessionBackend {
        files: Backend {
            meta: Arc::new(DynamoMeta::new(ddb.clone(), env.table.clone())),
            bodies: Arc::new(S3Bodies::new(env.clients.s3.clone(), env.bucket.clone())),
            secrets: Arc::new(DynamoSecrets::new(ddb.clone(), env.table.clone())),
            guard: Box::new(()),
        },
        sessions: Arc::new(DynamoSessions::new(ddb, env.table)),
        eraser: Arc::new(S3Eraser::new(env.clients.s3.clone(), env.bucket)),
    }
}

sessions_contract_tests!(backend);
