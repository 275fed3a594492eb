//! In-memory adapter: one mutex around plain maps. The mutex makes every commit atomic, which
//! is all the conditional-commit contract asks. For tests; nothing survives the process.

mod capabilities;
mod outbox;

pub use capabilities::{MemoryBlobs, MemoryCache};
use workspace_core::ports::{
    check_batch, BatchOutcome, Bodies, Commit, CommitOutcome, CommitStore, Expect, HeadStore,
    HistoryStore, RecordStore, ScopeItemStore, SnapshotStore, Staged, Staging, StoredRecord,
};
pub mod sessions;

use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::events::WorkspaceEvent;
use workspace_core::model::{
    BodyRef, Erasure, Head, IdempotencyRecord, Millis, Pin, Points, Snapshot, SnapshotInfo,
    VersionRecord,
};
use workspace_core::secrets::{SecretRecord, SecretStore};
use workspace_core::{FilePath, PathPrefix, Result, Scope, TenantId, WorkspaceError};

#[derive(Default)]
struct ScopeState {
    heads: BTreeMap<String, Head>,
    versions: BTreeMap<(String, u64), VersionRecord>,
    idempotency: HashMap<String, IdempotencyRecord>,
    snapshots: HashMap<String, Snapshot>,
    records: HashMap<(String, String), StoredRecord>,
    /// The change log, by change key.
    changes: std::collections::BTreeMap<String, Change>,
    live: u64,
    /// The point registry (`SnapshotStore::points`).
    points: Points,
}

impl ScopeState {
    /// Everything the scope holds, counted (what erasing a workspace must leave at zero).
    pub(crate) fn items(&self) -> usize {
        self.heads.len()
            + self.versions.len()
            + self.idempotency.len()
            + self.snapshots.len()
            + self.records.len()
            + self.changes.len()
            + usize::from(self.points.rev > 0)
    }
}

/// Metadata and commits in memory.
#[derive(Default, Clone)]
pub struct MemoryMeta {
    scopes: Arc<Mutex<HashMap<Scope, ScopeState>>>,
    /// The events of commits, appended under the same lock as the commit.
    outbox: Arc<Mutex<outbox::MemoryOutbox>>,
}

impl MemoryMeta {
    /// Heads under `prefix` after `after`, sorted by path; tombstones only when asked.
    fn heads_in(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
        tombstones: bool,
    ) -> Result<Vec<Head>> {
        let guard = self.lock()?;
        let Some(state) = guard.get(scope) else {
            return Ok(Vec::new());
        };
        Ok(state
            .heads
            .range(prefix.as_str().to_owned()..)
            .take_while(|(p, _)| p.starts_with(prefix.as_str()))
            .filter(|(p, h)| {
                (tombstones || h.is_live()) && after.is_none_or(|a| p.as_str() > a.as_str())
            })
            .take(limit)
            .map(|(_, h)| h.clone())
            .collect())
    }

    fn lock(&self) -> Result<MutexGuard<'_, HashMap<Scope, ScopeState>>> {
        self.scopes
            .lock()
            .map_err(|_| WorkspaceError::internal("memory store lock poisoned"))
    }
}

#[async_trait]
impl HeadStore for MemoryMeta {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        Ok(self
            .lock()?
            .get(scope)
            .and_then(|s| s.heads.get(path.as_str()).cloned()))
    }

    async fn list_live(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads_in(scope, prefix, after, limit, false)
    }

    async fn list_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads_in(scope, prefix, after, limit, true)
    }

    async fn live_count(&self, scope: &Scope) -> Result<u64> {
        Ok(self.lock()?.get(scope).map_or(0, |s| s.live))
    }
}

#[async_trait]
impl CommitStore for MemoryMeta {
    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        Ok(self
            .lock()?
            .get(scope)
            .and_then(|s| s.idempotency.get(key).cloned()))
    }

    async fn commit(&self, c: Commit) -> Result<CommitOutcome> {
        let mut guard = self.lock()?;
        let state = guard.entry(c.scope.clone()).or_default();
        if let Some(refused) = refusal(state, &c, state.live) {
            return Ok(refused);
        }
        let pruned = self.apply(state, c)?;
        Ok(CommitOutcome::Committed { pruned })
    }

    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        check_batch(&commits)?;
        // One lock for the whole batch: every commit is judged first (as the ones before
        // it leave the scope), then all apply; no reader sees a part.
        let mut guard = self.lock()?;
        let mut live: HashMap<Scope, u64> = HashMap::new();
        for (index, c) in commits.iter().enumerate() {
            let state = guard.entry(c.scope.clone()).or_default();
            let count = live.entry(c.scope.clone()).or_insert(state.live);
            if let Some(outcome) = refusal(state, c, *count) {
                return Ok(BatchOutcome::Refused { index, outcome });
            }
            *count = count.saturating_add_signed(c.live_delta);
        }
        let mut pruned = Vec::new();
        for c in commits {
            let state = guard.entry(c.scope.clone()).or_default();
            pruned.extend(self.apply(state, c)?);
        }
        Ok(BatchOutcome::Committed { pruned })
    }
}

#[async_trait]
impl HistoryStore for MemoryMeta {
    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>> {
        Ok(self
            .lock()?
            .get(scope)
            .and_then(|s| s.versions.get(&(path.to_string(), seq)).cloned()))
    }

    async fn list_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        let guard = self.lock()?;
        let Some(state) = guard.get(scope) else {
            return Ok(Vec::new());
        };
        let p = path.to_string();
        Ok(state
            .versions
            .range((p.clone(), 0)..(p, before.unwrap_or(u64::MAX)))
            .rev()
            .take(limit)
            .map(|(_, v)| v.clone())
            .collect())
    }

    async fn set_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        let mut guard = self.lock()?;
        let Some(state) = guard.get_mut(scope) else {
            return Ok(false);
        };
        if must_exist.is_some_and(|seq| !state.versions.contains_key(&(path.to_string(), seq))) {
            return Ok(false);
        }
        match state.heads.get_mut(path.as_str()) {
            Some(h) if expect.matches(Some(h)) => {
                h.pins = pins;
                h.pin_rev += 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn erase_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &Erasure,
    ) -> Result<Option<Option<BodyRef>>> {
        let mut guard = self.lock()?;
        let Some(state) = guard.get_mut(scope) else {
            return Ok(None);
        };
        let Some(item) = state.versions.get_mut(&(path.to_string(), seq)) else {
            return Ok(None);
        };
        if item.erased.is_some() {
            return Ok(Some(None));
        }
        let body = item.body.take();
        item.erased = Some(erasure.clone());
        let item = item.clone();
        let change = Change::of_erase(path, &item, erasure);
        state.changes.insert(change.key.clone(), change);
        let event = WorkspaceEvent::of_erase(scope, path.as_str(), &item, erasure);
        self.outbox
            .lock()
            .map_err(|_| WorkspaceError::internal("memory store lock poisoned"))?
            .append(scope, event, erasure.at);
        Ok(Some(body))
    }

    async fn list_changes(&self, scope: &Scope, q: &ChangeQuery) -> Result<ChangePage> {
        let guard = self.lock()?;
        let mut page = ChangePage::default();
        let Some(state) = guard.get(scope) else {
            return Ok(page);
        };
        let lo = q.from.clone().unwrap_or_default();
        let in_range = |k: &String| *k >= lo && q.upper().is_none_or(|u| k.as_str() < u);
        for change in state.changes.values().rev().filter(|c| in_range(&c.key)) {
            if !q.admits(change) {
                continue;
            }
            if page.changes.len() == q.limit {
                page.next_before = page.changes.last().map(|c| c.key.clone());
                break;
            }
            page.changes.push(change.clone());
        }
        Ok(page)
    }
}

#[async_trait]
impl SnapshotStore for MemoryMeta {
    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        let mut guard = self.lock()?;
        let snapshots = &mut guard.entry(scope.clone()).or_default().snapshots;
        // No TTL here (DynamoDB has one): drop the scope's expired records now.
        snapshots.retain(|_, s| s.expires_at > snapshot.created_at);
        snapshots.insert(snapshot.id.clone(), snapshot.clone());
        Ok(())
    }

    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>> {
        Ok(self
            .lock()?
            .get(scope)
            .and_then(|s| s.snapshots.get(id).cloned()))
    }

    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool> {
        Ok(self
            .lock()?
            .get_mut(scope)
            .is_some_and(|s| s.snapshots.remove(id).is_some()))
    }

    async fn points(&self, scope: &Scope) -> Result<Points> {
        Ok(self
            .lock()?
            .get(scope)
            .map(|s| s.points.clone())
            .unwrap_or_default())
    }

    async fn swap_points(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: workspace_core::ports::PointRecords<'_>,
    ) -> Result<bool> {
        let mut guard = self.lock()?;
        let state = guard.entry(scope.clone()).or_default();
        if state.points.rev != expect_rev {
            return Ok(false);
        }
        state.points = points.clone();
        if let Some(r) = with.record {
            guard
                .entry(r.scope.clone())
                .or_default()
                .records
                .insert((r.kind.to_owned(), r.key.to_owned()), r.record.clone());
        }
        let state = guard.entry(scope.clone()).or_default();
        if let Some(snapshot) = with.snapshot {
            state
                .snapshots
                .retain(|_, s| s.expires_at > snapshot.created_at);
            state
                .snapshots
                .insert(snapshot.id.clone(), snapshot.clone());
        }
        Ok(true)
    }

    async fn list_snapshots(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        let guard = self.lock()?;
        let Some(s) = guard.get(scope) else {
            return Ok(Vec::new());
        };
        let mut page: Vec<SnapshotInfo> = s
            .snapshots
            .values()
            .filter(|s| s.id.starts_with(id_prefix) && before.is_none_or(|b| s.id.as_str() < b))
            .map(Snapshot::info)
            .collect();
        page.sort_by(|a, b| b.id.cmp(&a.id));
        page.truncate(limit);
        Ok(page)
    }
}

#[async_trait]
impl RecordStore for MemoryMeta {
    async fn put_record(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        let mut guard = self.lock()?;
        let records = &mut guard.entry(scope.clone()).or_default().records;
        records.insert((kind.to_owned(), key.to_owned()), record.clone());
        Ok(())
    }

    async fn record(&self, scope: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>> {
        Ok(self
            .lock()?
            .get(scope)
            .and_then(|s| s.records.get(&(kind.to_owned(), key.to_owned())).cloned()))
    }
}

#[async_trait]
impl ScopeItemStore for MemoryMeta {
    async fn erase_scope_items(&self, scope: &Scope) -> Result<u64> {
        let mut n = self.erase_events_of(scope)?;
        if let Some(files) = self.lock()?.remove(scope) {
            n += files.items() as u64;
        }
        Ok(n)
    }
}

/// Why `c` is refused in `state`, where the scope holds `live` files (the commits before
/// it in its batch counted); `None` when it applies.
fn refusal(state: &ScopeState, c: &Commit, live: u64) -> Option<CommitOutcome> {
    if c.points_rev != state.points.rev {
        return Some(CommitOutcome::PointsMoved);
    }
    if !c.expect.matches(state.heads.get(c.path.as_str())) {
        return Some(CommitOutcome::HeadMoved);
    }
    if let Some(rec) = c
        .idempotency
        .as_ref()
        .and_then(|i| state.idempotency.get(&i.key))
        .filter(|r| r.created_at > c.idempotency_valid_after)
    {
        return Some(CommitOutcome::KeyUsed(rec.clone()));
    }
    if c.live_delta > 0 && live >= c.max_files {
        return Some(CommitOutcome::TooManyFiles);
    }
    None
}

impl MemoryMeta {
    /// Applies a commit already judged (`refusal`), under the caller's lock; the bodies of
    /// the version items it pruned.
    fn apply(&self, state: &mut ScopeState, c: Commit) -> Result<Vec<BodyRef>> {
        let path = c.path.to_string();
        state.live = state.live.saturating_add_signed(c.live_delta);
        // Retention skips the items a live snapshot pins (the new head's pins).
        let stale: Vec<(String, u64)> = state
            .versions
            .range((path.clone(), 0)..(path.clone(), c.retain_from_seq))
            .map(|(k, _)| k.clone())
            .filter(|(_, seq)| !c.head.pins.iter().any(|p| p.seq == *seq))
            .collect();
        let pruned = stale
            .iter()
            .filter_map(|k| state.versions.remove(k).and_then(|v| v.body))
            .collect();
        let event = WorkspaceEvent::scope_of(&c.scope, &path, &c.version);
        self.outbox
            .lock()
            .map_err(|_| WorkspaceError::internal("memory store lock poisoned"))?
            .append(&c.scope, event, c.version.updated_at);
        let change = Change::of_commit(&c.path, &c.version);
        // A few expired entries go with each commit (no TTL here).
        let expired: Vec<String> = state
            .changes
            .iter()
            .take(2)
            .filter(|(_, e)| e.expires_at <= change.at)
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            state.changes.remove(&k);
        }
        state.changes.insert(change.key.clone(), change);
        state
            .versions
            .insert((path.clone(), c.version.seq), c.version);
        state.heads.insert(path, c.head);
        if let Some(rec) = c.idempotency {
            state.idempotency.insert(rec.key.clone(), rec);
        }
        Ok(pruned)
    }
}

/// (body key, version id) → bytes.
type BodyMap = HashMap<(String, String), Vec<u8>>;
/// Staging key → (stored at, bytes).
type StagedMap = HashMap<String, (Millis, Vec<u8>)>;

/// Bodies in memory, keyed by (key, version id); staged uploads by key.
#[derive(Default, Clone)]
pub struct MemoryBodies {
    bodies: Arc<Mutex<BodyMap>>,
    next: Arc<Mutex<u64>>,
    staged: Arc<Mutex<StagedMap>>,
}

#[async_trait]
impl workspace_core::ports::BodyInventory for MemoryBodies {
    async fn stored_bodies(&self) -> Result<Vec<BodyRef>> {
        Ok(self
            .bodies
            .lock()
            .map_err(poisoned)?
            .keys()
            .map(|(key, version_id)| BodyRef::stored(key.clone(), version_id.clone()))
            .collect())
    }
}

impl MemoryBodies {
    /// How many bodies are held (committed or orphaned, staged uploads included), for
    /// tests that check clean-up.
    pub fn len(&self) -> usize {
        self.bodies.lock().map_or(0, |b| b.len()) + self.staged.lock().map_or(0, |s| s.len())
    }

    /// Removes staged objects under `prefix` (all of them, or those stored before
    /// `cutoff`); how many went.
    pub(crate) fn drop_staged(&self, prefix: &str, cutoff: Option<Millis>) -> Result<u64> {
        let mut staged = self.staged.lock().map_err(poisoned)?;
        let before = staged.len();
        staged.retain(|k, (at, _)| !(k.starts_with(prefix) && cutoff.is_none_or(|c| *at < c)));
        Ok((before - staged.len()) as u64)
    }

    pub(crate) fn count_staged(&self, prefix: &str) -> Result<u64> {
        let staged = self.staged.lock().map_err(poisoned)?;
        Ok(staged.keys().filter(|k| k.starts_with(prefix)).count() as u64)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn poisoned<T>(_: T) -> WorkspaceError {
    WorkspaceError::internal("memory body store lock poisoned")
}

#[async_trait]
impl Bodies for MemoryBodies {
    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> Result<BodyRef> {
        let version_id = {
            let mut n = self.next.lock().map_err(poisoned)?;
            *n += 1;
            n.to_string()
        };
        self.bodies
            .lock()
            .map_err(poisoned)?
            .insert((key.to_owned(), version_id.clone()), bytes);
        Ok(BodyRef::stored(key, version_id))
    }

    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        Ok(self
            .bodies
            .lock()
            .map_err(poisoned)?
            .get(&(body.key.clone(), body.version_id.clone()))
            .cloned())
    }

    async fn delete(&self, body: &BodyRef) -> Result<()> {
        self.bodies
            .lock()
            .map_err(poisoned)?
            .remove(&(body.key.clone(), body.version_id.clone()));
        Ok(())
    }
}

#[async_trait]
impl Staging for MemoryBodies {
    async fn put_staged(&self, key: &str, bytes: Vec<u8>, now: Millis) -> Result<()> {
        self.staged
            .lock()
            .map_err(poisoned)?
            .insert(key.to_owned(), (now, bytes));
        Ok(())
    }

    async fn get_staged(&self, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
        let staged = self.staged.lock().map_err(poisoned)?;
        Ok(staged.get(key).map(|(at, bytes)| Staged {
            size: bytes.len() as u64,
            stored_at: *at,
            bytes: (bytes.len() as u64 <= max_bytes).then(|| bytes.clone()),
        }))
    }

    async fn delete_staged(&self, key: &str) -> Result<()> {
        self.staged.lock().map_err(poisoned)?.remove(key);
        Ok(())
    }

    async fn prune_staged(&self, prefix: &str, cutoff: Millis) -> Result<u64> {
        self.drop_staged(prefix, Some(cutoff))
    }
}

/// Registered secrets in memory.
#[derive(Default, Clone)]
pub struct MemorySecrets {
    records: Arc<Mutex<Vec<SecretRecord>>>,
}

impl MemorySecrets {
    fn lock(&self) -> Result<MutexGuard<'_, Vec<SecretRecord>>> {
        self.records
            .lock()
            .map_err(|_| WorkspaceError::internal("memory store lock poisoned"))
    }
}

#[async_trait]
impl SecretStore for MemorySecrets {
    async fn put_secret(&self, record: SecretRecord) -> Result<()> {
        let mut all = self.lock()?;
        all.retain(|s| !(s.tenant == record.tenant && s.id == record.id));
        all.push(record);
        Ok(())
    }

    async fn secrets_of(&self, tenant: &TenantId) -> Result<Vec<SecretRecord>> {
        Ok(self
            .lock()?
            .iter()
            .filter(|s| s.tenant == tenant.as_str())
            .cloned()
            .collect())
    }

    async fn remove_secret(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        let mut all = self.lock()?;
        let before = all.len();
        all.retain(|s| !(s.tenant == tenant.as_str() && s.id == id));
        Ok(all.len() < before)
    }
}
