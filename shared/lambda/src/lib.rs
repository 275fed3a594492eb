//! Lambda glue shared by every function under `functions/`: build the app once per
//! container (in `main`), then adapt each API Gateway HTTP API event to the shared router.
//! [`handle`] is a plain async fn so tests call it with a recorded event.

pub mod authorizer;
pub mod identity;
pub mod jobs;
pub mod sessions;

use bytes::Bytes;
use http::{Request, Response};
use lambda_http::{service_fn, Body, Error, RequestExt};
use std::sync::Arc;
use workspace_core::blob::{BlobService, BlobStore};
use workspace_core::cache::{CacheService, CacheStore};
use workspace_core::ports::{BodyStore, Clock, LogEvents, MetaStore, RandomIds, SystemClock};
use workspace_core::secrets::SecretStore;
use workspace_core::WorkspaceService;
use workspace_http::capability_config::{blob_limits_from_env, cache_limits_from_env};
use workspace_http::config::{
    limits_from_env, redactor_from_env, snapshot_ttl_ms_from_env, upload_url_seconds_from_env,
};
use workspace_http::{App, PathForm, RouteLabel};
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::{AwsClients, DynamoCache, DynamoMeta, S3Blobs, S3Bodies};
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;

/// A setting that must be present.
pub fn required(get: &impl Fn(&str) -> Option<String>, name: &str) -> Result<String, Error> {
    get(name)
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| format!("{name} must be set").into())
}

/// Builds the app for `function` from settings (`get` reads the environment in `run`).
/// With `WORKSPACE_TABLE` set it runs on the AWS adapters (`WORKSPACE_BUCKET`, SDK clients
/// from the standard AWS environment); without, on the embedded store under
/// `WORKSPACE_DATA_DIR` (default `/tmp/workspace-data`: per container, not durable), which
/// is what `cargo lambda watch` uses on a laptop.
pub async fn build_app(
    function: &'static str,
    get: impl Fn(&str) -> Option<String>,
) -> Result<App, Error> {
    let limits = limits_from_env(&get)?;
    type Ports = (
        Arc<dyn MetaStore>,
        Arc<dyn BodyStore>,
        Arc<dyn SecretStore>,
        Option<Arc<dyn CacheStore>>,
        Option<Arc<dyn BlobStore>>,
    );
    let on_aws = get("WORKSPACE_TABLE").is_some();
    let session_stores: sessions::Stores;
    let (meta, bodies, secrets, cache, blobs): Ports = if on_aws {
        let clients = AwsClients::from_env().await;
        let table = required(&get, "WORKSPACE_TABLE")?;
        session_stores =
            sessions::aws_stores(&get, &clients, &table, &required(&get, "WORKSPACE_BUCKET")?);
        // RFC 0019: the cache table and blob bucket, when the deployment has them.
        let cache = get("WORKSPACE_CACHE_TABLE")
            .filter(|t| !t.trim().is_empty())
            .map(|t| {
                Arc::new(DynamoCache::new(clients.dynamodb.clone(), t)) as Arc<dyn CacheStore>
            });
        let blobs = get("WORKSPACE_BLOB_S3_BUCKET")
            .filter(|b| !b.trim().is_empty())
            .map(|b| Arc::new(S3Blobs::new(clients.s3.clone(), b)) as Arc<dyn BlobStore>);
        (
            Arc::new(DynamoMeta::new(clients.dynamodb.clone(), table.clone())),
            Arc::new(S3Bodies::new(
                clients.s3.clone(),
                required(&get, "WORKSPACE_BUCKET")?,
            )),
            Arc::new(DynamoSecrets::new(clients.dynamodb.clone(), table)),
            cache,
            blobs,
        )
    } else {
        let dir = get("WORKSPACE_DATA_DIR").unwrap_or_else(|| "/tmp/workspace-data".to_owned());
        let dir = std::path::Path::new(&dir);
        let store = Arc::new(EmbeddedStore::open(dir)?);
        session_stores = (store.clone(), vec![store.clone()]);
        (
            store.clone(),
            store.clone(),
            Arc::new(SecretFile::new(dir)),
            Some(store.clone()),
            Some(store),
        )
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let session_bodies = bodies.clone();
    // Events come from the DynamoDB stream (functions/publish), never from the request path.
    let service = WorkspaceService::new(
        meta,
        bodies,
        Arc::new(LogEvents),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        limits,
    )
    .with_redactor(redactor_from_env(&get)?)
    .with_secrets(secrets.clone())
    .with_snapshot_ttl_ms(snapshot_ttl_ms_from_env(&get)?)
    .with_upload_url_seconds(upload_url_seconds_from_env(&get)?);
    let claims = identity::ClaimNames::from_env(&get);
    let mut app = App::new(service, Arc::new(identity::AuthorizerClaims::new(claims)));
    if let Some(c) = cache {
        app = app.with_cache(
            CacheService::new(c, clock.clone(), cache_limits_from_env(&get)?)
                .with_redactor(redactor_from_env(&get)?)
                .with_secrets(secrets),
        );
    }
    if let Some(b) = blobs {
        app = app.with_blobs(BlobService::new(b, clock, blob_limits_from_env(&get)?));
    }
    app.function = Some(function);
    if function == sessions::FUNCTION {
        let svc = sessions::service(&get, on_aws, session_stores, session_bodies)?;
        app = app.with_sessions(Arc::new(svc));
    }
    Ok(app)
}

/// JSON logs for CloudWatch, filtered by `RUST_LOG`.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .without_time()
        .init();
}

/// Runs `function` under the Lambda runtime; the app (and its clients) is built once.
pub async fn run(function: &'static str) -> Result<(), Error> {
    init_tracing();
    let app = Arc::new(build_app(function, |k| std::env::var(k).ok()).await?);
    lambda_http::run(service_fn(move |req| {
        let app = app.clone();
        async move { handle(&app, req).await }
    }))
    .await
}

/// One API Gateway event through the shared router.
pub async fn handle(app: &App, req: lambda_http::Request) -> Result<Response<Body>, Error> {
    // lambda_http rebuilds the URI through a URL parser that resolves `..` segments; the
    // gateway's own rawPath is what the client sent (already decoded), so route on that.
    let raw_path = req.raw_http_path().to_owned();
    let form = if raw_path.is_empty() {
        PathForm::Encoded
    } else {
        PathForm::Decoded(raw_path)
    };
    let (parts, body) = req.into_parts();
    let body = Bytes::copy_from_slice(body.as_ref());
    let resp = app.handle(Request::from_parts(parts, body), form).await;
    let route = resp
        .extensions()
        .get::<RouteLabel>()
        .map_or("unmatched", |r| r.0);
    tracing::info!(route, status = resp.status().as_u16(), "request");
    Ok(resp.map(|b| match String::from_utf8(b.to_vec()) {
        Ok(text) if text.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(e) => Body::Binary(e.into_bytes()),
    }))
}
