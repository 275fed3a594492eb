//! Embedded adapter: metadata, commits and bodies in one redb database file.
//!
//! redb gives ACID write transactions with one writer at a time and fsync on commit
//! (`Durability::Immediate`, its default), so a commit's compare-and-swap, file-count check,
//! idempotency insert and retention pruning are one atomic step, and an acknowledged write
//! survives a killed process. redb calls are blocking; each runs on tokio's blocking pool.
//!
//! Tables (every key starts with the scope's `t/<tenant>/w/<workspace>/` prefix):
//! - `heads`:       prefix + path        → Head (JSON)
//! - `versions`:    (prefix + path, seq) → VersionRecord (JSON)
//! - `idempotency`: prefix + key         → IdempotencyRecord (JSON)
//! - `live_counts`: prefix               → number of live files
//! - `snapshots`:   prefix + snapshot id → Snapshot (JSON)
//! - `bodies`:      (body key, id)       → bytes
//! - `staged`:      staging key           → stored-at (8 bytes, big-endian ms) + bytes
//! - `staged_files`: staging key          → stored-at, size and name of a streamed upload's
//!   file in the data directory's `staging/` folder (`staging.rs`)
//! - `outbox*`:     the events of commits (`outbox.rs`)

mod capabilities;
mod changes;
mod group_commit;
pub mod json_file;
pub mod keys;
mod outbox;
pub mod secrets;
pub mod sessions;
mod staging;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::events::WorkspaceEvent;
use workspace_core::model::{
    BodyRef, Erasure, Head, IdempotencyRecord, Millis, Pin, Points, Snapshot, SnapshotInfo,
    VersionRecord,
};
use workspace_core::ports::{
    check_batch, BatchOutcome, Bodies, BodyPieces, Commit, CommitOutcome, CommitStore, Expect,
    HeadStore, HistoryStore, IdSource, RandomIds, RecordStore, ScopeItemStore, SnapshotStore,
    Staged, Staging, StoredRecord,
};
use workspace_core::{FilePath, PathPrefix, Result, Scope, WorkspaceError};

pub use staging::STAGING_DIR;

/// A table of JSON values under string keys.
pub(crate) type JsonTable = TableDefinition<'static, &'static str, &'static [u8]>;

const HEADS: TableDefinition<&str, &[u8]> = TableDefinition::new("heads");
const VERSIONS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("versions");
const IDEMPOTENCY: TableDefinition<&str, &[u8]> = TableDefinition::new("idempotency");
const LIVE_COUNTS: TableDefinition<&str, u64> = TableDefinition::new("live_counts");
const BODIES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("bodies");
const SNAPSHOTS: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshots");
/// Each scope's point registry (`SnapshotStore::points`), by the scope's key prefix.
pub(crate) const POINTS: TableDefinition<&str, &[u8]> = TableDefinition::new("points");
/// Services' small records (`RecordStore::put_record`): `<scope prefix><kind>/<key>` → JSON.
pub(crate) const RECORDS: TableDefinition<&str, &[u8]> = TableDefinition::new("records");
pub(crate) const STAGED: TableDefinition<&str, &[u8]> = TableDefinition::new("staged");

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "workspace.redb";

fn db_err(e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::internal(format!("embedded store: {e}"))
}

fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(db_err)
}

fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(db_err)
}

fn head_key(scope: &Scope, path: &str) -> String {
    format!("{}{}", scope.key_prefix(), path)
}

/// Creates `dir` (and its parents) accessible by its owner only (0700): it holds every
/// tenant's content, keys and secrets. A directory that exists already is the operator's and
/// is left as it is; every file the store writes in it is 0600 in any case.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The embedded store: implements both the metadata and the body port over one file.
#[derive(Clone)]
pub struct EmbeddedStore {
    db: Arc<Database>,
    /// Every file commit goes through it (`group_commit.rs`).
    committer: Arc<group_commit::Committer>,
    /// Where streamed uploads are written (`staging.rs`).
    staging: Arc<PathBuf>,
}

impl EmbeddedStore {
    /// Opens (or creates) `<dir>/workspace.redb`, owner-only (0600, in a 0700 directory),
    /// creating the directory as needed.
    pub fn open(dir: &Path) -> Result<Self> {
        let private = |e: std::io::Error| {
            WorkspaceError::internal(format!(
                "cannot make data directory {} private: {e}",
                dir.display()
            ))
        };
        private_dir(dir).map_err(private)?;
        let file = dir.join(DB_FILE);
        let db = Database::create(&file).map_err(db_err)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                .map_err(private)?;
        }
        // Create every table once so readers never meet a missing one.
        let txn = db.begin_write().map_err(db_err)?;
        txn.open_table(HEADS).map_err(db_err)?;
        txn.open_table(VERSIONS).map_err(db_err)?;
        txn.open_table(IDEMPOTENCY).map_err(db_err)?;
        txn.open_table(LIVE_COUNTS).map_err(db_err)?;
        txn.open_table(BODIES).map_err(db_err)?;
        capabilities::create_tables(&txn)?;
        txn.open_table(SNAPSHOTS).map_err(db_err)?;
        txn.open_table(POINTS).map_err(db_err)?;
        txn.open_table(RECORDS).map_err(db_err)?;
        changes::create_tables(&txn)?;
        txn.open_table(STAGED).map_err(db_err)?;
        txn.open_table(staging::STAGED_FILES).map_err(db_err)?;
        sessions::create_tables(&txn)?;
        outbox::create_tables(&txn)?;
        txn.commit().map_err(db_err)?;
        let staging = Arc::new(staging::open(&db, dir)?);
        let db = Arc::new(db);
        let committer = Arc::new(group_commit::Committer::start(&db)?);
        Ok(Self {
            db,
            committer,
            staging,
        })
    }

    /// Holds the database's one write transaction open: every write waits until the hold
    /// is dropped (nothing written through it is kept). For tests of group commit, and
    /// for maintenance that needs the writers still.
    pub fn hold_writes(&self) -> Result<redb::WriteTransaction> {
        self.db.begin_write().map_err(db_err)
    }

    /// File commits decided so far, and the write transactions (fsyncs) they took.
    pub fn commit_stats(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering;
        let s = &self.committer.stats;
        (
            s.commits.load(Ordering::Relaxed),
            s.transactions.load(Ordering::Relaxed),
        )
    }

    /// Runs blocking database work off the async runtime.
    async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(db_err)?
    }

    /// One JSON value by its key, read in its own transaction on a blocking thread.
    pub(crate) async fn get_json<T>(&self, table: JsonTable, key: String) -> Result<Option<T>>
    where
        T: DeserializeOwned + Send + 'static,
    {
        self.blocking(move |db| read_json(db, table, &key)).await
    }

    /// One small JSON value (a head, an idempotency record, a workspace's registration) read
    /// in place on the calling task. A point read takes microseconds: redb serves it from
    /// its page cache, and no lock a reader takes is held across a commit's fsync. Handing
    /// it to a blocking thread and back cost more than the read (a profile of 3,000 MCP
    /// reads over HTTP spent 20% of the server's CPU in futex wake-ups).
    pub(crate) fn get_small_json<T: DeserializeOwned>(
        &self,
        table: JsonTable,
        key: &str,
    ) -> Result<Option<T>> {
        read_json(&self.db, table, key)
    }
}

fn read_json<T: DeserializeOwned>(db: &Database, table: JsonTable, key: &str) -> Result<Option<T>> {
    let txn = db.begin_read().map_err(db_err)?;
    let t = txn.open_table(table).map_err(db_err)?;
    let found = t.get(key).map_err(db_err)?;
    found.map(|v| decode(v.value())).transpose()
}

/// Decides one commit inside `txn` (a group commit's shared transaction): its conditions
/// are checked against what the transaction holds so far, and a refused commit returns
/// before it writes anything.
fn apply_in(txn: &redb::WriteTransaction, c: &Commit) -> Result<CommitOutcome> {
    if let Some(refused) = refusal_in(txn, c, 0)? {
        return Ok(refused);
    }
    write_in(txn, c)
}

/// Decides a batch of commits inside `txn`, all or nothing: every one is judged first (as
/// the ones before it would leave the transaction), and only when none is refused do they
/// all write.
fn apply_many_in(txn: &redb::WriteTransaction, commits: &[Commit]) -> Result<BatchOutcome> {
    check_batch(commits)?;
    // The live files the commits before each one add (or remove), by scope prefix.
    let mut pending: std::collections::HashMap<String, i64> = Default::default();
    for (index, c) in commits.iter().enumerate() {
        let prefix = c.scope.key_prefix();
        let before = pending.get(&prefix).copied().unwrap_or(0);
        if let Some(outcome) = refusal_in(txn, c, before)? {
            return Ok(BatchOutcome::Refused { index, outcome });
        }
        pending.insert(prefix, before + c.live_delta);
    }
    let mut pruned = Vec::new();
    for c in commits {
        if let CommitOutcome::Committed { pruned: p } = write_in(txn, c)? {
            pruned.extend(p);
        }
    }
    Ok(BatchOutcome::Committed { pruned })
}

/// Why `c` is refused in `txn`, counting `pending` more live files in its scope than the
/// transaction holds (what the commits before it in its batch add); `None` when it applies.
/// Reads only.
fn refusal_in(
    txn: &redb::WriteTransaction,
    c: &Commit,
    pending: i64,
) -> Result<Option<CommitOutcome>> {
    let prefix = c.scope.key_prefix();
    let hkey = head_key(&c.scope, c.path.as_str());
    let heads = txn.open_table(HEADS).map_err(db_err)?;
    let current: Option<Head> = match heads.get(hkey.as_str()).map_err(db_err)? {
        Some(v) => Some(decode(v.value())?),
        None => None,
    };
    let points: Option<Points> = {
        let t = txn.open_table(POINTS).map_err(db_err)?;
        let found = t.get(prefix.as_str()).map_err(db_err)?;
        found.map(|v| decode(v.value())).transpose()?
    };
    if points.map_or(0, |p| p.rev) != c.points_rev {
        return Ok(Some(CommitOutcome::PointsMoved));
    }
    if !c.expect.matches(current.as_ref()) {
        return Ok(Some(CommitOutcome::HeadMoved));
    }
    if let Some(r) = &c.idempotency {
        let idem = txn.open_table(IDEMPOTENCY).map_err(db_err)?;
        let k = format!("{prefix}{}", r.key);
        let found: Option<IdempotencyRecord> = match idem.get(k.as_str()).map_err(db_err)? {
            Some(v) => Some(decode(v.value())?),
            None => None,
        };
        if let Some(rec) = found.filter(|rec| rec.created_at > c.idempotency_valid_after) {
            return Ok(Some(CommitOutcome::KeyUsed(rec)));
        }
    }
    if c.live_delta > 0 {
        let counts = txn.open_table(LIVE_COUNTS).map_err(db_err)?;
        let live = counts
            .get(prefix.as_str())
            .map_err(db_err)?
            .map_or(0, |v| v.value());
        if live.saturating_add_signed(pending) >= c.max_files {
            return Ok(Some(CommitOutcome::TooManyFiles));
        }
    }
    Ok(None)
}

/// Writes a commit already judged ([`refusal_in`]) into `txn`: head, version item,
/// retention, idempotency record, live count, its event and change-log entry.
fn write_in(txn: &redb::WriteTransaction, c: &Commit) -> Result<CommitOutcome> {
    let prefix = c.scope.key_prefix();
    let hkey = head_key(&c.scope, c.path.as_str());
    let outcome = {
        let mut counts = txn.open_table(LIVE_COUNTS).map_err(db_err)?;
        let live = counts
            .get(prefix.as_str())
            .map_err(db_err)?
            .map_or(0, |v| v.value());
        counts
            .insert(prefix.as_str(), live.saturating_add_signed(c.live_delta))
            .map_err(db_err)?;

        let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
        // Bodies live in the same database: a pruned item's body goes in this transaction,
        // so a write past retention costs no second transaction (and fsync) on its request
        // path, and no body outlives its version item after a crash. Nothing is left for
        // the caller to delete.
        let mut bodies = txn.open_table(BODIES).map_err(db_err)?;
        // Retention skips the items a live snapshot pins (the new head's pins).
        let pinned: Vec<u64> = c.head.pins.iter().map(|p| p.seq).collect();
        let stale = versions
            .extract_from_if(
                (hkey.as_str(), 0)..(hkey.as_str(), c.retain_from_seq),
                |k, _| !pinned.contains(&k.1),
            )
            .map_err(db_err)?;
        for item in stale {
            let (_, v) = item.map_err(db_err)?;
            if let Some(body) = decode::<VersionRecord>(v.value())?.body {
                bodies
                    .remove((body.key.as_str(), body.version_id.as_str()))
                    .map_err(db_err)?;
            }
        }
        versions
            .insert(
                (hkey.as_str(), c.version.seq),
                encode(&c.version)?.as_slice(),
            )
            .map_err(db_err)?;
        let mut heads = txn.open_table(HEADS).map_err(db_err)?;
        heads
            .insert(hkey.as_str(), encode(&c.head)?.as_slice())
            .map_err(db_err)?;
        if let Some(rec) = &c.idempotency {
            let mut idem = txn.open_table(IDEMPOTENCY).map_err(db_err)?;
            let k = format!("{prefix}{}", rec.key);
            idem.insert(k.as_str(), encode(rec)?.as_slice())
                .map_err(db_err)?;
        }
        CommitOutcome::Committed { pruned: Vec::new() }
    };
    // The change's event and change-log entry, in the same transaction: all land or none.
    let event = WorkspaceEvent::scope_of(&c.scope, c.path.as_str(), &c.version);
    outbox::append(txn, &c.scope, event, c.version.updated_at)?;
    changes::append(txn, &c.scope, &Change::of_commit(&c.path, &c.version))?;
    Ok(outcome)
}

impl EmbeddedStore {
    /// Heads under `prefix` after `after`, sorted by path; tombstones only when asked.
    async fn heads_in(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
        tombstones: bool,
    ) -> Result<Vec<Head>> {
        let scope_prefix = scope.key_prefix();
        let start = match after {
            Some(a) if a.as_str() >= prefix.as_str() => head_key(scope, a.as_str()),
            _ => head_key(scope, prefix.as_str()),
        };
        let wanted = head_key(scope, prefix.as_str());
        let skip_exact = after.map(|a| head_key(scope, a.as_str()));
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let table = txn.open_table(HEADS).map_err(db_err)?;
            let mut out = Vec::new();
            for item in table.range(start.as_str()..).map_err(db_err)? {
                let (k, v) = item.map_err(db_err)?;
                let k = k.value();
                if !k.starts_with(&wanted) || !k.starts_with(&scope_prefix) {
                    break;
                }
                if skip_exact.as_deref() == Some(k) {
                    continue;
                }
                let head: Head = decode(v.value())?;
                if tombstones || head.is_live() {
                    out.push(head);
                    if out.len() >= limit {
                        break;
                    }
                }
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl HeadStore for EmbeddedStore {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        let key = head_key(scope, path.as_str());
        self.get_small_json(HEADS, &key)
    }

    async fn list_live(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads_in(scope, prefix, after, limit, false).await
    }

    async fn list_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads_in(scope, prefix, after, limit, true).await
    }

    async fn live_count(&self, scope: &Scope) -> Result<u64> {
        // A point read, in place (see `get_small_json`).
        let txn = self.db.begin_read().map_err(db_err)?;
        let table = txn.open_table(LIVE_COUNTS).map_err(db_err)?;
        let found = table.get(scope.key_prefix().as_str()).map_err(db_err)?;
        Ok(found.map_or(0, |v| v.value()))
    }
}

#[async_trait]
impl CommitStore for EmbeddedStore {
    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        let key = format!("{}{key}", scope.key_prefix());
        self.get_small_json(IDEMPOTENCY, &key)
    }

    async fn commit(&self, commit: Commit) -> Result<CommitOutcome> {
        self.committer.commit(commit).await
    }

    /// The batch is one job of the group committer: decided whole inside its shared
    /// write transaction (one fsync), so it lands in one redb commit with its neighbours'.
    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        check_batch(&commits)?;
        self.committer.commit_many(commits).await
    }
}

#[async_trait]
impl HistoryStore for EmbeddedStore {
    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>> {
        let key = head_key(scope, path.as_str());
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let table = txn.open_table(VERSIONS).map_err(db_err)?;
            let found = table.get((key.as_str(), seq)).map_err(db_err)?;
            found.map(|v| decode(v.value())).transpose()
        })
        .await
    }

    async fn list_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        let key = head_key(scope, path.as_str());
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let table = txn.open_table(VERSIONS).map_err(db_err)?;
            let range = (key.as_str(), 0)..(key.as_str(), before.unwrap_or(u64::MAX));
            let mut out = Vec::new();
            for item in table.range(range).map_err(db_err)?.rev().take(limit) {
                let (_, v) = item.map_err(db_err)?;
                out.push(decode(v.value())?);
            }
            Ok(out)
        })
        .await
    }

    async fn set_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        let key = head_key(scope, path.as_str());
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                if let Some(seq) = must_exist {
                    let versions = txn.open_table(VERSIONS).map_err(db_err)?;
                    if versions.get((key.as_str(), seq)).map_err(db_err)?.is_none() {
                        return Ok(false);
                    }
                }
                let mut heads = txn.open_table(HEADS).map_err(db_err)?;
                let current: Option<Head> = match heads.get(key.as_str()).map_err(db_err)? {
                    Some(v) => Some(decode(v.value())?),
                    None => None,
                };
                let Some(mut head) = current.filter(|h| expect.matches(Some(h))) else {
                    return Ok(false);
                };
                head.pins = pins;
                head.pin_rev += 1;
                heads
                    .insert(key.as_str(), encode(&head)?.as_slice())
                    .map_err(db_err)?;
            }
            txn.commit().map_err(db_err)?;
            Ok(true)
        })
        .await
    }

    async fn erase_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &Erasure,
    ) -> Result<Option<Option<BodyRef>>> {
        let key = head_key(scope, path.as_str());
        let (scope, path, erasure) = (scope.clone(), path.clone(), erasure.clone());
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            let body = {
                let mut versions = txn.open_table(VERSIONS).map_err(db_err)?;
                let found: Option<VersionRecord> = versions
                    .get((key.as_str(), seq))
                    .map_err(db_err)?
                    .map(|v| decode(v.value()))
                    .transpose()?;
                let Some(mut item) = found else {
                    return Ok(None);
                };
                if item.erased.is_some() {
                    return Ok(Some(None));
                }
                let body = item.body.take();
                item.erased = Some(erasure.clone());
                versions
                    .insert((key.as_str(), seq), encode(&item)?.as_slice())
                    .map_err(db_err)?;
                let event = WorkspaceEvent::of_erase(&scope, path.as_str(), &item, &erasure);
                outbox::append(&txn, &scope, event, erasure.at)?;
                changes::append(&txn, &scope, &Change::of_erase(&path, &item, &erasure))?;
                body
            };
            txn.commit().map_err(db_err)?;
            Ok(Some(body))
        })
        .await
    }

    async fn list_changes(&self, scope: &Scope, q: &ChangeQuery) -> Result<ChangePage> {
        self.list_changes_in(scope, q).await
    }
}

#[async_trait]
impl SnapshotStore for EmbeddedStore {
    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        let prefix = scope.key_prefix();
        let key = format!("{prefix}{}", snapshot.id);
        let value = encode(snapshot)?;
        let now = snapshot.created_at;
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut t = txn.open_table(SNAPSHOTS).map_err(db_err)?;
                // No TTL here (DynamoDB has one): drop the scope's expired records now.
                let end = format!("{prefix}\u{10ffff}");
                let expired = t
                    .extract_from_if(prefix.as_str()..end.as_str(), |_, v| {
                        decode::<Snapshot>(v).is_ok_and(|s| s.expires_at <= now)
                    })
                    .map_err(db_err)?;
                for item in expired {
                    item.map_err(db_err)?;
                }
                t.insert(key.as_str(), value.as_slice()).map_err(db_err)?;
            }
            txn.commit().map_err(db_err)
        })
        .await
    }

    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>> {
        let key = format!("{}{id}", scope.key_prefix());
        self.get_json(SNAPSHOTS, key).await
    }

    async fn list_snapshots(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        let prefix = scope.key_prefix();
        let start = format!("{prefix}{id_prefix}");
        let end = match before {
            Some(b) => format!("{prefix}{b}"),
            None => format!("{start}\u{10ffff}"),
        };
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(SNAPSHOTS).map_err(db_err)?;
            let mut page = Vec::new();
            // Keys run in id order within the scope: the range below `before`, backwards.
            for entry in t.range(start.as_str()..end.as_str()).map_err(db_err)?.rev() {
                if page.len() == limit {
                    break;
                }
                let (_, v) = entry.map_err(db_err)?;
                page.push(decode::<Snapshot>(v.value())?.info());
            }
            Ok(page)
        })
        .await
    }

    async fn points(&self, scope: &Scope) -> Result<Points> {
        Ok(self
            .get_small_json(POINTS, &scope.key_prefix())?
            .unwrap_or_default())
    }

    async fn swap_points(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: workspace_core::ports::PointRecords<'_>,
    ) -> Result<bool> {
        let prefix = scope.key_prefix();
        let value = encode(points)?;
        let record = with
            .snapshot
            .map(|s| Ok::<_, WorkspaceError>((format!("{prefix}{}", s.id), encode(s)?)))
            .transpose()?;
        let stored = with
            .record
            .map(|r| {
                Ok::<_, WorkspaceError>((
                    format!("{}{}/{}", r.scope.key_prefix(), r.kind, r.key),
                    encode(r.record)?,
                ))
            })
            .transpose()?;
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut t = txn.open_table(POINTS).map_err(db_err)?;
                let current: Option<Points> = {
                    let found = t.get(prefix.as_str()).map_err(db_err)?;
                    found.map(|v| decode(v.value())).transpose()?
                };
                if current.map_or(0, |p| p.rev) != expect_rev {
                    return Ok(false);
                }
                t.insert(prefix.as_str(), value.as_slice())
                    .map_err(db_err)?;
                if let Some((key, record)) = &record {
                    let mut snaps = txn.open_table(SNAPSHOTS).map_err(db_err)?;
                    snaps
                        .insert(key.as_str(), record.as_slice())
                        .map_err(db_err)?;
                }
                if let Some((key, value)) = &stored {
                    let mut records = txn.open_table(RECORDS).map_err(db_err)?;
                    records
                        .insert(key.as_str(), value.as_slice())
                        .map_err(db_err)?;
                }
            }
            txn.commit().map_err(db_err)?;
            Ok(true)
        })
        .await
    }

    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool> {
        let key = format!("{}{id}", scope.key_prefix());
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            let removed = {
                let mut t = txn.open_table(SNAPSHOTS).map_err(db_err)?;
                let old = t.remove(key.as_str()).map_err(db_err)?;
                old.is_some()
            };
            txn.commit().map_err(db_err)?;
            Ok(removed)
        })
        .await
    }
}

#[async_trait]
impl RecordStore for EmbeddedStore {
    async fn put_record(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        let id = format!("{}{kind}/{key}", scope.key_prefix());
        let value = encode(record)?;
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut t = txn.open_table(RECORDS).map_err(db_err)?;
                t.insert(id.as_str(), value.as_slice()).map_err(db_err)?;
            }
            txn.commit().map_err(db_err)
        })
        .await
    }

    async fn record(&self, scope: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>> {
        let id = format!("{}{kind}/{key}", scope.key_prefix());
        self.get_json(RECORDS, id).await
    }
}

#[async_trait]
impl ScopeItemStore for EmbeddedStore {
    async fn erase_scope_items(&self, scope: &Scope) -> Result<u64> {
        // Every table's items under the scope's key prefix, in one transaction.
        workspace_core::sessions::ports::SessionStore::erase_scope(self, scope).await
    }
}

#[async_trait]
impl workspace_core::ports::BodyInventory for EmbeddedStore {
    async fn stored_bodies(&self) -> Result<Vec<BodyRef>> {
        self.blocking(|db| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(BODIES).map_err(db_err)?;
            let mut out = Vec::new();
            for item in t.iter().map_err(db_err)? {
                let (k, _) = item.map_err(db_err)?;
                let (key, version_id) = k.value();
                out.push(BodyRef::stored(key.to_owned(), version_id.to_owned()));
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl Bodies for EmbeddedStore {
    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> Result<BodyRef> {
        let body = BodyRef::stored(key.to_owned(), RandomIds.new_id());
        let r = body.clone();
        self.blocking(move |db| {
            let mut txn = db.begin_write().map_err(db_err)?;
            // No fsync of its own: the commit that names this body is durable, and redb
            // persists every earlier commit with it. A body lost in a crash before that
            // commit was never named, so nothing points to it (what the sweeper removes
            // anyway). This halves the fsyncs of a write.
            txn.set_durability(redb::Durability::None).map_err(db_err)?;
            {
                let mut t = txn.open_table(BODIES).map_err(db_err)?;
                t.insert((r.key.as_str(), r.version_id.as_str()), bytes.as_slice())
                    .map_err(db_err)?;
            }
            txn.commit().map_err(db_err)
        })
        .await?;
        Ok(body)
    }

    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        let r = body.clone();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(BODIES).map_err(db_err)?;
            let found = t
                .get((r.key.as_str(), r.version_id.as_str()))
                .map_err(db_err)?;
            Ok(found.map(|v| v.value().to_vec()))
        })
        .await
    }

    async fn delete(&self, body: &BodyRef) -> Result<()> {
        let r = body.clone();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut t = txn.open_table(BODIES).map_err(db_err)?;
                t.remove((r.key.as_str(), r.version_id.as_str()))
                    .map_err(db_err)?;
            }
            txn.commit().map_err(db_err)
        })
        .await
    }
}

#[async_trait]
impl Staging for EmbeddedStore {
    async fn put_staged(&self, key: &str, bytes: Vec<u8>, now: Millis) -> Result<()> {
        let (key, dir) = (key.to_owned(), self.staging.clone());
        self.blocking(move |db| staging::put(db, &dir, &key, &bytes, now))
            .await
    }

    /// Streams the pieces into a file of the staging folder, then names it in one
    /// transaction (see `staging.rs` for why a file and not a redb value).
    async fn put_staged_pieces(
        &self,
        key: &str,
        pieces: &mut dyn BodyPieces,
        now: Millis,
    ) -> Result<()> {
        let (name, size) = staging::write_pieces(&self.staging, pieces).await?;
        let (key, dir, file) = (key.to_owned(), self.staging.clone(), name.clone());
        let adopted = self
            .blocking(move |db| staging::adopt(db, &dir, &key, &file, size, now))
            .await;
        if adopted.is_err() {
            let dir = self.staging.clone();
            let _ = self
                .blocking(move |_| {
                    staging::unlink(&dir, [name]);
                    Ok(())
                })
                .await;
        }
        adopted
    }

    async fn get_staged(&self, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
        let (key, dir) = (key.to_owned(), self.staging.clone());
        self.blocking(move |db| staging::get(db, &dir, &key, max_bytes))
            .await
    }

    async fn delete_staged(&self, key: &str) -> Result<()> {
        let (key, dir) = (key.to_owned(), self.staging.clone());
        self.blocking(move |db| staging::delete(db, &dir, &key))
            .await
    }

    async fn prune_staged(&self, prefix: &str, cutoff: Millis) -> Result<u64> {
        let (prefix, dir) = (prefix.to_owned(), self.staging.clone());
        self.blocking(move |db| staging::prune(db, &dir, &prefix, cutoff))
            .await
    }
}
