//! `/mcp`: MCP Streamable HTTP as routes of the shared HTTP layer. The credential is
//! authenticated like every other route; the tools and resources then act on that
//! identity's workspace only. `GET /mcp/health` (and `GET /health` in the "mcp" Lambda
//! function) answers the workspace-tool health document.
//!
//! Sessions where the process holds them ([`Sessions`] in the app's extensions: the local
//! server): an `initialize` answer carries `Mcp-Session-Id`, `GET /mcp` opens the session's
//! notification stream ([`McpStream`], held open by the transport), `DELETE /mcp` ends it.
//! Without them (Lambda) every POST is answered alone and `GET`/`DELETE /mcp` are 405.

use crate::protocol::{error_response, INVALID_REQUEST, SUPPORTED_VERSIONS};
use crate::sessions::{Resume, Session, Sessions, SESSION_HEADER};
use crate::{handle_payload_on, Link, Reply, Workspace};
use http::request::Parts;
use http::{header, HeaderName, HeaderValue, StatusCode};
use std::sync::Arc;
use workspace_core::{Identity, Result, WorkspaceError, WorkspaceService};
use workspace_http::envelope::{
    empty_response, error_response as envelope, json_response, HttpResponse,
};
use workspace_http::request::single_header;
use workspace_http::routes::Route;
use workspace_http::{Call, Routes};

/// The MCP endpoint and its health document, wherever MCP is served.
pub const ROUTES: Routes = &[
    (Route::Mcp, mcp_post),
    (Route::McpStream, mcp_stream),
    (Route::McpEnd, mcp_end),
    (Route::McpHealth, mcp_health),
    (Route::Memory, memory_post),
];
/// The `mcp` Lambda function also answers `GET /health` with its own document, so a probe
/// of that function (Function URL, `sam local invoke`) finds it alive.
pub const FUNCTION_ROUTES: Routes = &[
    (Route::Mcp, mcp_post),
    (Route::McpStream, mcp_stream),
    (Route::McpEnd, mcp_end),
    (Route::McpHealth, mcp_health),
    (Route::Memory, memory_post),
    (Route::Health, mcp_health),
];

/// What the transport streams for `GET /mcp`: the notifications of `session` from
/// `resume` on.
#[derive(Debug, Clone)]
pub struct McpStream {
    pub session: Arc<Session>,
    pub resume: Resume,
}

fn sessions_of(app: &workspace_http::App) -> Option<&Arc<Sessions>> {
    app.extensions.get::<Arc<Sessions>>()
}

/// 405 where there is no session to stream or end: this process holds none (Lambda), or
/// the request names none. The transport's own answer for "no stream offered here".
fn no_sessions(method: &str) -> HttpResponse {
    let mut resp = envelope(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} /mcp acts on an MCP session, named by the Mcp-Session-Id an initialize answered where the server holds sessions (the local server; not AWS, where every POST is answered alone); use POST, and the wait_for_changes tool to wait for changes"),
        None,
    );
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    resp
}

/// The session a request names: `Ok(None)` when it names none; 404 (as the transport
/// says, so the client initializes again) for one that ended or is another credential's.
fn named_session(
    sessions: &Sessions,
    parts: &Parts,
    who: &Identity,
) -> Result<std::result::Result<Option<Arc<Session>>, HttpResponse>> {
    let name = HeaderName::from_static(SESSION_HEADER);
    let Some(id) = single_header(parts, &name)? else {
        return Ok(Ok(None));
    };
    Ok(match sessions.find(id, who) {
        Some(s) => Ok(Some(s)),
        None => Err(json_response(
            StatusCode::NOT_FOUND,
            &error_response(
                serde_json::Value::Null,
                -32001,
                "Session not found: it ended (DELETE, idle expiry or a restart) or was never this credential's; initialize again",
            ),
        )),
    })
}

fn mcp_stream(c: Call<'_>) -> workspace_http::Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        let Some(sessions) = sessions_of(c.app) else {
            return Ok(no_sessions("GET"));
        };
        let session = match named_session(sessions, c.parts, &who)? {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(no_sessions("GET")),
            Err(not_found) => return Ok(not_found),
        };
        let accepts = c
            .parts
            .headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream") || v.contains("*/*"));
        if !accepts {
            return Ok(envelope(
                StatusCode::NOT_ACCEPTABLE,
                "not_acceptable",
                "GET /mcp answers server-sent events: send Accept: text/event-stream",
                None,
            ));
        }
        let resume = match c.parts.headers.get("last-event-id") {
            None => Resume {
                after: session.delivered.load(std::sync::atomic::Ordering::SeqCst),
                skip_through: None,
            },
            Some(v) => v.to_str().ok().and_then(Resume::parse).ok_or_else(|| {
                WorkspaceError::validation(
                    "Last-Event-ID must be an event id this stream sent (<position> or <position>-<index>)",
                )
            })?,
        };
        let mut resp = empty_response(StatusCode::OK);
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        resp.extensions_mut().insert(McpStream { session, resume });
        Ok(resp)
    })
}

fn mcp_end(c: Call<'_>) -> workspace_http::Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        let Some(sessions) = sessions_of(c.app) else {
            return Ok(no_sessions("DELETE"));
        };
        let name = HeaderName::from_static(SESSION_HEADER);
        let Some(id) = single_header(c.parts, &name)? else {
            return Ok(no_sessions("DELETE"));
        };
        if sessions.end(id, &who) {
            Ok(empty_response(StatusCode::NO_CONTENT))
        } else {
            Err(WorkspaceError::NotFound(
                "no such MCP session for this credential".to_owned(),
            ))
        }
    })
}

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
        let sessions = sessions_of(c.app).map(|s| (s.as_ref(), c.app.events.as_ref()));
        post(c.app.files()?, &who, c.parts, c.body, sessions).await
    })
}

/// Whether `body` is one `initialize` request (a batch never makes a session).
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| {
        v.get("method").and_then(serde_json::Value::as_str) == Some("initialize")
            && v.get("id").is_some()
    })
}

pub fn health() -> HttpResponse {
    json_response(StatusCode::OK, &crate::health())
}

/// One POST. `sessions`: the process's sessions and the outbox their streams read, where
/// it holds them.
pub async fn post(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    body: &[u8],
    sessions: Option<(
        &Sessions,
        Option<&Arc<dyn workspace_core::events::EventLog>>,
    )>,
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
    let mut made = None;
    let session = match sessions {
        None => None,
        Some((sessions, log)) => match named_session(sessions, parts, who)? {
            Err(not_found) => return Ok(not_found),
            Ok(Some(s)) => Some(s),
            Ok(None) if is_initialize(body) => {
                // Notifications start at the change log's end as it is now.
                let from = match log {
                    Some(log) => log.last_position().await?,
                    None => 0,
                };
                match sessions.open(who, from) {
                    Ok(s) => {
                        made = Some(s.id.clone());
                        Some(s)
                    }
                    Err(crate::sessions::Full) => {
                        let mut refused = envelope(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "unavailable",
                            "the server holds its maximum of MCP sessions, each with an open stream (WORKSPACE_MCP_MAX_SESSIONS); retry shortly",
                            None,
                        );
                        refused
                            .headers_mut()
                            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                        return Ok(refused);
                    }
                }
            }
            Ok(None) => None,
        },
    };
    let link = match sessions {
        None => Link::Answers,
        Some(_) => Link::Notifies(session.as_ref().map(|s| &s.subscriptions)),
    };
    let mut resp = match handle_payload_on(&ws, link, body).await {
        Reply::Json(v) => json_response(StatusCode::OK, &v),
        Reply::Accepted => empty_response(StatusCode::ACCEPTED),
        Reply::Invalid(v) => json_response(StatusCode::BAD_REQUEST, &v),
    };
    if let Some(id) = made.and_then(|id| HeaderValue::from_str(&id).ok()) {
        resp.headers_mut().insert(SESSION_HEADER, id);
    }
    Ok(resp)
}
