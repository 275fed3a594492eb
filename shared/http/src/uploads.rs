//! Two-step uploads (see `workspace_core::service` `uploads`): `POST
//! /v1/host/workspace/uploads` starts one, the client PUTs the bytes to the URL it answers,
//! and `PUT /v1/host/workspace/files/{path}` with `{"uploadId"}` commits them
//! ([`commit`], called from the file PUT). On the local server the URL is this process's
//! own, under `/v1/signed/upload/` ([`signed`]); so are the download URLs of files over
//! `maxFileBytes`, under `/v1/signed/body/` ([`signed_download`]).

use crate::blob::{content_type, presigned_json};
use crate::envelope::{json_response, HttpResponse};
use crate::file_answer::{meta_json, with_etag};
use crate::request::query_pairs;
use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use serde::Deserialize;
use serde_json::json;
use std::sync::{Arc, Mutex};
use workspace_core::ports::BodyPieces;
use workspace_core::service::SIGNED_UPLOAD_PREFIX;
use workspace_core::service::{UploadCommit, UploadRequest};
use workspace_core::{FilePath, Identity, Result, WorkspaceError, WorkspaceService};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartBody {
    path: String,
    size: u64,
    sha256: String,
    content_type: Option<String>,
}

pub async fn start(
    service: &WorkspaceService,
    who: &Identity,
    body: &Bytes,
) -> Result<HttpResponse> {
    let parsed: StartBody = serde_json::from_slice(body).map_err(|e| {
        WorkspaceError::validation(format!(
            "body must be {{\"path\", \"size\": <bytes>, \"sha256\": \"<64 hex digits>\", \"contentType\"?}}: {e}"
        ))
    })?;
    let ticket = service
        .start_upload(
            who,
            UploadRequest {
                path: FilePath::parse(&parsed.path)?,
                size: parsed.size,
                sha256: parsed.sha256,
                content_type: parsed.content_type,
            },
        )
        .await?;
    let mut answer = presigned_json(ticket.url);
    answer["uploadId"] = json!(ticket.upload_id);
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// The commit: the new version's metadata (never the content, which may be far larger
/// than a response can carry), with its ETag.
pub async fn commit(
    service: &WorkspaceService,
    who: &Identity,
    path: &FilePath,
    req: UploadCommit,
) -> Result<HttpResponse> {
    let meta = service.commit_upload(who, path, req).await?;
    with_etag(json_response(StatusCode::OK, &meta_json(&meta)), &meta.etag)
}

/// A GET to a download URL this process signed: the bytes, with their content type.
pub async fn signed_download(
    service: &WorkspaceService,
    parts: &Parts,
    path: &str,
) -> Result<HttpResponse> {
    let (content_type, bytes) = service
        .serve_signed_body(parts.method.as_str(), path, &query_pairs(parts))
        .await?;
    let mut resp = Response::new(Bytes::from(bytes));
    let ct = HeaderValue::from_str(&content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    Ok(resp)
}

/// A PUT to a local upload URL, from its head: signature, expiry, declared length and type.
pub fn signed_head(app: &crate::App, parts: &Parts) -> Result<()> {
    app.files()?.check_signed_upload_head(
        parts.method.as_str(),
        parts.uri.path(),
        &query_pairs(parts),
        parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok()),
        content_type(parts)?,
    )?;
    Ok(())
}

/// The body of a request the transport did not read, left in the request's extensions for
/// a route that streams it (a PUT to a local upload URL on the local server): the handler
/// takes it and reads it piece by piece, so no upload is ever held whole in memory.
#[derive(Clone)]
pub struct StreamedBody(Arc<Mutex<Option<Box<dyn BodyPieces>>>>);

impl StreamedBody {
    pub fn new(pieces: impl BodyPieces + 'static) -> Self {
        StreamedBody(Arc::new(Mutex::new(Some(Box::new(pieces)))))
    }

    /// The body, to the first taker.
    fn take(&self) -> Option<Box<dyn BodyPieces>> {
        self.0.lock().ok()?.take()
    }
}

/// Whether a transport should leave this request's body unread in a [`StreamedBody`]: a
/// PUT to a local upload URL.
pub fn streams_body(parts: &Parts) -> bool {
    parts.method == http::Method::PUT && parts.uri.path().starts_with(SIGNED_UPLOAD_PREFIX)
}

/// A PUT to an upload URL this process signed: no credential, the signature is the grant.
/// The body is read as the transport left it: in pieces ([`StreamedBody`], the local
/// server), or already whole (the contract harness).
pub async fn signed(
    service: &WorkspaceService,
    parts: &Parts,
    path: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let streamed = parts
        .extensions
        .get::<StreamedBody>()
        .and_then(StreamedBody::take);
    let (upload_id, size) = match streamed {
        Some(mut pieces) => {
            service
                .serve_signed_upload_pieces(
                    parts.method.as_str(),
                    path,
                    &query_pairs(parts),
                    declared,
                    content_type(parts)?,
                    pieces.as_mut(),
                )
                .await?
        }
        None => {
            service
                .serve_signed_upload(
                    parts.method.as_str(),
                    path,
                    &query_pairs(parts),
                    body.to_vec(),
                    content_type(parts)?,
                )
                .await?
        }
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({ "uploadId": upload_id, "size": size }),
    ))
}
