//! The 'workspaces' function: the session service (`SessionService`) (workspaces,
//! artifacts, session history). S3 + DynamoDB; a delete also erases the workspace's
//! cache partition and blobs where the stack has them.

use std::sync::Arc;
use workspace_http::sessions;
use workspace_wiring::services;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    // Every container must verify the others' paging tokens: one key, from the stack.
    let key = s
        .session_token_key
        .clone()
        .ok_or("WORKSPACE_SESSION_TOKEN_KEY must be set")?;
    let sessions = services::sessions(s, aws.sessions()?, aws.bodies()?, aws.erasers()?, key);
    // A workspace deleted with ?force=true discards its forks, erased like the workspace.
    let files = aws
        .files()?
        .with_scope_eraser(services::scope_eraser(aws.sessions()?, aws.erasers()?));
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .with_sessions(Arc::new(sessions))
        .serve(sessions::ROUTES);
    workspace_lambda::run(app).await
}
