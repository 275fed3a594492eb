//! The 'purge' function: on a schedule, erases workspaces idle longer than
//! WORKSPACE_PURGE_AFTER_DAYS. An event `{"dryRun": true}` only lists them.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    workspace_lambda::sessions::run_purge().await
}
