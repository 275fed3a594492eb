//! The 'mcp' function: `POST /mcp` (the workspace as MCP tools, stateless Streamable HTTP)
//! and its health check, over the same service and identity as the file routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws
        .files()?
        .with_search(aws.search()?)
        .with_semantic(workspace_wiring::semantic::on_lambda(&aws.settings));
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(workspace_mcp::http::FUNCTION_ROUTES);
    workspace_lambda::run(app).await
}
