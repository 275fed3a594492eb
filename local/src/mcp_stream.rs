//! The body of `GET /mcp`: an MCP session's notifications as server-sent events. The route
//! (`workspace_mcp::http`) found the session and where to start ([`McpStream`]); this reads
//! the store's outbox from there, as commits ring the bell, and sends what the session's
//! subscriptions make of each run of changes (`Subscriptions::notifications`):
//!
//! ```text
//! id: <outbox position>
//! event: message
//! data: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"workspace:///a.md"}}
//! ```
//!
//! The first event primes the client for resuming (its id, empty data, a `retry`), a
//! comment every `KEEP_ALIVE` keeps proxies from closing a quiet stream, and a client that
//! reconnects with `Last-Event-ID` is sent everything after it. The stream ends when the
//! client leaves, the session ends or a newer stream of it opens, or the server stops.

use crate::events::sse::ChannelBody;
use crate::events::Events;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::mpsc;
use workspace_core::events::Since;
use workspace_mcp::http::McpStream;

const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Changes read from the outbox at a time.
const PAGE: usize = 100;
/// Frames buffered for a slow client before the stream waits for it.
const BUFFERED: usize = 16;
/// How long a client waits before it reconnects, in milliseconds.
const RETRY_MS: u64 = 1000;

fn frame(id: impl std::fmt::Display, message: &serde_json::Value) -> Bytes {
    Bytes::from(format!("id: {id}\nevent: message\ndata: {message}\n\n"))
}

/// Starts streaming and returns the body that carries it; `permit` is held while it runs.
pub fn open(
    events: &Events,
    stream: McpStream,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> ChannelBody {
    let (tx, rx) = mpsc::channel(BUFFERED);
    let Events {
        log,
        bell,
        mut stopping,
        ..
    } = events.clone();
    let mut rung = bell.subscribe();
    let McpStream { session, resume } = stream;
    let (mine, open_guard) = session.begin_stream();
    let mut ended = session.ended();
    tokio::spawn(async move {
        let _permit = permit;
        let _open = open_guard;
        let mut cursor = resume.after;
        // Primes the client with an id to resume from: where this stream starts.
        let primed = match resume.skip_through {
            None => cursor.to_string(),
            Some(k) => format!("{}-{k}", cursor + 1),
        };
        let priming = format!("id: {primed}\nretry: {RETRY_MS}\ndata: \n\n");
        if tx.send(Bytes::from(priming)).await.is_err() {
            return;
        }
        loop {
            if !session.is_current(mine) {
                return;
            }
            rung.borrow_and_update();
            let page = match log.since(Some(&session.owner.scope), cursor, PAGE).await {
                Ok(Since::Events(page)) => page,
                Ok(Since::Expired { oldest }) => {
                    // The client must read the workspace again: say so, and end.
                    let message = serde_json::json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/resources/list_changed",
                    });
                    let _ = tx.send(frame(oldest.saturating_sub(1), &message)).await;
                    tracing::info!(
                        after = cursor,
                        oldest,
                        "an MCP stream resumed past the outbox's retention"
                    );
                    session
                        .delivered
                        .fetch_max(oldest.saturating_sub(1), Ordering::SeqCst);
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the event outbox for an MCP stream failed");
                    return;
                }
            };
            let full = page.len() == PAGE;
            let last = page.last().map(|r| r.position);
            let notes = session
                .subscriptions
                .notifications(&session.owner, page.iter().map(|r| (r.position, &r.event)));
            for (id, note) in notes {
                if resume.already_sent(id) {
                    continue;
                }
                if tx.send(frame(id, &note)).await.is_err() {
                    return; // the client left
                }
            }
            if let Some(last) = last {
                cursor = last;
                session.delivered.fetch_max(last, Ordering::SeqCst);
            }
            if full {
                continue;
            }
            tokio::select! {
                changed = rung.changed() => if changed.is_err() { return },
                _ = stopping.changed() => return,
                _ = ended.changed() => return,
                () = tx.closed() => return,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    ChannelBody::new(rx)
}
