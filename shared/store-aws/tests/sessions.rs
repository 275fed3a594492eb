//! The session contract suite against the AWS adapters on the moto emulator.

use std::sync::Arc;
use workspace_contract::sessions::SessionBackend;
use workspace_contract::{sessions_contract_tests, Backend};
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::sessions::{DynamoSessions, PartitionEraser, S3Eraser};
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoCache, DynamoMeta, S3Blobs, S3Bodies};

async fn backend() -> SessionBackend {
    let env = common::fresh(None).await;
    let caps = common::fresh_capabilities().await;
    let ddb = env.clients.dynamodb.clone();
    let s3 = env.clients.s3.clone();
    SessionBackend {
        files: Backend {
            meta: Arc::new(DynamoMeta::new(ddb.clone(), env.table.clone())),
            bodies: Arc::new(S3Bodies::new(env.clients.s3.clone(), env.bucket.clone())),
            secrets: Arc::new(DynamoSecrets::new(ddb.clone(), env.table.clone())),
            guard: Box::new(()),
        },
        sessions: Arc::new(DynamoSessions::new(ddb.clone(), env.table)),
        eraser: Arc::new(S3Eraser::new(s3.clone(), env.bucket)),
        caps: workspace_contract::Capabilities {
            cache: Arc::new(DynamoCache::new(ddb.clone(), caps.cache_table.clone())),
            blobs: Arc::new(S3Blobs::new(s3.clone(), caps.blob_bucket.clone())),
        },
        more_erasers: vec![
            Arc::new(PartitionEraser::new(ddb, caps.cache_table)),
            Arc::new(S3Eraser::new(s3, caps.blob_bucket)),
        ],
    }
}

sessions_contract_tests!(backend);
