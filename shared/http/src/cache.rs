//! The cache endpoints (RFC 0019): `PUT|GET|DELETE /v1/host/cache/{key}`.

use crate::envelope::{empty_response, json_response, HttpResponse};
use crate::request::Decoding;
use bytes::Bytes;
use http::StatusCode;
use percent_encoding::percent_decode_str;
use serde_json::{json, Value};
use workspace_core::cache::{CacheKey, CacheService};
use workspace_core::model::format_time;
use workspace_core::{Identity, Result, WorkspaceError};

fn key(tail: &str, decoding: Decoding) -> Result<CacheKey> {
    let decoded = match decoding {
        Decoding::Once => percent_decode_str(tail)
            .decode_utf8()
            .map_err(|_| WorkspaceError::validation("cache key is not valid UTF-8"))?,
        Decoding::AlreadyDone => tail.into(),
    };
    CacheKey::parse(&decoded)
}

pub async fn put(
    cache: &CacheService,
    who: &Identity,
    tail: &str,
    decoding: Decoding,
    body: &Bytes,
) -> Result<HttpResponse> {
    let key = key(tail, decoding)?;
    let shape =
        "body must be a JSON object {\"value\": <any JSON>, \"ttlSeconds\": <positive integer>}";
    let parsed: Value = serde_json::from_slice(body)
        .map_err(|e| WorkspaceError::validation(format!("{shape}: {e}")))?;
    let obj = parsed
        .as_object()
        .ok_or_else(|| WorkspaceError::validation(shape))?;
    let value = obj
        .get("value")
        .ok_or_else(|| WorkspaceError::validation(format!("{shape}: value is missing")))?;
    let ttl = obj
        .get("ttlSeconds")
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            WorkspaceError::validation(format!(
                "{shape}: ttlSeconds is missing or not a positive integer"
            ))
        })?;
    let expires_at = cache.put(&who.scope, &key, value, ttl).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "ok": true, "expiresAt": format_time(expires_at) }),
    ))
}

pub async fn get(
    cache: &CacheService,
    who: &Identity,
    tail: &str,
    decoding: Decoding,
) -> Result<HttpResponse> {
    let key = key(tail, decoding)?;
    let hit = cache.get(&who.scope, &key).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "key": key.as_str(), "value": hit.value, "expiresAt": format_time(hit.expires_at) }),
    ))
}

pub async fn delete(
    cache: &CacheService,
    who: &Identity,
    tail: &str,
    decoding: Decoding,
) -> Result<HttpResponse> {
    let key = key(tail, decoding)?;
    cache.delete(&who.scope, &key).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
