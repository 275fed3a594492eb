//! Run records (RFC 0059 §D): `POST /v1/runs`, `GET /v1/runs`, `GET /v1/runs/{runId}`.
//! A run's snapshot is an ordinary snapshot (`?snapshot=<snapshotId>` reads through it).
//! Every run carries its `owner` `{tenant, workspace, principal}` (RFC 0048); a run of
//! another workspace of the tenant is 403 `run_forbidden` (`workspace_core`'s `runs.rs`).

use crate::envelope::{json_response, HttpResponse};
use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::model::{format_time, Snapshot, SnapshotInfo};
use workspace_core::{Identity, Result, Scope, WorkspaceError, WorkspaceService};

/// `{workflowId, ...}`: other fields a host sends (inputs, options) are accepted and not
/// kept; the record is the workspace as the run found it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    workflow_id: String,
}

/// The run's owner (RFC 0048 `RunSnapshot.owner`): the tenant and workspace it is stored
/// in, and the principal that started it (absent on runs recorded before owners were).
fn owner_json(scope: &Scope, s: &SnapshotInfo) -> Value {
    let mut owner =
        json!({ "tenant": scope.tenant.as_str(), "workspace": scope.workspace.as_str() });
    if let Some(p) = &s.principal {
        owner["principal"] = json!(p);
    }
    owner
}

fn run_json(scope: &Scope, s: &SnapshotInfo) -> Value {
    json!({
        "runId": s.id,
        "workflowId": s.workflow_id,
        "createdAt": format_time(s.created_at),
        "expiresAt": format_time(s.expires_at),
        "snapshotId": s.id,
        "owner": owner_json(scope, s),
    })
}

/// A run as `GET /v1/runs/{runId}` answers it: with the files it started with.
fn run_with_files(scope: &Scope, s: &Snapshot) -> Value {
    let mut body = run_json(scope, &s.info());
    body["workspace"] = s
        .files
        .iter()
        .map(|f| json!({ "path": f.path, "version": f.version, "etag": f.etag }))
        .collect();
    body
}

pub async fn create(
    service: &WorkspaceService,
    who: &Identity,
    body: &Bytes,
) -> Result<HttpResponse> {
    let parsed: CreateBody = serde_json::from_slice(body).map_err(|e| {
        WorkspaceError::validation(format!(
            "body must be a JSON object {{\"workflowId\": \"<workflow id>\"}}: {e}"
        ))
    })?;
    let run = service.create_run(who, &parsed.workflow_id).await?;
    Ok(json_response(
        StatusCode::CREATED,
        &run_json(&who.scope, &run.info()),
    ))
}

pub async fn get(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    let run = service.get_run(who, id).await?;
    Ok(json_response(
        StatusCode::OK,
        &run_with_files(&who.scope, &run),
    ))
}

/// Newest first; `nextToken` continues (it names the last run of the page).
pub async fn list(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
) -> Result<HttpResponse> {
    let query = Query::parse(parts)?;
    let page = service
        .list_runs(&who.scope, query.limit()?, query.get("nextToken"))
        .await?;
    let runs: Vec<Value> = page.runs.iter().map(|r| run_json(&who.scope, r)).collect();
    let mut body = json!({ "runs": runs });
    if let Some(next) = page.next_before {
        body["nextToken"] = Value::String(next);
    }
    Ok(json_response(StatusCode::OK, &body))
}
