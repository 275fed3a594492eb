//! Lambda glue shared by every function under `functions/`: build the app once per
//! container (in `main`), then adapt each API Gateway HTTP API event to the shared router.
//! [`handle`] is a plain async fn so tests call it with a recorded event.

pub mod identity;

use bytes::Bytes;
use http::{Request, Response};
use lambda_http::{service_fn, Body, Error, RequestExt};
use std::sync::Arc;
use workspace_core::ports::{LogEvents, RandomIds, SystemClock};
use workspace_core::WorkspaceService;
use workspace_http::config::limits_from_env;
use workspace_http::{App, PathForm, RouteLabel};
use workspace_store_embedded::EmbeddedStore;

/// Builds the app for `function` from settings (`get` reads the environment in `run`). Until the AWS adapters land the
/// functions run over the embedded store under `WORKSPACE_DATA_DIR` (default
/// `/tmp/workspace-data`, the only writable place on Lambda), which is per container and
/// not durable across cold starts.
pub fn build_app(
    function: &'static str,
    get: impl Fn(&str) -> Option<String>,
) -> Result<App, Error> {
    let limits = limits_from_env(&get)?;
    let dir = get("WORKSPACE_DATA_DIR").unwrap_or_else(|| "/tmp/workspace-data".to_owned());
    let store = Arc::new(EmbeddedStore::open(std::path::Path::new(&dir))?);
    let service = WorkspaceService::new(
        store.clone(),
        store,
        Arc::new(LogEvents),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        limits,
    );
    let claims = identity::ClaimNames::from_env(&get);
    let mut app = App::new(service, Arc::new(identity::AuthorizerClaims::new(claims)));
    app.function = Some(function);
    Ok(app)
}

/// Runs `function` under the Lambda runtime.
pub async fn run(function: &'static str) -> Result<(), Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .without_time()
        .init();
    let app = Arc::new(build_app(function, |k| std::env::var(k).ok())?);
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
