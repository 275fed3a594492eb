//! The ports: what the domain needs from the outside world. Adapters (in-memory, embedded,
//! AWS) implement them; one contract suite (`workspace-contract`) holds every adapter to
//! the same behaviour.

use crate::error::{Result, WorkspaceError};
use crate::model::{
    BodyRef, Erasure, Head, IdempotencyRecord, Millis, Pin, Points, Snapshot, SnapshotInfo,
    VersionRecord,
};
use crate::path::{FilePath, PathPrefix};
use crate::presign::{PresignSpec, PresignedUrl};
use crate::scope::Scope;
use async_trait::async_trait;

mod wired;
pub use wired::{MetaPorts, NotServed};

/// What the head of a path must be for a commit to apply (compare-and-swap). `pin_rev`
/// is part of it: a snapshot pinning the head in between makes the commit fail and re-read,
/// so retention never prunes a version pinned after the head was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The path has never been written in this scope.
    Absent,
    /// The head is a live file at exactly this seq and pin revision.
    Live { seq: u64, pin_rev: u64 },
    /// The head is a tombstone at exactly this seq and pin revision.
    Deleted { seq: u64, pin_rev: u64 },
    /// The head is a live file with exactly this etag, holding no pins (at any pin
    /// revision): a write whose `If-Match` named the head ([`crate::model::parse_etag`]),
    /// planned without reading it. The etag names the seq and lineage the commit builds on;
    /// without pins, the commit drops none.
    Tagged { etag: String },
}

impl Expect {
    /// The expectation that `head` is still what it is now.
    pub fn of(head: Option<&Head>) -> Self {
        match head {
            None => Self::Absent,
            Some(h) if h.deleted => Self::Deleted {
                seq: h.seq,
                pin_rev: h.pin_rev,
            },
            Some(h) => Self::Live {
                seq: h.seq,
                pin_rev: h.pin_rev,
            },
        }
    }

    pub fn matches(&self, head: Option<&Head>) -> bool {
        match self {
            Self::Tagged { etag } => {
                head.is_some_and(|h| !h.deleted && h.etag == *etag && h.pins.is_empty())
            }
            other => *other == Self::of(head),
        }
    }
}

/// One atomic change: all of it applies, or none of it does.
#[derive(Debug, Clone)]
pub struct Commit {
    pub scope: Scope,
    pub path: FilePath,
    pub expect: Expect,
    pub head: Head,
    pub version: VersionRecord,
    /// +1 when a live file appears, -1 when one is deleted, 0 otherwise.
    pub live_delta: i64,
    /// A commit with `live_delta > 0` fails when the scope already holds this many live files.
    pub max_files: u64,
    /// Inserted only if no live record with this key exists in the scope.
    pub idempotency: Option<IdempotencyRecord>,
    /// A recorded key created before this instant has expired: it counts as absent and is
    /// overwritten.
    pub idempotency_valid_after: Millis,
    /// Version items of this path with a smaller seq are removed in the same commit,
    /// except those `head.pins` names (a live snapshot holds them).
    pub retain_from_seq: u64,
    /// Seqs below `retain_from_seq` that were kept only for pins this commit drops (their
    /// snapshots ended). An adapter that prunes one item per commit (DynamoDB) deletes
    /// these too; one that prunes the whole range needs nothing more.
    pub released: Vec<u64>,
    /// The content was redacted with the tenant's registered secrets as of this epoch (a
    /// store that keeps epochs, `SecretStore::secrets_at`): the commit fails with
    /// [`CommitOutcome::SecretsMoved`] if a secret was registered or removed since.
    pub secrets_epoch: Option<SecretsEpoch>,
    /// The scope's point registry revision the commit was planned under ([`Points::rev`]:
    /// the holds in `head.pins` and `head.point` were decided from it): the commit fails
    /// with [`CommitOutcome::PointsMoved`] when the registry changed since.
    pub points_rev: u64,
}

/// What [`SnapshotStore::swap_points`] stores with the registry: the point's snapshot
/// record (in the registry's scope), and a record of [`RecordStore::put_record`] (a fork's,
/// in the fork's scope).
#[derive(Debug, Clone, Copy, Default)]
pub struct PointRecords<'a> {
    pub snapshot: Option<&'a Snapshot>,
    pub record: Option<ScopedRecord<'a>>,
}

/// A [`StoredRecord`] with where it goes.
#[derive(Debug, Clone, Copy)]
pub struct ScopedRecord<'a> {
    pub scope: &'a Scope,
    pub kind: &'a str,
    pub key: &'a str,
    pub record: &'a StoredRecord,
}

/// What [`CommitStore::commit_many`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Every commit applied. `pruned`: the bodies of the version items they removed, all
    /// together, for the caller to delete (as [`CommitOutcome::Committed`]).
    Committed { pruned: Vec<BodyRef> },
    /// Commit `index` of the batch was refused, for `outcome` (never `Committed`).
    /// Nothing of the batch changed.
    Refused {
        index: usize,
        outcome: CommitOutcome,
    },
}

/// A batch for [`CommitStore::commit_many`] names each path of a scope once, and each
/// idempotency key of a scope once.
pub fn check_batch(commits: &[Commit]) -> Result<()> {
    let mut paths = std::collections::HashSet::new();
    let mut keys = std::collections::HashSet::new();
    for c in commits {
        if !paths.insert((&c.scope, c.path.as_str())) {
            return Err(WorkspaceError::internal(format!(
                "a batch of commits names {} twice",
                c.path
            )));
        }
        if let Some(rec) = &c.idempotency {
            if !keys.insert((&c.scope, rec.key.as_str())) {
                return Err(WorkspaceError::internal(format!(
                    "a batch of commits records Idempotency-Key {} twice",
                    rec.key
                )));
            }
        }
    }
    Ok(())
}

/// A small record a service keeps (see [`RecordStore::put_record`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredRecord {
    /// JSON.
    pub value: String,
    pub expires_at: Millis,
}

/// A tenant's registered secrets, as of one epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretsEpoch {
    pub tenant: crate::scope::TenantId,
    pub epoch: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Applied. `pruned` are the bodies of removed version items, for the caller to delete.
    /// (An adapter may instead prune bodies off the request path, and return none here.)
    Committed { pruned: Vec<BodyRef> },
    /// The head was not what `expect` said: someone else committed first. Nothing changed.
    HeadMoved,
    /// The scope is at `max_files`. Nothing changed.
    TooManyFiles,
    /// The idempotency key is already recorded. Nothing changed.
    KeyUsed(IdempotencyRecord),
    /// The tenant's registered secrets changed since the content was redacted
    /// (`Commit::secrets_epoch`). Nothing changed: redact again and retry.
    SecretsMoved,
    /// The scope's point registry is no longer at `Commit::points_rev` (a snapshot or fork
    /// was taken or ended). Nothing changed: read the registry again and retry.
    PointsMoved,
}

/// Metadata and the commit decision: every metadata port at once, for an adapter that is a
/// whole store (memory, redb, DynamoDB) and a caller that wants all of it. Each port is
/// its own trait, so a service or function asks for only the ones it uses (an
/// `Arc<dyn MetaStore>` converts to any of them); anything that implements them all is one.
pub trait MetaStore:
    HeadStore + CommitStore + HistoryStore + SnapshotStore + RecordStore + ScopeItemStore
{
}

impl<T> MetaStore for T where
    T: HeadStore
        + CommitStore
        + HistoryStore
        + SnapshotStore
        + RecordStore
        + ScopeItemStore
        + ?Sized
{
}

/// The heads of a scope's files: one read strongly consistently, the listings, the count.
#[async_trait]
pub trait HeadStore: Send + Sync {
    /// The head of a path (live or tombstone), read strongly consistently.
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>>;
    /// Live heads under `prefix`, sorted by path, strictly after `after`, at most `limit`.
    async fn list_live(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>>;
    /// Like [`Self::list_live`], tombstones included (a fork's deletions hide its parent's
    /// files: `crate::forks`).
    async fn list_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>>;
    /// How many live files the scope holds (what `max_files` is checked against).
    async fn live_count(&self, scope: &Scope) -> Result<u64>;
}

/// The commit decision: one commit or a batch, atomically under their conditions, and the
/// idempotency records they leave.
#[async_trait]
pub trait CommitStore: Send + Sync {
    /// A recorded idempotency key (expired or not; the service judges its age).
    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>>;
    /// Applies a commit atomically under its conditions, with its change-log entry
    /// (`crate::changes::Change::of_commit` of its path and version item).
    async fn commit(&self, commit: Commit) -> Result<CommitOutcome>;
    /// Applies `commits` all or nothing (a fork's merge): in order, each judged under its
    /// own conditions (head, idempotency key, file quota, secrets epoch) as the commits
    /// before it in the batch leave the store. If any is refused, nothing changes and the
    /// answer names the first refused one; otherwise every one applies, with its change-log
    /// entry (and outbox event), in one step no reader sees half of. No two commits may
    /// name the same path (or idempotency key) of a scope ([`check_batch`]). A batch [`Self::fits_one_commit`]
    /// refuses is an error, and changes nothing.
    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome>;
    /// Whether `commits` fit one [`Self::commit_many`]: on DynamoDB one
    /// `TransactWriteItems` (at most 100 actions and 4 MB); the local stores take any batch.
    fn fits_one_commit(&self, _commits: &[Commit]) -> bool {
        true
    }
}

/// A path's history: retained version items, the pins that keep them, erasing one, and the
/// scope's change log.
#[async_trait]
pub trait HistoryStore: Send + Sync {
    /// One version item by seq, if it is still retained.
    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>>;
    /// Retained version items of a path (every lineage, tombstones included), newest
    /// first, with seq below `before` when given, at most `limit`.
    async fn list_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>>;
    /// Replaces the pins of a path's head and bumps its `pin_rev`, if the head is still
    /// `expect` and (when given) version item `must_exist` is still retained. `false` when
    /// a condition failed; nothing changed then.
    async fn set_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool>;
    /// Erases version item `seq` of `path` from history, with its change-log entry (and,
    /// where the store keeps an outbox, its event), atomically: the item keeps its
    /// metadata, loses its body reference and records `erasure`. The body it named is
    /// returned for the caller to delete; `None` when there is no such item (pruned, or
    /// never written). Erasing an erased item changes nothing and returns no body.
    async fn erase_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &Erasure,
    ) -> Result<Option<Option<BodyRef>>>;
    /// A page of the scope's change log (entries the store adds with each commit, see
    /// `crate::changes`).
    async fn list_changes(
        &self,
        scope: &Scope,
        query: &crate::changes::ChangeQuery,
    ) -> Result<crate::changes::ChangePage>;
}

/// Snapshot records (run snapshots and fork bases).
#[async_trait]
pub trait SnapshotStore: Send + Sync {
    /// Stores a snapshot record (ids are fresh; never overwrites in practice).
    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()>;
    /// A snapshot record (expired or not; the service judges its age).
    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>>;
    /// Removes a snapshot record; `false` when there was none.
    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool>;
    /// The scope's point registry, read strongly consistently (revision 0 and no point
    /// when none was ever taken).
    async fn points(&self, scope: &Scope) -> Result<Points>;
    /// Replaces the point registry with `points` if its revision is still `expect_rev`,
    /// storing `with.snapshot` and `with.record` (when given) in the same atomic step: a
    /// point, its snapshot record and its fork's record appear together or not at all.
    /// `false` when the registry moved; nothing changed.
    async fn swap_points(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: PointRecords<'_>,
    ) -> Result<bool>;
    /// Snapshot records of the scope whose ids start with `id_prefix`, in descending id
    /// order, only ids below `before` when given, `limit` at most; expired or not (the
    /// service judges). Without their file lists, so a page stays small.
    async fn list_snapshots(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>>;
}

/// A service's small records (a restore's report, a merge's plan).
#[async_trait]
pub trait RecordStore: Send + Sync {
    /// Stores a small record: `kind` names its family (a restore's report under its
    /// Idempotency-Key), `key` the record; any with the same kind and key is replaced.
    async fn put_record(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()>;
    /// A record (expired or not: the service judges its age).
    async fn record(&self, scope: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>>;
}

/// Erasing every metadata item of one scope.
#[async_trait]
pub trait ScopeItemStore: Send + Sync {
    /// Removes every metadata item of the scope (heads, versions, change log, records,
    /// snapshots, idempotency keys, counters, outbox events): an expired or discarded
    /// fork's (`crate::forks::sweep`). Safe to repeat; how many items went. Bodies are the
    /// caller's to delete (it reads which first). A store that cannot says so.
    async fn erase_scope_items(&self, scope: &Scope) -> Result<u64> {
        Err(WorkspaceError::internal(format!(
            "this store cannot erase scope {scope}"
        )))
    }
}

/// The bytes of a request body in the order a transport reads them, piece by piece, so a
/// large one is never held whole (a streamed upload: `Staging::put_staged_pieces`).
#[async_trait]
pub trait BodyPieces: Send {
    /// The next piece (never empty), `None` after the last; an error when the body could
    /// not be read (cut short, malformed, stalled) or is not what was expected.
    async fn next_piece(&mut self) -> Result<Option<Vec<u8>>>;
}

/// A body already in memory, as one piece.
pub struct OnePiece(pub Option<Vec<u8>>);

#[async_trait]
impl BodyPieces for OnePiece {
    async fn next_piece(&mut self) -> Result<Option<Vec<u8>>> {
        Ok(self.0.take().filter(|b| !b.is_empty()))
    }
}

/// How much of a streamed body a store may hold in memory at once before writing it on
/// (`Staging::put_staged_pieces` of the embedded store).
pub const STREAM_PIECE_BYTES: usize = 1024 * 1024;

/// File bodies and the staging area of two-step uploads, kept by the same store: both ports
/// at once (see [`Bodies`] and [`Staging`]).
pub trait BodyStore: Bodies + Staging {}

impl<T: Bodies + Staging + ?Sized> BodyStore for T {}

/// File bodies. A put never overwrites: each returns a new `BodyRef`.
#[async_trait]
pub trait Bodies: Send + Sync {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<BodyRef>;
    /// `None` when the body is gone (pruned, or never written).
    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>>;
    async fn delete(&self, body: &BodyRef) -> Result<()>;
    /// A URL the store itself serves this exact body at (S3 presigning, pinned to the
    /// version). `None`: the store has none, and the service signs a local one.
    async fn presign_get(
        &self,
        _body: &BodyRef,
        _spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        Ok(None)
    }
}

/// The staging area of two-step uploads (`service::uploads`): bytes a client sent to an
/// upload URL wait there, under `t/<tenant>/w/<workspace>/uploads/`, until their commit
/// reads them. Staged objects are one per key (a put replaces it).
#[async_trait]
pub trait Staging: Send + Sync {
    /// Stages `bytes` at `key`, replacing what was there; `now` is its `stored_at` where
    /// the store keeps no clock of its own.
    async fn put_staged(&self, key: &str, bytes: Vec<u8>, now: Millis) -> Result<()>;
    /// Stages the bytes `pieces` yields at `key`, replacing what was there once the last
    /// piece is in; `now` as for `put_staged`. When `pieces` fails, nothing is staged (what
    /// was there stays) and its error is returned. A store that can write pieces as they
    /// come holds no more than [`STREAM_PIECE_BYTES`] of them at once (the embedded store);
    /// this default gathers them and stages them whole (memory, where the bytes live in
    /// memory anyway; S3, where clients PUT to a presigned URL and never through here).
    async fn put_staged_pieces(
        &self,
        key: &str,
        pieces: &mut dyn BodyPieces,
        now: Millis,
    ) -> Result<()> {
        let mut bytes = Vec::new();
        while let Some(piece) = pieces.next_piece().await? {
            bytes.extend_from_slice(&piece);
        }
        self.put_staged(key, bytes, now).await
    }
    /// The object staged at `key`, `None` when there is none. One over `max_bytes` comes
    /// back without its bytes (never read into memory).
    async fn get_staged(&self, key: &str, max_bytes: u64) -> Result<Option<Staged>>;
    /// Removes the object staged at `key`, every stored version of it.
    async fn delete_staged(&self, key: &str) -> Result<()>;
    /// Removes staged objects under `prefix` stored before `cutoff`; how many went. A
    /// store swept by a scheduled job instead (S3) may do nothing here.
    async fn prune_staged(&self, prefix: &str, cutoff: Millis) -> Result<u64>;
    /// A URL the store itself accepts a staged PUT at (S3 presigning). `None`: the store
    /// has none, and the service signs a URL the local server serves instead.
    async fn presign_staged_put(
        &self,
        _key: &str,
        _spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        Ok(None)
    }
}

/// Erases everything stored under one scope: metadata items and bodies (a discarded
/// fork's). Safe to repeat after an interruption.
#[async_trait]
pub trait ScopeEraser: Send + Sync {
    async fn erase_scope_data(&self, scope: &Scope) -> Result<()>;
}

/// What a body store holds, for the sweeper that removes bodies no version item names
/// (left by a process that died between storing a body and committing it).
#[async_trait]
pub trait BodyInventory: Send + Sync {
    /// Every stored file body (every version; staged uploads excluded).
    async fn stored_bodies(&self) -> Result<Vec<BodyRef>>;
}

/// The body store of a process that serves only metadata routes (on AWS: `list`,
/// `delete` and `snapshots`, which hold no S3 rights and link no S3 client). Reaching it
/// is a wiring mistake, reported as an internal error.
pub struct NoBodies;

fn no_bodies() -> WorkspaceError {
    WorkspaceError::internal("this process serves no route that reads or writes file bodies")
}

#[async_trait]
impl Bodies for NoBodies {
    async fn put(&self, _: &str, _: Vec<u8>, _: &str) -> Result<BodyRef> {
        Err(no_bodies())
    }

    async fn get(&self, _: &BodyRef) -> Result<Option<Vec<u8>>> {
        Err(no_bodies())
    }

    async fn delete(&self, _: &BodyRef) -> Result<()> {
        Err(no_bodies())
    }
}

#[async_trait]
impl Staging for NoBodies {
    async fn put_staged(&self, _: &str, _: Vec<u8>, _: Millis) -> Result<()> {
        Err(no_bodies())
    }

    async fn get_staged(&self, _: &str, _: u64) -> Result<Option<Staged>> {
        Err(no_bodies())
    }

    async fn delete_staged(&self, _: &str) -> Result<()> {
        Err(no_bodies())
    }

    async fn prune_staged(&self, _: &str, _: Millis) -> Result<u64> {
        Err(no_bodies())
    }
}

/// A staged object: its size, when it was stored, and its bytes unless over the limit the
/// reader gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    pub size: u64,
    pub stored_at: Millis,
    pub bytes: Option<Vec<u8>>,
}

pub use crate::events::{EventSink, FromCommittedState, Operation, WorkspaceEvent};

pub trait Clock: Send + Sync {
    fn now_ms(&self) -> Millis;
}

pub trait IdSource: Send + Sync {
    /// A fresh, unguessable id (lineage ids, body version ids).
    fn new_id(&self) -> String;
}

/// Wall-clock time.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
    }
}

/// 128 random bits, hex.
pub struct RandomIds;

impl IdSource for RandomIds {
    fn new_id(&self) -> String {
        hex::encode(rand::random::<[u8; 16]>())
    }
}
