//! The blob endpoints (RFC 0019): objects as raw bytes under `/v1/host/blob/{bucket}/{key+}`,
//! a listing at `/v1/host/blob/{bucket}`, presigning at `POST /v1/host/blob/{bucket}/presign`,
//! and (local server only) the signed URLs it hands out, under `/v1/signed/blob/`.

use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::request::{query_pairs, single_header, Query};
use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use workspace_core::blob::{
    BlobLocation, BlobMeta, BlobService, PresignRequest, PresignedUrl, SignedOutcome,
};
use workspace_core::model::format_time;
use workspace_core::{Identity, Result, WorkspaceError};

/// `{bucket}/{key+}` (or `{bucket}` alone), already decoded: split on the first `/`.
fn split_tail(tail: &str) -> (String, String) {
    let (bucket, key) = tail.split_once('/').unwrap_or((tail, ""));
    (bucket.to_owned(), key.to_owned())
}

fn location(blobs: &BlobService, who: &Identity, tail: &str) -> Result<BlobLocation> {
    let (bucket, key) = split_tail(tail);
    blobs.location(&who.scope, &bucket, &key)
}

fn written(bucket: &str, meta: &BlobMeta) -> HttpResponse {
    json_response(
        StatusCode::OK,
        &json!({ "bucket": bucket, "key": meta.key, "sizeBytes": meta.size, "etag": meta.etag }),
    )
}

/// The object's bytes with its content type and etag.
fn object_response(meta: &BlobMeta, bytes: Vec<u8>) -> HttpResponse {
    let mut resp = Response::new(Bytes::from(bytes));
    let ct = HeaderValue::from_str(&meta.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    if let Ok(etag) = HeaderValue::from_str(&meta.etag) {
        resp.headers_mut().insert(header::ETAG, etag);
    }
    resp
}

pub(crate) fn content_type(parts: &Parts) -> Result<Option<&str>> {
    single_header(parts, &header::CONTENT_TYPE)
}

pub async fn put(
    blobs: &BlobService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let loc = location(blobs, who, tail)?;
    let meta = blobs.put(&loc, body.to_vec(), content_type(parts)?).await?;
    Ok(written(&loc.bucket, &meta))
}

pub async fn get(blobs: &BlobService, who: &Identity, tail: &str) -> Result<HttpResponse> {
    let loc = location(blobs, who, tail)?;
    let (meta, bytes) = blobs.get(&loc).await?;
    Ok(object_response(&meta, bytes))
}

pub async fn delete(blobs: &BlobService, who: &Identity, tail: &str) -> Result<HttpResponse> {
    let loc = location(blobs, who, tail)?;
    blobs.delete(&loc).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

pub async fn list(
    blobs: &BlobService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let bucket = tail.to_owned();
    let query = Query::parse(parts)?;
    let page = blobs
        .list(
            &who.scope,
            &bucket,
            query.get("prefix").unwrap_or(""),
            query.get("cursor"),
            query.limit()?,
        )
        .await?;
    let entries: Vec<Value> = page
        .entries
        .iter()
        .map(|m| json!({ "key": m.key, "sizeBytes": m.size, "updatedAt": format_time(m.updated_at) }))
        .collect();
    let mut body = json!({ "entries": entries });
    if let Some(c) = page.next_cursor {
        body["nextCursor"] = Value::String(c);
    }
    Ok(json_response(StatusCode::OK, &body))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PresignBody {
    key: String,
    method: String,
    expires_in_seconds: u64,
    content_length: Option<u64>,
    content_type: Option<String>,
}

pub async fn presign(
    blobs: &BlobService,
    who: &Identity,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let bucket = tail.strip_suffix("/presign").unwrap_or(tail).to_owned();
    let parsed: PresignBody = serde_json::from_slice(body).map_err(|e| {
        WorkspaceError::validation(format!(
            "body must be {{\"key\", \"method\": \"GET\"|\"PUT\", \"expiresInSeconds\", \"contentLength\"?, \"contentType\"?}}: {e}"
        ))
    })?;
    let url = blobs
        .presign(
            &who.scope,
            &bucket,
            PresignRequest {
                key: parsed.key,
                method: parsed.method,
                expires_in_seconds: parsed.expires_in_seconds,
                content_length: parsed.content_length,
                content_type: parsed.content_type,
            },
        )
        .await?;
    Ok(json_response(StatusCode::OK, &presigned_json(url)))
}

/// A presigned URL as answered: `{url, method, expiresAt, headers}` (blob presigning and
/// two-step uploads alike).
pub(crate) fn presigned_json(url: PresignedUrl) -> Value {
    let headers: Map<String, Value> = url
        .headers
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    json!({
        "url": url.url,
        "method": url.method.as_str(),
        "expiresAt": format_time(url.expires_at),
        "headers": headers,
    })
}

/// A request to a URL this process signed: no credential, the signature is the grant.
pub async fn signed(
    blobs: &BlobService,
    parts: &Parts,
    path: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let outcome = blobs
        .serve_signed(
            parts.method.as_str(),
            path,
            &query_pairs(parts),
            body.to_vec(),
            content_type(parts)?,
        )
        .await?;
    Ok(match outcome {
        SignedOutcome::Got(meta, bytes) => object_response(&meta, bytes),
        SignedOutcome::Put(meta) => {
            let bucket = path
                .strip_prefix(workspace_core::blob::SIGNED_BLOB_PREFIX)
                .and_then(|p| p.split('/').nth(2))
                .unwrap_or_default();
            written(bucket, &meta)
        }
    })
}
