//! The 'mcp' function: `POST /mcp` (the workspace as MCP tools, stateless Streamable HTTP)
//! and its health check, over the same service and identity as the file routes.

use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let files = aws.files()?;
    let app = workspace_lambda::app(s)
        .with_files(files)
        .serve(workspace_mcp::http::FUNCTION_ROUTES);
    workspace_lambda::run(app).await
}
