//! Version history, restore and diff: `GET|POST /v1/host/workspace/versions/{path}` and
//! `GET /v1/host/workspace/diff/{path}?from=N&to=M`.

use crate::envelope::{json_response, HttpResponse};
use crate::file_answer::{file_response, meta_json, with_etag};
use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::model::format_time;
use workspace_core::{FilePath, Identity, Result, WorkspaceError, WorkspaceService};

/// What a history's paging token is bound to: the caller's scope and the path.
fn history_binding(who: &Identity, path: &FilePath) -> String {
    format!(
        "versions|{}|{}|{path}",
        who.scope.tenant, who.scope.workspace
    )
}

/// The version a history page starts before, from a token sealed for this history.
fn open_token(service: &WorkspaceService, binding: &str, token: &str) -> Result<u64> {
    service
        .token_key()
        .open(binding, token)?
        .parse::<u64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| WorkspaceError::validation("nextToken is not one this server issued"))
}

pub async fn history(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let path = FilePath::parse(tail)?;
    let query = Query::parse(parts)?;
    let limit = query.limit()?;
    let binding = history_binding(who, &path);
    let before = query
        .get("nextToken")
        .map(|t| open_token(service, &binding, t))
        .transpose()?;
    let page = service.history(who, &path, limit, before).await?;
    let rows: Vec<Value> = page
        .versions
        .iter()
        .map(|v| {
            let mut row = json!({
                "version": v.version,
                "etag": v.etag,
                "size": v.size,
                "contentType": v.content_type,
                "updatedAt": format_time(v.updated_at),
                "deleted": v.deleted,
                "principal": v.principal,
            });
            if let Some(by) = &v.erased {
                row["erased"] = Value::Bool(true);
                row["erasedBy"] = Value::String(by.by.clone());
                row["erasedAt"] = Value::String(format_time(by.at));
            }
            row
        })
        .collect();
    let mut body = json!({ "path": path.as_str(), "versions": rows });
    if let Some(before) = page.next_before {
        body["nextToken"] = Value::String(service.token_key().seal(&binding, &before.to_string()));
    }
    Ok(json_response(StatusCode::OK, &body))
}

/// `{"restore": N}`. Unknown fields are ignored.
#[derive(Deserialize)]
struct RestoreBody {
    restore: u64,
}

pub async fn restore(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let path = FilePath::parse(tail)?;
    let (if_match, idempotency_key) = crate::files::write_headers(parts)?;
    // Only an object: serde would also read a struct from an array (`[1]`).
    let parsed: RestoreBody = serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
        .and_then(|v| serde_json::from_value(v).ok())
        .filter(|b: &RestoreBody| b.restore >= 1)
        .ok_or_else(|| {
            WorkspaceError::validation(
                "body must be a JSON object {\"restore\": <version, a positive integer>}",
            )
        })?;
    let file = service
        .restore(who, &path, parsed.restore, if_match, idempotency_key)
        .await?;
    // A version over maxFileBytes (written by an upload) is answered like its commit:
    // metadata only, as a response cannot carry it.
    if file.meta.size > service.limits().max_file_bytes {
        return with_etag(
            json_response(StatusCode::OK, &meta_json(&file.meta)),
            &file.meta.etag,
        );
    }
    file_response(&file)
}

pub async fn diff(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let path = FilePath::parse(tail)?;
    let query = Query::parse(parts)?;
    let from = query
        .positive("from")?
        .ok_or_else(|| WorkspaceError::validation("from (a version number) is required"))?;
    let to = query.positive("to")?;
    let d = service.diff(who, &path, from, to).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "path": path.as_str(),
            "from": d.from.version,
            "to": d.to.version,
            "fromEtag": d.from.etag,
            "toEtag": d.to.etag,
            "binary": d.binary,
            "diff": d.text,
        }),
    ))
}

/// `DELETE /v1/host/workspace/versions/{path}/{version}?force=`: erase a past version.
pub async fn erase(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let (path, version) = tail.rsplit_once('/').ok_or_else(|| {
        WorkspaceError::validation(
            "name the version to erase: DELETE /v1/host/workspace/versions/{path}/{version}",
        )
    })?;
    let path = FilePath::parse(path)?;
    let n = version
        .parse::<u64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            WorkspaceError::validation(format!(
                "the version to erase must be a positive integer, got '{}'",
                version.escape_debug()
            ))
        })?;
    let query = Query::parse(parts)?;
    let force = match query.get("force") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(WorkspaceError::validation(format!(
                "force must be true or false, got '{}'",
                other.escape_debug()
            )))
        }
    };
    service.erase_version(who, &path, n, force).await?;
    Ok(crate::envelope::empty_response(StatusCode::NO_CONTENT))
}
