//! The workspace service for agent sessions on Lambda: the `workspaces` function's
//! service, and the scheduled inactivity purge (`functions/purge`).

use crate::{init_tracing, required};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_core::ports::{BodyStore, RandomIds, SystemClock};
use workspace_core::sessions::ports::{BodyEraser, SessionStore};
use workspace_core::sessions::token::TokenKey;
use workspace_core::sessions::SessionService;
use workspace_http::config::{session_limits_from_env, token_key_from_env};
use workspace_store_aws::sessions::{workspace_erasers, DynamoSessions};
use workspace_store_aws::{AwsClients, S3Bodies};

/// The function that serves `/workspaces`.
pub const FUNCTION: &str = "workspaces";

/// The session store, and what a workspace delete erases by its key prefix (the first is
/// the file bodies' eraser).
pub type Stores = (Arc<dyn SessionStore>, Vec<Arc<dyn BodyEraser>>);

/// On AWS: the main table and bucket, plus the RFC 0019 cache table and blob bucket where
/// the stack has them (`WORKSPACE_CACHE_TABLE`, `WORKSPACE_BLOB_S3_BUCKET`), so a deleted
/// or purged workspace leaves no blob or cache entry behind.
pub fn aws_stores(
    get: &impl Fn(&str) -> Option<String>,
    clients: &AwsClients,
    table: &str,
    bucket: &str,
) -> Stores {
    (
        Arc::new(DynamoSessions::new(clients.dynamodb.clone(), table)),
        workspace_erasers(get, clients, bucket),
    )
}

/// The service over `stores` with every eraser wired in.
fn assemble(
    (store, erasers): Stores,
    bodies: Arc<dyn BodyStore>,
    key: TokenKey,
    limits: workspace_core::sessions::SessionLimits,
) -> Result<SessionService, Error> {
    Ok(SessionService::new(
        store,
        bodies,
        erasers,
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        key,
        limits,
    ))
}

/// The service, with its paging-token key from `WORKSPACE_SESSION_TOKEN_KEY` (the
/// template resolves it from a generated Secrets Manager secret). Required on AWS, where
/// every container must verify the others' tokens; a laptop run without it gets a key
/// per process.
pub fn service(
    get: &impl Fn(&str) -> Option<String>,
    on_aws: bool,
    stores: Stores,
    bodies: Arc<dyn BodyStore>,
) -> Result<SessionService, Error> {
    let key = match token_key_from_env(get)? {
        Some(k) => k,
        None if on_aws => return Err("WORKSPACE_SESSION_TOKEN_KEY must be set".into()),
        None => {
            tracing::warn!(
                "WORKSPACE_SESSION_TOKEN_KEY is not set: paging tokens last one process"
            );
            TokenKey::random()
        }
    };
    assemble(stores, bodies, key, session_limits_from_env(get)?)
}

/// One purge run; the answer lists what was erased (or would be, in a dry run).
pub async fn purge_handler(svc: &SessionService, event: &Value) -> Result<Value, Error> {
    let dry_run = event
        .get("dryRun")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let report = svc.purge(dry_run).await?;
    Ok(json!({
        "dryRun": report.dry_run,
        "cutoff": workspace_core::model::format_time(report.cutoff),
        "workspaces": report
            .workspaces
            .iter()
            .map(|w| json!({ "tenantId": w.tenant, "workspaceId": w.workspace_id }))
            .collect::<Vec<_>>(),
    }))
}

pub async fn run_purge() -> Result<(), Error> {
    init_tracing();
    let get = |k: &str| std::env::var(k).ok();
    let clients = AwsClients::from_env().await;
    let table = required(&get, "WORKSPACE_TABLE")?;
    let bucket = required(&get, "WORKSPACE_BUCKET")?;
    let stores = aws_stores(&get, &clients, &table, &bucket);
    let bodies = Arc::new(S3Bodies::new(clients.s3.clone(), bucket));
    // Purging issues no paging tokens; any key will do.
    let svc = Arc::new(assemble(
        stores,
        bodies,
        TokenKey::random(),
        session_limits_from_env(&get)?,
    )?);
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<Value>| {
        let svc = svc.clone();
        async move { purge_handler(&svc, &ev.payload).await }
    }))
    .await
}
