//! `POST/GET /workspaces`, `GET/DELETE /workspaces/{id}`.

use super::{json_body, time};
use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::sessions::model::{WorkspaceKind, WorkspaceRecord};
use workspace_core::sessions::{Caller, SessionService};
use workspace_core::{Result, WorkspaceError, WorkspaceId, WorkspaceService};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    workspace_scope: String,
    local_path: Option<String>,
}

pub(crate) fn view(w: &WorkspaceRecord) -> Value {
    let mut v = json!({
        "workspaceId": w.workspace_id,
        "workspaceScope": w.kind.as_str(),
        "tenantId": w.tenant,
        "userId": w.user,
        "createdAt": time(w.created_at),
        "lastActiveAt": time(w.last_active_at),
    });
    if let Some(p) = &w.local_path {
        v["localPath"] = Value::String(p.clone());
    }
    v
}

/// 201 with a new workspace, 200 with the existing local one.
pub async fn create(svc: &SessionService, caller: &Caller, body: &Bytes) -> Result<HttpResponse> {
    let b: CreateBody = json_body(
        body,
        r#"a JSON object {"workspaceScope": "local"|"general"|"cloud", "localPath"?: "..."}"#,
    )?;
    let kind = WorkspaceKind::parse(&b.workspace_scope)?;
    let out = svc.create(caller, kind, b.local_path).await?;
    let status = if out.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, &view(&out.workspace)))
}

pub async fn list(svc: &SessionService, caller: &Caller, parts: &Parts) -> Result<HttpResponse> {
    let q = Query::parse(parts)?;
    let (page, next) = svc.list(caller, q.get("nextToken"), q.limit()?).await?;
    let mut body = json!({ "workspaces": page.iter().map(view).collect::<Vec<_>>() });
    if let Some(t) = next {
        body["nextToken"] = Value::String(t);
    }
    Ok(json_response(StatusCode::OK, &body))
}

pub async fn get(svc: &SessionService, caller: &Caller, id: &str) -> Result<HttpResponse> {
    Ok(json_response(
        StatusCode::OK,
        &view(&svc.get(caller, id).await?),
    ))
}

/// A workspace with live forks is deleted only with `?force=true`, which discards them
/// first (their own data is not under the workspace's prefix).
pub async fn delete(
    svc: &SessionService,
    files: &WorkspaceService,
    caller: &Caller,
    id: &str,
    parts: &Parts,
) -> Result<HttpResponse> {
    let force = match Query::parse(parts)?.get("force") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(WorkspaceError::validation(format!(
                "force must be true or false, not {other:?}"
            )))
        }
    };
    let ws = svc.get(caller, id).await?;
    let who = caller.in_workspace(&WorkspaceId::parse(&ws.workspace_id)?);
    let forks = files.live_forks(&who).await?;
    if !forks.is_empty() {
        if !force {
            let ids: Vec<&str> = forks.iter().map(|f| f.workspace.as_str()).collect();
            return Err(WorkspaceError::Conflict {
                message: format!(
                    "workspace {id} has {} live fork(s): {}; discard them (or merge them back) \
                     first, or delete with ?force=true to discard them too",
                    ids.len(),
                    ids.join(", ")
                ),
                current_version: 0,
            });
        }
        files.discard_forks(&who).await?;
    }
    svc.delete_workspace(caller, id).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
