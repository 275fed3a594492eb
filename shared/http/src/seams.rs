//! The openwop conformance test seams (`host-sample-test-seams.md`): routes that act as
//! any owner the request body names, so a suite holding one key can prove that two owners
//! never see each other's files, blobs, cache entries or runs (the identity seams of the
//! `cross-workspace-isolation` scenario act as the caller, and start the other workspace's
//! run themselves). Outside the route table (never in
//! template.yaml, never on Lambda); the local server serves them only when
//! `OPENWOP_TEST_SEAM_ENABLED=true`, and answers 404 like any unknown route otherwise.
//!
//! Each still needs a valid key (write scope for changes), and each goes through the same
//! services and stores as the real routes, strictly scoped by the owner in the body: the
//! seam supplies only the owner that production takes from the credential.

use crate::envelope::{error_response, json_response, HttpResponse};
use crate::handler::{Call, ExtraRoute, Reply};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http::{header, Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use workspace_core::blob::PresignRequest;
use workspace_core::cache::CacheKey;
use workspace_core::capability::CapabilityCode;
use workspace_core::ports::{Clock, SystemClock};
use workspace_core::{Access, Identity, Result, Scope, WorkspaceError};

pub const WORKSPACE_OP: &str = "/v1/host/sample/workspace/op";
pub const TEST_SURFACE: &str = "/v1/host/sample/test/surface";
pub const OWNED_RUN: &str = "/v1/host/sample/identity/owned-run";
pub const CROSS_WORKSPACE_READ: &str = "/v1/host/sample/identity/cross-workspace-read";

/// Every seam, for [`crate::App::serve_extra`].
pub static ROUTES: &[ExtraRoute] = &[
    ExtraRoute {
        method: Method::POST,
        path: WORKSPACE_OP,
        handler: workspace_op,
    },
    ExtraRoute {
        method: Method::POST,
        path: TEST_SURFACE,
        handler: test_surface,
    },
    ExtraRoute {
        method: Method::GET,
        path: OWNED_RUN,
        handler: owned_run,
    },
    ExtraRoute {
        method: Method::POST,
        path: CROSS_WORKSPACE_READ,
        handler: cross_workspace_read,
    },
];

/// The principal that changes made through a seam are attributed to.
const SEAM_PRINCIPAL: &str = "openwop-test-seam";
/// The workspace blob and cache entries of a seam's `tenantId` live in.
const SURFACE_WORKSPACE: &str = "default";

fn parse<T: DeserializeOwned>(body: &Bytes, shape: &str) -> Result<T> {
    serde_json::from_slice(body)
        .map_err(|e| WorkspaceError::validation(format!("body must be {shape}: {e}")))
}

/// The key's access, checked against what the op needs; the owner is the body's.
async fn owner(c: &Call<'_>, scope: Scope, writes: bool) -> Result<Identity> {
    let grant = c.app.grant(c.parts).await?;
    let needed = if writes {
        grant.access.write
    } else {
        grant.access.read
    };
    if !needed {
        return Err(WorkspaceError::Forbidden(format!(
            "this credential may not {} through the test seam",
            if writes { "change data" } else { "read" }
        )));
    }
    Ok(Identity {
        scope,
        principal: SEAM_PRINCIPAL.to_owned(),
        access: Access::READ_WRITE,
        // `App::handle` refuses path-scoped credentials on routes outside the table.
        paths: workspace_core::PathScope::whole(),
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkspaceOp {
    tenant: String,
    workspace: String,
    op: String,
    path: Option<String>,
    content: Option<String>,
    content_type: Option<String>,
    if_match: Option<String>,
    prefix: Option<String>,
    version: Option<u64>,
}

/// The request the matching `/v1/host/workspace/files` call would be, for that handler.
fn files_request(
    method: Method,
    query: &[(&str, String)],
    if_match: Option<&str>,
) -> Result<http::request::Parts> {
    let query: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    let mut req = http::Request::builder()
        .method(method)
        .uri(format!("{WORKSPACE_OP}?{query}"));
    if let Some(tag) = if_match {
        req = req.header(header::IF_MATCH, tag);
    }
    let (parts, ()) = req
        .body(())
        .map_err(|_| WorkspaceError::validation("ifMatch is not a valid header value"))?
        .into_parts();
    Ok(parts)
}

/// `{tenant, workspace, op, path?, content?, contentType?, ifMatch?, prefix?, version?}`:
/// answered exactly as `/v1/host/workspace/files` answers that owner.
fn workspace_op(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let op: WorkspaceOp = parse(
            c.body,
            "{\"tenant\", \"workspace\", \"op\": \"list\"|\"get\"|\"put\"|\"delete\", \"path\"?, \"content\"?, \"contentType\"?, \"ifMatch\"?, \"prefix\"?, \"version\"?}",
        )?;
        let scope = Scope::parse(&op.tenant, &op.workspace)?;
        let writes = matches!(op.op.as_str(), "put" | "delete");
        let who = owner(&c, scope, writes).await?;
        let files = c.app.files()?;
        let path = || {
            op.path
                .clone()
                .ok_or_else(|| WorkspaceError::validation(format!("op '{}' needs a path", op.op)))
        };
        match op.op.as_str() {
            "list" => {
                let query = [("prefix", op.prefix.clone().unwrap_or_default())];
                crate::files::list(files, &who, &files_request(Method::GET, &query, None)?).await
            }
            "get" => {
                let query: Vec<(&str, String)> = op
                    .version
                    .map(|v| ("version", v.to_string()))
                    .into_iter()
                    .collect();
                let parts = files_request(Method::GET, &query, None)?;
                crate::files::get(files, &who, &parts, &path()?).await
            }
            "put" => {
                let content = op.content.clone().ok_or_else(|| {
                    WorkspaceError::validation("op 'put' needs content (UTF-8 text)")
                })?;
                let body = json!({ "content": content, "contentType": op.content_type });
                let body = Bytes::from(body.to_string());
                let parts = files_request(Method::PUT, &[], op.if_match.as_deref())?;
                crate::files::put(files, &who, &parts, &path()?, &body).await
            }
            "delete" => {
                let parts = files_request(Method::DELETE, &[], op.if_match.as_deref())?;
                crate::files::delete(files, &who, &parts, &path()?).await
            }
            other => Err(WorkspaceError::validation(format!(
                "op must be list, get, put or delete, not '{}'",
                other.escape_debug()
            ))),
        }
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SurfaceCall {
    tenant_id: String,
    surface: String,
    op: String,
    #[serde(default)]
    args: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlobArgs {
    bucket: Option<String>,
    key: String,
    content_base64: Option<String>,
    content_type: Option<String>,
    expires_in_seconds: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CacheArgs {
    key: String,
    value: Option<Value>,
    ttl_seconds: Option<u64>,
}

fn args<T: DeserializeOwned>(args: &Value, shape: &str) -> Result<T> {
    serde_json::from_value(args.clone())
        .map_err(|e| WorkspaceError::validation(format!("args must be {shape}: {e}")))
}

/// `{tenantId, surface: "blob"|"cache", op, args}`: the surface's answer for that tenant.
fn test_surface(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let call: SurfaceCall = parse(
            c.body,
            "{\"tenantId\", \"surface\": \"blob\"|\"cache\", \"op\", \"args\"}",
        )?;
        let scope = Scope::parse(&call.tenant_id, SURFACE_WORKSPACE)?;
        let writes = matches!(call.op.as_str(), "put" | "delete" | "presign");
        match call.surface.as_str() {
            "blob" => {
                let who = owner(&c, scope, writes).await?;
                blob_op(&c, &who, &call.op, &call.args).await
            }
            "cache" => {
                let who = owner(&c, scope, writes).await?;
                cache_op(&c, &who, &call.op, &call.args).await
            }
            // Like a host without the family: the scenario skips it.
            other => Ok(error_response(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!(
                    "surface '{}' is not served here (blob and cache are)",
                    other.escape_debug()
                ),
                None,
            )),
        }
    })
}

async fn blob_op(c: &Call<'_>, who: &Identity, op: &str, raw: &Value) -> Result<HttpResponse> {
    let blobs = c.app.blob_service()?;
    let a: BlobArgs = args(
        raw,
        "{\"bucket\"?, \"key\", \"contentBase64\"?, \"contentType\"?, \"expiresInSeconds\"?}",
    )?;
    let bucket = a.bucket.unwrap_or_else(|| "default".to_owned());
    let loc = blobs.location(&who.scope, &bucket, &a.key)?;
    let body = match op {
        "put" => {
            let b64 = a
                .content_base64
                .ok_or_else(|| WorkspaceError::validation("blob put needs contentBase64"))?;
            let bytes = STANDARD.decode(b64.as_bytes()).map_err(|e| {
                WorkspaceError::validation(format!("contentBase64 is not standard base64: {e}"))
            })?;
            let meta = blobs.put(&loc, bytes, a.content_type.as_deref()).await?;
            json!({ "bucket": bucket, "key": meta.key, "sizeBytes": meta.size, "etag": meta.etag })
        }
        "get" => match blobs.get(&loc).await {
            Ok((meta, bytes)) => json!({
                "found": true,
                "key": meta.key,
                "contentBase64": STANDARD.encode(bytes),
                "contentType": meta.content_type,
                "sizeBytes": meta.size,
                "etag": meta.etag,
            }),
            Err(WorkspaceError::Capability {
                code: CapabilityCode::BlobObjectNotFound,
                ..
            }) => json!({ "found": false }),
            Err(e) => return Err(e),
        },
        "delete" => {
            blobs.delete(&loc).await?;
            json!({ "ok": true })
        }
        "presign" => {
            let seconds = a
                .expires_in_seconds
                .ok_or_else(|| WorkspaceError::validation("blob presign needs expiresInSeconds"))?;
            let url = blobs
                .presign(
                    &who.scope,
                    &bucket,
                    PresignRequest {
                        key: a.key,
                        method: "GET".to_owned(),
                        expires_in_seconds: seconds,
                        content_length: None,
                        content_type: None,
                    },
                )
                .await?;
            json!({ "url": url.url, "expiresAtMs": url.expires_at, "expiresInSeconds": seconds })
        }
        other => return Err(unknown_op("blob", other, "put, get, delete or presign")),
    };
    Ok(json_response(StatusCode::OK, &body))
}

async fn cache_op(c: &Call<'_>, who: &Identity, op: &str, raw: &Value) -> Result<HttpResponse> {
    let cache = c.app.cache_service()?;
    let a: CacheArgs = args(raw, "{\"key\", \"value\"?, \"ttlSeconds\"?}")?;
    let key = CacheKey::parse(&a.key)?;
    let body = match op {
        "put" => {
            let value = a
                .value
                .ok_or_else(|| WorkspaceError::validation("cache put needs a value"))?;
            let ttl = a
                .ttl_seconds
                .ok_or_else(|| WorkspaceError::validation("cache put needs ttlSeconds"))?;
            let expires_at = cache.put(&who.scope, &key, &value, ttl).await?;
            json!({ "ok": true, "expiresAtMs": expires_at })
        }
        "get" => match cache.get(&who.scope, &key).await {
            Ok(hit) => json!({
                "found": true,
                "hit": true,
                "value": hit.value,
                "ttlRemainingMs": (hit.expires_at - SystemClock.now_ms()).max(0),
            }),
            Err(WorkspaceError::NotFound(_)) => json!({ "found": false, "hit": false }),
            Err(e) => return Err(e),
        },
        "delete" => {
            cache.delete(&who.scope, &key).await?;
            json!({ "ok": true })
        }
        other => return Err(unknown_op("cache", other, "put, get or delete")),
    };
    Ok(json_response(StatusCode::OK, &body))
}

/// The workflow the identity seams' runs are of.
const SEAM_WORKFLOW: &str = "openwop-identity-seam";
/// The other workspace (of the caller's tenant) whose run the cross-workspace read tries.
const OTHER_WORKSPACE: &str = "openwop-seam-other-workspace";

/// The caller as its credential makes it (WCT-1 included), able to start a run.
async fn run_starter(c: &Call<'_>) -> Result<Identity> {
    let who = c.identify().await?;
    if !who.access.write {
        return Err(WorkspaceError::Forbidden(
            "this seam starts a run: it needs a credential with workspace:write".to_owned(),
        ));
    }
    Ok(who)
}

/// `GET /v1/host/sample/identity/owned-run`: a run the caller owns, as
/// `GET /v1/runs/{runId}` answers it (with `owner: {tenant, workspace, principal}`). Each
/// call starts one (workflow `openwop-identity-seam`) in the caller's own workspace,
/// through the same service as `POST /v1/runs`; it expires like any run.
fn owned_run(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = run_starter(&c).await?;
        let files = c.app.files()?;
        let run = files.create_run(&who, SEAM_WORKFLOW).await?;
        crate::runs::get(files, &who, &run.id).await
    })
}

/// `POST /v1/host/sample/identity/cross-workspace-read` (body `{}`): a run owned by another
/// workspace of the caller's tenant (started there by the seam's principal), read as the
/// caller, answered exactly as `GET /v1/runs/{runId}` answers the caller: 403
/// `run_forbidden`, nothing of the run.
fn cross_workspace_read(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let _: serde_json::Map<String, Value> = parse(c.body, "a JSON object ({})")?;
        let who = run_starter(&c).await?;
        let other = if who.scope.workspace.as_str() == OTHER_WORKSPACE {
            format!("{OTHER_WORKSPACE}-2")
        } else {
            OTHER_WORKSPACE.to_owned()
        };
        let other = Scope::parse(who.scope.tenant.as_str(), &other)?;
        let stranger = owner(&c, other, true).await?;
        let files = c.app.files()?;
        let run = files.create_run(&stranger, SEAM_WORKFLOW).await?;
        crate::runs::get(files, &who, &run.id).await
    })
}

fn unknown_op(surface: &str, op: &str, known: &str) -> WorkspaceError {
    WorkspaceError::validation(format!(
        "{surface} op must be {known}, not '{}'",
        op.escape_debug()
    ))
}
