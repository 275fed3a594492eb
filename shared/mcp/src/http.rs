//! `POST /mcp`: MCP Streamable HTTP, stateless, as routes of the shared HTTP layer. The
//! credential is authenticated like every other route; the tools then act on that
//! identity's workspace only. `GET /mcp/health` (and `GET /health` in the "mcp" Lambda
//! function) answers the workspace-tool health document.

use crate::protocol::{error_response, INVALID_REQUEST, SUPPORTED_VERSIONS};
use crate::{handle_payload, Reply, Workspace};
use http::request::Parts;
use http::{HeaderName, StatusCode};
use workspace_core::{Identity, Result, WorkspaceService};
use workspace_http::envelope::{empty_response, json_response, HttpResponse};
use workspace_http::request::single_header;
use workspace_http::routes::Route;
use workspace_http::{Call, Routes};

/// The MCP endpoint and its health document, wherever MCP is served.
pub const ROUTES: Routes = &[
    (Route::Mcp, mcp_post),
    (Route::McpHealth, mcp_health),
    (Route::Memory, memory_post),
];
/// The `mcp` Lambda function also answers `GET /health` with its own document, so a probe
/// of that function (Function URL, `sam local invoke`) finds it alive.
pub const FUNCTION_ROUTES: Routes = &[
    (Route::Mcp, mcp_post),
    (Route::McpHealth, mcp_health),
    (Route::Memory, memory_post),
    (Route::Health, mcp_health),
];

fn mcp_health(_: Call<'_>) -> workspace_http::Reply<'_> {
    Box::pin(async { Ok(health()) })
}

/// Claude's memory tool over HTTP: the same commands as the `memory` MCP tool.
fn memory_post(c: Call<'_>) -> workspace_http::Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        if c.body.len() > c.app.max_file_request_bytes() {
            return Ok(c.app.body_too_large());
        }
        workspace_http::memory::post(c.app.files()?, &who, c.body).await
    })
}

fn mcp_post(c: Call<'_>) -> workspace_http::Reply<'_> {
    Box::pin(async move {
        // Scopes are checked per tool: a read-only credential lists and reads.
        let who = c.identify().await?;
        if c.body.len() > c.app.max_request_bytes() {
            return Ok(c.app.body_too_large());
        }
        post(c.app.files()?, &who, c.parts, c.body).await
    })
}

pub fn health() -> HttpResponse {
    json_response(StatusCode::OK, &crate::health())
}

pub async fn post(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    body: &[u8],
) -> Result<HttpResponse> {
    // After the handshake clients send the negotiated version on every request; one we
    // never offered is a 400 (Streamable HTTP transport rule).
    let header = HeaderName::from_static("mcp-protocol-version");
    if let Some(v) = single_header(parts, &header)? {
        if !SUPPORTED_VERSIONS.contains(&v) {
            let msg = format!(
                "Unsupported MCP-Protocol-Version {}; supported: {}",
                v.escape_debug(),
                SUPPORTED_VERSIONS.join(", ")
            );
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                &error_response(serde_json::Value::Null, INVALID_REQUEST, &msg),
            ));
        }
    }
    let ws = Workspace { service, who };
    Ok(match handle_payload(&ws, body).await {
        Reply::Json(v) => json_response(StatusCode::OK, &v),
        Reply::Accepted => empty_response(StatusCode::ACCEPTED),
        Reply::Invalid(v) => json_response(StatusCode::BAD_REQUEST, &v),
    })
}
