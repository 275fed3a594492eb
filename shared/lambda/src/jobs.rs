//! The non-HTTP functions: the stream publisher, the orphan sweeper and the API-key
//! authorizer. Their handlers are
//! plain async fns over already-built parts, so tests call them with recorded events.

use crate::authorizer::authorize;
use crate::identity::ClaimNames;
use crate::{init_tracing, required};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_core::ports::{Clock, SystemClock};
use workspace_http::config::env_u64;
use workspace_store_aws::events::{records_from_lambda_event, EventBridgeSink};
use workspace_store_aws::keys_table::DynamoKeys;
use workspace_store_aws::publisher::Publisher;
use workspace_store_aws::sweeper::Sweeper;
use workspace_store_aws::{AwsClients, S3Bodies};

/// One stream batch; the answer is Lambda's partial-batch response.
pub async fn publish_handler(publisher: &Publisher, event: &Value) -> Value {
    let records = records_from_lambda_event(event);
    let failed = publisher.process(&records).await;
    json!({
        "batchItemFailures": failed
            .into_iter()
            .map(|id| json!({ "itemIdentifier": id }))
            .collect::<Vec<_>>()
    })
}

pub async fn run_publish() -> Result<(), Error> {
    init_tracing();
    let get = |k: &str| std::env::var(k).ok();
    let clients = AwsClients::from_env().await;
    let publisher = Arc::new(Publisher {
        sink: EventBridgeSink::new(
            clients.eventbridge.clone(),
            required(&get, "WORKSPACE_EVENT_BUS")?,
        ),
        bodies: S3Bodies::new(clients.s3.clone(), required(&get, "WORKSPACE_BUCKET")?),
    });
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<Value>| {
        let publisher = publisher.clone();
        async move { Ok::<_, Error>(publish_handler(&publisher, &ev.payload).await) }
    }))
    .await
}

/// One sweep; the answer says how many versions were looked at and deleted.
pub async fn sweep_handler(
    sweeper: &Sweeper,
    now_ms: i64,
    grace_secs: u64,
) -> Result<Value, Error> {
    let grace_ms = i64::try_from(grace_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    let report = sweeper.sweep(now_ms, grace_ms).await?;
    Ok(json!({ "examined": report.examined, "deleted": report.deleted }))
}

pub async fn run_sweep() -> Result<(), Error> {
    init_tracing();
    let get = |k: &str| std::env::var(k).ok();
    let grace = env_u64(&get, "WORKSPACE_ORPHAN_GRACE_SECONDS", 3600)?;
    let clients = AwsClients::from_env().await;
    let sweeper = Arc::new(Sweeper {
        s3: clients.s3.clone(),
        dynamodb: clients.dynamodb.clone(),
        bucket: required(&get, "WORKSPACE_BUCKET")?,
        table: required(&get, "WORKSPACE_TABLE")?,
    });
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| {
        let sweeper = sweeper.clone();
        async move { sweep_handler(&sweeper, SystemClock.now_ms(), grace).await }
    }))
    .await
}

pub async fn run_authorizer() -> Result<(), Error> {
    init_tracing();
    let get = |k: &str| std::env::var(k).ok();
    let clients = AwsClients::from_env().await;
    let store = Arc::new(DynamoKeys::new(
        clients.dynamodb.clone(),
        required(&get, "WORKSPACE_TABLE")?,
    ));
    let names = Arc::new(ClaimNames::from_env(get));
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<Value>| {
        let (store, names) = (store.clone(), names.clone());
        async move { Ok::<_, Error>(authorize(store.as_ref(), &names, &ev.payload).await) }
    }))
    .await
}
