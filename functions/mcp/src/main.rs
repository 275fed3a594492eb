//! The 'mcp' function: `POST /mcp` (the workspace as MCP tools, stateless Streamable HTTP)
//! and its health check, over the same service and identity as the file routes.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("mcp").await
}
