//! The host.workspace file endpoints: list, get, put, delete.

use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::file_answer::{file_response, meta_json, with_etag};
use crate::request::{list_header, single_header, Query};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http::request::Parts;
use http::{header, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::service::{FileRead, UploadCommit};
use workspace_core::{
    FilePath, Identity, PathPrefix, PutRequest, Result, WorkspaceError, WorkspaceService,
};

/// The PUT body: `content` (UTF-8 text) or `contentBase64` (any bytes), not both; or
/// `uploadId` alone, committing a two-step upload. Unknown fields are ignored so newer
/// clients keep working.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PutBody {
    content: Option<String>,
    content_base64: Option<String>,
    content_type: Option<String>,
    upload_id: Option<String>,
}

impl PutBody {
    fn bytes(self) -> Result<(Vec<u8>, Option<String>)> {
        let bytes = content_bytes(self.content, self.content_base64, "body")?;
        Ok((bytes, self.content_type))
    }
}

/// Inline content as a write gives it: `content` (UTF-8 text) or `contentBase64` (standard
/// base64, any bytes), exactly one of them. `what` names the object that carries them in
/// the error ("body", "operations[2]"). Shared by the file PUT and the commit route.
pub(crate) fn content_bytes(
    content: Option<String>,
    content_base64: Option<String>,
    what: &str,
) -> Result<Vec<u8>> {
    match (content, content_base64) {
        (Some(text), None) => Ok(text.into_bytes()),
        (None, Some(b64)) => STANDARD.decode(b64.as_bytes()).map_err(|e| {
            WorkspaceError::validation(format!(
                "{what}: contentBase64 is not standard base64 (RFC 4648, with padding): {e}"
            ))
        }),
        (Some(_), Some(_)) => Err(WorkspaceError::validation(format!(
            "{what}: give either content or contentBase64, not both"
        ))),
        (None, None) => Err(WorkspaceError::validation(format!(
            "{what} must carry content (UTF-8 text) or contentBase64 (any bytes)"
        ))),
    }
}

/// What a listing's paging token is bound to: the caller's scope, the prefix and the
/// snapshot (or the live files), so a token of another listing is refused.
fn listing_binding(who: &Identity, prefix: &PathPrefix, snapshot: Option<&str>) -> String {
    format!(
        "files|{}|{}|{}|{}|{}",
        who.scope.tenant,
        who.scope.workspace,
        who.paths.to_claim(),
        prefix.as_str(),
        snapshot.unwrap_or("live")
    )
}

/// The `If-Match` and `Idempotency-Key` of a write (PUT, restore), each at most once.
pub(crate) fn write_headers(parts: &Parts) -> Result<(Option<String>, Option<String>)> {
    let if_match = list_header(parts, &header::IF_MATCH)?;
    let idempotency_key =
        single_header(parts, &header::HeaderName::from_static("idempotency-key"))?
            .map(str::to_owned);
    Ok((if_match, idempotency_key))
}

pub async fn list(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
) -> Result<HttpResponse> {
    let query = Query::parse(parts)?;
    let prefix = PathPrefix::parse(query.get("prefix").unwrap_or(""))?;
    let limit = query.limit()?;
    let binding = listing_binding(who, &prefix, query.get("snapshot"));
    let keys = service.token_key();
    let after = query
        .get("nextToken")
        .map(|t| FilePath::parse(&keys.open(&binding, t)?))
        .transpose()?;
    let page = match query.get("snapshot") {
        Some(id) => {
            service
                .list_snapshot(who, id, &prefix, limit, after.as_ref())
                .await?
        }
        None => service.list(who, &prefix, limit, after.as_ref()).await?,
    };
    let mut body = json!({ "files": page.files.iter().map(meta_json).collect::<Vec<_>>() });
    if let Some(after) = &page.next_after {
        body["nextToken"] = Value::String(keys.seal(&binding, after.as_str()));
    }
    Ok(json_response(StatusCode::OK, &body))
}

pub async fn get(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let path = FilePath::parse(tail)?;
    let query = Query::parse(parts)?;
    let version = query.positive("version")?;
    let read = match (query.get("snapshot"), version) {
        (Some(_), Some(_)) => {
            return Err(WorkspaceError::validation(
                "give either version or snapshot, not both",
            ))
        }
        (Some(id), None) => service.open_in_snapshot(who, id, &path).await?,
        (None, version) => service.open(who, &path, version).await?,
    };
    match read {
        FileRead::Inline(file) => file_response(&file),
        // Over maxFileBytes: the metadata, and where to fetch exactly this version.
        FileRead::Download { meta, url } => {
            let mut body = meta_json(&meta);
            body["download"] = crate::blob::presigned_json(url);
            with_etag(json_response(StatusCode::OK, &body), &meta.etag)
        }
    }
}

pub async fn put(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let path = FilePath::parse(tail)?;
    let (if_match, idempotency_key) = write_headers(parts)?;
    let if_none_match_any = match list_header(parts, &header::IF_NONE_MATCH)?.as_deref() {
        None => false,
        Some("*") => true,
        Some(_) => {
            return Err(WorkspaceError::validation(
                "If-None-Match supports only '*' (create only if the file does not exist)",
            ))
        }
    };
    let mut parsed: PutBody = serde_json::from_slice(body).map_err(|e| {
        WorkspaceError::validation(format!(
            "body must be a JSON object {{\"content\": \"<utf-8 text>\" | \"contentBase64\": \"<base64>\", \"contentType\"?: \"...\"}} or {{\"uploadId\": \"...\"}}: {e}"
        ))
    })?;
    if let Some(upload_id) = parsed.upload_id.take() {
        if parsed.content.is_some()
            || parsed.content_base64.is_some()
            || parsed.content_type.is_some()
        {
            return Err(WorkspaceError::validation(
                "uploadId commits the uploaded bytes with their declared contentType: give it alone, without content, contentBase64 or contentType",
            ));
        }
        let commit = UploadCommit {
            upload_id,
            if_match,
            if_none_match_any,
            idempotency_key,
        };
        return crate::uploads::commit(service, who, &path, commit).await;
    }
    let (content, content_type) = parsed.bytes()?;
    let file = service
        .put(
            who,
            PutRequest {
                merge: None,
                path: Some(path),
                content,
                content_type,
                if_match,
                if_none_match_any,
                idempotency_key,
            },
        )
        .await?;
    file_response(&file)
}

pub async fn delete(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let path = FilePath::parse(tail)?;
    let if_match = list_header(parts, &header::IF_MATCH)?;
    service.delete(who, &path, if_match.as_deref()).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
