//! Run snapshots: `POST /v1/host/workspace/snapshots`, `GET|DELETE .../snapshots/{id}`.
//! Reads through a snapshot are `?snapshot=ID` on the file list and get (see `files.rs`).

use crate::envelope::{empty_response, json_response, HttpResponse};
use http::StatusCode;
use serde_json::{json, Value};
use workspace_core::model::{format_time, Snapshot};
use workspace_core::{Identity, Result, WorkspaceService};

fn snapshot_json(s: &Snapshot) -> Value {
    json!({
        "snapshotId": s.id,
        "createdAt": format_time(s.created_at),
        "expiresAt": format_time(s.expires_at),
        "files": s.files.iter().map(|f| json!({
            "path": f.path,
            "version": f.version,
            "etag": f.etag,
        })).collect::<Vec<_>>(),
    })
}

pub async fn create(service: &WorkspaceService, who: &Identity) -> Result<HttpResponse> {
    let s = service.create_snapshot(who).await?;
    Ok(json_response(StatusCode::CREATED, &snapshot_json(&s)))
}

pub async fn get(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    let s = service.get_snapshot(&who.scope, id).await?;
    Ok(json_response(StatusCode::OK, &snapshot_json(&s)))
}

pub async fn delete(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    service.delete_snapshot(who, id).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
