//! Webhooks: every event of the outbox (optionally of one tenant, or one workspace) POSTed
//! to each target in `WORKSPACE_WEBHOOKS`, in commit order, at least once:
//!
//! - the body is the EventBridge envelope (the same as the stream's and EventBridge's);
//! - `X-Workspace-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the
//!   target's secret>` lets the receiver check who sent it and when (refuse old `t`);
//! - a target that does not answer 2xx gets the same event again, with backoff from 1 s to
//!   5 min, before any later one; how far each target got is kept in the store
//!   (`EventLog::cursor`), so delivery goes on after a restart where it stopped;
//! - each attempt rewrites `webhooks-status.json` in the data directory (0600), which
//!   `workspace-local webhooks status` prints: backlog and last error per target.

use super::Events;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use workspace_core::events::{DeliveryCursor, Recorded, Since};
use workspace_core::model::{format_time, sha256_hex};
use workspace_core::ports::{Clock, SystemClock};

/// The status file's name in the data directory.
pub const STATUS_FILE: &str = "webhooks-status.json";
const PAGE: usize = 50;
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// One entry of `WORKSPACE_WEBHOOKS` (a JSON array of these).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    pub url: String,
    /// Signs every POST; share it with the receiver only.
    pub secret: String,
    /// Only this tenant's events (and with `workspace`, only that workspace's).
    pub tenant: Option<String>,
    pub workspace: Option<String>,
}

impl Target {
    /// The name its cursor is kept under: stable while url and filter stay the same.
    fn name(&self) -> String {
        let filter = format!(
            "{}\n{}\n{}",
            self.url,
            self.tenant.as_deref().unwrap_or(""),
            self.workspace.as_deref().unwrap_or("")
        );
        format!("webhook:{}", &sha256_hex(filter.as_bytes())[..16])
    }

    fn wants(&self, r: &Recorded) -> bool {
        self.tenant.as_deref().is_none_or(|t| t == r.event.tenant)
            && self
                .workspace
                .as_deref()
                .is_none_or(|w| w == r.event.workspace)
    }
}

/// `WORKSPACE_WEBHOOKS`, checked: absent or empty is no webhooks.
pub fn targets_from(value: Option<&str>) -> Result<Vec<Target>, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(Vec::new());
    };
    let targets: Vec<Target> = serde_json::from_str(v).map_err(|e| {
        format!(
            "WORKSPACE_WEBHOOKS must be a JSON array of {{\"url\", \"secret\", \"tenant\"?, \"workspace\"?}}: {e}"
        )
    })?;
    for t in &targets {
        let url = reqwest::Url::parse(&t.url)
            .map_err(|e| format!("WORKSPACE_WEBHOOKS: {} is not a URL: {e}", t.url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("WORKSPACE_WEBHOOKS: {} is not http(s)", t.url));
        }
        if t.secret.len() < 16 {
            return Err(format!(
                "WORKSPACE_WEBHOOKS: the secret of {} must be at least 16 characters",
                t.url
            ));
        }
        if t.workspace.is_some() && t.tenant.is_none() {
            return Err(format!(
                "WORKSPACE_WEBHOOKS: {} names a workspace without its tenant",
                t.url
            ));
        }
    }
    Ok(targets)
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, unix_seconds: i64, body: &[u8]) -> String {
    // `new_from_slice` accepts keys of any length for HMAC.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("{unix_seconds}.").as_bytes());
    mac.update(body);
    format!(
        "t={unix_seconds},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

/// One target's line in the status file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// Scheme, host and path only (a query may carry a token).
    pub url: String,
    pub tenant: Option<String>,
    pub workspace: Option<String>,
    pub delivered_through: u64,
    /// Events of its filter waiting for it.
    pub backlog: u64,
    pub failures: u32,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<String>,
    pub last_delivered_at: Option<String>,
}

fn shown_url(url: &str) -> String {
    reqwest::Url::parse(url).map_or_else(
        |_| url.to_owned(),
        |u| format!("{}://{}{}", u.scheme(), u.authority(), u.path()),
    )
}

/// Every target's status, rewritten whole after each attempt.
struct StatusBoard {
    path: PathBuf,
    lines: Mutex<Vec<TargetStatus>>,
}

impl StatusBoard {
    async fn set(&self, index: usize, status: TargetStatus) {
        let mut lines = self.lines.lock().await;
        lines[index] = status;
        let text = serde_json::to_vec_pretty(&*lines).unwrap_or_default();
        let tmp = self.path.with_extension("json.tmp");
        let written = crate::secret_file::write_private(&tmp, &text)
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            tracing::warn!(error = %e, "cannot write {}", self.path.display());
        }
    }
}

/// Where a target resumes: its stored cursor, or, for a target never seen before, a new
/// cursor at the last event committed so far, stored at once. A stored cursor is kept
/// whatever it holds: one still at position 0 (a target that began on an empty outbox and
/// has delivered nothing yet) is not new, and starts from the first event.
async fn first_cursor(events: &Events, name: &str) -> workspace_core::Result<DeliveryCursor> {
    let log = &events.log;
    if let Some(cursor) = log.cursor(name).await? {
        return Ok(cursor);
    }
    let cursor = DeliveryCursor {
        delivered: log.last_position().await?,
        ..DeliveryCursor::default()
    };
    log.set_cursor(name, &cursor).await?;
    Ok(cursor)
}

/// Starts one delivery task per target. Each target's starting point is settled (and a
/// new one's stored) before this returns, so every write the server acknowledges after it
/// reaches every target, also one configured at this start; when that cannot be done
/// (the outbox cannot be read or written), the error stops the server from starting.
pub async fn start(events: &Events, targets: Vec<Target>, data_dir: PathBuf) -> Result<(), String> {
    if targets.is_empty() {
        return Ok(());
    }
    let board = Arc::new(StatusBoard {
        path: data_dir.join(STATUS_FILE),
        lines: Mutex::new(
            targets
                .iter()
                .map(|t| TargetStatus {
                    url: shown_url(&t.url),
                    tenant: t.tenant.clone(),
                    workspace: t.workspace.clone(),
                    delivered_through: 0,
                    backlog: 0,
                    failures: 0,
                    last_error: None,
                    last_attempt_at: None,
                    last_delivered_at: None,
                })
                .collect(),
        ),
    });
    let client = reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .build()
        .unwrap_or_default();
    for (index, target) in targets.into_iter().enumerate() {
        let cursor = first_cursor(events, &target.name()).await.map_err(|e| {
            format!(
                "webhook {}: cannot read or store where it resumes: {e}",
                shown_url(&target.url)
            )
        })?;
        let deliverer = Deliverer {
            events: events.clone(),
            target,
            client: client.clone(),
            board: board.clone(),
            index,
        };
        tokio::spawn(deliverer.run(cursor));
    }
    Ok(())
}

struct Deliverer {
    events: Events,
    target: Target,
    client: reqwest::Client,
    board: Arc<StatusBoard>,
    index: usize,
}

impl Deliverer {
    async fn run(mut self, mut cursor: DeliveryCursor) {
        let name = self.target.name();
        let log = self.events.log.clone();
        let mut rung = self.events.bell.subscribe();
        loop {
            rung.borrow_and_update();
            let page = match log.since(None, cursor.delivered, PAGE).await {
                Ok(Since::Events(page)) => page,
                Ok(Since::Expired { oldest }) => {
                    // Down longer than the retention: what was dropped cannot be sent.
                    tracing::warn!(
                        url = %shown_url(&self.target.url),
                        from = cursor.delivered + 1,
                        to = oldest - 1,
                        "events expired before this webhook got them"
                    );
                    cursor.delivered = oldest - 1;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading the event outbox failed");
                    tokio::time::sleep(FIRST_BACKOFF).await;
                    continue;
                }
            };
            let full = page.len() == PAGE;
            for r in page {
                if self.target.wants(&r) && !self.deliver(&name, &mut cursor, &r).await {
                    return; // the server is stopping
                }
                cursor.delivered = r.position;
                let _ = log.set_cursor(&name, &cursor).await;
            }
            self.report(&cursor).await;
            if full {
                continue;
            }
            tokio::select! {
                changed = rung.changed() => if changed.is_err() { return },
                _ = self.events.stopping.changed() => return,
                () = tokio::time::sleep(Duration::from_secs(30)) => {}
            }
        }
    }

    /// Sends `r` until a 2xx; false when the server stops first.
    async fn deliver(&mut self, name: &str, cursor: &mut DeliveryCursor, r: &Recorded) -> bool {
        let body = serde_json::to_vec(&r.event.envelope()).unwrap_or_default();
        let mut backoff = FIRST_BACKOFF;
        loop {
            let now = SystemClock.now_ms();
            let sent = self
                .client
                .post(&self.target.url)
                .header("content-type", "application/json")
                .header("x-workspace-event-id", &r.event.event_id)
                .header(
                    "x-workspace-signature",
                    signature(&self.target.secret, now / 1000, &body),
                )
                .body(body.clone())
                .send()
                .await;
            cursor.last_attempt_at = Some(now);
            let failure = match sent {
                Ok(resp) if resp.status().is_success() => None,
                Ok(resp) => Some(format!("answered {}", resp.status())),
                Err(e) => Some(format!("not reached: {e}")),
            };
            match failure {
                None => {
                    cursor.failures = 0;
                    cursor.last_error = None;
                    cursor.last_delivered_at = Some(now);
                    return true;
                }
                Some(error) => {
                    cursor.failures = cursor.failures.saturating_add(1);
                    cursor.last_error = Some(error);
                    let _ = self.events.log.set_cursor(name, cursor).await;
                    self.report(cursor).await;
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        _ = self.events.stopping.changed() => return false,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    async fn report(&self, cursor: &DeliveryCursor) {
        let scope = self
            .target
            .tenant
            .as_deref()
            .zip(self.target.workspace.as_deref());
        let backlog = match scope.and_then(|(t, w)| workspace_core::Scope::parse(t, w).ok()) {
            Some(s) => self.count(Some(&s), cursor.delivered).await,
            None => self.count(None, cursor.delivered).await,
        };
        let status = TargetStatus {
            url: shown_url(&self.target.url),
            tenant: self.target.tenant.clone(),
            workspace: self.target.workspace.clone(),
            delivered_through: cursor.delivered,
            backlog,
            failures: cursor.failures,
            last_error: cursor.last_error.clone(),
            last_attempt_at: cursor.last_attempt_at.map(format_time),
            last_delivered_at: cursor.last_delivered_at.map(format_time),
        };
        self.board.set(self.index, status).await;
    }

    /// Events of this target's filter after `after` (counted up to 10,000).
    async fn count(&self, scope: Option<&workspace_core::Scope>, after: u64) -> u64 {
        match self.events.log.since(scope, after, 10_000).await {
            Ok(Since::Events(page)) => page.iter().filter(|r| self.target.wants(r)).count() as u64,
            _ => 0,
        }
    }
}

/// `workspace-local webhooks status`: the status file, one line per target.
pub fn print_status(data_dir: &std::path::Path) -> Result<(), String> {
    let path = data_dir.join(STATUS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "no webhook has been tried yet ({} does not exist: WORKSPACE_WEBHOOKS is empty, or the server has not run with it)",
                path.display()
            );
            return Ok(());
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let lines: Vec<TargetStatus> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    for t in lines {
        let filter = match (&t.tenant, &t.workspace) {
            (Some(tn), Some(w)) => format!("{tn}/{w}"),
            (Some(tn), None) => format!("{tn}/*"),
            _ => "*".to_owned(),
        };
        println!(
            "{} ({filter}): delivered through {}, backlog {}, failures in a row {}, last delivered {}, last error {}",
            t.url,
            t.delivered_through,
            t.backlog,
            t.failures,
            t.last_delivered_at.as_deref().unwrap_or("never"),
            t.last_error.as_deref().unwrap_or("none"),
        );
    }
    Ok(())
}
