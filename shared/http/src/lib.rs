//! The HTTP layer shared by the Lambda functions and the local server. A request enters at
//! [`App::handle`], is matched against the one route table ([`routes::ROUTES`]), authenticated,
//! and handed to the domain service; every failure leaves as the one error envelope.

pub mod auth;
pub mod config;
pub mod discovery;
pub mod envelope;
pub mod files;
pub mod request;
pub mod routes;
mod scope_check;
pub mod sessions;

use auth::Authenticator;
use bytes::Bytes;
use envelope::{error_response, error_to_response, json_response, HttpResponse};
use http::{header, HeaderValue, Request, StatusCode};
use request::Decoding;
pub use request::PathForm;
use routes::{match_route, Matched, Route};
use serde_json::json;
use std::sync::Arc;
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

/// Which route answered, attached to every response so transports can log it.
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

pub struct App {
    pub service: WorkspaceService,
    pub auth: Arc<dyn Authenticator>,
    /// The function this process serves (`Some("get")` on Lambda), or every route (`None`).
    pub function: Option<&'static str>,
    /// The workspace service for agent sessions (`/workspaces`), where deployed.
    pub sessions: Option<Arc<SessionService>>,
}

impl App {
    pub fn new(service: WorkspaceService, auth: Arc<dyn Authenticator>) -> Self {
        Self {
            service,
            auth,
            function: None,
            sessions: None,
        }
    }

    pub fn with_sessions(mut self, sessions: Arc<SessionService>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Largest request body worth reading: a JSON string may escape each byte of the
    /// content into up to six characters, plus room for the other fields. Anything larger
    /// is refused with 413 before it is parsed.
    pub fn max_request_bytes(&self) -> usize {
        let content = usize::try_from(self.service.limits().max_file_bytes).unwrap_or(usize::MAX);
        content.saturating_mul(6).saturating_add(64 * 1024)
    }

    /// The response for a body over [`App::max_request_bytes`].
    pub fn body_too_large(&self) -> HttpResponse {
        error_to_response(&workspace_core::WorkspaceError::TooLarge {
            message: format!(
                "request body is over {} bytes; file content is limited to maxFileBytes = {}",
                self.max_request_bytes(),
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
        let (label, result) = match match_route(&parts.method, &path) {
            Matched::Route { spec, tail } if self.function.is_none_or(|f| f == spec.function) => {
                let label = spec.pattern;
                (
                    label,
                    self.dispatch(spec.route, &parts, tail.unwrap_or(""), decoding, &body)
                        .await,
                )
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
            Route::Discovery | Route::Capabilities => {
                Ok(json_response(StatusCode::OK, &discovery::document(&limits)))
            }
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
                if body.len() > self.max_request_bytes() {
                    return Ok(self.body_too_large());
                }
                files::put(&self.service, &who, parts, tail, decoding, body).await
            }
            Route::DeleteFile => {
                let who = self.identify(parts, body).await?;
                require_write(&who)?;
                files::delete(&self.service, &who, parts, tail, decoding).await
            }
            _ => Err(WorkspaceError::internal("route has no handler")),
        }
    }
}
