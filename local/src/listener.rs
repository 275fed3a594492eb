//! Connections, bounded: at most `max_connections` served at once (one more is answered 503
//! with the error envelope and closed at once), each served by hyper's HTTP/1 with a
//! deadline on every request head, so a slow or silent client (or an idle keep-alive
//! connection) is closed after `timeout`; on shutdown, requests in flight finish and idle
//! connections close. Written here because `axum::serve` has neither timeouts nor a cap.
//! Every request head first passes the gate (`head_gate`), which refuses a malformed one in
//! the error envelope.

use crate::head_gate::{Gate, Refusal, Refusals};
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

pub struct Bounds {
    pub timeout: Duration,
    pub max_connections: usize,
    pub max_buffered_body_bytes: u64,
}

pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    bounds: Bounds,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(bounds.max_connections));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors, say: back off rather than spin.
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refuse_busy(&stream);
            continue;
        };
        let refusals = Arc::new(Refusals::default());
        let gated = Gate::new(stream, refusals.clone());
        let routed = TowerToHyperService::new(router.clone());
        let service = hyper::service::service_fn(move |req| {
            let refused = refusals.take();
            let answer = refused.is_none().then(|| routed.call(req));
            async move {
                match (answer, refused) {
                    (Some(answer), _) => answer.await,
                    (None, refused) => Ok(refusal_response(refused)),
                }
            }
        });
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(bounds.timeout)
            .serve_connection(TokioIo::new(gated), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _permit = permit;
            let _ = conn.await;
        });
    }
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(bounds.timeout) => tracing::warn!("connections still open at shutdown"),
    }
}

/// One connection over the cap: a 503 in the envelope, written without waiting (a fresh
/// socket's buffer takes it whole), then closed. Nothing is read and no task is spawned, so
/// a flood of connections costs the accept loop nothing more.
fn refuse_busy(stream: &TcpStream) {
    const BODY: &str = r#"{"error":"unavailable","message":"the server is serving its maximum number of connections (WORKSPACE_MAX_CONNECTIONS); retry shortly"}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// The answer to a head the gate refused: its status in the envelope, and the connection
/// closes after it.
fn refusal_response(refused: Option<Refusal>) -> http::Response<axum::body::Body> {
    let Refusal {
        status,
        code,
        message,
    } = refused.unwrap_or_else(|| Refusal {
        status: http::StatusCode::BAD_REQUEST,
        code: "validation_error",
        message: "the request could not be read".to_owned(),
    });
    tracing::info!(
        route = "unmatched",
        status = status.as_u16(),
        code,
        "request head refused"
    );
    let mut resp = workspace_http::envelope::error_response(status, code, &message, None);
    resp.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    resp.map(axum::body::Body::from)
}
