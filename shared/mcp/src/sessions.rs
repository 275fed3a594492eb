//! Where a transport can carry notifications (the local server's Streamable HTTP sessions,
//! stdio), the subscriptions a client holds and the notifications the change log gives
//! them; on the local server, the sessions themselves.
//!
//! A session is made by an `initialize` POST and named by the `Mcp-Session-Id` the answer
//! carries; it belongs to the credential that made it (another credential naming it is
//! answered as if it did not exist, 404). Its notifications travel on its `GET /mcp` stream
//! as server-sent events whose ids are positions in the store's outbox (the change log the
//! event stream `GET /v1/host/workspace/events` reads), so a client that reconnects with
//! `Last-Event-ID` is given every notification after it: nothing is buffered per session,
//! the outbox is the buffer (kept `WORKSPACE_EVENT_RETENTION_SECONDS`).
//!
//! Bounds: at most [`Sessions::max`] sessions (past it, the least recently used one without
//! an open stream is ended; with every one streaming, `initialize` is 503), each ended after
//! [`Sessions::idle`] without a request or an open stream, [`MAX_SUBSCRIPTIONS`] URIs
//! each, one open stream each (a new `GET` replaces the one before).

use crate::resources::{file_uri, ResourceUri, ACCESS_DENIED};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use workspace_core::events::{Operation, WorkspaceEvent};
use workspace_core::Identity;

/// Most URIs one session (or stdio) subscribes to at once.
pub const MAX_SUBSCRIPTIONS: usize = 100;
/// The header naming a session.
pub const SESSION_HEADER: &str = "mcp-session-id";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these cannot leave it half-changed: each change is one
    // insert or remove.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The file paths a client subscribed to (each a `workspace:///<path>` URI), and whether it
/// listed the resources (only then is it told the list changed: a client that never listed
/// them has no list to refresh).
#[derive(Debug, Default)]
pub struct Subscriptions(Mutex<BTreeSet<String>>, std::sync::atomic::AtomicBool);

impl Subscriptions {
    /// `resources/subscribe`: only the current-version form of a file can change; a path
    /// need not exist yet (its creation is then notified).
    pub fn subscribe(&self, who: &Identity, uri: &str) -> Result<(), (i64, String)> {
        let path = match ResourceUri::parse(uri)? {
            ResourceUri::File {
                path,
                version: None,
            } => path,
            _ => {
                return Err((
                    crate::protocol::INVALID_PARAMS,
                    format!(
                        "Invalid params: {} never changes (a version or a snapshot); subscribe to workspace:///<path>",
                        uri.escape_debug()
                    ),
                ))
            }
        };
        who.paths
            .check_read(&path)
            .map_err(|e| (ACCESS_DENIED, format!("Access denied. {e}")))?;
        let mut set = lock(&self.0);
        if !set.contains(path.as_str()) && set.len() >= MAX_SUBSCRIPTIONS {
            return Err((
                crate::protocol::INVALID_PARAMS,
                format!("Invalid params: at most {MAX_SUBSCRIPTIONS} subscriptions at once; unsubscribe from some first"),
            ));
        }
        set.insert(path.as_str().to_owned());
        Ok(())
    }

    /// `resources/unsubscribe` (of a URI not subscribed to: nothing to do).
    pub fn unsubscribe(&self, uri: &str) -> Result<(), (i64, String)> {
        // Only the current-version form can have been subscribed to.
        if let ResourceUri::File {
            path,
            version: None,
        } = ResourceUri::parse(uri)?
        {
            lock(&self.0).remove(path.as_str());
        }
        Ok(())
    }

    /// The client listed the resources: from now on it hears when the list changes.
    pub fn listed(&self) {
        self.1.store(true, Ordering::SeqCst);
    }

    fn holds(&self, path: &str) -> bool {
        lock(&self.0).contains(path)
    }

    /// The notifications a run of committed changes gives this client: a
    /// `notifications/resources/updated` for each change of a subscribed path it may read,
    /// and, once it [`listed`](Self::listed) them, a `notifications/resources/list_changed`
    /// at the run's first change that creates or deletes a file it may read. Each with the position of the change it comes from
    /// and its place among that change's notifications ([`EventId`]).
    pub fn notifications<'e>(
        &self,
        who: &Identity,
        changes: impl IntoIterator<Item = (u64, &'e WorkspaceEvent)>,
    ) -> Vec<(EventId, Value)> {
        let mut out = Vec::new();
        // Told already in this run, or not to be told.
        let mut listed = !self.1.load(Ordering::SeqCst);
        for (position, e) in changes {
            if !who.paths.can_read(&e.path) || crate::tree::is_marker(&e.path) {
                continue;
            }
            let mut index = 0;
            if self.holds(&e.path) {
                out.push((
                    EventId { position, index },
                    json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/resources/updated",
                        "params": { "uri": file_uri(&e.path) },
                    }),
                ));
                index += 1;
            }
            if !listed && (e.operation == Operation::Delete || e.version == 1) {
                listed = true;
                out.push((
                    EventId { position, index },
                    json!({ "jsonrpc": "2.0", "method": "notifications/resources/list_changed" }),
                ));
            }
        }
        out
    }
}

/// The id of a notification on a session's stream: `<position>-<index>`, the outbox
/// position of the change it comes from and its place among that change's notifications
/// (a change can give two). A bare `<position>` (the priming event's) means everything up
/// to and including that position was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    pub position: u64,
    pub index: usize,
}

/// Where a stream resumes from a `Last-Event-ID`: read the outbox after `after`, and skip
/// the notifications of position `after + 1` up to index `skip_through`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    pub after: u64,
    pub skip_through: Option<usize>,
}

impl Resume {
    pub fn parse(id: &str) -> Option<Resume> {
        match id.trim().split_once('-') {
            None => Some(Resume {
                after: id.trim().parse().ok()?,
                skip_through: None,
            }),
            Some((p, i)) => {
                let position: u64 = p.parse().ok().filter(|p| *p > 0)?;
                Some(Resume {
                    after: position - 1,
                    skip_through: Some(i.parse().ok()?),
                })
            }
        }
    }

    /// Whether the notification `id` was sent before this resume point.
    pub fn already_sent(&self, id: EventId) -> bool {
        id.position <= self.after
            || (id.position == self.after + 1 && self.skip_through.is_some_and(|k| id.index <= k))
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.position, self.index)
    }
}

/// One Streamable HTTP session.
#[derive(Debug)]
pub struct Session {
    pub id: String,
    /// The credential that made it.
    pub owner: Identity,
    pub subscriptions: Subscriptions,
    /// The outbox position its notifications are delivered up to (a stream opened without
    /// `Last-Event-ID` starts here).
    pub delivered: AtomicU64,
    /// Which stream is the session's own: each `GET` takes the next number, and a stream
    /// whose number is no longer current ends.
    stream: AtomicU64,
    /// Open streams (0 or 1, but for the moment one replaces another).
    open_streams: AtomicU64,
    last_seen: Mutex<Instant>,
    ended: tokio::sync::watch::Sender<bool>,
}

impl Session {
    fn touch(&self) {
        *lock(&self.last_seen) = Instant::now();
    }

    fn idle_for(&self) -> Option<Duration> {
        (self.open_streams.load(Ordering::SeqCst) == 0).then(|| lock(&self.last_seen).elapsed())
    }

    /// A stream of this session begins: its number, and a guard that counts it open.
    pub fn begin_stream(self: &Arc<Self>) -> (u64, OpenStream) {
        let n = self.stream.fetch_add(1, Ordering::SeqCst) + 1;
        self.open_streams.fetch_add(1, Ordering::SeqCst);
        (n, OpenStream(self.clone()))
    }

    /// Whether stream `n` is still the session's own (no newer one, session not ended).
    pub fn is_current(&self, n: u64) -> bool {
        self.stream.load(Ordering::SeqCst) == n && !*self.ended.borrow()
    }

    /// Fires when the session ends (`DELETE /mcp`, expiry, eviction).
    pub fn ended(&self) -> tokio::sync::watch::Receiver<bool> {
        self.ended.subscribe()
    }
}

/// Counts a stream open while it lives.
pub struct OpenStream(Arc<Session>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

/// Why no session was made.
#[derive(Debug, PartialEq, Eq)]
pub struct Full;

/// The local server's sessions, in memory (a restart ends them; a client then initializes
/// again, as the specification says it must on a 404).
#[derive(Debug)]
pub struct Sessions {
    by_id: Mutex<HashMap<String, Arc<Session>>>,
    pub max: usize,
    pub idle: Duration,
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Sessions {
        Sessions {
            by_id: Mutex::default(),
            max,
            idle,
        }
    }

    fn end_locked(map: &mut HashMap<String, Arc<Session>>, id: &str) -> bool {
        match map.remove(id) {
            Some(s) => {
                s.ended.send_replace(true);
                true
            }
            None => false,
        }
    }

    /// A new session for `owner`, its notifications starting after outbox position `from`.
    pub fn open(&self, owner: &Identity, from: u64) -> Result<Arc<Session>, Full> {
        let mut map = lock(&self.by_id);
        let expired: Vec<String> = map
            .values()
            .filter(|s| s.idle_for().is_some_and(|d| d > self.idle))
            .map(|s| s.id.clone())
            .collect();
        for id in expired {
            Self::end_locked(&mut map, &id);
        }
        if map.len() >= self.max {
            let oldest = map
                .values()
                .filter_map(|s| s.idle_for().map(|d| (d, s.id.clone())))
                .max()
                .map(|(_, id)| id)
                .ok_or(Full)?;
            Self::end_locked(&mut map, &oldest);
        }
        let session = Arc::new(Session {
            id: hex::encode(rand::random::<[u8; 16]>()),
            owner: owner.clone(),
            subscriptions: Subscriptions::default(),
            delivered: AtomicU64::new(from),
            stream: AtomicU64::new(0),
            open_streams: AtomicU64::new(0),
            last_seen: Mutex::new(Instant::now()),
            ended: tokio::sync::watch::channel(false).0,
        });
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// The live session `id` of `who` (another credential's is not found).
    pub fn find(&self, id: &str, who: &Identity) -> Option<Arc<Session>> {
        let mut map = lock(&self.by_id);
        let session = map.get(id)?.clone();
        if session.idle_for().is_some_and(|d| d > self.idle) {
            Self::end_locked(&mut map, id);
            return None;
        }
        if session.owner != *who {
            return None;
        }
        session.touch();
        Some(session)
    }

    /// Ends session `id` of `who`; false when there is none.
    pub fn end(&self, id: &str, who: &Identity) -> bool {
        let mut map = lock(&self.by_id);
        if map.get(id).is_none_or(|s| s.owner != *who) {
            return false;
        }
        Self::end_locked(&mut map, id)
    }

    pub fn len(&self) -> usize {
        lock(&self.by_id).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workspace_core::Scope;

    fn who() -> Identity {
        Identity::read_write(Scope::parse("acme", "main").unwrap(), "p")
    }

    fn event(path: &str, operation: Operation, version: u64) -> WorkspaceEvent {
        WorkspaceEvent {
            event_id: "e".into(),
            tenant: "acme".into(),
            workspace: "main".into(),
            path: path.into(),
            version,
            sequence: version,
            etag: String::new(),
            operation,
            principal: "p".into(),
            time: String::new(),
            size: 0,
            content_type: "text/plain".into(),
            merge_id: None,
            fork_id: None,
        }
    }

    #[test]
    fn subscribed_paths_are_notified_and_creations_change_the_list_once_per_run() {
        let subs = Subscriptions::default();
        subs.subscribe(&who(), "workspace:///a.md").unwrap();
        let b0 = event("b.md", Operation::Put, 1);
        assert!(
            subs.notifications(&who(), [(1, &b0)]).is_empty(),
            "no list_changed before the client listed"
        );
        subs.listed();
        let (a2, b1, c_del) = (
            event("a.md", Operation::Put, 2),
            event("b.md", Operation::Put, 1),
            event("c.md", Operation::Delete, 3),
        );
        let a1 = event("a.md", Operation::Put, 1);
        let got = subs.notifications(&who(), [(7, &a2), (8, &b1), (9, &c_del), (10, &a1)]);
        let methods: Vec<_> = got
            .iter()
            .map(|(id, v)| (id.to_string(), v["method"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            methods,
            [
                (
                    "7-0".to_owned(),
                    "notifications/resources/updated".to_owned()
                ),
                (
                    "8-0".to_owned(),
                    "notifications/resources/list_changed".to_owned()
                ),
                (
                    "10-0".to_owned(),
                    "notifications/resources/updated".to_owned()
                ),
            ]
        );
        // A run that creates a subscribed file: updated, then list_changed, of one change.
        let got = subs.notifications(&who(), [(11, &a1)]);
        let ids: Vec<_> = got.iter().map(|(id, _)| id.to_string()).collect();
        assert_eq!(ids, ["11-0", "11-1"]);
        assert_eq!(got[0].1["params"]["uri"], "workspace:///a.md");
        // A version's URI was never subscribed to: unsubscribing it leaves the file's.
        subs.unsubscribe("workspace:///a.md?version=1").unwrap();
        assert_eq!(subs.notifications(&who(), [(10, &a2)]).len(), 1);
        subs.unsubscribe("workspace:///a.md").unwrap();
        assert!(subs.notifications(&who(), [(10, &a2)]).is_empty());
    }

    #[test]
    fn a_resume_point_skips_exactly_what_was_sent() {
        let id = |position, index| EventId { position, index };
        let r = Resume::parse("11-0").unwrap();
        assert!(r.already_sent(id(10, 5)) && r.already_sent(id(11, 0)));
        assert!(!r.already_sent(id(11, 1)) && !r.already_sent(id(12, 0)));
        let primed = Resume::parse("11").unwrap();
        assert!(primed.already_sent(id(11, 1)) && !primed.already_sent(id(12, 0)));
        for bad in ["", "x", "0-1", "1-x", "-1", "1-"] {
            assert!(Resume::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn subscriptions_are_bounded_and_only_the_current_form_changes() {
        let subs = Subscriptions::default();
        for i in 0..MAX_SUBSCRIPTIONS {
            subs.subscribe(&who(), &format!("workspace:///f{i}"))
                .unwrap();
        }
        // The same one again is no new subscription.
        subs.subscribe(&who(), "workspace:///f0").unwrap();
        assert!(subs.subscribe(&who(), "workspace:///one-more").is_err());
        let fresh = Subscriptions::default();
        assert!(fresh.subscribe(&who(), "workspace:///a?version=1").is_err());
        assert!(fresh.subscribe(&who(), "workspace://snapshot/s/a").is_err());
        assert!(fresh.subscribe(&who(), "test://watched-resource").is_err());
    }

    #[test]
    fn sessions_belong_to_their_credential_and_are_bounded() {
        let sessions = Sessions::new(2, Duration::from_secs(60));
        let a = sessions.open(&who(), 0).unwrap();
        let mut other = who();
        other.principal = "q".into();
        assert!(sessions.find(&a.id, &other).is_none());
        assert!(!sessions.end(&a.id, &other));
        assert!(sessions.find(&a.id, &who()).is_some());
        // Full: the least recently used one without a stream goes.
        let (_n, _open) = a.begin_stream();
        let b = sessions.open(&who(), 0).unwrap();
        let c = sessions.open(&who(), 0).unwrap();
        assert!(sessions.find(&b.id, &who()).is_none(), "b was evicted");
        assert!(sessions.find(&a.id, &who()).is_some(), "a streams: kept");
        let (_m, _open_c) = c.begin_stream();
        assert_eq!(sessions.open(&who(), 0).unwrap_err(), Full);
        assert!(sessions.end(&a.id, &who()));
        assert!(*a.ended().borrow());
    }

    #[test]
    fn idle_sessions_expire() {
        let sessions = Sessions::new(8, Duration::from_millis(0));
        let a = sessions.open(&who(), 0).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(sessions.find(&a.id, &who()).is_none());
    }
}
