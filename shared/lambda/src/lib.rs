//! Lambda glue shared by the functions under `functions/`: each function's `main` builds
//! its app once per container (its own routes, the services behind them, the adapters
//! those call; see `workspace-wiring`), then [`run`] adapts each API Gateway HTTP API event
//! to it. [`handle`] is a plain async fn so tests call it with a recorded event.

#[cfg(feature = "aws")]
pub mod authorizer;
#[cfg(feature = "aws")]
pub mod identity;
pub mod logs;
pub mod metrics;
pub mod purge;

use bytes::Bytes;
use http::{Request, Response};
use lambda_http::request::RequestContext;
use lambda_http::{service_fn, Body, Error, RequestExt};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;
use workspace_http::routes::ROUTES;
use workspace_http::{App, PathForm, RouteLabel};
#[cfg(feature = "aws")]
use workspace_wiring::{aws::Aws, Settings};

/// An app that takes identity from the HTTP API authorizer's claims; the function adds its
/// services and routes.
#[cfg(feature = "aws")]
pub fn app(settings: &Settings) -> App {
    let mut app = App::new(Arc::new(identity::AuthorizerClaims::new(
        settings.claims.clone(),
    )));
    app.allowed_origins = settings.mcp_allowed_origins.clone();
    app
}

/// An app for a function whose routes are all public (`fn-console`): it reads no setting
/// and builds no AWS client. Its authenticator knows no credential (an empty key set), so a
/// route that asked for one would answer 401; none of a public function's routes does.
pub fn public_app() -> App {
    App::new(Arc::new(workspace_http::auth::ApiKeys::default()))
}

/// A function's start: logs set up, every setting read, the AWS configuration loaded (its
/// clients are built as the function asks for them, once).
#[cfg(feature = "aws")]
pub async fn start() -> Result<Aws, Error> {
    init_tracing();
    Ok(Aws::connect(Settings::from_env()?).await)
}

/// JSON logs for CloudWatch ([`logs`]).
pub fn init_tracing() {
    logs::init();
}

/// Serves `app` under the Lambda runtime: each request through [`invoke`], its metrics to
/// stdout.
pub async fn run(app: App) -> Result<(), Error> {
    let app = Arc::new(app);
    lambda_http::run(service_fn(move |req| {
        let app = app.clone();
        async move { invoke(&app, req, &metrics::stdout).await.map(Exact) }
    }))
    .await
}

/// One request as [`run`] serves it: inside a span carrying its ids (see [`logs`]), through
/// [`handle`], counting what the domain did; then one EMF document ([`metrics`]) to `emit`.
pub async fn invoke(
    app: &App,
    req: lambda_http::Request,
    emit: metrics::Sink<'_>,
) -> Result<Response<Body>, Error> {
    let started = Instant::now();
    let lambda = req.lambda_context_ref();
    let request_id = lambda.map(|c| c.request_id.clone());
    // The runtime's trace id, else the one API Gateway sent along.
    let trace_id = lambda.and_then(|c| c.xray_trace_id.clone()).or_else(|| {
        req.headers()
            .get("x-amzn-trace-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let api_request_id = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(c)) => c.request_id.clone(),
        _ => None,
    };
    let span = tracing::info_span!(
        "invocation",
        requestId = request_id.as_deref(),
        traceId = trace_id.as_deref(),
        apiRequestId = api_request_id.as_deref(),
    );
    let method = req.method().clone();
    let bytes_in = req.body().len();
    let (resp, counts) = workspace_core::metrics::scope(handle(app, req))
        .instrument(span)
        .await;
    let (status, bytes_out, label) = match &resp {
        Ok(r) => (
            r.status().as_u16(),
            r.body().len(),
            r.extensions().get::<RouteLabel>().map(|l| l.0),
        ),
        Err(_) => (500, 0, None),
    };
    // The row that answered: its function and operationId. Anything else (no row, a row
    // this function does not serve) is this function's, operation `unmatched`.
    let row = label.and_then(|l| ROUTES.iter().find(|r| r.pattern == l && r.method == method));
    let answered = metrics::Answered {
        function: row.map_or_else(|| own_function(app), |r| r.function),
        operation: row.map_or("unmatched", |r| r.route.operation_id()),
        status,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        bytes_in,
        bytes_out,
        counts,
    };
    let mut doc = answered.document();
    if let Some(id) = request_id {
        doc = doc.property("requestId", id);
    }
    if let Some(id) = trace_id {
        doc = doc.property("traceId", id);
    }
    emit(&doc.line());
    resp
}

/// The function label of the rows `app` serves (all of one function's, under Lambda).
fn own_function(app: &App) -> &'static str {
    ROUTES
        .iter()
        .find(|r| app.serves(r.route))
        .map_or("unmatched", |r| r.function)
}

/// A response handed to the runtime exactly as built. `lambda_http` converts any other
/// response body by its content type: a text-like type is decoded by its declared charset
/// (BOM sniffed, invalid bytes replaced), which alters stored bytes on the way out.
pub struct Exact(pub Response<Body>);

impl lambda_http::IntoResponse for Exact {
    // lambda_http names this type `ResponseFuture` but does not export the alias.
    fn into_response(
        self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>> {
        Box::pin(std::future::ready(self.0))
    }
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
    let (parts, bytes) = resp.into_parts();
    let body = lambda_body(&parts.headers, bytes.to_vec());
    Ok(Response::from_parts(parts, body))
}

/// The Lambda body that carries `bytes` unchanged through API Gateway: plain text only when
/// the gateway cannot reinterpret it (valid UTF-8, no byte-order mark, no other charset
/// declared), base64 (`isBase64Encoded`) otherwise.
pub fn lambda_body(headers: &http::HeaderMap, bytes: Vec<u8>) -> Body {
    if bytes.is_empty() {
        return Body::Empty;
    }
    let declares_other_charset = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| {
            ct.split(';')
                .skip(1)
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
                .map(|(_, v)| v.trim().trim_matches('"').to_owned())
        })
        .is_some_and(|cs| !cs.eq_ignore_ascii_case("utf-8") && !cs.eq_ignore_ascii_case("utf8"));
    let encoded = headers.contains_key(http::header::CONTENT_ENCODING);
    if declares_other_charset || encoded || bytes.starts_with(b"\xEF\xBB\xBF") {
        return Body::Binary(bytes);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Body::Text(text),
        Err(e) => Body::Binary(e.into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::IntoResponse;

    fn typed(ct: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::CONTENT_TYPE, ct.parse().unwrap());
        h
    }

    /// What the runtime is handed for `bytes` served as `ct`.
    async fn sent(ct: &str, bytes: &[u8]) -> Vec<u8> {
        let headers = typed(ct);
        let mut resp = Response::new(lambda_body(&headers, bytes.to_vec()));
        *resp.headers_mut() = headers;
        let out = Exact(resp).into_response().await;
        out.body().as_ref().to_vec()
    }

    #[tokio::test]
    async fn every_body_leaves_byte_for_byte() {
        let cases: [(&str, &[u8]); 6] = [
            ("text/plain", b"\xEF\xBB\xBFwith a byte-order mark"),
            ("text/plain; charset=iso-8859-1", b"caf\xE9"),
            ("text/plain", b"invalid \xFF\xFE utf-8"),
            ("application/json; charset=utf-16", b"{\"a\":1}"),
            ("text/markdown", b"nul \0 inside"),
            ("application/octet-stream", &[0, 159, 146, 150]),
        ];
        for (ct, bytes) in cases {
            assert_eq!(sent(ct, bytes).await, bytes, "{ct}");
        }
        let plain = Response::builder()
            .header(http::header::CONTENT_TYPE, "text/plain")
            .body(Body::Binary(b"\xEF\xBB\xBFx".to_vec()))
            .unwrap();
        assert_ne!(
            plain.into_response().await.body().as_ref(),
            b"\xEF\xBB\xBFx",
            "lambda_http's own conversion strips the BOM (why Exact exists)"
        );
    }

    #[test]
    fn plain_utf8_stays_text_and_the_rest_goes_base64() {
        assert!(matches!(
            lambda_body(&typed("application/json"), b"{}".to_vec()),
            Body::Text(_)
        ));
        assert!(matches!(
            lambda_body(&typed("text/plain; charset=UTF-8"), "é".as_bytes().to_vec()),
            Body::Text(_)
        ));
        for (ct, bytes) in [
            ("text/plain", b"\xEF\xBB\xBFbom".to_vec()),
            ("text/plain; charset=iso-8859-1", b"plain ascii".to_vec()),
            ("text/plain", vec![0xFF]),
        ] {
            assert!(
                matches!(lambda_body(&typed(ct), bytes), Body::Binary(_)),
                "{ct}"
            );
        }
        assert!(matches!(
            lambda_body(&typed("text/plain"), Vec::new()),
            Body::Empty
        ));
    }
}
