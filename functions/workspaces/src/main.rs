//! The 'workspaces' function: workspaces, artifacts and sessions (`/workspaces...`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("workspaces").await
}
