//! The HTTP layer shared by the Lambda functions and the local server. A request enters at
//! [`App::handle`], is matched against the one route table ([`routes::ROUTES`]), authenticated,
//! and handed to the domain service; every failure leaves as the one error envelope.

pub mod auth;
pub mod blob;
pub mod cache;
pub mod capability_config;
pub mod config;
pub mod discovery;
pub mod envelope;
pub mod files;
pub mod mcp;
pub mod request;
pub mod routes;
mod scope_check;
pub mod sessions;
pub mod snapshots;
pub mod uploads;
pub mod versions;

use auth::Authenticator;
use bytes::Bytes;
use envelope::{error_response, error_to_response, json_response, HttpResponse};
use http::{header, HeaderValue, Request, StatusCode};
use request::Decoding;
pub use request::PathForm;
use routes::{match_route, Matched, Route};
use serde_json::json;
use std::sync::Arc;
use workspace_core::blob::{BlobService, SIGNED_BLOB_PREFIX};
use workspace_core::cache::CacheService;
use workspace_core::service::{SIGNED_BODY_PREFIX, SIGNED_UPLOAD_PREFIX};
use workspace_core::sessions::SessionService;
use workspace_core::{Identity, Result, WorkspaceError, WorkspaceService};

fn require_read(who: &Identity) -> Result<()> {
    if who.access.read {
        Ok(())
    } else {
        Err(WorkspaceError::Forbidden(
            "this credential may not read files: it needs the workspace:read scope".to_owned(),
        ))
    }
}

fn require_write(who: &Identity) -> Result<()> {
    if who.access.write {
        Ok(())
    } else {
        Err(WorkspaceError::Forbidden(
            "this credential may not change files: it needs the workspace:write scope".to_owned(),
        ))
    }
}

/// The function serving `POST /mcp`.
pub const MCP_FUNCTION: &str = "mcp";
/// Whether a presign body asks for a PUT URL (a malformed body is refused later).
fn body_names_put(body: &Bytes) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(|m| m != "GET"))
        .unwrap_or(false)
}

/// Which route answered, attached to every response so transports can log it.
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

pub struct App {
    pub service: WorkspaceService,
    pub auth: Arc<dyn Authenticator>,
    /// The function this process serves (`Some("get")` on Lambda), or every route (`None`).
    pub function: Option<&'static str>,
    /// RFC 0019 blob storage, when this deployment provides it.
    pub blobs: Option<Arc<BlobService>>,
    /// RFC 0019 TTL cache, when this deployment provides it.
    pub cache: Option<Arc<CacheService>>,
    /// The workspace service for agent sessions (`/workspaces`), where deployed.
    pub sessions: Option<Arc<SessionService>>,
}

fn not_provided(what: &str) -> WorkspaceError {
    WorkspaceError::NotProvided(format!("this deployment does not provide {what}"))
}

impl App {
    pub fn new(service: WorkspaceService, auth: Arc<dyn Authenticator>) -> Self {
        Self {
            service,
            auth,
            function: None,
            blobs: None,
            cache: None,
            sessions: None,
        }
    }

    pub fn with_sessions(mut self, sessions: Arc<SessionService>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    pub fn with_blobs(mut self, blobs: BlobService) -> Self {
        self.blobs = Some(Arc::new(blobs));
        self
    }

    pub fn with_cache(mut self, cache: CacheService) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    fn blob_service(&self) -> Result<&BlobService> {
        self.blobs
            .as_deref()
            .ok_or_else(|| not_provided("blobStorage"))
    }

    fn cache_service(&self) -> Result<&CacheService> {
        self.cache.as_deref().ok_or_else(|| not_provided("cache"))
    }

    /// Largest request body worth reading at `path`: an upload's at this process's own
    /// upload URLs, else what a request carrying content inline may need (a file PUT, an
    /// MCP call, a blob). Anything larger is refused with 413 before it is parsed (or,
    /// before authentication, buffered); each route then holds its own limit.
    pub fn max_request_bytes_for(&self, path: &str) -> usize {
        if self.function.is_none()
            && self.service.signs_urls()
            && path.starts_with(SIGNED_UPLOAD_PREFIX)
        {
            // One byte over still reaches the URL's own check, which names the size.
            return usize::try_from(self.service.limits().max_upload_bytes)
                .unwrap_or(usize::MAX)
                .saturating_add(1);
        }
        self.max_request_bytes()
    }

    /// Largest body of a request that carries content inline (file PUT, MCP, blob PUT).
    pub fn max_request_bytes(&self) -> usize {
        let files = self.max_file_request_bytes();
        // A blob one byte over its limit still reaches the service, which names the limit.
        let blobs = self.blobs.as_ref().map_or(0, |b| {
            usize::try_from(b.limits().max_object_bytes)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        });
        files.max(blobs)
    }

    /// Largest file PUT body: a JSON string may escape each byte of the content into up to
    /// six characters, plus room for the other fields.
    fn max_file_request_bytes(&self) -> usize {
        let content = usize::try_from(self.service.limits().max_file_bytes).unwrap_or(usize::MAX);
        content.saturating_mul(6).saturating_add(64 * 1024)
    }

    /// The response for a body over [`App::max_request_bytes`].
    pub fn body_too_large(&self) -> HttpResponse {
        error_to_response(&workspace_core::WorkspaceError::TooLarge {
            message: format!(
                "request body is over {} bytes; file content is limited to maxFileBytes = {} (larger files go through POST /v1/host/workspace/uploads)",
                self.max_file_request_bytes(),
                self.service.limits().max_file_bytes
            ),
            limit: self.service.limits().max_file_bytes,
        })
    }

    pub async fn handle(&self, req: Request<Bytes>, form: PathForm) -> HttpResponse {
        let (parts, body) = req.into_parts();
        let (path, decoding) = match form {
            PathForm::Encoded => (parts.uri.path().to_owned(), Decoding::Once),
            PathForm::Decoded(p) => (p, Decoding::AlreadyDone),
        };
        // Locally signed URLs carry no credential; only the local server (every route, a
        // local signer) serves them, and they are not in the route table or template.
        let signed = self
            .blobs
            .as_ref()
            .filter(|b| b.local_presign().is_some() && self.function.is_none())
            .filter(|_| path.starts_with(SIGNED_BLOB_PREFIX));
        if let Some(b) = signed {
            let mut resp = blob::signed(b, &parts, &path, &body)
                .await
                .unwrap_or_else(|e| error_to_response(&e));
            resp.extensions_mut().insert(RouteLabel(
                "/v1/signed/blob/{tenant}/{workspace}/{bucket}/{key+}",
            ));
            return resp;
        }
        if self.function.is_none() && self.service.signs_urls() {
            let signed = if path.starts_with(SIGNED_UPLOAD_PREFIX) {
                Some((
                    "/v1/signed/upload/{tenant}/{workspace}/{uploadId}",
                    uploads::signed(&self.service, &parts, &path, &body).await,
                ))
            } else if path.starts_with(SIGNED_BODY_PREFIX) {
                Some((
                    "/v1/signed/body/{key+}",
                    uploads::signed_download(&self.service, &parts, &path).await,
                ))
            } else {
                None
            };
            if let Some((label, result)) = signed {
                let mut resp = result.unwrap_or_else(|e| error_to_response(&e));
                resp.extensions_mut().insert(RouteLabel(label));
                return resp;
            }
        }
        let (label, result) = match match_route(&parts.method, &path) {
            Matched::Route { spec, tail } if self.function.is_none_or(|f| f == spec.function) => {
                let label = spec.pattern;
                (
                    label,
                    self.dispatch(spec.route, &parts, tail.unwrap_or(""), decoding, &body)
                        .await,
                )
            }
            // The MCP function answers `GET /health` itself with its own document, so a
            // probe of that function (Function URL, `cargo lambda invoke`) finds it alive.
            Matched::Route { spec, .. }
                if spec.route == Route::Health && self.function == Some(MCP_FUNCTION) =>
            {
                ("/health", Ok(mcp::health()))
            }
            Matched::Route { .. } | Matched::NotFound => (
                "unmatched",
                Ok(error_response(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    &format!("no route for {} {}", parts.method, path.escape_debug()),
                    None,
                )),
            ),
            Matched::MethodNotAllowed { allowed } => {
                let list = allowed
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut resp = error_response(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method_not_allowed",
                    &format!("{} is not supported here; use {list}", parts.method),
                    None,
                );
                if let Ok(v) = HeaderValue::from_str(&list) {
                    resp.headers_mut().insert(header::ALLOW, v);
                }
                ("unmatched", Ok(resp))
            }
        };
        let mut resp = result.unwrap_or_else(|e| error_to_response(&e));
        resp.extensions_mut().insert(RouteLabel(label));
        resp
    }

    /// The caller, from the credential alone; a request that also names a tenant or
    /// workspace (header, query or body) must name the credential's own (WCT-1).
    async fn identify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Identity> {
        let who = self.auth.authenticate(parts).await?;
        scope_check::names_only_its_own_scope(&who, parts, body)?;
        Ok(who)
    }

    async fn dispatch(
        &self,
        route: Route,
        parts: &http::request::Parts,
        tail: &str,
        decoding: Decoding,
        body: &Bytes,
    ) -> Result<HttpResponse> {
        let limits = self.service.limits();
        if sessions::serves(route) {
            // These routes carry their parameters in the path (`tail` is the whole path).
            return sessions::dispatch(self, route, parts, tail, body).await;
        }
        match route {
            Route::Health => Ok(json_response(
                StatusCode::OK,
                &json!({ "status": "ok", "service": "agent-workspace", "version": env!("CARGO_PKG_VERSION") }),
            )),
            Route::Discovery | Route::Capabilities => Ok(json_response(
                StatusCode::OK,
                &discovery::document_for(&limits, self.blobs.as_deref(), self.cache.as_deref()),
            )),
            Route::ListFiles => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                files::list(&self.service, &who, parts).await
            }
            Route::GetFile => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                files::get(&self.service, &who, parts, tail, decoding).await
            }
            Route::PutFile => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                if body.len() > self.max_file_request_bytes() {
                    return Ok(self.body_too_large());
                }
                files::put(&self.service, &who, parts, tail, decoding, body).await
            }
            Route::DeleteFile => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                files::delete(&self.service, &who, parts, tail, decoding).await
            }
            Route::Mcp => {
                // Scopes are checked per tool: a read-only credential lists and reads.
                let who = self.identify(parts, body).await?;
                if body.len() > self.max_request_bytes() {
                    return Ok(self.body_too_large());
                }
                mcp::post(&self.service, &who, parts, body).await
            }
            Route::McpHealth => Ok(mcp::health()),
            Route::CacheGet => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                cache::get(self.cache_service()?, &who, tail, decoding).await
            }
            Route::CachePut => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                cache::put(self.cache_service()?, &who, tail, decoding, body).await
            }
            Route::CacheDelete => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                cache::delete(self.cache_service()?, &who, tail, decoding).await
            }
            Route::BlobList => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                blob::list(self.blob_service()?, &who, parts, tail, decoding).await
            }
            Route::BlobGet => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                blob::get(self.blob_service()?, &who, tail, decoding).await
            }
            Route::BlobPut => {
                // The body is opaque bytes: never read as a scope-naming JSON object.
                let who = self.identify(parts, &Bytes::new()).await?;
                require_write(&who)?;
                blob::put(self.blob_service()?, &who, parts, tail, decoding, body).await
            }
            Route::BlobDelete => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                blob::delete(self.blob_service()?, &who, tail, decoding).await
            }
            Route::BlobPresign => {
                let who = self.identify(parts, body).await?;
                // A GET URL reads, a PUT URL writes; presigning needs the matching scope,
                // checked here for both so a read-only key cannot mint upload URLs.
                require_read(&who)?;
                if body_names_put(body) {
                    require_write(&who)?;
                }
                blob::presign(self.blob_service()?, &who, tail, decoding, body).await
            }
            Route::ListVersions => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                versions::history(&self.service, &who, parts, tail, decoding).await
            }
            Route::RestoreVersion => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                versions::restore(&self.service, &who, parts, tail, decoding, body).await
            }
            Route::Diff => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                versions::diff(&self.service, &who, parts, tail, decoding).await
            }
            Route::CreateSnapshot => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                snapshots::create(&self.service, &who).await
            }
            Route::GetSnapshot => {
                let who = self.identify(parts, body).await?;
                require_read(&who)?;
                snapshots::get(&self.service, &who, tail).await
            }
            Route::StartUpload => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                uploads::start(&self.service, &who, body).await
            }
            Route::DeleteSnapshot => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                snapshots::delete(&self.service, &who, tail).await
            }
            _ => Err(WorkspaceError::internal("route has no handler")),
        }
    }
}
