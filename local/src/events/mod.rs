//! `workspace.updated` on the local server: the store writes every change's event to its
//! outbox in the commit's own transaction; from there this module delivers it as a
//! server-sent event stream (`sse.rs`, `GET /v1/host/workspace/events`) and to webhooks
//! (`webhooks.rs`), and drops events past their retention.

pub mod sse;
pub mod webhooks;

use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use workspace_core::events::{EventLog, EventSink, WorkspaceEvent};
use workspace_core::ports::{Clock, SystemClock};
use workspace_core::Result;

/// Rung after every commit, so streams and webhooks read the outbox at once instead of
/// polling it. The event itself is already in the outbox: a lost ring delays delivery (to
/// the next ring or keep-alive tick), it never loses an event.
#[derive(Clone)]
pub struct Bell {
    tx: Arc<watch::Sender<u64>>,
}

impl Bell {
    pub fn new() -> Bell {
        Bell {
            tx: Arc::new(watch::channel(0).0),
        }
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.tx.subscribe()
    }
}

#[async_trait]
impl EventSink for Bell {
    async fn publish(&self, _event: WorkspaceEvent) -> Result<()> {
        self.tx.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }
}

/// What the event deliverers share: the outbox, its bell, and the server's stop signal.
#[derive(Clone)]
pub struct Events {
    pub log: Arc<dyn EventLog>,
    pub bell: Bell,
    pub stopping: watch::Receiver<bool>,
    /// One permit per open stream (`WORKSPACE_MAX_EVENT_STREAMS`).
    pub streams: Arc<tokio::sync::Semaphore>,
}

/// Drops events older than `retention`, now and every hour.
pub fn prune_forever(log: Arc<dyn EventLog>, retention: Duration) {
    tokio::spawn(async move {
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        loop {
            let cutoff = SystemClock.now_ms().saturating_sub(retention_ms);
            match log.prune(cutoff).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(dropped = n, "events past their retention dropped"),
                Err(e) => tracing::warn!(error = %e, "pruning the event outbox failed"),
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
}
