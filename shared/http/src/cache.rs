//! The cache endpoints (RFC 0019): `PUT|GET|DELETE /v1/host/cache/{key}`.

use crate::envelope::{empty_response, json_response, HttpResponse};
use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};
use workspace_core::cache::{CacheKey, CacheService};
use workspace_core::model::format_time;
use workspace_core::{Identity, Result, WorkspaceError};

fn key(tail: &str) -> Result<CacheKey> {
    CacheKey::parse(tail)
}

pub async fn put(
    cache: &CacheService,
    who: &Identity,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let key = key(tail)?;
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

pub async fn get(cache: &CacheService, who: &Identity, tail: &str) -> Result<HttpResponse> {
    let key = key(tail)?;
    let hit = cache.get(&who.scope, &key).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({ "key": key.as_str(), "value": hit.value, "expiresAt": format_time(hit.expires_at) }),
    ))
}

pub async fn delete(cache: &CacheService, who: &Identity, tail: &str) -> Result<HttpResponse> {
    let key = key(tail)?;
    cache.delete(&who.scope, &key).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}
