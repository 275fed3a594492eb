//! Connections, bounded: at most `max_connections` served at once (one more is answered 503
//! with the error envelope and closed at once), each served by hyper's HTTP/1 with a
//! deadline on every request head, so a slow or silent client (or an idle keep-alive
//! connection) is closed after `timeout`; on shutdown, requests in flight finish and idle
//! connections close. Written here because `axum::serve` has neither timeouts nor a cap.

use hyper::server::conn::http1;
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
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(bounds.timeout)
            .serve_connection(
                TokioIo::new(stream),
                TowerToHyperService::new(router.clone()),
            );
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
