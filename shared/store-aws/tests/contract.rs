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
workspace_contract::semantic_tests!(backend);

/// The RFC 0019 cases (blobs with S3 presigning, the DynamoDB cache) on the emulator.
async fn with_capabilities() -> (Backend, workspace_contract::Capabilities) {
    let env = common::fresh(None).await;
    let caps_env = common::fresh_capabilities().await;
    let caps = workspace_contract::Capabilities {
        cache: Arc::new(workspace_store_aws::DynamoCache::new(
            env.clients.dynamodb.clone(),
            caps_env.cache_table,
        )),
        blobs: Arc::new(workspace_store_aws::S3Blobs::new(
            env.clients.s3.clone(),
            caps_env.blob_bucket,
        )),
    };
    let backend = Backend {
        meta: Arc::new(DynamoMeta::new(
            env.clients.dynamodb.clone(),
            env.table.clone(),
        )),
        bodies: Arc::new(S3Bodies::new(env.clients.s3.clone(), env.bucket)),
        secrets: Arc::new(DynamoSecrets::new(env.clients.dynamodb.clone(), env.table)),
        guard: Box::new(()),
    };
    (backend, caps)
}

mod capabilities {
    use super::with_capabilities;
    workspace_contract::capability_tests!(with_capabilities);
}

/// Crash points on the emulator; the recovery is the scheduled sweeper's own run, as if a
/// day had passed (every orphan past its grace, every staged object past its age).
async fn with_recovery() -> (Backend, workspace_contract::faults::Recovery) {
    swept_after(2 * 24 * 3600 * 1000).await
}

/// [`with_recovery`], swept as if an hour had passed: every orphan past its grace, while a
/// merge's plan (kept a day, for its retry) still lives.
async fn with_recovery_within_the_hour() -> (Backend, workspace_contract::faults::Recovery) {
    swept_after(3600 * 1000).await
}

/// A fresh backend, and its recovery: the sweeper run `later_ms` from now, grace 0.
async fn swept_after(later_ms: i64) -> (Backend, workspace_contract::faults::Recovery) {
    use workspace_core::ports::{Clock, SystemClock};
    let env = common::fresh(None).await;
    let sweeper = Arc::new(workspace_store_aws::sweeper::Sweeper {
        s3: env.clients.s3.clone(),
        dynamodb: env.clients.dynamodb.clone(),
        bucket: env.bucket.clone(),
        table: env.table.clone(),
    });
    let swept = sweeper.clone();
    let recovery = workspace_contract::faults::Recovery {
        sweep: Box::new(move || {
            let s = swept.clone();
            Box::pin(async move {
                let later = SystemClock.now_ms() + later_ms;
                Ok(s.sweep(later, 0).await?.deleted as u64)
            })
        }),
        inventory: sweeper,
        // Events come from the table's stream, which carries exactly the committed items.
        events: None,
    };
    let backend = Backend {
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
    };
    (backend, recovery)
}

mod faults {
    use super::{with_recovery, with_recovery_within_the_hour};
    workspace_contract::fault_tests!(with_recovery);
    workspace_contract::merge_atomicity_tests!(with_recovery_within_the_hour, 0);
}
