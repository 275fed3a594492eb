//! The harness: an adapter pair behind the real HTTP router, with three callers
//! (`acme/main`, the sibling tenant `acme-evil/main`, and `acme/other`) and small limits so
//! quotas are cheap to reach.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use serde_json::Value;
use std::any::Any;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use workspace_core::blob::{BlobLimits, BlobService, BlobStore, LocalPresign};
use workspace_core::cache::{CacheLimits, CacheService, CacheStore};
use workspace_core::model::Millis;
use workspace_core::ports::{
    BodyStore, Clock, FromCommittedState, MetaStore, RandomIds, SystemClock,
};
use workspace_core::search::ChangeLogFeed;
use workspace_core::secrets::SecretStore;
use workspace_core::service::SearchWiring;
use workspace_core::signed_url::UrlSigner;
use workspace_core::{Limits, Scope, WorkspaceService};
use workspace_http::auth::ApiKeys;
use workspace_http::{serve, App, PathForm};

pub const KEY_A: &str = "key-acme-main-0123456789";
pub const KEY_EVIL: &str = "key-acme-evil-0123456789";
pub const KEY_OTHER: &str = "key-acme-other-012345678";
/// Every workspace of tenant `acme`, named per request in `X-Workspace-Id`.
pub const KEY_TENANT: &str = "key-acme-tenant-wide-0001";
/// Tenant `acme` too, for another user (`bob`): the registry keeps his workspaces and
/// tenant-admin's apart.
pub const KEY_TENANT_BOB: &str = "key-acme-tenant-wide-0002";
/// `acme/main` with `workspace:read` only.
pub const KEY_READ_ONLY: &str = "key-acme-main-readonly-01";
/// `acme/main` with `workspace:admin` too (erasing versions from history).
pub const KEY_ADMIN: &str = "key-acme-main-admin-00001";

/// `acme/main` limited to paths: reads and writes [`SCOPED_ALLOW`], only reads
/// [`SCOPED_READ`], and reaches nothing else (`scoped.rs`).
pub const KEY_SCOPED: &str = "key-acme-main-scoped-0001";
pub const SCOPED_ALLOW: &[&str] = &["memory/**", "notes/*.md", "memories/agent-1/**"];
pub const SCOPED_READ: &[&str] = &["docs/**"];

/// The embedding model of the semantic cases, loaded once per test process from
/// `WORKSPACE_MODEL_DIR`. Missing, it fails the test (never a silent pass): `bash
/// tests/run.sh` installs it, or `workspace-local models install`.
pub fn model() -> Arc<dyn workspace_core::search::Embedder> {
    static MODEL: std::sync::OnceLock<Arc<dyn workspace_core::search::Embedder>> =
        std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = std::env::var_os("WORKSPACE_MODEL_DIR").expect(
                "WORKSPACE_MODEL_DIR names the embedding model's folder: tests/run.sh installs it \
                 (cargo run -p workspace-local -- models install --dir DIR, then \
                 WORKSPACE_MODEL_DIR=DIR/all-minilm-l6-v2)",
            );
            Arc::new(
                workspace_embed::MiniLm::load(std::path::Path::new(&dir))
                    .unwrap_or_else(|e| panic!("the model in {dir:?} does not load: {e}")),
            )
        })
        .clone()
}

/// The model, counting the texts it is given: a case checks how much a change re-embeds.
pub struct CountingEmbedder {
    inner: Arc<dyn workspace_core::search::Embedder>,
    texts: std::sync::Mutex<Vec<String>>,
}

impl CountingEmbedder {
    /// Every text embedded so far, queries included, oldest first; and forgets them.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.texts.lock().expect("lock"))
    }
}

impl workspace_core::search::Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn embed(&self, texts: &[&str]) -> workspace_core::Result<Vec<Vec<f32>>> {
        self.texts
            .lock()
            .expect("lock")
            .extend(texts.iter().map(|t| (*t).to_owned()));
        self.inner.embed(texts)
    }
}

/// [`KEY_SCOPED`]'s paths.
pub fn scoped_paths() -> workspace_core::PathScope {
    let own = |g: &[&str]| g.iter().map(|s| (*s).to_owned()).collect();
    workspace_core::PathScope::new(own(SCOPED_ALLOW), own(SCOPED_READ)).expect("globs")
}

/// The key [`Harness::with_path_scope`] adds.
pub const KEY_PROPERTY: &str = "key-acme-main-property-01";

const RW: workspace_core::Access = workspace_core::Access::READ_WRITE;
const ADMIN: workspace_core::Access = workspace_core::Access {
    read: true,
    write: true,
    admin: true,
};

pub const LIMITS: Limits = Limits {
    max_file_bytes: 1024,
    max_files: 5,
    max_versions: 3,
    max_upload_bytes: 4096,
};

/// The harness's inline-body threshold: small, so a case's short texts are kept inline and
/// its longer ones in the body store, and both paths run everywhere.
pub const INLINE_BODY_BYTES: u64 = 64;

/// Largest file the harness's search indexes (small, so an oversized file is cheap).
pub const SEARCH_MAX_FILE_BYTES: u64 = 600;
/// Bytes of text one of the harness's searches may scan (small, so the bound is reached).
pub const SEARCH_MAX_SCAN_BYTES: u64 = 1500;

/// What an adapter under test provides. `guard` keeps resources (a temp dir) alive.
pub struct Backend {
    pub meta: Arc<dyn MetaStore>,
    pub bodies: Arc<dyn BodyStore>,
    /// The adapter's registered-secret store (WSR-1).
    pub secrets: Arc<dyn SecretStore>,
    pub guard: Box<dyn Any + Send + Sync>,
}

/// The RFC 0019 ports of an adapter (optional: `contract_tests!` runs without them;
/// `capability_tests!` builds them next to the [`Backend`]).
pub struct Capabilities {
    pub cache: Arc<dyn CacheStore>,
    pub blobs: Arc<dyn BlobStore>,
}

/// Limits of the capability cases: small, so they are cheap to reach.
pub const CACHE_LIMITS: CacheLimits = CacheLimits {
    max_value_bytes: 2048,
    max_ttl_seconds: 3600,
};
pub const MAX_OBJECT_BYTES: u64 = 64 * 1024;
pub const MAX_PRESIGN_SECONDS: u64 = 600;
/// Where the harness's locally signed URLs point (the harness routes them back to its app).
pub const SIGNED_BASE: &str = "http://signed.test";

pub fn blob_limits() -> BlobLimits {
    BlobLimits {
        buckets: vec!["default".to_owned(), "media".to_owned()],
        max_object_bytes: MAX_OBJECT_BYTES,
        max_presign_seconds: MAX_PRESIGN_SECONDS,
    }
}

/// A clock the cases move by hand; it starts at the real time.
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn advance(&self, ms: Millis) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

pub struct Harness {
    pub app: Arc<App>,
    pub meta: Arc<dyn MetaStore>,
    pub bodies: Arc<dyn BodyStore>,
    pub secrets: Arc<dyn SecretStore>,
    pub clock: Arc<ManualClock>,
    /// The model of a [`Harness::with_semantic`] harness, counting what it embeds.
    pub embedded: Option<Arc<CountingEmbedder>>,
    /// Where requests go instead of `app`: a server process over the same stores (see
    /// [`Harness::over_http`]), and what keeps it running.
    remote: Option<(String, Box<dyn Any + Send + Sync>)>,
    _guard: Box<dyn Any + Send + Sync>,
}

/// The callers every case uses: key, tenant, workspace (`None`: tenant-wide, naming its
/// workspace in `X-Workspace-Id`), principal, and what it may do.
pub const IDENTITIES: &[(&str, &str, Option<&str>, &str, workspace_core::Access)] = &[
    (KEY_A, "acme", Some("main"), "alice", RW),
    (KEY_EVIL, "acme-evil", Some("main"), "mallory", RW),
    (KEY_OTHER, "acme", Some("other"), "olga", RW),
    (KEY_TENANT, "acme", None, "tenant-admin", RW),
    (KEY_TENANT_BOB, "acme", None, "bob", RW),
    (
        KEY_READ_ONLY,
        "acme",
        Some("main"),
        "reader",
        workspace_core::Access::READ_ONLY,
    ),
    (KEY_ADMIN, "acme", Some("main"), "root", ADMIN),
];

/// [`IDENTITIES`] as managed key records, for a server process that reads its keys from a
/// key store.
pub fn managed_keys() -> Vec<workspace_core::keys::ManagedKey> {
    let mut keys: Vec<_> = IDENTITIES
        .iter()
        .enumerate()
        .map(
            |(i, (key, tenant, workspace, principal, access))| workspace_core::keys::ManagedKey {
                id: format!("contract{i}"),
                digest: workspace_core::keys::key_digest(key),
                tenant: (*tenant).to_owned(),
                workspace: workspace.map(str::to_owned),
                principal: (*principal).to_owned(),
                read: access.read,
                write: access.write,
                admin: access.admin,
                allow_paths: Vec::new(),
                read_paths: Vec::new(),
                created_at: 0,
                revoked_at: None,
            },
        )
        .collect();
    keys.push(workspace_core::keys::ManagedKey {
        id: "contract-scoped".to_owned(),
        digest: workspace_core::keys::key_digest(KEY_SCOPED),
        tenant: "acme".to_owned(),
        workspace: Some("main".to_owned()),
        principal: "scoped".to_owned(),
        read: true,
        write: true,
        admin: true,
        allow_paths: scoped_paths().allow().to_vec(),
        read_paths: scoped_paths().read().to_vec(),
        created_at: 0,
        revoked_at: None,
    });
    keys
}

/// A response, decoded.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "response is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts the error envelope: exactly `error`, `message` and optionally `details`.
    pub fn assert_error(&self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "expected {status} {code}, got {} {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        let v = self.json();
        let obj = v.as_object().expect("envelope is an object");
        assert_eq!(obj.get("error").and_then(Value::as_str), Some(code), "{v}");
        let msg = obj.get("message").and_then(Value::as_str).unwrap_or("");
        assert!(!msg.is_empty(), "envelope message is empty: {v}");
        for k in obj.keys() {
            assert!(
                ["error", "message", "details"].contains(&k.as_str()),
                "extra key {k}: {v}"
            );
        }
        assert_eq!(
            self.headers
                .get("content-type")
                .map(|h| h.to_str().unwrap_or("")),
            Some("application/json")
        );
        v
    }

    pub fn assert_ok(&self) -> Value {
        assert!(
            self.status.is_success(),
            "expected success, got {} {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        self.json()
    }
}

/// A request under construction.
pub struct Call<'a> {
    h: &'a Harness,
    builder: http::request::Builder,
    body: Bytes,
}

impl Call<'_> {
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.builder = self.builder.header(name, value.as_ref());
        self
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    pub fn json(self, v: &Value) -> Self {
        let b = v.to_string();
        self.header("content-type", "application/json").body(b)
    }

    pub async fn send(self) -> Reply {
        let req = self.builder.body(self.body).expect("valid test request");
        if let Some((base, _)) = &self.h.remote {
            return over_http(base, req).await;
        }
        let resp = self.h.app.handle(req, PathForm::Encoded).await;
        let (parts, body) = resp.into_parts();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }
}

/// `req` sent to the server at `base` (reqwest resolves dot segments in the path, so the
/// cases sent this way name only plain paths).
async fn over_http(base: &str, req: Request<Bytes>) -> Reply {
    let (parts, body) = req.into_parts();
    let url = format!("{base}{}", parts.uri);
    let mut out = reqwest::Client::new()
        .request(parts.method, &url)
        .body(body.to_vec());
    for (name, value) in &parts.headers {
        out = out.header(name, value);
    }
    let resp = out.send().await.expect("the server answers");
    Reply {
        status: resp.status(),
        headers: resp.headers().clone(),
        body: resp.bytes().await.expect("response body"),
    }
}

/// `app` serving every row of the route table, as the local server does, and the upload and
/// download URLs its upload signer issues.
pub fn every_route(app: App) -> App {
    app.serve_every_function()
        .serve(workspace_mcp::http::ROUTES)
        .serve_signed(&serve::SIGNED_UPLOADS)
        .serve_signed(&serve::SIGNED_BODIES)
}

impl Harness {
    pub async fn new(backend: Backend) -> Self {
        Self::with_limits(backend, LIMITS).await
    }

    /// The harness with the blob and cache services wired in as well (on the harness's
    /// manual clock; stores that cannot presign get a local signer at [`SIGNED_BASE`]).
    pub async fn with_capabilities(backend: Backend, caps: Capabilities) -> Self {
        Self::with_capabilities_and_eraser(backend, caps, None).await
    }

    /// [`Self::with_capabilities`], with what erases a discarded fork's data.
    pub async fn with_capabilities_and_eraser(
        backend: Backend,
        caps: Capabilities,
        eraser: Option<Arc<dyn workspace_core::ports::ScopeEraser>>,
    ) -> Self {
        let h = Self::build(backend, LIMITS, None, eraser, None).await;
        let clock: Arc<dyn Clock> = h.clock.clone();
        let local = LocalPresign {
            signer: UrlSigner::new(b"contract-suite-signing-secret-32".to_vec()),
            base_url: SIGNED_BASE.to_owned(),
        };
        let cache = CacheService::new(caps.cache, clock.clone(), CACHE_LIMITS)
            .with_secrets(h.secrets.clone());
        let blobs = BlobService::new(caps.blobs, clock, blob_limits()).with_local_presign(local);
        h.map_app(|app| {
            app.with_cache(cache)
                .with_blobs(blobs)
                .serve_signed(&serve::SIGNED_BLOBS)
        })
    }

    pub async fn with_limits(backend: Backend, limits: Limits) -> Self {
        Self::build(backend, limits, None, None, None).await
    }

    /// The harness with one more key, [`KEY_PROPERTY`] (acme/main, read-write), limited to
    /// `paths`, and room for `max_files` files.
    pub async fn with_path_scope(
        backend: Backend,
        paths: workspace_core::PathScope,
        max_files: u64,
    ) -> Self {
        let limits = Limits {
            max_files,
            ..LIMITS
        };
        Self::build(backend, limits, Some(paths), None, None).await
    }

    /// The harness with search by meaning on: the embedding model from
    /// `WORKSPACE_MODEL_DIR` (tests/run.sh installs it there), loaded once per process.
    pub async fn with_semantic(backend: Backend) -> Self {
        let limits = Limits {
            max_files: 100,
            ..LIMITS
        };
        Self::build(backend, limits, None, None, Some(model())).await
    }

    async fn build(
        backend: Backend,
        limits: Limits,
        property_scope: Option<workspace_core::PathScope>,
        eraser: Option<Arc<dyn workspace_core::ports::ScopeEraser>>,
        semantic: Option<Arc<dyn workspace_core::search::Embedder>>,
    ) -> Self {
        let mut keys = ApiKeys::default();
        if let Some(paths) = property_scope {
            keys.add_scoped(
                KEY_PROPERTY,
                scope("acme", "main"),
                "property".into(),
                RW,
                paths,
            );
        }
        for (key, tenant, workspace, principal, access) in IDENTITIES {
            let access = *access;
            match workspace {
                Some(w) => keys.add_with_access(key, scope(tenant, w), (*principal).into(), access),
                None => keys.add_tenant_wide(
                    key,
                    workspace_core::TenantId::parse(tenant).expect("tenant"),
                    (*principal).into(),
                    access,
                ),
            }
        }
        // Admin too, so erasing is checked against its paths.
        keys.add_scoped(
            KEY_SCOPED,
            scope("acme", "main"),
            "scoped".into(),
            ADMIN,
            scoped_paths(),
        );
        let clock = Arc::new(ManualClock(AtomicI64::new(SystemClock.now_ms())));
        let service = WorkspaceService::new(
            backend.meta.clone(),
            backend.bodies.clone(),
            Arc::new(FromCommittedState),
            clock.clone(),
            Arc::new(RandomIds),
            limits,
        )
        .with_secrets(backend.secrets.clone())
        // Both kinds of body in every case: a short text inline, a longer one in the store.
        .with_inline_body_bytes(INLINE_BODY_BYTES)
        // Stores that cannot presign get upload URLs the harness routes back to its app.
        .with_upload_signer(LocalPresign {
            signer: UrlSigner::new(b"contract-suite-signing-secret-32".to_vec()),
            base_url: SIGNED_BASE.to_owned(),
        });
        let service = match eraser {
            Some(e) => service.with_scope_eraser(e),
            None => service,
        };
        // Search on every backend through the change log (the feed DynamoDB uses; the local
        // server's outbox feed is tested through the binary in local/tests).
        let service = service.with_search(SearchWiring {
            indexes: Arc::new(workspace_search::LocalIndexes::in_memory()),
            feed: Arc::new(ChangeLogFeed {
                meta: backend.meta.clone(),
                clock: clock.clone(),
            }),
            max_file_bytes: SEARCH_MAX_FILE_BYTES,
            max_scan_bytes: SEARCH_MAX_SCAN_BYTES,
            max_regex_millis: workspace_core::search::MAX_REGEX_MILLIS,
            max_catch_up_paths: workspace_core::search::MAX_CATCH_UP_PATHS,
        });
        let embedded = semantic.map(|inner| {
            Arc::new(CountingEmbedder {
                inner,
                texts: Default::default(),
            })
        });
        let service = match &embedded {
            Some(model) => {
                service.with_semantic(workspace_core::service::Semantic::On(model.clone()))
            }
            None => service,
        };
        Self {
            app: Arc::new(every_route(App::new(Arc::new(keys)).with_files(service))),
            meta: backend.meta,
            bodies: backend.bodies,
            secrets: backend.secrets,
            clock,
            embedded,
            remote: None,
            _guard: backend.guard,
        }
    }

    /// Sends every request to the server at `base` (a real process over the same stores as
    /// this harness's backend, holding [`IDENTITIES`]) instead of the in-process app;
    /// `guard` keeps that server running for the harness's life.
    pub fn over_http(mut self, base: String, guard: Box<dyn Any + Send + Sync>) -> Self {
        self.remote = Some((base, guard));
        self
    }

    /// Rebuilds the app around the same stores (a suite serving more routes attaches its
    /// service here).
    pub fn map_app(self, f: impl FnOnce(App) -> App) -> Self {
        let Self {
            app,
            meta,
            bodies,
            secrets,
            clock,
            embedded,
            remote,
            _guard,
        } = self;
        let app = match Arc::try_unwrap(app) {
            Ok(app) => Arc::new(f(app)),
            Err(_) => panic!("map_app before the app is shared"),
        };
        Self {
            app,
            meta,
            bodies,
            secrets,
            clock,
            embedded,
            remote,
            _guard,
        }
    }

    /// A request with `key` as the bearer credential (no credential when `None`).
    pub fn call(&self, method: Method, uri: &str, key: Option<&str>) -> Call<'_> {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(k) = key {
            builder = builder.header("authorization", format!("Bearer {k}"));
        }
        Call {
            h: self,
            builder,
            body: Bytes::new(),
        }
    }

    pub async fn put(&self, key: &str, path: &str, content: &str) -> Reply {
        self.call(Method::PUT, &file_uri(path), Some(key))
            .json(&serde_json::json!({ "content": content }))
            .send()
            .await
    }

    pub async fn get(&self, key: &str, path: &str) -> Reply {
        self.call(Method::GET, &file_uri(path), Some(key))
            .send()
            .await
    }

    /// `GET /v1/host/workspace/files?<query>` (no query when empty).
    pub async fn list(&self, key: &str, query: &str) -> Reply {
        let uri = match query {
            "" => "/v1/host/workspace/files".to_owned(),
            q => format!("/v1/host/workspace/files?{q}"),
        };
        self.call(Method::GET, &uri, Some(key)).send().await
    }

    pub async fn delete(&self, key: &str, path: &str) -> Reply {
        self.call(Method::DELETE, &file_uri(path), Some(key))
            .send()
            .await
    }

    /// The stored bytes of a path's live body, read through the adapter itself (not the
    /// API), as UTF-8: what redaction tests check for plaintext.
    pub async fn raw_body(&self, tenant: &str, workspace: &str, path: &str) -> String {
        let path = workspace_core::FilePath::parse(path).expect("valid test path");
        let head = self
            .meta
            .head(&scope(tenant, workspace), &path)
            .await
            .expect("head read")
            .expect("a head");
        let raw = crate::body_bytes(&*self.bodies, head.body.as_ref().expect("a live body"))
            .await
            .expect("the body exists");
        String::from_utf8(raw).expect("a text body")
    }

    /// Uses a presigned URL like a client without credentials would: the harness's own
    /// signed URLs go back into its app, any other (S3 on the emulator) over real HTTP.
    /// `headers` are the ones presigning returned; the body sets Content-Length itself.
    pub async fn fetch(&self, method: Method, url: &str, headers: &Value, body: Vec<u8>) -> Reply {
        let pairs: Vec<(String, String)> = headers
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "content-length" | "host"))
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(uri) = url.strip_prefix(SIGNED_BASE) {
            let mut call = self.call(method, uri, None).body(body);
            for (k, v) in &pairs {
                call = call.header(k, v);
            }
            return call.send().await;
        }
        let mut req = reqwest::Client::new().request(method, url).body(body);
        for (k, v) in &pairs {
            req = req.header(k, v);
        }
        let resp = req.send().await.expect("the presigned URL is reachable");
        Reply {
            status: resp.status(),
            headers: resp.headers().clone(),
            body: resp.bytes().await.expect("response body"),
        }
    }

    /// Everything a caller can observe: every live file with version, etag and content,
    /// plus the live-file count. Used to prove a refused request changed nothing.
    pub async fn state(&self, key: &str) -> Vec<(String, u64, String, String)> {
        let list = self.list(key, "").await.assert_ok();
        let mut out = Vec::new();
        for row in list["files"].as_array().cloned().unwrap_or_default() {
            let path = row["path"].as_str().unwrap_or_default().to_owned();
            let file = self.get(key, &path).await.assert_ok();
            out.push((
                path,
                file["version"].as_u64().unwrap_or_default(),
                file["etag"].as_str().unwrap_or_default().to_owned(),
                file["content"].as_str().unwrap_or_default().to_owned(),
            ));
        }
        out
    }
}

pub fn scope(t: &str, w: &str) -> Scope {
    Scope::parse(t, w).expect("valid test scope")
}

/// The file URI with the path sent raw (slashes unencoded).
pub fn file_uri(path: &str) -> String {
    format!("/v1/host/workspace/files/{path}")
}
