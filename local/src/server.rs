//! The HTTP server: hands every request to the shared router, logs one line per request,
//! and stops cleanly on Ctrl-C or SIGTERM.

use crate::events::{sse, Events};
use crate::keys::{KeySource, DEFAULT_TENANT, DEFAULT_WORKSPACE};
use crate::listener;
use axum::body::Body;
use axum::extract::State;
use bytes::{Bytes, BytesMut};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use workspace_core::ports::{BodyPieces, STREAM_PIECE_BYTES};
use workspace_core::WorkspaceError;
use workspace_http::envelope::{error_response, error_to_response, HttpResponse};
use workspace_http::events::EventStream;
use workspace_http::uploads::{streams_body, StreamedBody};
use workspace_http::{App, PathForm, RouteLabel};
use workspace_mcp::http::McpStream;

/// `events`: where the event stream route reads from (the embedded store's outbox);
/// `stop` tells its streams and webhooks the server is stopping.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Arc<App>,
    bounds: listener::Bounds,
    events: Option<Events>,
    stop: tokio::sync::watch::Sender<bool>,
) -> Result<(), String> {
    let served = Served {
        app,
        body_timeout: bounds.timeout,
        body_budget: BodyBudget::new(bounds.max_buffered_body_bytes),
        events,
    };
    let router = axum::Router::new()
        .fallback(handle)
        .with_state(Arc::new(served));
    let stopping = async move {
        shutdown_signal().await;
        let _ = stop.send(true);
    };
    listener::serve(listener, router, bounds, stopping).await;
    tracing::info!("stopped");
    Ok(())
}

/// What every request is served with.
struct Served {
    app: Arc<App>,
    /// The longest gap allowed between two pieces of a request body.
    body_timeout: Duration,
    body_budget: BodyBudget,
    events: Option<Events>,
}

/// Request bodies are read whole before a handler runs (but for uploads, streamed in
/// pieces), so the bytes held at once are bounded across connections: each body reserves
/// its declared length (or its route's limit, when chunked; an upload, what it holds at
/// most: [`STREAMED_BODY_HOLD`]) before a byte is read, and gives it back when answered.
struct BodyBudget {
    /// In KiB, so the largest budget fits a semaphore's permits.
    kib: Arc<Semaphore>,
    total: u64,
}

impl BodyBudget {
    fn new(bytes: u64) -> BodyBudget {
        let kib = usize::try_from(bytes.div_ceil(1024))
            .unwrap_or(Semaphore::MAX_PERMITS)
            .min(Semaphore::MAX_PERMITS);
        BodyBudget {
            kib: Arc::new(Semaphore::new(kib)),
            total: bytes,
        }
    }

    /// A reservation for a body of up to `bytes` (none needed for no body), or `Err` when
    /// the bodies already held leave no room for it.
    fn reserve(&self, bytes: u64) -> Result<Option<OwnedSemaphorePermit>, OverBudget> {
        if bytes == 0 {
            return Ok(None);
        }
        let kib = u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX);
        match self.kib.clone().try_acquire_many_owned(kib) {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => Err(OverBudget),
        }
    }

    /// The 503 that says the server holds all the bodies it may at once.
    fn refusal(&self) -> HttpResponse {
        let mut refused = error_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    &format!(
                        "the server holds its maximum of request bodies in memory ({} bytes, WORKSPACE_MAX_BUFFERED_BODY_BYTES); retry shortly",
                        self.total
                    ),
                    None,
                );
        refused.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        refused
    }
}

struct OverBudget;

/// The most of a streamed upload's body held at once: the store's buffer of one piece, and
/// the piece hyper is handing over.
const STREAMED_BODY_HOLD: u64 = 2 * STREAM_PIECE_BYTES as u64;

/// The most bytes the body of a request with these headers can hold: its declared length,
/// or the route's limit when none is declared (chunked).
fn body_bound(parts: &http::request::Parts, limit: usize) -> u64 {
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let chunked = parts.headers.contains_key(http::header::TRANSFER_ENCODING);
    match (declared, chunked) {
        (_, true) => limit as u64,
        (Some(n), false) => n.min(limit as u64),
        (None, false) => 0,
    }
}

async fn handle(State(served): State<Arc<Served>>, req: Request<Body>) -> Response<Body> {
    let app = &served.app;
    let started = Instant::now();
    let method = req.method().clone();
    let (mut parts, body) = req.into_parts();
    let limit = app.max_request_bytes_for(parts.uri.path());
    // An upload's body goes to the staging store piece by piece as the handler reads it;
    // every other body is read whole here, before the handler runs.
    let streamed = streams_body(&parts);
    let mut stream_failure = None;
    // What the head alone decides (credential, declared length) comes before a byte of the
    // body is read; then the body, bounded.
    // The reservation lives until the answer is built, so the body it covers is gone.
    let mut _reserved = None;
    let read = match app.admit(&mut parts).await {
        Some(refused) => Err(refused),
        None => {
            let bound = body_bound(&parts, limit);
            let bound = if streamed {
                bound.min(STREAMED_BODY_HOLD)
            } else {
                bound
            };
            match served.body_budget.reserve(bound) {
                Err(OverBudget) => Err(served.body_budget.refusal()),
                Ok(permit) => {
                    _reserved = permit;
                    if streamed {
                        let pieces = Pieces::new(body, served.body_timeout);
                        stream_failure = Some(pieces.failure.clone());
                        parts.extensions.insert(StreamedBody::new(pieces));
                        Ok(Bytes::new())
                    } else {
                        read_body(body, limit, served.body_timeout)
                            .await
                            .map_err(|e| unreadable(app, e, served.body_timeout))
                    }
                }
            }
        }
    };
    let resp = match read {
        Ok(bytes) => {
            let resp = app
                .handle(Request::from_parts(parts, bytes), PathForm::Encoded)
                .await;
            match stream_failure {
                Some(failure) => streamed_answer(app, resp, &failure, served.body_timeout),
                None => resp,
            }
        }
        // The rest of the body is never read: the connection cannot carry another
        // request, and saying so keeps a client from sending its next one down it.
        Err(mut refused) => {
            refused.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
            refused
        }
    };
    let route = resp
        .extensions()
        .get::<RouteLabel>()
        .map_or("unmatched", |r| r.0);
    // The route pattern, never the raw path or headers: nothing logged can carry a key.
    tracing::info!(
        %method,
        route,
        status = resp.status().as_u16(),
        duration_ms = format!("{:.2}", started.elapsed().as_secs_f64() * 1000.0),
        "request"
    );
    // The event stream route (or an MCP session's stream) judged the request; its body is
    // the stream itself.
    let stream = resp.extensions().get::<EventStream>().cloned();
    let mcp = resp.extensions().get::<McpStream>().cloned();
    let streams = (stream.is_some() || mcp.is_some())
        .then_some(served.events.as_ref())
        .flatten();
    match streams {
        Some(events) => match events.streams.clone().try_acquire_owned() {
            // The permit lives as long as the stream does.
            Ok(permit) => match (stream, mcp) {
                (Some(stream), _) => resp.map(|_| Body::new(sse::open(events, stream, permit))),
                (None, Some(mcp)) => {
                    resp.map(|_| Body::new(crate::mcp_stream::open(events, mcp, permit)))
                }
                (None, None) => resp.map(Body::from),
            },
            Err(_) => {
                let mut refused = error_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the server holds its maximum of open event streams (WORKSPACE_MAX_EVENT_STREAMS); retry shortly, or resume with Last-Event-ID later",
                    None,
                );
                refused.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    http::HeaderValue::from_static("1"),
                );
                refused.map(Body::from)
            }
        },
        _ => resp.map(Body::from),
    }
}

/// Why a body was not read.
enum Unread {
    /// No byte arrived for the whole idle timeout.
    Stalled,
    /// Over the limit, or malformed or truncated (a bad chunk, a short `Content-Length`).
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// The body, up to `limit` bytes, as long as no gap between its pieces is longer than
/// `idle`: a large upload on a slow link goes on, a stalled one ends.
async fn read_body(body: Body, limit: usize, idle: Duration) -> Result<Bytes, Unread> {
    let mut body = http_body_util::Limited::new(body, limit);
    let mut read = BytesMut::new();
    loop {
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(Unread::Stalled),
            Ok(None) => return Ok(read.freeze()),
            Ok(Some(Err(e))) => return Err(Unread::Failed(e)),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
        }
    }
}

/// The pieces of an upload's body as hyper reads them, each within the idle timeout. Why
/// one could not be read is kept for the answer ([`streamed_answer`]).
struct Pieces {
    body: Body,
    idle: Duration,
    failure: Arc<Mutex<Option<Unread>>>,
}

impl Pieces {
    fn new(body: Body, idle: Duration) -> Pieces {
        Pieces {
            body,
            idle,
            failure: Arc::default(),
        }
    }

    fn failed(&self, why: Unread, message: String) -> WorkspaceError {
        if let Ok(mut failure) = self.failure.lock() {
            *failure = Some(why);
        }
        WorkspaceError::validation(message)
    }
}

#[async_trait::async_trait]
impl BodyPieces for Pieces {
    async fn next_piece(&mut self) -> workspace_core::Result<Option<Vec<u8>>> {
        loop {
            match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_) => {
                    return Err(self.failed(Unread::Stalled, "the request body stalled".to_owned()))
                }
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => {
                    let message = format!("the request body could not be read: {e}");
                    return Err(self.failed(Unread::Failed(e.into()), message));
                }
                Ok(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => return Ok(Some(data.to_vec())),
                    _ => {}
                },
            }
        }
    }
}

/// The answer to a streamed upload: the handler's, unless its body could not be read (then
/// what [`unreadable`] says of it). The connection closes after any refusal, since the rest
/// of the body may be unread.
fn streamed_answer(
    app: &App,
    resp: HttpResponse,
    failure: &Mutex<Option<Unread>>,
    idle: Duration,
) -> HttpResponse {
    let unread = failure.lock().ok().and_then(|mut f| f.take());
    let mut resp = match unread {
        Some(e) => unreadable(app, e, idle),
        None => resp,
    };
    if !resp.status().is_success() {
        resp.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    resp
}

/// The answer to a body that was not read: over the limit 413, stalled 408, otherwise 400.
fn unreadable(app: &App, e: Unread, idle: Duration) -> HttpResponse {
    match e {
        Unread::Failed(e) if e.is::<http_body_util::LengthLimitError>() => app.body_too_large(),
        Unread::Failed(e) => error_to_response(&WorkspaceError::validation(format!(
            "the request body could not be read: {e}"
        ))),
        Unread::Stalled => error_response(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            &format!(
                "no byte of the request body arrived for {} s (WORKSPACE_CONNECTION_TIMEOUT_SECONDS)",
                idle.as_secs()
            ),
            None,
        ),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}

/// What a person needs to start: where data lives, how to call it, and where it listens.
pub fn banner(addr: SocketAddr, place: &str, keys: &KeySource) {
    println!("data: {place}");
    let files = format!("http://{addr}/v1/host/workspace/files");
    match keys {
        KeySource::Env => println!("API keys: WORKSPACE_API_KEYS, and managed keys (in {place})"),
        KeySource::Generated { key } => {
            println!(
                "Created an API key for tenant '{DEFAULT_TENANT}', workspace '{DEFAULT_WORKSPACE}'. It is stored hashed and shown only now:"
            );
            println!("  {key}");
            println!("Try:");
            println!("  curl -H 'Authorization: Bearer {key}' {files}");
        }
        KeySource::Managed { count } => {
            println!(
                "API keys: {count} managed in {place} (`workspace-local keys list`; new ones with `workspace-local keys create --tenant T --workspace W`)"
            );
        }
    }
    // Last, so whoever waits for it has seen everything above.
    println!("workspace-local listening on http://{addr}");
}
