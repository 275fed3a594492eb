//! The body of `GET /v1/host/workspace/events`: the route (`workspace_http::events`) has
//! judged the request and says where to start ([`EventStream`]); this streams the scope's
//! events from there, as they commit, one SSE frame each:
//!
//! ```text
//! id: <outbox position>
//! event: workspace.updated
//! data: <the EventBridge envelope, one line of JSON>
//! ```
//!
//! A comment line every `KEEP_ALIVE` keeps proxies from closing a quiet stream. The stream
//! ends when the client leaves or the server stops; a client resumes with `Last-Event-ID`.

use super::Events;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use workspace_core::events::Since;
use workspace_http::events::EventStream;

const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Events read from the outbox at a time.
const PAGE: usize = 100;
/// Frames buffered for a slow client before the stream waits for it.
const BUFFERED: usize = 16;

/// A body fed by a task through a bounded channel.
pub struct ChannelBody(mpsc::Receiver<Bytes>);

impl ChannelBody {
    pub fn new(rx: mpsc::Receiver<Bytes>) -> ChannelBody {
        ChannelBody(rx)
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

fn frame(position: u64, envelope: &serde_json::Value) -> Bytes {
    Bytes::from(format!(
        "id: {position}\nevent: workspace.updated\ndata: {envelope}\n\n"
    ))
}

/// Starts streaming `stream` and returns the body that carries it.
pub fn open(
    events: &Events,
    stream: EventStream,
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
    tokio::spawn(async move {
        // Held until the client leaves or the server stops.
        let _permit = permit;
        let mut cursor = stream.after;
        // The first frame at once, so the client knows the stream is open.
        if tx.send(Bytes::from_static(b": open\n\n")).await.is_err() {
            return;
        }
        loop {
            rung.borrow_and_update();
            let page = match log.since(Some(&stream.scope), cursor, PAGE).await {
                Ok(Since::Events(page)) => page,
                Ok(Since::Expired { oldest }) => {
                    let _ = tx
                        .send(Bytes::from(format!(
                            "event: error\ndata: {{\"error\":\"events_expired\",\"message\":\"events after id {cursor} were dropped by retention; the oldest kept is {oldest}\"}}\n\n"
                        )))
                        .await;
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the event outbox failed");
                    return;
                }
            };
            let full = page.len() == PAGE;
            for r in page {
                cursor = r.position;
                // A path-scoped key hears only of the paths it may read.
                if !stream.paths.can_read(&r.event.path) {
                    continue;
                }
                if tx
                    .send(frame(r.position, &r.event.envelope()))
                    .await
                    .is_err()
                {
                    return; // the client left
                }
            }
            if full {
                continue;
            }
            tokio::select! {
                changed = rung.changed() => if changed.is_err() { return },
                _ = stopping.changed() => return,
                // The client left (its body was dropped): free the stream's slot now.
                () = tx.closed() => return,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    ChannelBody(rx)
}
