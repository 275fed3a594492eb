//! The 'sweep' function: on a schedule, deletes S3 body versions no commit points to.
//! See `workspace_store_aws::sweeper`.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    workspace_lambda::jobs::run_sweep().await
}
