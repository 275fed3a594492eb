//! `workspace-local mcp`: the MCP tools over stdin/stdout (newline-delimited JSON-RPC, the
//! MCP stdio transport) for clients that spawn the server. Same tools, same service and
//! store as `POST /mcp`; stdout carries only protocol messages, logs go to stderr.
//!
//! Whose workspace: `WORKSPACE_API_KEY` (a key the server would accept: managed or from
//! `WORKSPACE_API_KEYS`; a tenant-wide key also needs `--workspace`), or, for a person's own
//! machine, `--tenant T --workspace W` (whoever can run this can read the data directory
//! anyway). Nothing in the messages can change it.
//!
//! Messages are answered in order, one after another, except `wait_for_changes`: a wait
//! (at most 25 s) runs beside the others (up to [`MAX_WAITS`] at once), so a client can go
//! on reading and writing while it waits, and `notifications/cancelled` ends it early.
//! When stdin closes the client is gone, and the waits still running end unanswered.
//!
//! Notifications: on the embedded store this process is the store's only writer, so the
//! outbox its commits write to is the whole change log; a follower reads it as each commit
//! rings the bell and writes `notifications/resources/updated` (for the URIs subscribed
//! with `resources/subscribe`) and `notifications/resources/list_changed` lines between
//! the answers, the same notifications a session's `GET /mcp` stream carries.

use http::request::Parts;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use workspace_core::events::{EventLog, Since};
use workspace_core::keys::KeyStore;
use workspace_core::{Access, Identity, Scope, WorkspaceService};
use workspace_http::auth::{AnyOf, ApiKeys, Authenticator, ManagedKeys, WORKSPACE_HEADER};
use workspace_mcp::protocol::waiting_call;
use workspace_mcp::sessions::Subscriptions;
use workspace_mcp::{handle_payload_on, Link, Reply, Workspace};
use workspace_wiring::Settings;

/// The `mcp` command's flags.
pub struct Who {
    pub tenant: Option<String>,
    pub workspace: Option<String>,
    pub read_only: bool,
}

/// The variable holding the API key the stdio server acts with.
pub const KEY_VAR: &str = "WORKSPACE_API_KEY";

fn request_with(key: &str, workspace: Option<&str>) -> Result<Parts, String> {
    let mut req =
        http::Request::builder().header(http::header::AUTHORIZATION, format!("Bearer {key}"));
    if let Some(w) = workspace {
        req = req.header(WORKSPACE_HEADER, w);
    }
    req.body(())
        .map(|r| r.into_parts().0)
        .map_err(|_| format!("{KEY_VAR} or --workspace is not a valid header value"))
}

/// The identity this process acts as, from the key or the flags.
pub async fn identity(
    settings: &Settings,
    keys: Arc<dyn KeyStore>,
    who: &Who,
) -> Result<Identity, String> {
    let key = std::env::var(KEY_VAR).ok().filter(|k| !k.trim().is_empty());
    match (key, &who.tenant) {
        (Some(_), Some(_)) => Err(format!(
            "give either {KEY_VAR} or --tenant/--workspace, not both"
        )),
        (Some(key), None) => {
            let mut chain: Vec<Arc<dyn Authenticator>> = Vec::new();
            if let Some(spec) = settings.local.api_keys.as_deref() {
                chain.push(Arc::new(ApiKeys::parse(spec).map_err(|e| e.to_string())?));
            }
            chain.push(Arc::new(ManagedKeys::new(keys)));
            let parts = request_with(key.trim(), who.workspace.as_deref())?;
            let mut id = AnyOf(chain)
                .authenticate(&parts)
                .await
                .map_err(|e| format!("{KEY_VAR}: {e}"))?;
            if who.read_only {
                id.access.write = false;
            }
            Ok(id)
        }
        (None, Some(tenant)) => {
            let workspace = who
                .workspace
                .as_deref()
                .ok_or("--tenant needs --workspace")?;
            let scope = Scope::parse(tenant, workspace).map_err(|e| e.to_string())?;
            Ok(Identity {
                scope,
                principal: "mcp-stdio".to_owned(),
                access: if who.read_only {
                    Access::READ_ONLY
                } else {
                    Access::READ_WRITE
                },
                // The operator's own session (no key): every path.
                paths: workspace_core::PathScope::whole(),
            })
        }
        (None, None) => Err(format!(
            "`workspace-local mcp` needs a credential: set {KEY_VAR}=<api key>, or pass --tenant T --workspace W"
        )),
    }
}

/// Most `wait_for_changes` calls running beside the others; past it a wait runs in turn.
pub const MAX_WAITS: usize = 8;

/// What this process serves with: the service, the identity, and where notifications can
/// be followed, the subscriptions.
struct Served {
    service: Arc<WorkspaceService>,
    who: Identity,
    subscriptions: Option<Subscriptions>,
}

/// The answer to one line, if any.
async fn answer(served: &Served, line: &str) -> Option<String> {
    let ws = Workspace {
        service: &served.service,
        who: &served.who,
    };
    let link = match &served.subscriptions {
        Some(s) => Link::Notifies(Some(s)),
        None => Link::Answers,
    };
    match handle_payload_on(&ws, link, line.as_bytes()).await {
        Reply::Json(v) | Reply::Invalid(v) => Some(format!("{v}\n")),
        Reply::Accepted => None,
    }
}

/// Writes each answer as one line, in the order they come, until stdout closes (the client
/// went away). Answers reach it through a channel, so a wait ended mid-answer never cuts a
/// line short.
fn writer() -> (mpsc::Sender<String>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<String>(16);
    let task = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(text) = rx.recv().await {
            if out.write_all(text.as_bytes()).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    (tx, task)
}

/// The request a `notifications/cancelled` message cancels, as its id's JSON text.
fn cancelled(msg: &Value) -> Option<String> {
    (msg.get("method").and_then(Value::as_str) == Some("notifications/cancelled"))
        .then(|| msg.pointer("/params/requestId").map(Value::to_string))
        .flatten()
}

/// The change log of the embedded store and the bell its commits ring.
pub struct ChangeFeed {
    pub log: Arc<dyn EventLog>,
    pub bell: crate::events::Bell,
}

/// Changes read from the outbox at a time.
const FEED_PAGE: usize = 100;

/// Writes the notifications the subscriptions make of every change after the log's
/// current end, until stdout closes.
async fn follow(feed: ChangeFeed, served: Arc<Served>, out: mpsc::Sender<String>) {
    let mut rung = feed.bell.subscribe();
    let mut cursor = match feed.log.last_position().await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "the change log cannot be read: no notifications");
            return;
        }
    };
    let Some(subscriptions) = &served.subscriptions else {
        return;
    };
    loop {
        rung.borrow_and_update();
        let page = match feed
            .log
            .since(Some(&served.who.scope), cursor, FEED_PAGE)
            .await
        {
            Ok(Since::Events(page)) => page,
            Ok(Since::Expired { oldest }) => {
                cursor = oldest.saturating_sub(1);
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the change log failed: no more notifications");
                return;
            }
        };
        let full = page.len() == FEED_PAGE;
        if let Some(last) = page.last() {
            cursor = last.position;
        }
        let notes =
            subscriptions.notifications(&served.who, page.iter().map(|r| (r.position, &r.event)));
        for (_, note) in notes {
            if out.send(format!("{note}\n")).await.is_err() {
                return;
            }
        }
        if !full && rung.changed().await.is_err() {
            return;
        }
    }
}

/// Answers each line of stdin on stdout until stdin closes; with a change feed, also
/// writes the notifications of subscribed resources.
pub async fn serve(
    service: Arc<WorkspaceService>,
    who: Identity,
    feed: Option<ChangeFeed>,
) -> Result<(), String> {
    tracing::info!(scope = %who.scope, "MCP on stdio");
    let shared = Arc::new(Served {
        service,
        who,
        subscriptions: feed.as_ref().map(|_| Subscriptions::default()),
    });
    let (out, written) = writer();
    let follower = feed.map(|feed| tokio::spawn(follow(feed, shared.clone(), out.clone())));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    // Waits running beside the rest, by request id (its JSON text).
    let mut waits: JoinSet<String> = JoinSet::new();
    let mut running: HashMap<String, AbortHandle> = HashMap::new();
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        while let Some(done) = waits.try_join_next() {
            if let Ok(id) = done {
                running.remove(&id);
            }
        }
        if line.trim().is_empty() {
            continue;
        }
        if let Ok(msg) = serde_json::from_str::<Value>(&line) {
            if let Some(id) = cancelled(&msg) {
                if let Some(wait) = running.remove(&id) {
                    wait.abort();
                }
            }
            let wait = waiting_call(&msg).map(Value::to_string);
            if let Some(id) = wait.filter(|id| waits.len() < MAX_WAITS && !running.contains_key(id))
            {
                let (shared, out, key) = (shared.clone(), out.clone(), id.clone());
                let handle = waits.spawn(async move {
                    if let Some(text) = answer(&shared, &line).await {
                        let _ = out.send(text).await;
                    }
                    key
                });
                running.insert(id, handle);
                continue;
            }
        }
        if let Some(text) = answer(&shared, &line).await {
            // A closed stdout means the client went away: stop quietly.
            if out.send(text).await.is_err() {
                break;
            }
        }
    }
    waits.shutdown().await;
    if let Some(follower) = follower {
        follower.abort();
    }
    // Every answer given is written before the process ends.
    drop(out);
    let _ = written.await;
    Ok(())
}
