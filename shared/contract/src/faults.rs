//! Fault injection at every step of a commit (the crash points listed in
//! `workspace_core::service`'s protocol description). Each step of a write is one call to a
//! port (store the body, read the head, commit, remove what the commit released), so the
//! ports are wrapped here and the N-th call of an operation fails, or the process "dies"
//! just before or just after it (the call is not made, or is made and its answer lost; no
//! later call of that process reaches a store). Then the process restarts over the same
//! stores, the backend's sweeper runs, and the invariants must hold:
//!
//! - an acknowledged change is there;
//! - an operation that failed while its process lived changed nothing;
//! - no head or version item names a body that is gone (no dangling pointer);
//! - after the sweep, every stored body is named by a version item (no body left forever).
//!
//! - where the store keeps an outbox (memory, redb), a path's events are exactly one per
//!   committed change: sequences 1 to the head's, each once (none for what did not commit,
//!   none missing for what did). On AWS events come from the table's stream, which carries
//!   exactly the committed items.

use crate::harness::{Backend, Harness, Reply, KEY_TENANT};
use async_trait::async_trait;
use http::Method;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin as StdPin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use workspace_core::blob::{PresignSpec, PresignedUrl};
use workspace_core::events::{EventLog, Since};
use workspace_core::model::{
    BodyRef, Head, IdempotencyRecord, Millis, Pin, Snapshot, SnapshotInfo, VersionRecord,
};
use workspace_core::ports::{
    BatchOutcome, Bodies, BodyInventory, BodyStore, Commit, CommitOutcome, CommitStore, Expect,
    HeadStore, HistoryStore, MetaStore, RecordStore, ScopeItemStore, SnapshotStore, Staged,
    Staging, StoredRecord,
};
use workspace_core::service::sweep::referenced_bodies;
use workspace_core::{FilePath, PathPrefix, Result, Scope, WorkspaceError};

/// How the armed step goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The call fails; the process goes on (and cleans up what it can).
    Fail,
    /// The process dies before the call.
    KillBefore,
    /// The call reaches the store, then the process dies before it sees the answer.
    KillAfter,
}

pub(crate) const FAULTS: [Fault; 3] = [Fault::Fail, Fault::KillBefore, Fault::KillAfter];

/// Work a test runs just before a batch commit reaches the store (a racing writer).
type Hook = StdPin<Box<dyn Future<Output = ()> + Send>>;

/// Counts a process's port calls and breaks the armed one.
#[derive(Default)]
pub struct FaultPlan {
    calls: AtomicUsize,
    armed: Mutex<Option<(usize, Fault)>>,
    dead: AtomicBool,
    /// The call numbers of the batch commits (`commit_many`) so far.
    batches: Mutex<Vec<usize>>,
    /// Runs (once) before the next batch commit.
    hook: Mutex<Option<Hook>>,
    /// The call numbers of the head reads so far.
    heads: Mutex<Vec<usize>>,
    /// The call numbers of the single commits (`commit`) so far.
    commits: Mutex<Vec<usize>>,
}

fn injected(what: &str) -> WorkspaceError {
    WorkspaceError::internal(format!("injected fault: {what}"))
}

impl FaultPlan {
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Notes the number of the call about to be made in `calls`.
    fn noted(&self, calls: &Mutex<Vec<usize>>) {
        calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.calls());
    }

    /// The call numbers of the head reads so far.
    pub(crate) fn head_calls(&self) -> Vec<usize> {
        self.heads.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The call numbers of the single commits so far.
    pub(crate) fn commit_calls(&self) -> Vec<usize> {
        self.commits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs `work` just before the next batch commit reaches the store.
    pub(crate) fn before_next_batch(&self, work: impl Future<Output = ()> + Send + 'static) {
        *self.hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::pin(work));
    }

    async fn before_batch(&self) {
        let hook = self.hook.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(work) = hook {
            work.await;
        }
    }

    /// The call numbers of the batch commits so far.
    pub(crate) fn batch_calls(&self) -> Vec<usize> {
        self.batches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn arm(&self, at: usize, fault: Fault) {
        *self.armed.lock().unwrap_or_else(|e| e.into_inner()) = Some((at, fault));
    }

    async fn step<T>(&self, call: impl Future<Output = Result<T>>) -> Result<T> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(injected("the process is dead"));
        }
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let armed = *self.armed.lock().unwrap_or_else(|e| e.into_inner());
        match armed {
            Some((at, fault)) if at == n => match fault {
                Fault::Fail => Err(injected("this call failed")),
                Fault::KillBefore => {
                    self.dead.store(true, Ordering::SeqCst);
                    Err(injected("killed before the call"))
                }
                Fault::KillAfter => {
                    let _lost = call.await;
                    self.dead.store(true, Ordering::SeqCst);
                    Err(injected("killed after the call"))
                }
            },
            _ => call.await,
        }
    }
}

pub(crate) struct FaultyMeta(pub(crate) Arc<dyn MetaStore>, pub(crate) Arc<FaultPlan>);
pub(crate) struct FaultyBodies(pub(crate) Arc<dyn BodyStore>, pub(crate) Arc<FaultPlan>);

/// A "process" over `h`'s stores whose port calls `plan` counts and breaks (for cases that
/// stop one operation midway, then retry it through `h`, the restarted process).
pub(crate) async fn faulty_process(h: &Harness, plan: &Arc<FaultPlan>) -> Harness {
    Harness::new(Backend {
        meta: Arc::new(FaultyMeta(h.meta.clone(), plan.clone())),
        bodies: Arc::new(FaultyBodies(h.bodies.clone(), plan.clone())),
        secrets: h.secrets.clone(),
        guard: Box::new(()),
    })
    .await
}

#[async_trait]
impl HeadStore for FaultyMeta {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        self.1.noted(&self.1.heads);
        self.1.step(self.0.head(scope, path)).await
    }

    async fn list_live(
        &self,
        s: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.1.step(self.0.list_live(s, prefix, after, limit)).await
    }

    async fn list_heads(
        &self,
        s: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.1
            .step(self.0.list_heads(s, prefix, after, limit))
            .await
    }

    async fn live_count(&self, s: &Scope) -> Result<u64> {
        self.1.step(self.0.live_count(s)).await
    }
}

#[async_trait]
impl CommitStore for FaultyMeta {
    async fn idempotency(&self, s: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.1.step(self.0.idempotency(s, key)).await
    }

    async fn commit(&self, commit: Commit) -> Result<CommitOutcome> {
        self.1.noted(&self.1.commits);
        self.1.step(self.0.commit(commit)).await
    }

    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        self.1.before_batch().await;
        self.1
            .batches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.1.calls());
        self.1.step(self.0.commit_many(commits)).await
    }

    fn fits_one_commit(&self, commits: &[Commit]) -> bool {
        self.0.fits_one_commit(commits)
    }
}

#[async_trait]
impl HistoryStore for FaultyMeta {
    async fn version(&self, s: &Scope, p: &FilePath, seq: u64) -> Result<Option<VersionRecord>> {
        self.1.step(self.0.version(s, p, seq)).await
    }

    async fn list_versions(
        &self,
        s: &Scope,
        p: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        self.1.step(self.0.list_versions(s, p, before, limit)).await
    }

    async fn set_pins(
        &self,
        s: &Scope,
        p: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        self.1
            .step(self.0.set_pins(s, p, expect, pins, must_exist))
            .await
    }

    async fn erase_version(
        &self,
        s: &Scope,
        p: &FilePath,
        seq: u64,
        e: &workspace_core::model::Erasure,
    ) -> Result<Option<Option<BodyRef>>> {
        self.1.step(self.0.erase_version(s, p, seq, e)).await
    }

    async fn list_changes(
        &self,
        s: &Scope,
        q: &workspace_core::changes::ChangeQuery,
    ) -> Result<workspace_core::changes::ChangePage> {
        self.1.step(self.0.list_changes(s, q)).await
    }
}

#[async_trait]
impl SnapshotStore for FaultyMeta {
    async fn put_snapshot(&self, s: &Scope, snapshot: &Snapshot) -> Result<()> {
        self.1.step(self.0.put_snapshot(s, snapshot)).await
    }

    async fn snapshot(&self, s: &Scope, id: &str) -> Result<Option<Snapshot>> {
        self.1.step(self.0.snapshot(s, id)).await
    }

    async fn delete_snapshot(&self, s: &Scope, id: &str) -> Result<bool> {
        self.1.step(self.0.delete_snapshot(s, id)).await
    }

    async fn points(&self, s: &Scope) -> Result<workspace_core::model::Points> {
        self.1.step(self.0.points(s)).await
    }

    async fn swap_points(
        &self,
        s: &Scope,
        expect_rev: u64,
        points: &workspace_core::model::Points,
        with: workspace_core::ports::PointRecords<'_>,
    ) -> Result<bool> {
        self.1
            .step(self.0.swap_points(s, expect_rev, points, with))
            .await
    }

    async fn list_snapshots(
        &self,
        s: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        self.1
            .step(self.0.list_snapshots(s, id_prefix, before, limit))
            .await
    }
}

#[async_trait]
impl RecordStore for FaultyMeta {
    async fn put_record(
        &self,
        s: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        self.1.step(self.0.put_record(s, kind, key, record)).await
    }

    async fn record(&self, s: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>> {
        self.1.step(self.0.record(s, kind, key)).await
    }
}

#[async_trait]
impl ScopeItemStore for FaultyMeta {
    async fn erase_scope_items(&self, s: &Scope) -> Result<u64> {
        self.1.step(self.0.erase_scope_items(s)).await
    }
}

#[async_trait]
impl Bodies for FaultyBodies {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<BodyRef> {
        self.1.step(self.0.put(key, bytes, content_type)).await
    }

    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        self.1.step(self.0.get(body)).await
    }

    async fn delete(&self, body: &BodyRef) -> Result<()> {
        self.1.step(self.0.delete(body)).await
    }

    async fn presign_get(
        &self,
        body: &BodyRef,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        self.1.step(self.0.presign_get(body, spec)).await
    }
}

#[async_trait]
impl Staging for FaultyBodies {
    async fn put_staged(&self, key: &str, bytes: Vec<u8>, now: Millis) -> Result<()> {
        self.1.step(self.0.put_staged(key, bytes, now)).await
    }

    async fn get_staged(&self, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
        self.1.step(self.0.get_staged(key, max_bytes)).await
    }

    async fn delete_staged(&self, key: &str) -> Result<()> {
        self.1.step(self.0.delete_staged(key)).await
    }

    async fn prune_staged(&self, prefix: &str, cutoff: Millis) -> Result<u64> {
        self.1.step(self.0.prune_staged(prefix, cutoff)).await
    }

    async fn presign_staged_put(
        &self,
        key: &str,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        self.1.step(self.0.presign_staged_put(key, spec)).await
    }
}

/// What recovers a backend after a crash: its sweeper, and what it holds.
pub struct Recovery {
    /// Runs the backend's sweeper as after a restart (no write in flight).
    #[allow(clippy::type_complexity)]
    pub sweep: Box<dyn Fn() -> StdPin<Box<dyn Future<Output = Result<u64>> + Send>> + Send + Sync>,
    pub inventory: Arc<dyn BodyInventory>,
    /// The store's outbox, where it keeps one.
    pub events: Option<Arc<dyn EventLog>>,
}

/// The operations whose every step is broken in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// An overwrite that also prunes the oldest retained version.
    Put,
    Delete,
    Restore,
    UploadCommit,
    Snapshot,
    /// An atomic commit: `a.md` written and `b.md` moved to `c.md`, together or not at all.
    Commit,
    /// A put over the version a live snapshot reads (the commit holds it).
    PutOverSnapshot,
    /// A fork of the workspace.
    Fork,
    /// A snapshot deleted (its point ends).
    DeleteSnapshot,
    /// [`Op::Put`] with `If-Match` naming `a.md`'s head: an inline commit planned from the
    /// etag alone (no read of the head), conditioned on it.
    PutNamed,
    /// [`Op::Put`] of content over the inline threshold over an inline version: its body
    /// goes to the body store.
    PutCrossingUp,
    /// [`Op::Put`] of short content over a version over the inline threshold (prepared so):
    /// its body goes inline, the one it supersedes stays in the body store.
    PutCrossingDown,
}

const OPS: [Op; 12] = [
    Op::Commit,
    Op::Put,
    Op::Delete,
    Op::Restore,
    Op::UploadCommit,
    Op::Snapshot,
    Op::PutOverSnapshot,
    Op::Fork,
    Op::DeleteSnapshot,
    Op::PutNamed,
    Op::PutCrossingUp,
    Op::PutCrossingDown,
];

/// `word` padded with dots to over the harness's inline threshold (100 bytes at its 64), so
/// its body goes to the body store.
fn over_inline(word: &str) -> String {
    let width = crate::harness::INLINE_BODY_BYTES as usize + 36;
    format!("{word:.<width$}")
}

/// What `a.md` reads before the operation: its last prepared version.
fn a_before(op: Op) -> String {
    match op {
        Op::PutCrossingDown => over_inline("three"),
        _ => "three".to_owned(),
    }
}

/// The operations that write `a.md` over its prepared versions, and nothing else: once
/// broken, the history lists exactly the retained versions, and a retry converges.
fn rewrites_a(op: Op) -> bool {
    matches!(
        op,
        Op::Put | Op::PutNamed | Op::PutCrossingUp | Op::PutCrossingDown
    )
}

/// One run's workspace, named per request with the tenant-wide key.
struct Run<'a> {
    h: &'a Harness,
    workspace: String,
}

impl Run<'_> {
    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        let mut c = self
            .h
            .call(method, uri, Some(KEY_TENANT))
            .header("x-workspace-id", &self.workspace);
        if let Some(b) = body {
            c = c.json(&b);
        }
        c.send().await
    }

    async fn put(&self, path: &str, content: &str) -> Reply {
        self.call(
            Method::PUT,
            &format!("/v1/host/workspace/files/{path}"),
            Some(json!({ "content": content })),
        )
        .await
    }
}

/// The state the operation starts from: `a.md` at versions 1-3 (so the next write prunes
/// version 1; the third over the inline threshold for [`Op::PutCrossingDown`]), `b.md`,
/// and, for an upload commit, its bytes staged; for the operations on a snapshot, a
/// snapshot of that. Returns the upload id, the snapshot's, or, for [`Op::PutNamed`],
/// `a.md`'s etag.
async fn prepare(run: &Run<'_>, op: Op) -> Option<String> {
    let third = a_before(op);
    let mut etag = None;
    for (path, content) in [
        ("a.md", "one"),
        ("a.md", "two"),
        ("a.md", third.as_str()),
        ("b.md", "bee"),
    ] {
        let put = run.put(path, content).await.assert_ok();
        if path == "a.md" {
            etag = put["etag"].as_str().map(str::to_owned);
        }
    }
    if op == Op::PutNamed {
        let etag = etag.expect("a.md's etag");
        assert!(
            workspace_core::model::parse_etag(&etag).is_some(),
            "a.md's etag {etag} does not name its head"
        );
        return Some(etag);
    }
    if matches!(op, Op::PutOverSnapshot | Op::DeleteSnapshot) {
        let snap = run
            .call(Method::POST, "/v1/host/workspace/snapshots", None)
            .await
            .assert_ok();
        return snap["snapshotId"].as_str().map(str::to_owned);
    }
    if op != Op::UploadCommit {
        return None;
    }
    let bytes = b"uploaded".to_vec();
    let ticket = run
        .call(
            Method::POST,
            "/v1/host/workspace/uploads",
            Some(json!({"path": "a.md", "size": bytes.len(),
                        "sha256": workspace_core::model::sha256_hex(&bytes),
                        "contentType": "text/markdown"})),
        )
        .await
        .assert_ok();
    let url = ticket["url"].as_str().expect("url");
    let sent = run
        .h
        .fetch(Method::PUT, url, &ticket["headers"], bytes)
        .await;
    assert!(sent.status.is_success(), "staging: {}", sent.status);
    Some(ticket["uploadId"].as_str().expect("uploadId").to_owned())
}

async fn perform(run: &Run<'_>, op: Op, upload: Option<&str>) -> Reply {
    match op {
        Op::Put => run.put("a.md", "four").await,
        Op::Delete => {
            run.call(Method::DELETE, "/v1/host/workspace/files/a.md", None)
                .await
        }
        Op::Restore => {
            run.call(
                Method::POST,
                "/v1/host/workspace/versions/a.md",
                Some(json!({"restore": 2})),
            )
            .await
        }
        Op::UploadCommit => {
            run.call(
                Method::PUT,
                "/v1/host/workspace/files/a.md",
                Some(json!({ "uploadId": upload })),
            )
            .await
        }
        Op::Snapshot => {
            run.call(Method::POST, "/v1/host/workspace/snapshots", None)
                .await
        }
        Op::PutOverSnapshot | Op::PutCrossingDown => run.put("a.md", "four").await,
        Op::PutNamed => {
            run.h
                .call(
                    Method::PUT,
                    "/v1/host/workspace/files/a.md",
                    Some(KEY_TENANT),
                )
                .header("x-workspace-id", &run.workspace)
                .header("if-match", upload.expect("a.md's etag"))
                .json(&json!({ "content": "four" }))
                .send()
                .await
        }
        Op::PutCrossingUp => run.put("a.md", &over_inline("four")).await,
        Op::Fork => {
            run.call(Method::POST, "/v1/host/workspace/forks", Some(json!({})))
                .await
        }
        Op::DeleteSnapshot => {
            let id = upload.expect("the snapshot");
            run.call(
                Method::DELETE,
                &format!("/v1/host/workspace/snapshots/{id}"),
                None,
            )
            .await
        }
        Op::Commit => {
            run.call(
                Method::POST,
                "/v1/host/workspace/commits",
                Some(json!({"operations": [
                    {"op": "put", "path": "a.md", "content": "four"},
                    {"op": "move", "from": "b.md", "to": "c.md"},
                ]})),
            )
            .await
        }
    }
}

/// What `a.md` reads after the operation took effect.
fn a_after(op: Op) -> Option<String> {
    match op {
        Op::Put | Op::Commit | Op::PutOverSnapshot | Op::PutNamed | Op::PutCrossingDown => {
            Some("four".to_owned())
        }
        Op::PutCrossingUp => Some(over_inline("four")),
        Op::Delete => None,
        Op::Restore => Some("two".to_owned()),
        Op::UploadCommit => Some("uploaded".to_owned()),
        Op::Snapshot | Op::Fork | Op::DeleteSnapshot => Some("three".to_owned()),
    }
}

/// After a put over the version a snapshot reads, broken anywhere: the snapshot still
/// reads it. After the snapshot's deletion, acknowledged: it is gone, and once `a.md` is
/// written past the retention window again nothing it held is kept.
async fn check_snapshot_after(
    after: &Run<'_>,
    op: Op,
    snapshot: Option<&str>,
    acked: bool,
    context: &str,
) {
    let id = snapshot.expect("the snapshot");
    let through = after
        .call(
            Method::GET,
            &format!("/v1/host/workspace/files/a.md?snapshot={id}"),
            None,
        )
        .await;
    if op == Op::PutOverSnapshot {
        // Past the retention window: only the hold the put (or a later write) left keeps
        // what the snapshot reads.
        for content in ["five", "six", "seven"] {
            after.put("a.md", content).await.assert_ok();
        }
        let through = after
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files/a.md?snapshot={id}"),
                None,
            )
            .await;
        assert_eq!(
            through.json()["content"],
            "three",
            "{context}: a live snapshot lost what it reads ({})",
            through.status
        );
        return;
    }
    if !acked {
        // Not deleted, or deleted with its point still live: readable, or 404.
        assert!(
            through.status.as_u16() == 404 || through.json()["content"] == "three",
            "{context}: {} {}",
            through.status,
            String::from_utf8_lossy(&through.body)
        );
        // A retry finishes the deletion.
        let retried = after
            .call(
                Method::DELETE,
                &format!("/v1/host/workspace/snapshots/{id}"),
                None,
            )
            .await;
        assert!(
            matches!(retried.status.as_u16(), 204 | 404),
            "{context}: retry {}",
            retried.status
        );
    }
    let through = after
        .call(
            Method::GET,
            &format!("/v1/host/workspace/files/a.md?snapshot={id}"),
            None,
        )
        .await;
    assert_eq!(
        through.status.as_u16(),
        404,
        "{context}: deleted, still read"
    );
    for content in ["five", "six", "seven", "eight"] {
        after.put("a.md", content).await.assert_ok();
    }
    let history = after
        .call(Method::GET, "/v1/host/workspace/versions/a.md", None)
        .await
        .assert_ok();
    let kept = history["versions"].as_array().map_or(0, Vec::len) as u64;
    assert!(
        kept <= crate::harness::LIMITS.max_versions,
        "{context}: {kept} versions kept after the snapshot ended: {history}"
    );
}

/// `a.md`'s history once `op` (a rewrite of it, [`rewrites_a`]) took effect or not: the
/// last `max_versions` versions written (version 1 pruned by the rewrite, kept without it),
/// each reading what was written.
async fn check_history_of_a(after: &Run<'_>, op: Op, changed: bool, context: &str) {
    let mut written = vec!["one".to_owned(), "two".to_owned(), a_before(op)];
    if changed {
        written.push(a_after(op).expect("a rewrite leaves a live file"));
    }
    let kept: Vec<(u64, String)> = written
        .into_iter()
        .enumerate()
        .map(|(i, content)| (i as u64 + 1, content))
        .rev()
        .take(crate::harness::LIMITS.max_versions as usize)
        .collect();
    let history = after
        .call(Method::GET, "/v1/host/workspace/versions/a.md", None)
        .await
        .assert_ok();
    let listed: Vec<u64> = history["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|r| r["version"].as_u64())
        .collect();
    assert_eq!(
        listed,
        kept.iter().map(|(n, _)| *n).collect::<Vec<u64>>(),
        "{context}: a.md's retained versions: {history}"
    );
    for (n, content) in kept {
        let r = after
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files/a.md?version={n}"),
                None,
            )
            .await;
        assert_eq!(
            (r.status.as_u16(), r.json()["content"].as_str()),
            (200, Some(content.as_str())),
            "{context}: version {n} of a.md"
        );
    }
}

/// The client retries `op` (a rewrite of `a.md`) from the restarted process: it succeeds,
/// or, for a put conditioned on the etag the broken run superseded, is refused as stale;
/// either way `a.md` ends reading what an unbroken run leaves.
async fn retry_rewrite(after: &Run<'_>, op: Op, token: Option<&str>, changed: bool, context: &str) {
    let reply = perform(after, op, token).await;
    if op == Op::PutNamed && changed {
        assert_eq!(
            (reply.status.as_u16(), reply.json()["error"].as_str()),
            (409, Some("workspace_conflict")),
            "{context}: a put on the superseded etag: {}",
            String::from_utf8_lossy(&reply.body)
        );
    } else {
        assert!(
            reply.status.is_success(),
            "{context}: {} {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
    }
    assert_eq!(
        a_now(after).await,
        a_after(op),
        "{context}: the retry did not converge"
    );
}

/// `a.md`'s content now (`None`: no live file), read through a restarted process.
async fn a_now(run: &Run<'_>) -> Option<String> {
    let r = run
        .call(Method::GET, "/v1/host/workspace/files/a.md", None)
        .await;
    match r.status.as_u16() {
        404 => None,
        200 => r.json()["content"].as_str().map(str::to_owned),
        other => panic!("reading a.md: {other} {}", String::from_utf8_lossy(&r.body)),
    }
}

/// No head or retained version of the run's workspace names a body that is gone, and every
/// body stored under it is named.
async fn assert_bodies_consistent(
    meta: &dyn MetaStore,
    bodies: &dyn BodyStore,
    inventory: &dyn BodyInventory,
    scope: &Scope,
    context: &str,
) {
    let mut named = HashSet::new();
    for path in ["a.md", "b.md", "c.md"] {
        let p = FilePath::parse(path).expect("path");
        if let Some(head) = meta.head(scope, &p).await.expect("head") {
            if let Some(body) = head.body.as_ref().filter(|_| head.is_live()) {
                let got = crate::body_bytes(bodies, body).await;
                assert!(
                    got.is_some(),
                    "{context}: the head of {path} names a body that is gone"
                );
            }
        }
        for v in meta
            .list_versions(scope, &p, None, 100)
            .await
            .expect("versions")
        {
            if let Some(body) = &v.body {
                let got = crate::body_bytes(bodies, body).await;
                assert!(
                    got.is_some(),
                    "{context}: version {} of {path} names a body that is gone",
                    v.version
                );
            }
        }
        for id in referenced_bodies(meta, scope, &p)
            .await
            .expect("referenced")
        {
            named.insert(id);
        }
    }
    assert_stored_bodies_named(inventory, scope, &named, context, ", after the sweep").await;
}

/// Every step of PUT (plain, conditioned on the head's etag, and crossing the inline
/// threshold either way), DELETE, restore, upload commit and snapshot, broken in each of
/// the three ways, then a restart and the sweeper: the invariants above hold. A rewrite of
/// `a.md` also leaves exactly the retained versions, and the client's retry converges.
/// `make` builds a fresh backend for each operation.
pub async fn every_crash_point_of_every_commit_keeps_the_invariants<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (Backend, Recovery)>,
{
    let mut runs = 0;
    for op in OPS {
        let (backend, recovery) = make().await;
        let Backend {
            meta,
            bodies,
            secrets,
            guard: _guard,
        } = backend;
        let raw = |guard: Box<dyn std::any::Any + Send + Sync>| Backend {
            meta: meta.clone(),
            bodies: bodies.clone(),
            secrets: secrets.clone(),
            guard,
        };
        // The operation's steps, counted on an unbroken run.
        let plan = Arc::new(FaultPlan::default());
        let faulty = Backend {
            meta: Arc::new(FaultyMeta(meta.clone(), plan.clone())),
            bodies: Arc::new(FaultyBodies(bodies.clone(), plan.clone())),
            secrets: secrets.clone(),
            guard: Box::new(()),
        };
        let h = Harness::new(faulty).await;
        let run = Run {
            h: &h,
            workspace: format!("count{op:?}").to_lowercase(),
        };
        let upload = prepare(&run, op).await;
        let before = plan.calls();
        let done = perform(&run, op, upload.as_deref()).await;
        assert!(done.status.is_success(), "{op:?} unbroken: {}", done.status);
        let steps = plan.calls() - before;
        if op == Op::PutNamed {
            // Planned from the etag: no head read before its commit (the search index
            // reads heads after it).
            let commit = plan
                .commit_calls()
                .into_iter()
                .find(|c| *c >= before)
                .expect("the named put's commit");
            let read = plan.head_calls().into_iter().find(|c| *c >= before);
            assert!(
                read.is_none_or(|r| r > commit),
                "{op:?} read the head its If-Match names (call {read:?}, commit at {commit})"
            );
            assert!(steps >= 1, "{op:?} took {steps} port calls");
        } else {
            assert!(steps >= 2, "{op:?} took {steps} port calls");
        }

        for step in 0..steps {
            for fault in FAULTS {
                runs += 1;
                let context = format!("{op:?}, step {step} of {steps}, {fault:?}");
                let plan = Arc::new(FaultPlan::default());
                let faulty = Backend {
                    meta: Arc::new(FaultyMeta(meta.clone(), plan.clone())),
                    bodies: Arc::new(FaultyBodies(bodies.clone(), plan.clone())),
                    secrets: secrets.clone(),
                    guard: Box::new(()),
                };
                let h = Harness::new(faulty).await;
                let workspace = format!("f{runs}");
                let run = Run {
                    h: &h,
                    workspace: workspace.clone(),
                };
                let upload = prepare(&run, op).await;
                plan.arm(plan.calls() + step, fault);
                let reply = perform(&run, op, upload.as_deref()).await;
                let acked = reply.status.is_success();

                // The restart: a new process over the same stores, then the sweeper.
                let restarted = Harness::new(raw(Box::new(()))).await;
                (recovery.sweep)().await.expect("sweep");
                let after = Run {
                    h: &restarted,
                    workspace,
                };
                let now = a_now(&after).await;
                let changed = now != Some(a_before(op));
                if op == Op::Fork {
                    assert_eq!(now.as_deref(), Some("three"), "{context}");
                    if acked {
                        let fork = reply.json()["workspaceId"]
                            .as_str()
                            .expect("workspaceId")
                            .to_owned();
                        let read = Run {
                            h: &restarted,
                            workspace: fork,
                        };
                        assert_eq!(
                            a_now(&read).await.as_deref(),
                            Some("three"),
                            "{context}: an acknowledged fork reads its base"
                        );
                    }
                } else if matches!(op, Op::Snapshot | Op::DeleteSnapshot) {
                    assert_eq!(now.as_deref(), Some("three"), "{context}");
                    if acked {
                        let id = reply.json()["snapshotId"].as_str().expect("id").to_owned();
                        let listed = after
                            .call(
                                Method::GET,
                                &format!("/v1/host/workspace/files/a.md?snapshot={id}"),
                                None,
                            )
                            .await;
                        assert_eq!(
                            listed.json()["content"],
                            "three",
                            "{context}: an acknowledged snapshot reads its version"
                        );
                    }
                } else if acked {
                    assert_eq!(now, a_after(op), "{context}: acknowledged, then lost");
                } else if fault == Fault::Fail {
                    assert!(
                        !changed,
                        "{context}: failed ({}) but changed a.md to {now:?}",
                        reply.status
                    );
                } else {
                    assert!(
                        !changed || now == a_after(op),
                        "{context}: neither before nor after: {now:?}"
                    );
                }
                if op == Op::Commit {
                    // All or nothing: the move landed exactly when the write did.
                    let read = |path: &'static str| {
                        let after = &after;
                        async move {
                            let r = after
                                .call(
                                    Method::GET,
                                    &format!("/v1/host/workspace/files/{path}"),
                                    None,
                                )
                                .await;
                            (r.status.as_u16() == 200)
                                .then(|| r.json()["content"].as_str().map(str::to_owned))
                                .flatten()
                        }
                    };
                    let (b, c) = (read("b.md").await, read("c.md").await);
                    if changed {
                        assert_eq!(
                            (b, c.as_deref()),
                            (None, Some("bee")),
                            "{context}: half a commit"
                        );
                    } else {
                        assert_eq!(
                            (b.as_deref(), c),
                            (Some("bee"), None),
                            "{context}: half a commit"
                        );
                    }
                }
                if rewrites_a(op) {
                    check_history_of_a(&after, op, changed, &context).await;
                }
                let scope = Scope::parse("acme", &after.workspace).expect("scope");
                let consistent = |context: String| {
                    let (meta, bodies, scope) = (&meta, &bodies, &scope);
                    let (events, inventory) = (&recovery.events, &recovery.inventory);
                    async move {
                        if let Some(events) = events {
                            let paths = ["a.md".to_owned(), "b.md".to_owned(), "c.md".to_owned()];
                            assert_events_once(
                                meta.as_ref(),
                                events.as_ref(),
                                scope,
                                &paths,
                                &context,
                            )
                            .await;
                        }
                        assert_bodies_consistent(
                            meta.as_ref(),
                            bodies.as_ref(),
                            inventory.as_ref(),
                            scope,
                            &context,
                        )
                        .await;
                    }
                };
                consistent(context.clone()).await;
                if rewrites_a(op) {
                    // The client's retry, from the restarted process: it ends where an
                    // unbroken run does, and leaves the stores as consistent. (It prunes an
                    // inline version, 1 or 2: no body is left for AWS's stream publisher.)
                    let context = format!("{context}, retried");
                    retry_rewrite(&after, op, upload.as_deref(), changed, &context).await;
                    (recovery.sweep)().await.expect("sweep");
                    consistent(context).await;
                }
                // Last: it writes more (whose pruned bodies the stream publisher, not the
                // sweep above, deletes on AWS).
                if matches!(op, Op::PutOverSnapshot | Op::DeleteSnapshot) {
                    check_snapshot_after(&after, op, upload.as_deref(), acked, &context).await;
                }
            }
        }
    }
    assert!(runs >= 30, "only {runs} crash points were tried");
}

/// A workspace with a fork whose merge changes three paths (a put over the base, a
/// delete, a new file) beside a change of the parent's own; the fork's id.
async fn forked(run: &Run<'_>) -> String {
    for (path, content) in [("a.md", "a"), ("b.md", "b"), ("c.md", "c")] {
        assert!(run.put(path, content).await.status.is_success());
    }
    let fork = run
        .call(Method::POST, "/v1/host/workspace/forks", Some(json!({})))
        .await;
    assert_eq!(
        fork.status.as_u16(),
        201,
        "fork: {}",
        String::from_utf8_lossy(&fork.body)
    );
    let fork = fork.json()["workspaceId"].as_str().expect("id").to_owned();
    let in_fork = Run {
        h: run.h,
        workspace: fork.clone(),
    };
    assert!(in_fork.put("a.md", "fork").await.status.is_success());
    assert!(in_fork.put("d.md", "new").await.status.is_success());
    let gone = in_fork
        .call(Method::DELETE, "/v1/host/workspace/files/b.md", None)
        .await;
    assert_eq!(gone.status.as_u16(), 204);
    assert!(run.put("c.md", "parent").await.status.is_success());
    fork
}

async fn merge_once(run: &Run<'_>, fork: &str) -> Reply {
    run.h
        .call(
            Method::POST,
            &format!("/v1/host/workspace/forks/{fork}/merge"),
            Some(KEY_TENANT),
        )
        .header("x-workspace-id", &run.workspace)
        .header("idempotency-key", "merge-once")
        .json(&json!({}))
        .send()
        .await
}

/// A merge broken at each of its steps (`points` of them at most, spread evenly; the call
/// failed, or the process killed before or after it), then retried with the same `Idempotency-Key` by a restarted process: the
/// parent ends as an unbroken merge leaves it, each change applied once (its change log
/// holds exactly the setup's commits and the merge's three), and the fork has nothing left
/// to merge.
pub async fn every_crash_point_of_a_merge_finishes_on_retry<F, Fut>(make: F, points: usize)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (Backend, Recovery)>,
{
    let (backend, _recovery) = make().await;
    let Backend {
        meta,
        bodies,
        secrets,
        guard: _guard,
    } = backend;
    let faulty = |plan: &Arc<FaultPlan>| Backend {
        meta: Arc::new(FaultyMeta(meta.clone(), plan.clone())),
        bodies: Arc::new(FaultyBodies(bodies.clone(), plan.clone())),
        secrets: secrets.clone(),
        guard: Box::new(()),
    };
    let plan = Arc::new(FaultPlan::default());
    let h = Harness::new(faulty(&plan)).await;
    let run = Run {
        h: &h,
        workspace: "mcount".to_owned(),
    };
    let fork = forked(&run).await;
    let before = plan.calls();
    let done = merge_once(&run, &fork).await;
    assert!(done.status.is_success(), "unbroken merge: {}", done.status);
    let steps = plan.calls() - before;
    assert!(steps >= 6, "a merge took {steps} port calls");

    let stride = steps.div_ceil(points.max(1));
    let mut runs = 0;
    for step in (0..steps).step_by(stride) {
        for fault in FAULTS {
            runs += 1;
            let context = format!("merge, step {step} of {steps}, {fault:?}");
            let plan = Arc::new(FaultPlan::default());
            let h = Harness::new(faulty(&plan)).await;
            let workspace = format!("m{runs}");
            let run = Run {
                h: &h,
                workspace: workspace.clone(),
            };
            let fork = forked(&run).await;
            plan.arm(plan.calls() + step, fault);
            let _ = merge_once(&run, &fork).await;

            let restarted = Harness::new(Backend {
                meta: meta.clone(),
                bodies: bodies.clone(),
                secrets: secrets.clone(),
                guard: Box::new(()),
            })
            .await;
            let after = Run {
                h: &restarted,
                workspace,
            };
            let retried = merge_once(&after, &fork).await;
            assert!(
                retried.status.is_success(),
                "{context}: the retry answered {} {}",
                retried.status,
                String::from_utf8_lossy(&retried.body)
            );
            for (path, want) in [
                ("a.md", Some("fork")),
                ("b.md", None),
                ("c.md", Some("parent")),
                ("d.md", Some("new")),
            ] {
                let r = after
                    .call(
                        Method::GET,
                        &format!("/v1/host/workspace/files/{path}"),
                        None,
                    )
                    .await;
                let got = (r.status.as_u16() == 200)
                    .then(|| r.json()["content"].as_str().map(str::to_owned))
                    .flatten();
                assert_eq!(got.as_deref(), want, "{context}: {path}");
            }
            let log = after
                .call(Method::GET, "/v1/host/workspace/changes?limit=100", None)
                .await;
            let entries = log.json()["changes"].as_array().map_or(0, Vec::len);
            assert_eq!(
                entries,
                4 + 3,
                "{context}: a change doubled or missing: {}",
                log.json()
            );
            let diff = restarted
                .call(
                    Method::GET,
                    &format!("/v1/host/workspace/forks/{fork}/diff"),
                    Some(KEY_TENANT),
                )
                .header("x-workspace-id", &after.workspace)
                .send()
                .await;
            assert_eq!(
                diff.json()["changes"],
                json!([]),
                "{context}: left to merge"
            );
        }
    }
    assert!(
        runs >= 3 * points.min(steps) / 2,
        "only {runs} crash points were tried"
    );
}

/// Room for the many-file merges below (the harness's own quota is 5 files).
fn roomy() -> workspace_core::Limits {
    workspace_core::Limits {
        max_files: 1000,
        ..crate::harness::LIMITS
    }
}

/// Every live file of the run's workspace: path → (version, content).
async fn snapshot_of(run: &Run<'_>) -> std::collections::BTreeMap<String, (u64, String)> {
    let listed = run
        .call(Method::GET, "/v1/host/workspace/files?limit=1000", None)
        .await
        .assert_ok();
    let mut out = std::collections::BTreeMap::new();
    for f in listed["files"].as_array().expect("files") {
        let path = f["path"].as_str().expect("path").to_owned();
        let r = run
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files/{path}"),
                None,
            )
            .await
            .assert_ok();
        let content = r["content"].as_str().expect("content").to_owned();
        out.insert(path, (f["version"].as_u64().expect("version"), content));
    }
    out
}

/// How many entries the run's workspace's change log holds (at most 100).
async fn changes_logged(run: &Run<'_>) -> usize {
    run.call(Method::GET, "/v1/host/workspace/changes?limit=100", None)
        .await
        .assert_ok()["changes"]
        .as_array()
        .map_or(0, Vec::len)
}

/// No head or retained version of `paths` names a body that is gone, and every file body
/// stored under the scope is named by one.
async fn assert_bodies_named(
    meta: &dyn MetaStore,
    bodies: &dyn BodyStore,
    inventory: &dyn BodyInventory,
    scope: &Scope,
    paths: &[String],
    context: &str,
) {
    let mut named = HashSet::new();
    for path in paths {
        let p = FilePath::parse(path).expect("path");
        for v in meta
            .list_versions(scope, &p, None, 100)
            .await
            .expect("versions")
        {
            if let Some(body) = &v.body {
                assert!(
                    crate::body_bytes(bodies, body).await.is_some(),
                    "{context}: version {} of {path} names a body that is gone",
                    v.version
                );
                named.insert(body.version_id.clone());
            }
        }
    }
    assert_stored_bodies_named(inventory, scope, &named, context, "").await;
}

/// Every file body stored under `scope` is one of `named` (`after` ends the message).
async fn assert_stored_bodies_named(
    inventory: &dyn BodyInventory,
    scope: &Scope,
    named: &HashSet<String>,
    context: &str,
    after: &str,
) {
    let prefix = format!("{}files/", scope.key_prefix());
    for body in inventory.stored_bodies().await.expect("inventory") {
        if body.key.starts_with(&prefix) {
            assert!(
                named.contains(&body.version_id),
                "{context}: {} ({}) is stored but no version names it{after}",
                body.key,
                body.version_id
            );
        }
    }
}

/// Each of `paths`' events in the outbox are its changes, one each: sequences 1..=head.seq.
async fn assert_events_once(
    meta: &dyn MetaStore,
    events: &dyn EventLog,
    scope: &Scope,
    paths: &[String],
    context: &str,
) {
    let Since::Events(all) = events.since(Some(scope), 0, 10_000).await.expect("outbox") else {
        panic!("{context}: the outbox expired events it should keep");
    };
    for path in paths {
        let p = FilePath::parse(path).expect("path");
        let committed = meta
            .head(scope, &p)
            .await
            .expect("head")
            .map_or(0, |h| h.seq);
        let mut seen: Vec<u64> = all
            .iter()
            .filter(|r| r.event.path == *path)
            .map(|r| r.event.sequence)
            .collect();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (1..=committed).collect::<Vec<u64>>(),
            "{context}: {path}'s events are not one per committed change"
        );
    }
}

/// A workspace of `files` files (`p00`… at "base") and a fork that changes `changed` of
/// them, deletes the next `deleted` and adds `added` new ones (`n0`…); the fork's id.
async fn forked_many(
    run: &Run<'_>,
    files: usize,
    changed: usize,
    deleted: usize,
    added: usize,
) -> String {
    for i in 0..files {
        run.put(&format!("p{i:02}.md"), "base").await.assert_ok();
    }
    let fork = run
        .call(Method::POST, "/v1/host/workspace/forks", Some(json!({})))
        .await;
    assert_eq!(
        fork.status.as_u16(),
        201,
        "fork: {}",
        String::from_utf8_lossy(&fork.body)
    );
    let fork = fork.json()["workspaceId"].as_str().expect("id").to_owned();
    let in_fork = Run {
        h: run.h,
        workspace: fork.clone(),
    };
    for i in 0..changed {
        in_fork
            .put(&format!("p{i:02}.md"), &format!("fork {i}"))
            .await
            .assert_ok();
    }
    for i in changed..changed + deleted {
        let gone = in_fork
            .call(
                Method::DELETE,
                &format!("/v1/host/workspace/files/p{i:02}.md"),
                None,
            )
            .await;
        assert_eq!(gone.status.as_u16(), 204);
    }
    for i in 0..added {
        in_fork
            .put(&format!("n{i}.md"), &format!("new {i}"))
            .await
            .assert_ok();
    }
    fork
}

/// What the parent holds once the fork of [`forked_many`] is merged.
fn merged_many(
    files: usize,
    changed: usize,
    deleted: usize,
    added: usize,
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for i in 0..files {
        let content = if i < changed {
            format!("fork {i}")
        } else if i < changed + deleted {
            continue;
        } else {
            "base".to_owned()
        };
        out.insert(format!("p{i:02}.md"), content);
    }
    for i in 0..added {
        out.insert(format!("n{i}.md"), format!("new {i}"));
    }
    out
}

async fn merge_with_key(run: &Run<'_>, fork: &str, key: &str, body: Value) -> Reply {
    run.h
        .call(
            Method::POST,
            &format!("/v1/host/workspace/forks/{fork}/merge"),
            Some(KEY_TENANT),
        )
        .header("x-workspace-id", &run.workspace)
        .header("idempotency-key", key)
        .json(&body)
        .send()
        .await
}

/// A parent write that lands on one of a merge's paths after the merge compared it and
/// before it commits: the merge answers 409 naming that path and applies nothing (every
/// path of the parent as it was, the writer's change kept, no body of the merge left
/// behind); merged again, the path is a conflict, and `fork-wins` then applies everything.
pub async fn a_merge_racing_a_parent_write_applies_nothing<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (Backend, Recovery)>,
{
    let (backend, recovery) = make().await;
    let Backend {
        meta,
        bodies,
        secrets,
        guard: _guard,
    } = backend;
    let plan = Arc::new(FaultPlan::default());
    let h = Harness::with_limits(
        Backend {
            meta: Arc::new(FaultyMeta(meta.clone(), plan.clone())),
            bodies: Arc::new(FaultyBodies(bodies.clone(), plan.clone())),
            secrets: secrets.clone(),
            guard: Box::new(()),
        },
        roomy(),
    )
    .await;
    // The racing writer: another process over the same stores.
    let racer = Arc::new(
        Harness::with_limits(
            Backend {
                meta: meta.clone(),
                bodies: bodies.clone(),
                secrets: secrets.clone(),
                guard: Box::new(()),
            },
            roomy(),
        )
        .await,
    );
    let run = Run {
        h: &h,
        workspace: "race".to_owned(),
    };
    let fork = forked_many(&run, 8, 5, 1, 2).await;
    let before = snapshot_of(&run).await;
    let logged = changes_logged(&run).await;

    let writer = racer.clone();
    plan.before_next_batch(async move {
        writer
            .call(
                Method::PUT,
                "/v1/host/workspace/files/p03.md",
                Some(KEY_TENANT),
            )
            .header("x-workspace-id", "race")
            .json(&json!({ "content": "racer" }))
            .send()
            .await
            .assert_ok();
    });
    let r = merge_with_key(&run, &fork, "race-1", json!({})).await;
    let body = r.assert_error(409, "workspace_conflict");
    assert!(
        body["message"].as_str().unwrap_or("").contains("p03.md"),
        "the conflict names the path: {body}"
    );

    // Nothing of the merge applied: every path as before, but the racer's.
    let mut expected = before.clone();
    expected.insert("p03.md".to_owned(), (2, "racer".to_owned()));
    assert_eq!(snapshot_of(&run).await, expected);
    assert_eq!(
        changes_logged(&run).await,
        logged + 1,
        "only the racer's change"
    );
    let scope = Scope::parse("acme", "race").expect("scope");
    let mut paths: Vec<String> = merged_many(8, 5, 1, 2).into_keys().collect();
    paths.push("p05.md".to_owned());
    assert_bodies_named(
        meta.as_ref(),
        bodies.as_ref(),
        recovery.inventory.as_ref(),
        &scope,
        &paths,
        "after the refused merge",
    )
    .await;
    if let Some(events) = &recovery.events {
        assert_events_once(meta.as_ref(), events.as_ref(), &scope, &paths, "race").await;
    }

    // Compared anew, the path both sides changed is a conflict; fork-wins applies it all.
    let again = merge_with_key(&run, &fork, "race-2", json!({})).await;
    let conflict = again.assert_error(409, "workspace_conflict");
    let named: Vec<&str> = conflict["details"]["conflicts"]
        .as_array()
        .expect("conflicts")
        .iter()
        .filter_map(|c| c["path"].as_str())
        .collect();
    assert_eq!(named, ["p03.md"], "{conflict}");
    let done = merge_with_key(&run, &fork, "race-3", json!({"strategy": "fork-wins"})).await;
    assert_eq!(
        done.assert_ok()["applied"].as_array().map(Vec::len),
        Some(8)
    );
    let now: std::collections::BTreeMap<String, String> = snapshot_of(&run)
        .await
        .into_iter()
        .map(|(p, (_, c))| (p, c))
        .collect();
    assert_eq!(now, merged_many(8, 5, 1, 2));
}

/// A merge larger than one commit of the store takes (on DynamoDB, more than one
/// `TransactWriteItems`: it runs as a recorded plan in batches) broken at its batch commits
/// and the step after each, and at `points` more of its steps, in the three ways; the sweeper runs (as it would
/// within the hour), then the same merge with the same `Idempotency-Key` from a restarted
/// process finishes it: every change applied exactly once (the parent as an unbroken merge
/// leaves it, the change log holding each merge change once, one event per change where
/// the store keeps an outbox), no body missing or left unnamed, nothing left to merge.
pub async fn a_merge_over_one_transaction_finishes_on_retry<F, Fut>(make: F, points: usize)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (Backend, Recovery)>,
{
    // 34 changes: on DynamoDB 3 actions each and the counter and secrets checks, more
    // than the 100 one transaction takes.
    const FILES: usize = 4;
    const CHANGED: usize = 2;
    const DELETED: usize = 2;
    const ADDED: usize = 30;
    let faulty = |backend: &Backend, plan: &Arc<FaultPlan>| Backend {
        meta: Arc::new(FaultyMeta(backend.meta.clone(), plan.clone())),
        bodies: Arc::new(FaultyBodies(backend.bodies.clone(), plan.clone())),
        secrets: backend.secrets.clone(),
        guard: Box::new(()),
    };
    let raw = |backend: &Backend| Backend {
        meta: backend.meta.clone(),
        bodies: backend.bodies.clone(),
        secrets: backend.secrets.clone(),
        guard: Box::new(()),
    };
    let expected = merged_many(FILES, CHANGED, DELETED, ADDED);
    let mut paths: Vec<String> = expected.keys().cloned().collect();
    paths.extend((CHANGED..CHANGED + DELETED).map(|i| format!("p{i:02}.md")));

    // The merge's steps and its batch commits, counted on an unbroken run.
    let (counting, _) = make().await;
    let plan = Arc::new(FaultPlan::default());
    let h = Harness::with_limits(faulty(&counting, &plan), roomy()).await;
    let run = Run {
        h: &h,
        workspace: "bigcount".to_owned(),
    };
    let fork = forked_many(&run, FILES, CHANGED, DELETED, ADDED).await;
    let before = plan.calls();
    let done = merge_with_key(&run, &fork, "big", json!({})).await;
    let applied = done.assert_ok()["applied"].as_array().map_or(0, Vec::len);
    assert_eq!(applied, CHANGED + DELETED + ADDED);
    let steps = plan.calls() - before;
    let batches: Vec<usize> = plan
        .batch_calls()
        .into_iter()
        .filter(|c| *c >= before)
        .map(|c| c - before)
        .collect();
    assert!(!batches.is_empty(), "the merge committed no batch");
    let mut chosen: Vec<usize> = batches
        .iter()
        .flat_map(|b| [*b, *b + 1])
        .filter(|s| *s < steps)
        .collect();
    if points > 0 {
        chosen.extend((0..steps).step_by(steps.div_ceil(points)));
    }
    chosen.sort_unstable();
    chosen.dedup();

    let mut runs = 0;
    for step in chosen {
        for fault in FAULTS {
            runs += 1;
            let context = format!(
                "big merge ({} batches at {batches:?}), step {step} of {steps}, {fault:?}",
                batches.len()
            );
            // A fresh backend for each run (the sweeper reads the whole of it).
            let (backend, recovery) = make().await;
            let (meta, bodies) = (backend.meta.clone(), backend.bodies.clone());
            let plan = Arc::new(FaultPlan::default());
            let h = Harness::with_limits(faulty(&backend, &plan), roomy()).await;
            let workspace = format!("big{runs}");
            let run = Run {
                h: &h,
                workspace: workspace.clone(),
            };
            let fork = forked_many(&run, FILES, CHANGED, DELETED, ADDED).await;
            let logged = changes_logged(&run).await;
            plan.arm(plan.calls() + step, fault);
            let _ = merge_with_key(&run, &fork, "big", json!({})).await;

            // The restart: the sweeper first (no write in flight), then the retry.
            (recovery.sweep)().await.expect("sweep");
            let restarted = Harness::with_limits(raw(&backend), roomy()).await;
            let after = Run {
                h: &restarted,
                workspace,
            };
            let retried = merge_with_key(&after, &fork, "big", json!({})).await;
            assert!(
                retried.status.is_success(),
                "{context}: the retry answered {} {}",
                retried.status,
                String::from_utf8_lossy(&retried.body)
            );
            let now: std::collections::BTreeMap<String, String> = snapshot_of(&after)
                .await
                .into_iter()
                .map(|(p, (_, c))| (p, c))
                .collect();
            assert_eq!(now, expected, "{context}");
            assert_eq!(
                changes_logged(&after).await,
                logged + CHANGED + DELETED + ADDED,
                "{context}: a change doubled or missing"
            );
            let diff = restarted
                .call(
                    Method::GET,
                    &format!("/v1/host/workspace/forks/{fork}/diff"),
                    Some(KEY_TENANT),
                )
                .header("x-workspace-id", &after.workspace)
                .send()
                .await;
            assert_eq!(
                diff.json()["changes"],
                json!([]),
                "{context}: left to merge"
            );
            let scope = Scope::parse("acme", &after.workspace).expect("scope");
            if let Some(events) = &recovery.events {
                assert_events_once(meta.as_ref(), events.as_ref(), &scope, &paths, &context).await;
            }
            (recovery.sweep)().await.expect("sweep");
            assert_bodies_named(
                meta.as_ref(),
                bodies.as_ref(),
                recovery.inventory.as_ref(),
                &scope,
                &paths,
                &context,
            )
            .await;
        }
    }
    assert!(
        runs >= 3 * batches.len(),
        "only {runs} crash points were tried"
    );
}
