//! `POST /mcp`: MCP Streamable HTTP, stateless. The credential is authenticated like every
//! other route before this runs; the tools then act on that identity's workspace only.
//! `GET /mcp/health` (and `GET /health` when the process is the "mcp" Lambda function)
//! answers the workspace-tool health document.

use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::request::single_header;
use http::request::Parts;
use http::{HeaderName, StatusCode};
use workspace_core::{Identity, Result, WorkspaceService};
use workspace_mcp::protocol::{error_response, INVALID_REQUEST, SUPPORTED_VERSIONS};
use workspace_mcp::{handle_payload, Reply, Workspace};

pub fn health() -> HttpResponse {
    json_response(StatusCode::OK, &workspace_mcp::health())
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
