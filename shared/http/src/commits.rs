//! `POST /v1/host/workspace/commits`: puts, deletes and moves of several paths that apply
//! together or not at all (`WorkspaceService::commit_operations`).
//!
//! The body is strict, unlike a file PUT's: an unknown field or operation is a 400 naming
//! it, since a misspelt precondition silently ignored would make an atomic change
//! unconditional. `message` is accepted and logged with the commit, not stored.

use crate::envelope::{json_response, HttpResponse};
use crate::file_answer::meta_json;
use crate::files::{content_bytes, write_headers};
use bytes::Bytes;
use http::request::Parts;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::service::commits::{
    CommitAnswer, CommitOp, CommitRequest, OpResult, MAX_COMMIT_BYTES, MAX_COMMIT_OPERATIONS,
};
use workspace_core::{FilePath, Identity, Result, WorkspaceError, WorkspaceService};

/// Where the route is (its own request body bound: [`crate::App::max_request_bytes_for`]).
pub const COMMITS_PATH: &str = "/v1/host/workspace/commits";

/// Longest `message`, in bytes.
pub const MAX_COMMIT_MESSAGE_BYTES: usize = 1024;

/// Room in a commit's body for everything but the content: per operation its paths,
/// content type and preconditions (each bounded by the service), and the message.
const COMMIT_BODY_OVERHEAD: usize = 256 * 1024;

/// Largest commit body: every byte of [`MAX_COMMIT_BYTES`] sent as `contentBase64`, plus
/// [`COMMIT_BODY_OVERHEAD`]. Text sent as `content` counts its JSON escapes: a text that
/// escapes heavily near the limit goes as `contentBase64`.
pub fn max_commit_request_bytes() -> usize {
    let content = usize::try_from(MAX_COMMIT_BYTES).unwrap_or(usize::MAX);
    content
        .div_ceil(3)
        .saturating_mul(4)
        .saturating_add(COMMIT_BODY_OVERHEAD)
}

/// The 413 of a commit body over [`max_commit_request_bytes`].
pub fn body_too_large() -> WorkspaceError {
    WorkspaceError::TooLarge {
        message: format!(
            "request body is over {} bytes; a commit carries at most {MAX_COMMIT_BYTES} bytes of content (maxCommitBytes), all its puts together, base64-encoded or as text",
            max_commit_request_bytes()
        ),
        limit: MAX_COMMIT_BYTES,
    }
}

const SHAPE: &str = r#"{"operations": [{"op": "put", "path", "content" | "contentBase64", "contentType"?, "ifMatch"?, "ifNoneMatch"?: "*"} | {"op": "delete", "path", "ifMatch"?} | {"op": "move", "from", "to", "ifMatch"?, "ifNoneMatch"?: "*"}], "message"?: "<text>"}"#;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommitBody {
    /// Each parsed on its own, so an error names its index.
    operations: Vec<Value>,
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum OpBody {
    Put(PutOp),
    Delete(DeleteOp),
    Move(MoveOp),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PutOp {
    path: String,
    content: Option<String>,
    content_base64: Option<String>,
    content_type: Option<String>,
    if_match: Option<String>,
    if_none_match: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DeleteOp {
    path: String,
    if_match: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MoveOp {
    from: String,
    to: String,
    if_match: Option<String>,
    if_none_match: Option<String>,
}

/// A refusal of operation `i`'s input, naming it.
fn at(i: usize, e: WorkspaceError) -> WorkspaceError {
    match e {
        WorkspaceError::Validation(m) => {
            WorkspaceError::Validation(format!("operations[{i}]: {m}"))
        }
        other => other,
    }
}

fn path(i: usize, field: &str, p: &str) -> Result<FilePath> {
    FilePath::parse(p).map_err(|e| at(i, prefixed(field, e)))
}

fn prefixed(field: &str, e: WorkspaceError) -> WorkspaceError {
    match e {
        WorkspaceError::Validation(m) => WorkspaceError::Validation(format!("{field}: {m}")),
        other => other,
    }
}

/// `ifNoneMatch`: only `*` (the path must not exist).
fn none_match_any(i: usize, v: Option<String>) -> Result<bool> {
    match v.as_deref() {
        None => Ok(false),
        Some("*") => Ok(true),
        Some(other) => Err(WorkspaceError::validation(format!(
            "operations[{i}]: ifNoneMatch supports only \"*\" (the path must not exist), not {other:?}"
        ))),
    }
}

fn operation(i: usize, v: Value) -> Result<CommitOp> {
    let o: OpBody = serde_json::from_value(v).map_err(|e| {
        WorkspaceError::validation(format!(
            "operations[{i}]: {e} (an operation is {{\"op\": \"put\" | \"delete\" | \"move\", ...}})"
        ))
    })?;
    Ok(match o {
        OpBody::Put(p) => CommitOp::Put {
            path: path(i, "path", &p.path)?,
            content: content_bytes(p.content, p.content_base64, &format!("operations[{i}]"))?,
            content_type: p.content_type,
            if_match: p.if_match,
            if_none_match_any: none_match_any(i, p.if_none_match)?,
        },
        OpBody::Delete(d) => CommitOp::Delete {
            path: path(i, "path", &d.path)?,
            if_match: d.if_match,
        },
        OpBody::Move(m) => CommitOp::Move {
            from: path(i, "from", &m.from)?,
            to: path(i, "to", &m.to)?,
            if_match: m.if_match,
            if_none_match_any: none_match_any(i, m.if_none_match)?,
        },
    })
}

/// The request, as the service takes it, and the commit's message.
fn parse(parts: &Parts, body: &Bytes) -> Result<(CommitRequest, Option<String>)> {
    let (_, idempotency_key) = write_headers(parts)?;
    let b: CommitBody = serde_json::from_slice(body).map_err(|e| {
        WorkspaceError::validation(format!("body must be a JSON object {SHAPE}: {e}"))
    })?;
    if let Some(m) = &b.message {
        if m.len() > MAX_COMMIT_MESSAGE_BYTES {
            return Err(WorkspaceError::validation(format!(
                "message is {} bytes; at most {MAX_COMMIT_MESSAGE_BYTES}",
                m.len()
            )));
        }
    }
    // Counted before the operations are decoded, so a huge list is not.
    if b.operations.len() > MAX_COMMIT_OPERATIONS {
        return Err(WorkspaceError::TooLarge {
            message: format!(
                "{} operations; a commit holds at most {MAX_COMMIT_OPERATIONS} (maxCommitOperations)",
                b.operations.len()
            ),
            limit: MAX_COMMIT_OPERATIONS as u64,
        });
    }
    let operations = b
        .operations
        .into_iter()
        .enumerate()
        .map(|(i, v)| operation(i, v))
        .collect::<Result<Vec<_>>>()?;
    Ok((
        CommitRequest {
            operations,
            idempotency_key,
        },
        b.message,
    ))
}

pub async fn commit(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    body: &Bytes,
) -> Result<HttpResponse> {
    if body.len() > max_commit_request_bytes() {
        return Err(body_too_large());
    }
    let (req, message) = parse(parts, body)?;
    let operations = req.operations.len();
    let answer = service.commit_operations(who, req).await?;
    // The message is the caller's note on the change: logged, not stored.
    tracing::info!(
        tenant = %who.scope.tenant,
        workspace = %who.scope.workspace,
        principal = %who.principal,
        operations,
        replayed = answer.replayed,
        message = ?message.as_deref().unwrap_or(""),
        "commit"
    );
    Ok(json_response(StatusCode::OK, &answer_json(&answer)))
}

fn answer_json(a: &CommitAnswer) -> Value {
    let results: Vec<Value> = a
        .results
        .iter()
        .map(|r| match r {
            OpResult::Put(meta) => {
                let mut v = meta_json(meta);
                v["op"] = json!("put");
                v
            }
            OpResult::Delete { path, version } => {
                json!({ "op": "delete", "path": path, "version": version })
            }
            OpResult::Move {
                from,
                from_version,
                to,
            } => json!({ "op": "move", "from": from, "fromVersion": from_version, "to": meta_json(to) }),
        })
        .collect();
    json!({ "results": results, "replayed": a.replayed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(key: Option<&str>) -> Parts {
        let mut b = http::Request::builder().method("POST").uri(COMMITS_PATH);
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn refused(body: Value) -> String {
        let body = Bytes::from(body.to_string());
        match parse(&parts(None), &body) {
            Err(WorkspaceError::Validation(m)) => m,
            Err(other) => panic!("not a 400: {other:?}"),
            Ok(_) => panic!("accepted {body:?}"),
        }
    }

    #[test]
    fn parses_each_operation_and_the_key() {
        let body = json!({
            "message": "rename and save",
            "operations": [
                { "op": "put", "path": "a.md", "content": "A", "contentType": "text/markdown", "ifNoneMatch": "*" },
                { "op": "put", "path": "b.bin", "contentBase64": "AAE=", "ifMatch": "\"e1\"" },
                { "op": "delete", "path": "c.md" },
                { "op": "move", "from": "d.md", "to": "e/d.md", "ifNoneMatch": "*" },
            ],
        });
        let (req, message) = parse(&parts(Some("k1")), &Bytes::from(body.to_string())).unwrap();
        assert_eq!(message.as_deref(), Some("rename and save"));
        assert_eq!(req.idempotency_key.as_deref(), Some("k1"));
        let p = |s: &str| FilePath::parse(s).unwrap();
        assert_eq!(
            req.operations,
            vec![
                CommitOp::Put {
                    path: p("a.md"),
                    content: b"A".to_vec(),
                    content_type: Some("text/markdown".into()),
                    if_match: None,
                    if_none_match_any: true,
                },
                CommitOp::Put {
                    path: p("b.bin"),
                    content: vec![0, 1],
                    content_type: None,
                    if_match: Some("\"e1\"".into()),
                    if_none_match_any: false,
                },
                CommitOp::Delete {
                    path: p("c.md"),
                    if_match: None
                },
                CommitOp::Move {
                    from: p("d.md"),
                    to: p("e/d.md"),
                    if_match: None,
                    if_none_match_any: true,
                },
            ]
        );
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let m = refused(json!({ "operations": [], "note": "x" }));
        assert!(m.contains("note"), "{m}");
        let m = refused(json!({ "operations": [{ "op": "copy", "path": "a" }] }));
        assert!(m.contains("operations[0]") && m.contains("copy"), "{m}");
        let m = refused(json!({ "operations": [
            { "op": "delete", "path": "a" },
            { "op": "delete", "path": "b", "ifMatches": "x" },
        ] }));
        assert!(
            m.contains("operations[1]") && m.contains("ifMatches"),
            "{m}"
        );
        let m = refused(json!({ "operations": [{ "path": "a" }] }));
        assert!(m.contains("op"), "{m}");
        let m = refused(
            json!({ "operations": [{ "op": "put", "path": "a", "content": "x", "contentBase64": "eA==" }] }),
        );
        assert!(m.contains("not both"), "{m}");
        let m = refused(json!({ "operations": [{ "op": "put", "path": "a" }] }));
        assert!(m.contains("content"), "{m}");
        let m =
            refused(json!({ "operations": [{ "op": "put", "path": "a", "contentBase64": "!" }] }));
        assert!(m.contains("base64"), "{m}");
        let m = refused(json!({ "operations": [{ "op": "delete", "path": "../a" }] }));
        assert!(m.starts_with("operations[0]: path:"), "{m}");
        let m = refused(
            json!({ "operations": [{ "op": "move", "from": "a", "to": "b", "ifNoneMatch": "\"e\"" }] }),
        );
        assert!(m.contains("ifNoneMatch"), "{m}");
        let m = refused(json!({ "operations": [], "message": "x".repeat(1025) }));
        assert!(m.contains("message"), "{m}");
        let m = refused(json!([1]));
        assert!(m.starts_with("body must be a JSON object"), "{m}");
    }

    #[test]
    fn the_body_bound_takes_every_content_byte_in_base64() {
        let base64 = (MAX_COMMIT_BYTES as usize).div_ceil(3) * 4;
        assert!(max_commit_request_bytes() > base64 + 20 * 1024);
    }
}
