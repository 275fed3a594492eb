//! The 'index' function: an example `workspace.updated` subscriber (see `lib.rs`), behind
//! an EventBridge rule on the stack's bus for paths under `INDEX_PREFIX`.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use fn_index::{IndexKeeper, Outcome};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use workspace_core::events::WorkspaceEvent;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let aws = workspace_lambda::start().await?;
    let keeper = IndexKeeper::new(
        aws.files()?,
        &std::env::var("INDEX_PREFIX").unwrap_or_else(|_| "memory/".to_owned()),
        &std::env::var("INDEX_PATH").unwrap_or_else(|_| "memory/INDEX.md".to_owned()),
    )?;
    let keeper = &keeper;
    lambda_runtime::run(service_fn(
        |e: LambdaEvent<EventBridgeEvent<WorkspaceEvent>>| async move {
            let outcome = keeper.on_event(&e.payload.detail).await;
            workspace_lambda::metrics::events_processed("index", 1);
            let outcome = outcome?;
            tracing::info!(?outcome, path = %e.payload.detail.path, "handled");
            Ok::<Outcome, Error>(outcome)
        },
    ))
    .await
}
