//! Run snapshots and checkpoints: `POST|GET /v1/host/workspace/snapshots`,
//! `GET|DELETE .../snapshots/{id}`. Reads through a snapshot are `?snapshot=ID` on the file
//! list and get (see `files.rs`).

use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::model::{format_time, parse_time, Millis, Snapshot, SnapshotInfo, NEVER};
use workspace_core::service::{RestoreRequest, Since, SnapshotOptions, SNAPSHOT_ANSWER_FILES};
use workspace_core::{Identity, Result, WorkspaceError, WorkspaceService};

/// `{label?, keep?}`; an empty body is `{}`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    label: Option<String>,
    #[serde(default)]
    keep: bool,
}

fn expiry(at: Millis) -> Value {
    if at == NEVER {
        Value::Null
    } else {
        Value::String(format_time(at))
    }
}

fn info_json(s: &SnapshotInfo) -> Value {
    let mut v = json!({
        "snapshotId": s.id,
        "createdAt": format_time(s.created_at),
        "expiresAt": expiry(s.expires_at),
        "keep": s.keep,
    });
    if let Some(label) = &s.label {
        v["label"] = Value::String(label.clone());
    }
    if let Some(w) = &s.workflow_id {
        v["workflowId"] = Value::String(w.clone());
    }
    v
}

/// A snapshot with its files (those the caller may read), and the globs it was taken
/// through (`paths`) when a path-scoped key took it, shown to callers who reach them all.
fn snapshot_json(who: &Identity, s: &Snapshot) -> Value {
    let mut v = info_json(&s.info());
    v["files"] = s
        .files
        .iter()
        .map(|f| json!({ "path": f.path, "version": f.version, "etag": f.etag }))
        .collect();
    let own = who.paths.readable_globs();
    if !s.covers.is_empty() && (who.paths.is_whole() || s.covers.iter().all(|g| own.contains(g))) {
        v["paths"] = json!(s.covers);
    }
    v
}

pub async fn create(
    service: &WorkspaceService,
    who: &Identity,
    body: &Bytes,
) -> Result<HttpResponse> {
    let parsed: CreateBody = if body.iter().all(u8::is_ascii_whitespace) {
        CreateBody::default()
    } else {
        serde_json::from_slice(body).map_err(|e| {
            WorkspaceError::validation(format!(
                "body must be empty or {{\"label\"?: \"<name>\", \"keep\"?: true|false}}: {e}"
            ))
        })?
    };
    let options = SnapshotOptions {
        label: parsed.label,
        keep: parsed.keep,
        ..SnapshotOptions::default()
    };
    let mut s = service.create_checkpoint(who, options).await?;
    // A snapshot is a point in history, whatever its size: its answer lists the first
    // files only, and says when more follow (`GET` lists them all).
    let more = s.files.len() > SNAPSHOT_ANSWER_FILES;
    s.files.truncate(SNAPSHOT_ANSWER_FILES);
    let mut body = snapshot_json(who, &s);
    if more {
        body["moreFiles"] = Value::Bool(true);
    }
    Ok(json_response(StatusCode::CREATED, &body))
}

/// Checkpoints (not runs), newest first; `nextToken` continues.
pub async fn list(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
) -> Result<HttpResponse> {
    let query = Query::parse(parts)?;
    let (page, next) = service
        .list_checkpoints(&who.scope, query.limit()?, query.get("nextToken"))
        .await?;
    let mut body = json!({ "snapshots": page.iter().map(info_json).collect::<Vec<_>>() });
    if let Some(next) = next {
        body["nextToken"] = Value::String(next);
    }
    Ok(json_response(StatusCode::OK, &body))
}

pub async fn get(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    let s = service.get_snapshot(who, id).await?;
    Ok(json_response(StatusCode::OK, &snapshot_json(who, &s)))
}

pub async fn delete(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    service.delete_snapshot(who, id).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// `{paths?: [glob], ifUnchangedSince?: "<snapshotId>" | "<RFC 3339 time>"}`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RestoreBody {
    #[serde(default)]
    paths: Vec<String>,
    if_unchanged_since: Option<String>,
}

/// `POST .../snapshots/{id}/restore`: `{restored, deleted, unchanged}` (paths).
pub async fn restore(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let id = tail.strip_suffix("/restore").unwrap_or(tail);
    let parsed: RestoreBody = if body.iter().all(u8::is_ascii_whitespace) {
        RestoreBody::default()
    } else {
        serde_json::from_slice(body).map_err(|e| {
            WorkspaceError::validation(format!(
                "body must be empty or {{\"paths\"?: [\"<glob>\", ...], \"ifUnchangedSince\"?: \"<snapshotId or RFC 3339 time>\"}}: {e}"
            ))
        })?
    };
    let since = parsed.if_unchanged_since.map(|s| match parse_time(&s) {
        Some(t) => Since::Time(t),
        None => Since::Snapshot(s),
    });
    let (_, idempotency_key) = crate::files::write_headers(parts)?;
    let report = service
        .restore_snapshot(
            who,
            id,
            RestoreRequest {
                paths: parsed.paths,
                if_unchanged_since: since,
                idempotency_key,
            },
        )
        .await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "restored": report.restored, "deleted": report.deleted, "unchanged": report.unchanged }),
    ))
}
