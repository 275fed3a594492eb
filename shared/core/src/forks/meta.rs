//! Reading a fork through to its base: the store as every service sees it.
//!
//! Wraps the real metadata store. A scope whose workspace is not a fork (no `~` in its id)
//! goes straight through, at no cost. For a fork scope:
//!
//! | call | answer |
//! |---|---|
//! | `head` | the fork's own head (live or tombstone), else the base's file as a live head marked [`INHERITED_PIN_REV`] |
//! | `version`, `list_versions` | the fork's own items, then the parent's at or below the base's seq |
//! | `list_live`, `list_heads` | the fork's heads merged with the base's files in path order, a fork head hiding the base's |
//! | `live_count` | the fork's live files plus the base's files it has not touched |
//! | `commit`, `commit_many` | on an inherited head: expected absent in the fork's own scope (its first write continues the base's numbering) |
//! | `set_pins` | on an inherited head: nothing to do, the base's pin holds the version while the fork lives |
//! | the rest | the fork's own records |
//!
//! Every fork call first reads the fork record, so a discarded or expired fork answers 404
//! on every route; reads that fall through to the base read the base snapshot record too.

use super::{ForkRecord, FORK_RECORD_KEY, FORK_RECORD_KIND};
use crate::error::{Result, WorkspaceError};
use crate::model::{
    Erasure, Head, IdempotencyRecord, Pin, Points, Snapshot, SnapshotFile, SnapshotInfo,
    VersionRecord,
};
use crate::path::{FilePath, PathPrefix};
use crate::ports::{
    BatchOutcome, Clock, Commit, CommitOutcome, CommitStore, Expect, HeadStore, HistoryStore,
    MetaPorts, RecordStore, ScopeItemStore, SnapshotStore, StoredRecord,
};
use crate::scope::Scope;
use async_trait::async_trait;
use std::sync::Arc;

/// The `pin_rev` of a head a fork inherits from its base: no stored head has it (a real
/// `pin_rev` counts pin changes from 0), so a commit or pin naming it is known to be about
/// a file the fork has not written yet.
pub const INHERITED_PIN_REV: u64 = u64::MAX;

/// Heads read per page while merging a fork's heads with its base.
const PAGE: usize = 1000;

pub struct ForkAwareMeta {
    inner: MetaPorts,
    clock: Arc<dyn Clock>,
}

/// A fork's base as its reads need it.
pub struct Base {
    pub parent: Scope,
    pub record: ForkRecord,
    /// The base's point in the parent's history (`service/points.rs`): each file reads as
    /// the parent's newest version at or before it. `None`: a base pinned file by file
    /// before points existed, whose `files` list it.
    pub point: Option<u64>,
    /// Sorted by path (a pinned base only).
    pub files: Vec<SnapshotFile>,
}

impl Base {
    fn pinned_file(&self, path: &str) -> Option<&SnapshotFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }
}

/// Version items of a path read per page when looking for the one at a point (retention
/// keeps `maxVersions` plus the held ones).
const VERSIONS_PAGE: usize = 8;

/// The version of `path` in `scope` current at point `rev`: its newest retained version
/// item committed at or before it (a tombstone when it was deleted then), `None` when it
/// had none. The one read at a point every reader uses.
pub async fn version_at(
    store: &MetaPorts,
    scope: &Scope,
    path: &FilePath,
    rev: u64,
) -> Result<Option<VersionRecord>> {
    let mut before: Option<u64> = None;
    loop {
        let page = store
            .list_versions(scope, path, before, VERSIONS_PAGE)
            .await?;
        if let Some(v) = page.iter().find(|v| v.point <= rev) {
            return Ok(Some(v.clone()));
        }
        if page.len() < VERSIONS_PAGE {
            return Ok(None);
        }
        before = page.last().map(|v| v.seq);
    }
}

fn no_fork(scope: &Scope) -> WorkspaceError {
    WorkspaceError::not_found(format!(
        "no fork {} (discarded, expired, or never created)",
        scope.workspace
    ))
}

/// The base's file as the fork's live head.
pub(crate) fn inherited_head(f: &SnapshotFile) -> Head {
    Head {
        path: f.path.clone(),
        lineage: f.lineage.clone(),
        version: f.version,
        seq: f.seq,
        etag: f.etag.clone(),
        size: f.size,
        content_type: f.content_type.clone(),
        updated_at: f.updated_at,
        deleted: false,
        body: f.body.clone(),
        sha256: f.sha256.clone(),
        pins: Vec::new(),
        pin_rev: INHERITED_PIN_REV,
        principal: String::new(),
        point: 0,
    }
}

/// The fork's first change of a file it inherited: there is no head in the fork's own
/// scope yet. Replacing an inherited file adds no file, and deleting one removes none of
/// the fork's own.
fn own_first_change(c: &mut Commit) {
    c.expect = Expect::Absent;
    c.head.pin_rev = 0;
    if c.head.deleted {
        c.live_delta = 0;
    } else {
        c.live_delta = 1;
        c.max_files = u64::MAX;
    }
}

fn is_inherited(expect: &Expect) -> bool {
    matches!(
        expect,
        Expect::Live {
            pin_rev: INHERITED_PIN_REV,
            ..
        }
    )
}

impl ForkAwareMeta {
    pub fn new(inner: MetaPorts, clock: Arc<dyn Clock>) -> Self {
        Self { inner, clock }
    }

    /// The store itself, without read-through (the fork bookkeeping).
    pub fn stored(&self) -> &MetaPorts {
        &self.inner
    }

    /// `scope`'s parent and fork record when `scope` is a fork (`None` when it is not);
    /// 404 when the fork does not exist or has expired.
    pub async fn fork_record(&self, scope: &Scope) -> Result<Option<(Scope, ForkRecord)>> {
        let Some(parent) = scope.workspace.fork_parent() else {
            return Ok(None);
        };
        let now = self.clock.now_ms();
        let stored = self
            .inner
            .record(scope, FORK_RECORD_KIND, FORK_RECORD_KEY)
            .await?
            .filter(|r| r.expires_at > now)
            .ok_or_else(|| no_fork(scope))?;
        let record: ForkRecord =
            serde_json::from_str(&stored.value).map_err(WorkspaceError::internal)?;
        Ok(Some((Scope::new(scope.tenant.clone(), parent), record)))
    }

    /// The base of fork `scope` (`None` when `scope` is not a fork).
    pub async fn base(&self, scope: &Scope) -> Result<Option<Base>> {
        match self.fork_record(scope).await? {
            None => Ok(None),
            Some((parent, record)) => self.base_of(scope, parent, record).await.map(Some),
        }
    }

    async fn base_of(&self, scope: &Scope, parent: Scope, record: ForkRecord) -> Result<Base> {
        let snapshot: Snapshot = self
            .inner
            .snapshot(&parent, &record.base_snapshot)
            .await?
            .ok_or_else(|| no_fork(scope))?;
        Ok(Base {
            parent,
            record,
            point: snapshot.point,
            files: snapshot.files,
        })
    }

    /// The base's file at `path` (a live file of the parent at the base), if it had one.
    pub async fn base_file(&self, base: &Base, path: &FilePath) -> Result<Option<SnapshotFile>> {
        let Some(rev) = base.point else {
            return Ok(base.pinned_file(path.as_str()).cloned());
        };
        Ok(version_at(&self.inner, &base.parent, path, rev)
            .await?
            .filter(|v| !v.deleted)
            .map(|v| SnapshotFile::of_version(path.as_str(), &v)))
    }

    /// The base's files under `prefix` after `after`, in path order, `limit` at most, and
    /// whether more follow: the parent's heads, each changed since the point read at it.
    async fn base_page(
        &self,
        base: &Base,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<(Vec<SnapshotFile>, bool)> {
        let Some(rev) = base.point else {
            let from = base.files.partition_point(|f| {
                f.path.as_str() < prefix.as_str()
                    || after.is_some_and(|a| f.path.as_str() <= a.as_str())
            });
            let mut under: Vec<SnapshotFile> = base.files[from..]
                .iter()
                .take_while(|f| f.path.starts_with(prefix.as_str()))
                .take(limit + 1)
                .cloned()
                .collect();
            let more = under.len() > limit;
            under.truncate(limit);
            return Ok((under, more));
        };
        let mut out = Vec::new();
        let mut cursor = after.cloned();
        loop {
            let page = self
                .inner
                .list_heads(&base.parent, prefix, cursor.as_ref(), PAGE)
                .await?;
            let done = page.len() < PAGE;
            cursor = page.last().map(|h| FilePath::parse(&h.path)).transpose()?;
            for h in page {
                let file = if h.point <= rev {
                    h.is_live().then(|| SnapshotFile::of_head(&h))
                } else {
                    let path = FilePath::parse(&h.path)?;
                    version_at(&self.inner, &base.parent, &path, rev)
                        .await?
                        .filter(|v| !v.deleted)
                        .map(|v| SnapshotFile::of_version(&h.path, &v))
                };
                if let Some(f) = file {
                    if out.len() == limit {
                        return Ok((out, true));
                    }
                    out.push(f);
                }
            }
            if done || cursor.is_none() {
                return Ok((out, false));
            }
        }
    }

    /// The fork's own heads under `prefix` after `after` (tombstones included), every page.
    pub async fn own_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
    ) -> Result<Vec<Head>> {
        let mut out: Vec<Head> = Vec::new();
        let mut cursor = after.cloned();
        loop {
            let page = self
                .inner
                .list_heads(scope, prefix, cursor.as_ref(), PAGE)
                .await?;
            let done = page.len() < PAGE;
            cursor = page.last().map(|h| FilePath::parse(&h.path)).transpose()?;
            out.extend(page);
            if done || cursor.is_none() {
                return Ok(out);
            }
        }
    }

    /// How many of the base's files the fork has not written or deleted: the base's count
    /// (recorded when it was taken) less the fork's own heads of paths the base has.
    async fn untouched(&self, scope: &Scope, base: &Base) -> Result<u64> {
        let own = self.own_heads(scope, &PathPrefix::default(), None).await?;
        let mut touched = 0u64;
        for h in &own {
            if self
                .base_file(base, &FilePath::parse(&h.path)?)
                .await?
                .is_some()
            {
                touched += 1;
            }
        }
        let files = match base.point {
            Some(_) => base.record.base_files.unwrap_or(0),
            None => base.files.len() as u64,
        };
        Ok(files.saturating_sub(touched))
    }

    /// The heads under `prefix` after `after`, in path order, `limit` at most; tombstones
    /// only when asked: the store's own, or a fork's merged with its base's files.
    async fn heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
        tombstones: bool,
    ) -> Result<Vec<Head>> {
        match self.base(scope).await? {
            Some(base) => {
                self.merged_heads(scope, &base, prefix, after, limit, tombstones)
                    .await
            }
            None if tombstones => self.inner.list_heads(scope, prefix, after, limit).await,
            None => self.inner.list_live(scope, prefix, after, limit).await,
        }
    }

    /// The fork's heads merged with its base's files under `prefix` after `after`, in
    /// path order, `limit` at most; tombstones only when asked. A page of each side at a
    /// time, merged up to the first path where either side's page ends.
    async fn merged_heads(
        &self,
        scope: &Scope,
        base: &Base,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
        tombstones: bool,
    ) -> Result<Vec<Head>> {
        let mut out = Vec::new();
        let mut cursor = after.cloned();
        loop {
            let own = self
                .inner
                .list_heads(scope, prefix, cursor.as_ref(), PAGE)
                .await?;
            let own_more = own.len() == PAGE;
            let (inherited, base_more) =
                self.base_page(base, prefix, cursor.as_ref(), PAGE).await?;
            // Past the last path of a side whose page was cut short, that side is unknown.
            let bound: Option<String> = [
                own_more
                    .then(|| own.last().map(|h| h.path.clone()))
                    .flatten(),
                base_more
                    .then(|| inherited.last().map(|f| f.path.clone()))
                    .flatten(),
            ]
            .into_iter()
            .flatten()
            .min();
            let within = |p: &str| bound.as_deref().is_none_or(|b| p <= b);
            let mut own = own.into_iter().filter(|h| within(&h.path)).peekable();
            let mut inherited = inherited.into_iter().filter(|f| within(&f.path)).peekable();
            loop {
                let next = match (own.peek(), inherited.peek()) {
                    (None, None) => break,
                    (Some(o), Some(b)) if b.path < o.path => {
                        inherited.next().map(|f| inherited_head(&f))
                    }
                    (Some(o), Some(b)) if b.path == o.path => {
                        inherited.next();
                        own.next()
                    }
                    (Some(_), _) => own.next(),
                    (None, Some(_)) => inherited.next().map(|f| inherited_head(&f)),
                };
                if let Some(h) = next.filter(|h| tombstones || h.is_live()) {
                    out.push(h);
                    if out.len() == limit {
                        return Ok(out);
                    }
                }
            }
            match bound {
                Some(b) => cursor = Some(FilePath::parse(&b)?),
                None => return Ok(out),
            }
        }
    }
}

#[async_trait]
impl HeadStore for ForkAwareMeta {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        if scope.workspace.fork_parent().is_none() {
            return self.inner.head(scope, path).await;
        }
        let (fork, own) = tokio::join!(self.fork_record(scope), self.inner.head(scope, path));
        let Some((parent, record)) = fork? else {
            return own;
        };
        if let Some(h) = own? {
            return Ok(Some(h));
        }
        let base = self.base_of(scope, parent, record).await?;
        Ok(self
            .base_file(&base, path)
            .await?
            .as_ref()
            .map(inherited_head))
    }

    async fn list_live(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads(scope, prefix, after, limit, false).await
    }

    async fn list_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads(scope, prefix, after, limit, true).await
    }

    async fn live_count(&self, scope: &Scope) -> Result<u64> {
        let own = self.inner.live_count(scope).await?;
        match self.base(scope).await? {
            None => Ok(own),
            Some(base) => Ok(own + self.untouched(scope, &base).await?),
        }
    }
}

#[async_trait]
impl CommitStore for ForkAwareMeta {
    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.inner.idempotency(scope, key).await
    }

    async fn commit(&self, mut c: Commit) -> Result<CommitOutcome> {
        if let Some((parent, record)) = self.fork_record(&c.scope).await? {
            if is_inherited(&c.expect) {
                own_first_change(&mut c);
            } else if c.live_delta > 0 {
                // A new file: the inherited files the fork still holds count too.
                let base = self.base_of(&c.scope, parent, record).await?;
                let untouched = self.untouched(&c.scope, &base).await?;
                c.max_files = c.max_files.saturating_sub(untouched);
            }
        }
        self.inner.commit(c).await
    }

    /// Each commit as [`Self::commit`] makes it, the inherited files still untouched
    /// counted as the commits before it in the batch leave them.
    async fn commit_many(&self, mut commits: Vec<Commit>) -> Result<BatchOutcome> {
        let mut untouched: std::collections::HashMap<Scope, u64> = Default::default();
        for c in &mut commits {
            if c.scope.workspace.fork_parent().is_none() {
                continue;
            }
            if !untouched.contains_key(&c.scope) {
                let (parent, record) = self
                    .fork_record(&c.scope)
                    .await?
                    .ok_or_else(|| no_fork(&c.scope))?;
                let base = self.base_of(&c.scope, parent, record).await?;
                let n = self.untouched(&c.scope, &base).await?;
                untouched.insert(c.scope.clone(), n);
            }
            let left = untouched.get_mut(&c.scope).expect("counted above");
            if is_inherited(&c.expect) {
                own_first_change(c);
                *left = left.saturating_sub(1);
            } else if c.live_delta > 0 {
                c.max_files = c.max_files.saturating_sub(*left);
            }
        }
        self.inner.commit_many(commits).await
    }

    fn fits_one_commit(&self, commits: &[Commit]) -> bool {
        self.inner.fits_one_commit(commits)
    }
}

#[async_trait]
impl HistoryStore for ForkAwareMeta {
    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>> {
        let Some(base) = self.base(scope).await? else {
            return self.inner.version(scope, path, seq).await;
        };
        if let Some(v) = self.inner.version(scope, path, seq).await? {
            return Ok(Some(v));
        }
        match self.base_file(&base, path).await? {
            Some(f) if seq <= f.seq => self.inner.version(&base.parent, path, seq).await,
            _ => Ok(None),
        }
    }

    async fn list_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        let Some(base) = self.base(scope).await? else {
            return self.inner.list_versions(scope, path, before, limit).await;
        };
        let mut out = self.inner.list_versions(scope, path, before, limit).await?;
        if let Some(f) = self.base_file(&base, path).await? {
            if out.len() < limit {
                let below = before.map_or(f.seq + 1, |b| b.min(f.seq + 1));
                let inherited = self
                    .inner
                    .list_versions(&base.parent, path, Some(below), limit - out.len())
                    .await?;
                out.extend(inherited);
            }
        }
        Ok(out)
    }

    async fn set_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        if scope.workspace.fork_parent().is_some() && is_inherited(&expect) {
            // The base's own pin holds the version for as long as the fork lives, and
            // nothing of the fork outlives the fork.
            return Ok(true);
        }
        self.inner
            .set_pins(scope, path, expect, pins, must_exist)
            .await
    }

    async fn erase_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &Erasure,
    ) -> Result<Option<Option<crate::model::BodyRef>>> {
        self.inner.erase_version(scope, path, seq, erasure).await
    }

    async fn list_changes(
        &self,
        scope: &Scope,
        query: &crate::changes::ChangeQuery,
    ) -> Result<crate::changes::ChangePage> {
        // A fork that does not exist (or expired) has no change log to list: 404, as on
        // every other route, not an empty page.
        self.fork_record(scope).await?;
        self.inner.list_changes(scope, query).await
    }
}

#[async_trait]
impl SnapshotStore for ForkAwareMeta {
    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        self.inner.put_snapshot(scope, snapshot).await
    }

    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>> {
        self.inner.snapshot(scope, id).await
    }

    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool> {
        self.inner.delete_snapshot(scope, id).await
    }

    async fn points(&self, scope: &Scope) -> Result<Points> {
        self.inner.points(scope).await
    }

    async fn swap_points(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: crate::ports::PointRecords<'_>,
    ) -> Result<bool> {
        self.inner
            .swap_points(scope, expect_rev, points, with)
            .await
    }

    async fn list_snapshots(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        self.fork_record(scope).await?;
        self.inner
            .list_snapshots(scope, id_prefix, before, limit)
            .await
    }
}

#[async_trait]
impl RecordStore for ForkAwareMeta {
    async fn put_record(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        self.inner.put_record(scope, kind, key, record).await
    }

    async fn record(&self, scope: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>> {
        self.inner.record(scope, kind, key).await
    }
}

#[async_trait]
impl ScopeItemStore for ForkAwareMeta {
    async fn erase_scope_items(&self, scope: &Scope) -> Result<u64> {
        self.inner.erase_scope_items(scope).await
    }
}
