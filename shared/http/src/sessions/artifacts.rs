//! Artifacts and sessions of one workspace.

use super::{json_body, time};
use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::request::Query;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::sessions::artifacts::Upload;
use workspace_core::sessions::model::{ArtifactRecord, ArtifactType, HistoryMessage};
use workspace_core::sessions::{Caller, SessionService};
use workspace_core::{Result, WorkspaceError, WorkspaceService};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UploadBody {
    session_id: String,
    task_id: Option<String>,
    step_id: Option<String>,
    artifact_type: String,
    artifact_name: Option<String>,
    content_type: Option<String>,
    content_base64: Option<String>,
    messages: Option<Vec<HistoryMessage>>,
    metadata: Option<Value>,
}

fn uri(workspace: &str, artifact: &str) -> String {
    format!("/workspaces/{workspace}/artifacts/{artifact}")
}

fn row(workspace: &str, a: &ArtifactRecord) -> Value {
    let mut v = json!({
        "artifactId": a.artifact_id,
        "artifactUri": uri(workspace, &a.artifact_id),
        "sessionId": a.session_id,
        "artifactType": a.artifact_type.as_str(),
        "contentType": a.content_type,
        "size": a.size,
        "createdAt": time(a.created_at),
    });
    for (k, val) in [
        ("taskId", &a.task_id),
        ("stepId", &a.step_id),
        ("artifactName", &a.artifact_name),
    ] {
        if let Some(x) = val {
            v[k] = Value::String(x.clone());
        }
    }
    if let Some(m) = a
        .metadata
        .as_deref()
        .and_then(|m| serde_json::from_str::<Value>(m).ok())
    {
        v["metadata"] = m;
    }
    v
}

pub async fn upload(
    svc: &SessionService,
    files: &WorkspaceService,
    caller: &Caller,
    workspace: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let b: UploadBody = json_body(
        body,
        "a JSON object {sessionId, artifactType, contentBase64? | messages?, ...}",
    )?;
    let artifact_type = ArtifactType::parse(&b.artifact_type)?;
    let max = svc.limits().max_artifact_bytes;
    let content = match &b.content_base64 {
        None => None,
        Some(text) => {
            // Refuse what cannot fit before decoding it.
            if (text.len() as u64) / 4 * 3 > max.saturating_add(3) {
                return Err(WorkspaceError::TooLarge {
                    message: format!("artifact is over WORKSPACE_MAX_ARTIFACT_BYTES = {max}"),
                    limit: max,
                });
            }
            Some(
                STANDARD
                    .decode(text)
                    .map_err(|_| WorkspaceError::validation("contentBase64 is not valid base64"))?,
            )
        }
    };
    let rec = svc
        .upload(
            files,
            caller,
            workspace,
            Upload {
                session_id: b.session_id,
                task_id: b.task_id,
                step_id: b.step_id,
                artifact_type,
                artifact_name: b.artifact_name,
                content_type: b.content_type,
                content,
                messages: b.messages,
                metadata: b.metadata,
            },
        )
        .await?;
    Ok(json_response(StatusCode::CREATED, &row(workspace, &rec)))
}

pub async fn get(
    svc: &SessionService,
    caller: &Caller,
    workspace: &str,
    artifact: &str,
) -> Result<HttpResponse> {
    let found = svc.artifact(caller, workspace, artifact).await?;
    if found.record.artifact_type == ArtifactType::SessionHistory {
        let messages: Value =
            serde_json::from_slice(&found.bytes).map_err(WorkspaceError::internal)?;
        let mut v = row(workspace, &found.record);
        v["messages"] = messages;
        return Ok(json_response(StatusCode::OK, &v));
    }
    let mut resp = Response::new(Bytes::from(found.bytes));
    let ct = HeaderValue::from_str(&found.record.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    Ok(resp)
}

pub async fn list(
    svc: &SessionService,
    caller: &Caller,
    workspace: &str,
    parts: &Parts,
) -> Result<HttpResponse> {
    let q = Query::parse(parts)?;
    let t = q.get("artifactType").map(ArtifactType::parse).transpose()?;
    let all = svc
        .artifacts(caller, workspace, q.get("sessionId"), t)
        .await?;
    let rows: Vec<_> = all.iter().map(|a| row(workspace, a)).collect();
    Ok(json_response(StatusCode::OK, &json!({ "artifacts": rows })))
}

pub async fn sessions(
    svc: &SessionService,
    caller: &Caller,
    workspace: &str,
    parts: &Parts,
) -> Result<HttpResponse> {
    let q = Query::parse(parts)?;
    let limit = q.limit()?;
    let (page, next) = svc
        .sessions(caller, workspace, limit, q.get("nextToken"))
        .await?;
    let rows: Vec<_> = page
        .iter()
        .map(|s| {
            json!({
                "sessionId": s.session_id,
                "createdAt": time(s.created_at),
                "lastTaskAt": time(s.last_task_at),
                "taskCount": s.task_ids.len(),
            })
        })
        .collect();
    let mut body = json!({ "sessions": rows });
    if let Some(t) = next {
        body["nextToken"] = Value::String(t);
    }
    Ok(json_response(StatusCode::OK, &body))
}

pub async fn history(
    svc: &SessionService,
    caller: &Caller,
    workspace: &str,
    session: &str,
) -> Result<HttpResponse> {
    let (rec, messages) = svc.history(caller, workspace, session).await?;
    let mut v = row(workspace, &rec);
    v["messages"] = serde_json::to_value(messages).map_err(WorkspaceError::internal)?;
    Ok(json_response(StatusCode::OK, &v))
}

pub async fn delete_session(
    svc: &SessionService,
    caller: &Caller,
    workspace: &str,
    session: &str,
) -> Result<HttpResponse> {
    svc.delete_session(caller, workspace, session).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
