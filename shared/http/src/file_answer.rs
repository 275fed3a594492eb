//! How a file answers: its metadata as JSON, with its content, and its `ETag` header. Shared
//! by the file, version and upload endpoints.

use crate::envelope::{json_response, HttpResponse};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::{header, HeaderValue, StatusCode};
use serde_json::{json, Value};
use workspace_core::model::format_time;
use workspace_core::{FileMeta, Result, StoredFile, WorkspaceError};

/// A file's metadata (no content), as every route answers it.
pub(crate) fn meta_json(m: &FileMeta) -> Value {
    let mut v = json!({
        "path": m.path,
        "contentType": m.content_type,
        "version": m.version,
        "etag": m.etag,
        "size": m.size,
        "updatedAt": format_time(m.updated_at),
    });
    if !m.sha256.is_empty() {
        v["sha256"] = Value::String(m.sha256.clone());
    }
    if !m.principal.is_empty() {
        v["principal"] = Value::String(m.principal.clone());
    }
    v
}

/// A file with its content: `content` when the bytes are UTF-8 text, `contentBase64`
/// (standard base64) otherwise, never both.
pub(crate) fn file_response(file: &StoredFile) -> Result<HttpResponse> {
    let mut body = meta_json(&file.meta);
    match std::str::from_utf8(&file.content) {
        Ok(text) => body["content"] = Value::String(text.to_owned()),
        Err(_) => body["contentBase64"] = Value::String(STANDARD.encode(&file.content)),
    }
    with_etag(json_response(StatusCode::OK, &body), &file.meta.etag)
}

/// The response with its `ETag` header.
pub(crate) fn with_etag(mut resp: HttpResponse, etag: &str) -> Result<HttpResponse> {
    let etag = HeaderValue::from_str(etag)
        .map_err(|_| WorkspaceError::internal("etag is not a header value"))?;
    resp.headers_mut().insert(header::ETAG, etag);
    Ok(resp)
}
