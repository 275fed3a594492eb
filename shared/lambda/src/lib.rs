//! Lambda glue shared by the functions under `functions/`: each function's `main` builds
//! its app once per container (its own routes, the services behind them, the adapters
//! those call; see `workspace-wiring`), then [`run`] adapts each API Gateway HTTP API event
//! to it. [`handle`] is a plain async fn so tests call it with a recorded event.

pub mod authorizer;
pub mod identity;
pub mod purge;

use bytes::Bytes;
use http::{Request, Response};
use lambda_http::{service_fn, Body, Error, RequestExt};
use std::sync::Arc;
use workspace_http::{App, PathForm, RouteLabel};
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

/// An app that takes identity from the HTTP API authorizer's claims; the function adds its
/// services and routes.
pub fn app(settings: &Settings) -> App {
    App::new(Arc::new(identity::AuthorizerClaims::new(
        settings.claims.clone(),
    )))
}

/// A function's start: logs set up, every setting read, the AWS configuration loaded (its
/// clients are built as the function asks for them, once).
pub async fn start() -> Result<Aws, Error> {
    init_tracing();
    Ok(Aws::connect(Settings::from_env()?).await)
}

/// JSON logs for CloudWatch, filtered by `RUST_LOG` (`info`, `warn,workspace_http=debug`, ...).
/// A `Targets` filter rather than `EnvFilter`: the same directives without span and field
/// matching, and without the regex engine EnvFilter links into every function.
pub fn init_tracing() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().json().without_time())
        .with(filter)
        .init();
}

/// Serves `app` under the Lambda runtime.
pub async fn run(app: App) -> Result<(), Error> {
    let app = Arc::new(app);
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
