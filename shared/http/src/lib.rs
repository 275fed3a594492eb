//! The HTTP layer shared by the Lambda functions and the local server. A request enters at
//! [`App::handle`], is matched against the one route table ([`routes::ROUTES`]), and goes to
//! the handler this process registered for that row ([`serve`]; a Lambda function registers
//! only its own rows, so it links only their code), which authenticates it and hands it to
//! the domain service; every failure leaves as the one error envelope.

// The OpenAPI document's schemas are large `json!` literals.
#![recursion_limit = "512"]

pub mod auth;
pub mod blob;
pub mod cache;
pub mod changes;
pub mod commits;
pub mod discovery;
pub mod envelope;
pub mod events;
mod file_answer;
pub mod files;
pub mod forks;
pub mod handler;
pub mod memory;
pub mod openapi;
pub mod origin;
pub mod request;
pub mod routes;
pub mod runs;
mod scope_check;
pub mod seams;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod snapshots;
pub mod uploads;
pub mod versions;

use auth::Authenticator;
use bytes::Bytes;
use envelope::{error_response, error_to_response, HttpResponse};
pub use handler::{Call, Credential, ExtraRoute, Handler, Reply, Routes, SignedUrls};
use http::{header, HeaderValue, Request, StatusCode};
use percent_encoding::percent_decode_str;
pub use request::PathForm;
use routes::{match_route, Matched, Route};
use std::collections::HashMap;
use std::sync::Arc;
use workspace_core::blob::{BlobLimits, BlobService};
use workspace_core::cache::{CacheLimits, CacheService};
use workspace_core::events::EventLog;
use workspace_core::sessions::ports::WorkspaceRegistry;
use workspace_core::sessions::{SessionService, REGISTERED_PREFIX};
use workspace_core::{Identity, Limits, Result, WorkspaceError, WorkspaceService};

/// Which route answered, attached to every response so transports can log it.
#[derive(Debug, Clone, Copy)]
pub struct RouteLabel(pub &'static str);

/// What discovery advertises of the RFC 0019 families, whether or not this process
/// serves them itself (on Lambda, `get` answers discovery and `blob` serves blobs).
#[derive(Debug, Clone)]
pub struct Advertised {
    /// Blob storage: its limits and whether URLs can be presigned.
    pub blobs: Option<(BlobLimits, bool)>,
    pub cache: Option<CacheLimits>,
    pub events: AdvertisedEvents,
    /// Scheme, host and port clients reach this deployment at, where known (the local
    /// server's), for absolute URLs in discovery.
    pub public_url: Option<String>,
    /// Search by meaning: the model's id, or why it is off.
    pub semantic: Result<String, String>,
}

impl Default for Advertised {
    fn default() -> Self {
        Advertised {
            blobs: None,
            cache: None,
            events: AdvertisedEvents::default(),
            public_url: None,
            semantic: Err("this deployment loads no embedding model".to_owned()),
        }
    }
}

/// How this deployment delivers `workspace.updated`.
#[derive(Debug, Clone, Default)]
pub struct AdvertisedEvents {
    /// On the stack's EventBridge bus (AWS).
    pub event_bridge: bool,
    /// As a server-sent event stream, kept this many seconds for resuming (local server).
    pub stream_retention_seconds: Option<u64>,
    /// To webhooks (local server).
    pub webhooks: bool,
}

/// The HTTP API of one process: the services it was given and the routes it serves.
pub struct App {
    pub auth: Arc<dyn Authenticator>,
    /// The file store (host.workspace), where this process serves it.
    pub files: Option<Arc<WorkspaceService>>,
    /// RFC 0019 blob storage, where this process serves it.
    pub blobs: Option<Arc<BlobService>>,
    /// RFC 0019 TTL cache, where this process serves it.
    pub cache: Option<Arc<CacheService>>,
    /// The session service (`SessionService`) (`/workspaces`), where this process serves it.
    pub sessions: Option<Arc<SessionService>>,
    /// The outbox of `workspace.updated`, where this process keeps one (the local server).
    pub events: Option<Arc<dyn EventLog>>,
    /// The workspace registry, which a tenant-wide credential naming a registered
    /// workspace is checked against. Without one, such a request is refused (fail closed).
    pub registry: Option<Arc<dyn WorkspaceRegistry>>,
    /// The file limits this deployment enforces (advertised, and bounding request bodies).
    pub limits: Limits,
    pub advertised: Advertised,
    /// Browser origins the MCP routes accept ([`origin::AllowedOrigins`]).
    pub allowed_origins: origin::AllowedOrigins,
    /// What a transport adds for routes only it can serve (the local server's MCP
    /// sessions), found by type.
    pub extensions: http::Extensions,
    handlers: HashMap<Route, Handler>,
    signed: Vec<&'static SignedUrls>,
    extra: Vec<&'static ExtraRoute>,
}

fn not_provided(what: &str) -> WorkspaceError {
    WorkspaceError::NotProvided(format!("this deployment does not provide {what}"))
}

impl App {
    /// An app that serves nothing yet: give it services (`with_*`) and routes ([`App::serve`]).
    pub fn new(auth: Arc<dyn Authenticator>) -> Self {
        Self {
            auth,
            files: None,
            blobs: None,
            cache: None,
            sessions: None,
            events: None,
            registry: None,
            limits: Limits::default(),
            advertised: Advertised::default(),
            allowed_origins: origin::AllowedOrigins::default(),
            extensions: http::Extensions::new(),
            handlers: HashMap::new(),
            signed: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// Registers handlers; a later registration of the same route replaces the earlier.
    pub fn serve(mut self, routes: Routes) -> Self {
        self.handlers.extend(routes.iter().copied());
        self
    }

    /// Whether this process registered a handler for `route`.
    pub fn serves(&self, route: Route) -> bool {
        self.handlers.contains_key(&route)
    }

    /// Serves URLs this process signs itself (the local server, the contract harness).
    pub fn serve_signed(mut self, urls: &'static SignedUrls) -> Self {
        self.signed.push(urls);
        self
    }

    /// Serves routes outside the route table (see [`ExtraRoute`]).
    pub fn serve_extra(mut self, routes: &'static [ExtraRoute]) -> Self {
        self.extra.extend(routes.iter());
        self
    }

    fn extra_route(&self, method: &http::Method, path: &str) -> Option<&'static ExtraRoute> {
        self.extra
            .iter()
            .copied()
            .find(|x| x.method == *method && x.path == path)
    }

    /// Registers every function's set but MCP's ([`serve::BY_FUNCTION`]): the whole API.
    pub fn serve_every_function(self) -> Self {
        serve::BY_FUNCTION
            .iter()
            .fold(self, |app, (_, routes)| app.serve(routes))
    }

    pub fn with_files(mut self, files: WorkspaceService) -> Self {
        self.limits = files.limits();
        self.files = Some(Arc::new(files));
        self
    }

    pub fn with_sessions(mut self, sessions: Arc<SessionService>) -> Self {
        self.sessions = Some(sessions);
        self
    }

    /// Serves `GET /v1/host/workspace/events` from `log`, which keeps events
    /// `retention_seconds`, and advertises it with webhooks.
    pub fn with_event_log(mut self, log: Arc<dyn EventLog>, retention_seconds: u64) -> Self {
        self.events = Some(log);
        self.advertised.events.stream_retention_seconds = Some(retention_seconds);
        self.advertised.events.webhooks = true;
        self
    }

    pub fn with_registry(mut self, registry: Arc<dyn WorkspaceRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    pub fn with_blobs(mut self, blobs: BlobService) -> Self {
        self.advertised.blobs = Some((blobs.limits().clone(), blobs.presign_supported()));
        self.blobs = Some(Arc::new(blobs));
        self
    }

    pub fn with_cache(mut self, cache: CacheService) -> Self {
        self.advertised.cache = Some(cache.limits());
        self.cache = Some(Arc::new(cache));
        self
    }

    /// The limits and families discovery advertises, for a process that does not hold
    /// every service itself.
    pub fn advertising(mut self, limits: Limits, advertised: Advertised) -> Self {
        self.limits = limits;
        self.advertised = advertised;
        self
    }

    pub fn files(&self) -> Result<&WorkspaceService> {
        self.files
            .as_deref()
            .ok_or_else(|| not_provided("host.workspace files"))
    }

    pub fn blob_service(&self) -> Result<&BlobService> {
        self.blobs
            .as_deref()
            .ok_or_else(|| not_provided("blobStorage"))
    }

    pub fn cache_service(&self) -> Result<&CacheService> {
        self.cache.as_deref().ok_or_else(|| not_provided("cache"))
    }

    /// Largest request body worth reading at `path`: an upload's at this process's own
    /// upload URLs, else what a request carrying content inline may need (a file PUT, an
    /// MCP call, a blob). Anything larger is refused with 413 before it is parsed (or,
    /// before authentication, buffered); each route then holds its own limit.
    pub fn max_request_bytes_for(&self, path: &str) -> usize {
        if self
            .signed
            .iter()
            .any(|s| s.takes_uploads && path.starts_with(s.prefix))
        {
            // One byte over still reaches the URL's own check, which names the size.
            return usize::try_from(self.limits.max_upload_bytes)
                .unwrap_or(usize::MAX)
                .saturating_add(1);
        }
        // A commit carries several files' content at once: its own bound.
        if path == commits::COMMITS_PATH {
            return commits::max_commit_request_bytes();
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
    pub fn max_file_request_bytes(&self) -> usize {
        let content = usize::try_from(self.limits.max_file_bytes).unwrap_or(usize::MAX);
        content.saturating_mul(6).saturating_add(64 * 1024)
    }

    /// The response for a body over [`App::max_request_bytes`].
    pub fn body_too_large(&self) -> HttpResponse {
        error_to_response(&WorkspaceError::TooLarge {
            message: format!(
                "request body is over {} bytes; file content is limited to maxFileBytes = {} (larger files go through POST /v1/host/workspace/uploads)",
                self.max_file_request_bytes(),
                self.limits.max_file_bytes
            ),
            limit: self.limits.max_file_bytes,
        })
    }

    /// The response for a body over [`App::max_request_bytes_for`] `path`.
    pub fn body_too_large_for(&self, path: &str) -> HttpResponse {
        if path == commits::COMMITS_PATH {
            return error_to_response(&commits::body_too_large());
        }
        self.body_too_large()
    }

    pub async fn handle(&self, req: Request<Bytes>, form: PathForm) -> HttpResponse {
        let (parts, body) = req.into_parts();
        let (path, encoded) = match form {
            PathForm::Encoded => (parts.uri.path().to_owned(), true),
            PathForm::Decoded(p) => (p, false),
        };
        // Locally signed URLs carry no credential; only a process that signs them serves
        // them, and they are not in the route table or template.
        if let Some(signed) = self.signed.iter().find(|s| path.starts_with(s.prefix)) {
            let call = Call {
                app: self,
                route: None,
                parts: &parts,
                tail: &path,
                body: &body,
                credential: None,
            };
            let mut resp = (signed.handler)(call)
                .await
                .unwrap_or_else(|e| error_to_response(&e));
            resp.extensions_mut().insert(RouteLabel(signed.label));
            return resp;
        }
        // Route on the decoded path, as API Gateway does before a function sees it: a name
        // means the same on both transports (`%2F` is `/` everywhere, also where it would
        // split a one-segment key, which is then no route on either).
        let path = if encoded {
            match percent_decode_str(&path).decode_utf8() {
                Ok(p) => p.into_owned(),
                Err(_) => {
                    let e = WorkspaceError::validation(
                        "path is not valid UTF-8 after percent-decoding",
                    );
                    let mut resp = error_to_response(&e);
                    resp.extensions_mut().insert(RouteLabel("unmatched"));
                    return resp;
                }
            }
        } else {
            path
        };
        if let Some(extra) = self.extra_route(&parts.method, &path) {
            if let Some(refused) = self.refuse_path_scoped(&parts).await {
                return with_label(refused, extra.path);
            }
            let call = Call {
                app: self,
                route: None,
                parts: &parts,
                tail: "",
                body: &body,
                credential: None,
            };
            let mut resp = (extra.handler)(call)
                .await
                .unwrap_or_else(|e| error_to_response(&e));
            resp.extensions_mut().insert(RouteLabel(extra.path));
            return resp;
        }
        let (label, result) = match match_route(&parts.method, &path) {
            Matched::Route { spec, tail } => match self.handlers.get(&spec.route) {
                Some(handler) => {
                    if let Some(refused) = self.allowed_origins.refuse(spec.route, &parts) {
                        return with_label(refused, spec.pattern);
                    }
                    let scoped_refusal = if spec.public() || spec.route.takes_path_scoped_keys() {
                        None
                    } else {
                        self.refuse_path_scoped(&parts).await
                    };
                    if let Some(refused) = scoped_refusal {
                        return with_label(refused, spec.pattern);
                    }
                    let credential = match self.authorize(spec, &parts, &body).await {
                        Ok(c) => c,
                        Err(e) => return with_label(error_to_response(&e), spec.pattern),
                    };
                    let call = Call {
                        app: self,
                        route: Some(spec.route),
                        parts: &parts,
                        tail: tail.unwrap_or(""),
                        body: &body,
                        credential: Some(&credential),
                    };
                    (spec.pattern, handler(call).await)
                }
                None => ("unmatched", Ok(no_route(&parts, &path))),
            },
            Matched::NotFound => ("unmatched", Ok(no_route(&parts, &path))),
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

    /// 403 for a path-scoped credential on a route that has no paths to limit it to (see
    /// [`Route::takes_path_scoped_keys`]); `None` otherwise, also for a missing or unknown
    /// credential, which the route's handler answers itself.
    async fn refuse_path_scoped(&self, parts: &http::request::Parts) -> Option<HttpResponse> {
        let grant = self.grant(parts).await.ok()?;
        if grant.paths.is_whole() {
            return None;
        }
        Some(error_to_response(&WorkspaceError::Forbidden(
            "this key is limited to some paths of its workspace; this route needs a key that \
             reaches the whole workspace"
                .to_owned(),
        )))
    }

    /// What the request's credential grants: found by [`App::admit`] already, or looked up.
    pub async fn grant(&self, parts: &http::request::Parts) -> Result<auth::Grant> {
        match parts.extensions.get::<auth::Grant>() {
            Some(g) => Ok(g.clone()),
            None => self.auth.grant(parts).await,
        }
    }

    /// What a transport that reads bodies itself decides from the request head alone,
    /// before a byte of the body is read: a declared `Content-Length` over what the path
    /// takes is 413, and a route that needs a credential without a valid one is 401 (or
    /// 403). Nothing is answered (`None`) when the request may go on; the credential's grant
    /// is then kept in the request, so the handler does not look it up again.
    pub async fn admit(&self, parts: &mut http::request::Parts) -> Option<HttpResponse> {
        // A foreign browser origin on an MCP route is refused before anything else.
        if let Ok(path) = percent_decode_str(parts.uri.path()).decode_utf8() {
            if let Matched::Route { spec, .. } = match_route(&parts.method, &path) {
                if let Some(refused) = self.allowed_origins.refuse(spec.route, parts) {
                    return Some(refused);
                }
            }
        }
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let limit = self.max_request_bytes_for(parts.uri.path());
        if declared.is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX)) {
            return Some(self.body_too_large_for(parts.uri.path()));
        }
        let raw = parts.uri.path();
        if let Some(signed) = self.signed.iter().find(|s| raw.starts_with(s.prefix)) {
            // A signed URL carries no credential: its own head check stands in for one.
            let check = signed.check_head?;
            return check(self, parts).err().map(|e| error_to_response(&e));
        }
        // Routing is decided again in `handle`; an undecodable path is its 400.
        let path = percent_decode_str(raw).decode_utf8().ok()?;
        if self.extra_route(&parts.method, &path).is_none() {
            let Matched::Route { spec, .. } = match_route(&parts.method, &path) else {
                return None;
            };
            if spec.public() || !self.handlers.contains_key(&spec.route) {
                return None;
            }
        }
        match self.auth.grant(parts).await {
            Ok(grant) => {
                parts.extensions.insert(grant);
                None
            }
            Err(e) => Some(error_to_response(&e)),
        }
    }

    /// The credential a row needs, checked once before its handler runs: nothing for a
    /// public row; for the workspace API (`/workspaces`), the tenant-level caller; else the
    /// workspace identity ([`App::identify`], WCT-1 included). Each is held to the row's
    /// [`routes::Needs`].
    async fn authorize(
        &self,
        spec: &routes::RouteSpec,
        parts: &http::request::Parts,
        body: &Bytes,
    ) -> Result<Credential> {
        if spec.public() {
            return Ok(Credential::None);
        }
        if spec.route.acts_on_tenant() {
            let caller = self.grant(parts).await?.caller();
            spec.needs.check(caller.access)?;
            return Ok(Credential::Tenant(caller));
        }
        let empty = Bytes::new();
        let body = if spec.route.body_is_opaque() {
            &empty
        } else {
            body
        };
        let who = self.identify(parts, body).await?;
        spec.needs.check(who.access)?;
        Ok(Credential::Workspace(who))
    }

    /// The caller, from the credential alone; a request that also names a tenant or
    /// workspace (header, query or body) must name the credential's own (WCT-1). A
    /// tenant-wide credential that names a registered workspace (`ws-…`) reaches it only if
    /// the registry holds it for the credential's own user (a fork of one, if it holds the
    /// parent): another user's is not found, as on the `/workspaces` routes.
    pub async fn identify(&self, parts: &http::request::Parts, body: &Bytes) -> Result<Identity> {
        let grant = self.grant(parts).await?;
        let who = auth::resolve(&grant, parts)?;
        // A fork of a registered workspace is reached as its parent is.
        let ws = &who
            .scope
            .workspace
            .fork_parent()
            .unwrap_or_else(|| who.scope.workspace.clone());
        if grant.workspace.is_none() && ws.as_str().starts_with(REGISTERED_PREFIX) {
            let mine = match &self.registry {
                Some(r) => {
                    r.is_registered_to(&who.scope.tenant, &who.principal, ws)
                        .await?
                }
                None => false,
            };
            if !mine {
                return Err(WorkspaceError::not_found(format!("no workspace {ws}")));
            }
        }
        scope_check::names_only_its_own(
            who.scope.tenant.as_str(),
            scope_check::Own::Workspace(who.scope.workspace.as_str()),
            parts,
            body,
        )?;
        Ok(who)
    }
}

fn with_label(mut resp: HttpResponse, label: &'static str) -> HttpResponse {
    resp.extensions_mut().insert(RouteLabel(label));
    resp
}

fn no_route(parts: &http::request::Parts, path: &str) -> HttpResponse {
    // `/console/` matches no row (a greedy parameter captures at least one character, on
    // API Gateway too): send the person to the console's page.
    if parts.method == http::Method::GET && path == "/console/" {
        let mut resp = error_response(
            StatusCode::PERMANENT_REDIRECT,
            "moved",
            "the console is at /console",
            None,
        );
        resp.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/console"));
        return resp;
    }
    error_response(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("no route for {} {}", parts.method, path.escape_debug()),
        None,
    )
}
