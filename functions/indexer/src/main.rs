//! The 'indexer' function: each workspace's search index object kept current from the
//! `workspace.updated` events an SQS queue hands it (see `lib.rs`).

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use fn_indexer::Indexer;
use lambda_runtime::{service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let aws = workspace_lambda::start().await?;
    let indexer = Indexer::new(
        aws.files()?
            .with_search(aws.search()?)
            .with_semantic(workspace_wiring::semantic::on_lambda(&aws.settings)),
    );
    let indexer = &indexer;
    lambda_runtime::run(service_fn(|e: LambdaEvent<SqsEvent>| async move {
        let answer = indexer.on_batch(&e.payload).await;
        workspace_lambda::metrics::events_processed("indexer", e.payload.records.len());
        Ok::<SqsBatchResponse, Error>(answer)
    }))
    .await
}
