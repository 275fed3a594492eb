//! The 'publish' function: DynamoDB stream → `workspace.updated` on EventBridge, and
//! deletion of pruned S3 body versions. See `workspace_store_aws::publisher`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use workspace_store_aws::events::records_from_lambda_event;
use workspace_store_aws::publisher::Publisher;

/// One stream batch; the answer is Lambda's partial-batch response.
async fn publish(publisher: &Publisher, event: &Value) -> Value {
    let records = records_from_lambda_event(event);
    let failed = publisher.process(&records).await;
    workspace_lambda::metrics::events_processed("publish", records.len());
    json!({
        "batchItemFailures": failed
            .into_iter()
            .map(|id| json!({ "itemIdentifier": id }))
            .collect::<Vec<_>>()
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let aws = workspace_lambda::start().await?;
    let publisher = aws.publisher()?;
    let publisher = &publisher;
    lambda_runtime::run(service_fn(|ev: LambdaEvent<Value>| async move {
        Ok::<_, Error>(publish(publisher, &ev.payload).await)
    }))
    .await
}
