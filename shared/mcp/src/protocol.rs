//! MCP over JSON-RPC 2.0. Every message is answered from itself and the credential alone,
//! so the same code serves a Lambda invocation, a request to the local server, and a line on
//! stdio; responses are plain JSON, which Streamable HTTP allows for a POST.
//!
//! Hand-written rather than on the `rmcp` SDK: rmcp's Streamable HTTP server is a tower
//! service that owns routing, spawns a task per request and manages sessions/SSE, while this
//! endpoint is one row of our route table (`Request<Bytes>` → `Response<Bytes>`, the same on
//! Lambda) whose credential must reach the tools. The protocol surface is a dozen methods,
//! kept here and unit tested.
//!
//! What differs by transport is only whether notifications can reach the client, the
//! [`Link`]: on Lambda behind an HTTP API there is no stream (no response streaming, no
//! process between requests), so `resources.subscribe` is false and waiting for changes is
//! the `wait_for_changes` tool; the local server's sessions and stdio carry
//! `notifications/resources/updated` and `list_changed` ([`crate::sessions`]).

use crate::sessions::Subscriptions;
use crate::tools::{self, Workspace};
use serde_json::{json, Value};

/// What the transport carries besides answers.
#[derive(Debug, Clone, Copy)]
pub enum Link<'a> {
    /// Answers only (Lambda): no subscriptions.
    Answers,
    /// Notifications reach the client (the local server's sessions, stdio); the request's
    /// subscriptions, `None` on a request outside any session.
    Notifies(Option<&'a Subscriptions>),
}

impl Link<'_> {
    fn notifies(&self) -> bool {
        matches!(self, Link::Notifies(_))
    }
}

/// Handshake versions accepted, oldest first; an unknown request gets the newest.
pub const SUPPORTED_VERSIONS: &[&str] = workspace_http::discovery::MCP_PROTOCOL_VERSIONS;
pub const LATEST_VERSION: &str = "2025-11-25";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// The levels `logging/setLevel` takes (RFC 5424's, as MCP names them).
pub const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

const INSTRUCTIONS: &str = "A persistent, versioned file workspace. Paths are relative or under /workspace. \
Every write makes a new version; pass expected_version to write_file, edit_file or delete_file to fail \
instead of overwriting someone else's change. wait_for_changes answers when someone else changes a file. \
The files are also resources (workspace:///<path>, workspace:///<path>?version=<n>, workspace://snapshot/<id>/<path>).";

/// Most messages in one JSON-RPC batch; a larger batch is refused whole, before any runs.
pub const MAX_BATCH_MESSAGES: usize = 64;
/// Past this many bytes of answers, a batch's remaining requests are not run.
pub const MAX_BATCH_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// What a transport sends back for one incoming payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A response (or a batch of them): HTTP 200.
    Json(Value),
    /// Only notifications or responses came in: HTTP 202, no body.
    Accepted,
    /// The payload was not JSON-RPC at all: HTTP 400 with this error response.
    Invalid(Value),
}

pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// The server's name and version, as `initialize` and the health check report them.
pub fn server_info() -> Value {
    json!({ "name": crate::SERVER_NAME, "version": env!("CARGO_PKG_VERSION") })
}

/// Handles one payload on a transport that only answers (Lambda).
pub async fn handle_payload(ws: &Workspace<'_>, body: &[u8]) -> Reply {
    handle_payload_on(ws, Link::Answers, body).await
}

/// Handles one payload: a message, or a batch (2025-03-26 allowed them).
pub async fn handle_payload_on(ws: &Workspace<'_>, link: Link<'_>, body: &[u8]) -> Reply {
    // The waits of one payload share one deadline: a batch of waits ends when one would.
    let deadline = tools::watch::payload_deadline();
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Reply::Invalid(error_response(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ))
        }
    };
    match parsed {
        Value::Array(items) if items.is_empty() => Reply::Invalid(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: empty batch",
        )),
        Value::Array(items) if items.len() > MAX_BATCH_MESSAGES => Reply::Invalid(error_response(
            Value::Null,
            INVALID_REQUEST,
            &format!(
                "Invalid Request: a batch of {} messages; at most {MAX_BATCH_MESSAGES} per batch",
                items.len()
            ),
        )),
        Value::Array(items) => {
            let mut out = Vec::new();
            let mut answered = 0usize;
            for item in items {
                // Past the answer bound, the rest are not run: each gets a short error, so
                // the answer stays under the bound plus 64 of those.
                if answered > MAX_BATCH_ANSWER_BYTES {
                    if let Some(id) = item.get("id").filter(|_| item.get("method").is_some()) {
                        out.push(error_response(
                            id.clone(),
                            INVALID_REQUEST,
                            &format!(
                                "Not run: this batch's answer passed {MAX_BATCH_ANSWER_BYTES} bytes; send fewer messages per batch"
                            ),
                        ));
                    }
                    continue;
                }
                if let Some(r) = handle_message_until(ws, link, item, deadline).await {
                    answered += r.to_string().len();
                    out.push(r);
                }
            }
            if out.is_empty() {
                Reply::Accepted
            } else {
                Reply::Json(Value::Array(out))
            }
        }
        one => match handle_message_until(ws, link, one, deadline).await {
            Some(r) => Reply::Json(r),
            None => Reply::Accepted,
        },
    }
}

/// One JSON-RPC message; `None` when nothing is to be answered (notifications, responses).
pub async fn handle_message(ws: &Workspace<'_>, msg: Value) -> Option<Value> {
    handle_message_until(ws, Link::Answers, msg, tools::watch::payload_deadline()).await
}

/// The id of `msg` when it is a `tools/call` of the tool that waits (`wait_for_changes`):
/// a transport that answers messages one after another (stdio) runs these beside the rest.
pub fn waiting_call(msg: &Value) -> Option<&Value> {
    let waits = msg.get("method").and_then(Value::as_str) == Some("tools/call")
        && msg.pointer("/params/name").and_then(Value::as_str) == Some(tools::watch::NAME);
    msg.get("id").filter(|_| waits)
}

async fn handle_message_until(
    ws: &Workspace<'_>,
    link: Link<'_>,
    msg: Value,
    deadline: tokio::time::Instant,
) -> Option<Value> {
    let Value::Object(obj) = msg else {
        return Some(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a message is a JSON object",
        ));
    };
    let id = obj.get("id").cloned();
    let valid_id = matches!(&id, Some(Value::String(_)) | Some(Value::Number(_)));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(error_response(
            id.filter(|_| valid_id).unwrap_or(Value::Null),
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
        ));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        // A response to a request we never sent, or garbage without a method.
        if obj.contains_key("result") || obj.contains_key("error") {
            return None;
        }
        return Some(error_response(
            id.filter(|_| valid_id).unwrap_or(Value::Null),
            INVALID_REQUEST,
            "Invalid Request: no method",
        ));
    };
    let id = match id {
        // Notifications (`notifications/initialized`, `notifications/cancelled`, ...):
        // nothing is kept between messages, so there is nothing to do.
        None => return None,
        Some(id) if valid_id => id,
        Some(_) => {
            return Some(error_response(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or a number",
            ))
        }
    };
    let params = obj.get("params").cloned().unwrap_or_else(|| json!({}));
    Some(match dispatch(ws, link, method, &params, deadline).await {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err((code, message)) => error_response(id, code, &message),
    })
}

async fn dispatch(
    ws: &Workspace<'_>,
    link: Link<'_>,
    method: &str,
    params: &Value,
    deadline: tokio::time::Instant,
) -> Result<Value, (i64, String)> {
    let uri = || {
        params.get("uri").and_then(Value::as_str).ok_or((
            INVALID_PARAMS,
            format!("Invalid params: {method} needs a uri"),
        ))
    };
    match method {
        "initialize" => Ok(initialize(params, link)),
        "ping" => Ok(json!({})),
        "resources/list" => {
            let listed = crate::resources::list(ws, params).await?;
            if let Link::Notifies(Some(s)) = link {
                s.listed();
            }
            Ok(listed)
        }
        "resources/read" => crate::resources::read(ws, params).await,
        "resources/templates/list" => Ok(crate::resources::templates()),
        "resources/subscribe" | "resources/unsubscribe" => {
            let subscriptions = match link {
                Link::Answers => {
                    return Err((
                        METHOD_NOT_FOUND,
                        format!("Method not found: {method}: this deployment has no stream to notify on (resources.subscribe is false); wait with the wait_for_changes tool"),
                    ))
                }
                Link::Notifies(None) => {
                    return Err((
                        INVALID_REQUEST,
                        format!("{method} needs a session: send the Mcp-Session-Id that initialize answered, and read its notifications on GET /mcp"),
                    ))
                }
                Link::Notifies(Some(s)) => s,
            };
            if method == "resources/subscribe" {
                subscriptions.subscribe(ws.who, uri()?)?;
            } else {
                subscriptions.unsubscribe(uri()?)?;
            }
            Ok(json!({}))
        }
        "completion/complete" => crate::completion::complete(ws, params).await,
        "prompts/list" => Ok(crate::prompts::list()),
        "prompts/get" => crate::prompts::get(ws, params).await,
        "logging/setLevel" => {
            // Accepted and checked; it changes nothing, since this server sends no log
            // notifications (its logs go to its own log: stderr or CloudWatch).
            match params.get("level").and_then(Value::as_str) {
                Some(l) if LOG_LEVELS.contains(&l) => Ok(json!({})),
                _ => Err((
                    INVALID_PARAMS,
                    format!(
                        "Invalid params: level must be one of {}",
                        LOG_LEVELS.join(", ")
                    ),
                )),
            }
        }
        "tools/list" => Ok(json!({ "tools": tools::definitions() })),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).ok_or((
                INVALID_PARAMS,
                "Invalid params: tools/call needs a tool name".to_owned(),
            ))?;
            if !tools::exists(name) {
                return Err((INVALID_PARAMS, format!("Unknown tool: {name}")));
            }
            let empty = serde_json::Map::new();
            let args = match params.get("arguments") {
                None | Some(Value::Null) => &empty,
                Some(Value::Object(m)) => m,
                Some(_) => {
                    return Err((
                        INVALID_PARAMS,
                        "Invalid params: arguments must be an object".to_owned(),
                    ))
                }
            };
            Ok(tools::call_until(ws, name, args, deadline)
                .await
                .to_result())
        }
        other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"))),
    }
}

/// Version negotiation: the client's version if we speak it, else our newest (the client
/// then decides whether it can go on).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SUPPORTED_VERSIONS.iter().find(|v| **v == r).copied())
        .unwrap_or(LATEST_VERSION)
}

/// The capabilities served over `link`.
pub fn capabilities(link: Link<'_>) -> Value {
    let notifies = link.notifies();
    json!({
        "tools": { "listChanged": false },
        "resources": { "subscribe": notifies, "listChanged": notifies },
        "prompts": { "listChanged": false },
        "completions": {},
        "logging": {},
    })
}

fn initialize(params: &Value, link: Link<'_>) -> Value {
    json!({
        "protocolVersion": negotiate(params.get("protocolVersion").and_then(Value::as_str)),
        "capabilities": capabilities(link),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}
