//! The 'publish' function: DynamoDB stream → `workspace.updated` on EventBridge, and
//! deletion of pruned S3 body versions. See `workspace_store_aws::publisher`.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    workspace_lambda::jobs::run_publish().await
}
