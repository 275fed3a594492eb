//! Forks (`crate::forks`): create, list, inspect, discard, the three-way diff, and the
//! merge back.
//!
//! A merge, step by step (each step safe to stop after; a retry with the same
//! `Idempotency-Key` finishes the work and answers the same `mergeId`):
//! 1. compare base, fork and parent ([`three_way::diff`]) and decide each changed path by
//!    the resolutions, then the strategy; any conflict left answers the report and
//!    changes nothing;
//! 2. apply the fork's changes to the parent under the write path's rules, each
//!    conditional on the parent head it was compared against: a parent write that lands
//!    meanwhile stops the merge with a 409 naming the path instead of being overwritten.
//!    Where the store takes the whole merge in one commit (memory, redb; DynamoDB up to
//!    one `TransactWriteItems`) it is one `commit_many`: all of it or nothing. A larger
//!    one records its plan first and applies it in batches; a retry with the same
//!    `Idempotency-Key` finishes the plan, each change once ([`apply`]);
//! 3. align the fork with the result where it differs (a conflict the parent won, a text
//!    merge), conditional on the fork head compared, so a sub-agent's newer write stays a
//!    change for the next merge;
//! 4. move the base: a new base snapshot of the parent, the fork record pointing at it,
//!    the old base snapshot deleted (its pins end). A second merge carries only later
//!    changes;
//! 5. record the report under the `Idempotency-Key`.

mod apply;

use super::*;
use crate::forks::three_way::{self, Change, Decision, FileState, PathDiff, Resolution, Strategy};
use crate::forks::{
    base_snapshot_id, created_of_base, suffix_of_base, text, Base, ForkRecord, BASE_ID_PREFIX,
    FORK_RECORD_KEY, FORK_RECORD_KIND,
};
use crate::model::SnapshotFile;
use crate::ports::{HeadStore, HistoryStore, StoredRecord};
use crate::scope::WorkspaceId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Largest page of a fork listing, and its default.
pub const MAX_FORKS_PAGE: usize = 100;
/// Largest page of a fork diff, and its default.
pub const MAX_FORK_DIFF_PAGE: usize = 1000;
/// Paths one merge request may resolve.
pub const MAX_RESOLUTIONS: usize = 1000;
/// Changed paths whose base and parent a diff reads side by side.
const SIDE_READS: usize = 16;
/// The object every fork leaves under its key prefix (`mark_fork`).
pub const FORK_MARKER: &str = "fork";
/// How long before it lands a commit's change-log entry may be stamped (each commit
/// attempt reads the clock, then runs one store transaction), with room for the clocks of
/// two hosts to differ: a fork's changes since its base are read from this long before the
/// base. A parent commit stamped earlier than that is missing from the diff's parent side
/// only: every path the fork changed is compared anyway, and a merge or a rebase needs
/// nothing for a path only the parent changed.
const COMMIT_SLACK_MS: Millis = 60 * 1000;
const MERGE_RECORD_KIND: &str = "merge";

/// `POST .../forks`.
#[derive(Debug, Clone, Default)]
pub struct ForkRequest {
    /// `None` or `"live"`: the parent as it is now.
    pub from: Option<String>,
    pub label: Option<String>,
    pub ttl_seconds: Option<u64>,
}

/// A fork as the API describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    pub workspace: WorkspaceId,
    pub parent: WorkspaceId,
    pub base_snapshot: String,
    pub base_created_at: Millis,
    pub label: Option<String>,
    pub created_at: Millis,
    pub expires_at: Millis,
}

/// How many paths changed since the base on each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ForkCounts {
    pub fork: usize,
    pub parent: usize,
    pub conflicts: usize,
}

pub struct ForkDiffPage {
    pub fork: Fork,
    pub changes: Vec<PathDiff>,
    pub next_after: Option<String>,
}

/// `POST .../forks/{id}/merge`.
#[derive(Debug, Clone)]
pub struct MergeRequest {
    pub strategy: Strategy,
    pub resolutions: BTreeMap<String, Resolution>,
    pub dry_run: bool,
    pub discard_fork: bool,
    pub idempotency_key: Option<String>,
}

/// One change a merge applied (or, in a dry run, would apply) to the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub path: String,
    /// `put` or `delete`.
    pub operation: String,
    /// A put's new version and etag in the target; a delete's version is the one it ended
    /// (the deleted head's), with no etag. Neither in a dry run.
    pub version: Option<u64>,
    pub etag: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeReport {
    pub merge_id: String,
    pub fork_id: String,
    pub applied: Vec<Applied>,
    pub dry_run: bool,
    /// The fork's base after the merge.
    pub base_snapshot: String,
    pub base_created_at: Millis,
    pub fork_discarded: bool,
}

/// A path the merge could not settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictReport {
    pub diff: PathDiff,
    /// Either side's bytes are not UTF-8 text.
    pub binary: bool,
    /// The texts merged with conflict markers (both sides live text).
    pub merged: Option<String>,
}

pub enum MergeOutcome {
    Merged(MergeReport),
    /// Nothing was applied.
    Conflicts(Vec<ConflictReport>),
}

/// A merge's changes, applied: what its last steps need.
struct Combined {
    merge_id: String,
    origin: MergeOrigin,
    applied: Vec<Applied>,
    /// The fork's paths to align, with the fork's own head as compared.
    align: Vec<(String, Option<Head>)>,
    /// Applied through a plan (to end once the merge is complete).
    planned: bool,
    /// Where the changes went (and the plan is kept).
    target: Scope,
}

/// Which way changes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// The fork's changes into the parent.
    Merge,
    /// The parent's changes into the fork.
    Rebase,
}

/// What a merge does to its target (the parent; a rebase's: the fork) at one path.
enum ParentOp {
    Put {
        path: String,
        content: Vec<u8>,
        content_type: String,
    },
    Delete {
        path: String,
    },
}

impl ParentOp {
    /// The report line of a change not made (a dry run).
    fn planned(&self) -> Applied {
        let (path, operation) = match self {
            ParentOp::Put { path, .. } => (path, "put"),
            ParentOp::Delete { path } => (path, "delete"),
        };
        Applied {
            path: path.clone(),
            operation: operation.to_owned(),
            version: None,
            etag: None,
        }
    }
}

fn state_of_head(h: &Head) -> FileState {
    FileState {
        version: h.version,
        etag: h.etag.clone(),
        sha256: h.sha256.clone(),
        content_type: h.content_type.clone(),
        size: h.size,
    }
}

fn state_of_file(f: &SnapshotFile) -> FileState {
    FileState {
        version: f.version,
        etag: f.etag.clone(),
        sha256: f.sha256.clone(),
        content_type: f.content_type.clone(),
        size: f.size,
    }
}

fn no_fork(id: &str) -> WorkspaceError {
    WorkspaceError::not_found(format!("no fork {id} of this workspace"))
}

fn whole_workspace(who: &Identity) -> Result<()> {
    if who.paths.is_whole() {
        Ok(())
    } else {
        Err(WorkspaceError::Forbidden(
            "forks cover the whole workspace; a key limited to paths cannot use them".to_owned(),
        ))
    }
}

/// A path's texts merged: whether a side is not text, and the merge (`Err`: with markers).
struct TextMerge {
    binary: bool,
    merged: Option<std::result::Result<String, String>>,
}

/// The three sides of a fork, and which paths the fork wrote itself.
struct Sides {
    base: BTreeMap<String, FileState>,
    fork: BTreeMap<String, FileState>,
    parent: BTreeMap<String, FileState>,
    /// Paths with a head in the fork's own scope (live or tombstone).
    own: BTreeMap<String, Head>,
    /// The base's files of the paths compared (bodies, for a text merge).
    base_files: BTreeMap<String, SnapshotFile>,
}

impl WorkspaceService {
    /// The default and longest life of a fork (`WORKSPACE_FORK_TTL_SECONDS`,
    /// `WORKSPACE_FORK_MAX_TTL_SECONDS`).
    pub fn with_fork_ttl(mut self, default_ms: Millis, max_ms: Millis) -> Self {
        self.fork_max_ttl_ms = max_ms.max(1);
        self.fork_ttl_ms = default_ms.clamp(1, self.fork_max_ttl_ms);
        self
    }

    /// Erases a discarded fork's files, versions and bodies (without one, a discarded
    /// fork's data stays, unreachable).
    pub fn with_scope_eraser(mut self, eraser: Arc<dyn crate::ports::ScopeEraser>) -> Self {
        self.scope_eraser = Some(eraser);
        self
    }

    /// The caller's view of its parent workspace, whole.
    fn parent_identity(who: &Identity, parent: &Scope) -> Identity {
        Identity {
            scope: parent.clone(),
            ..who.clone()
        }
    }

    /// Fork `id` of the caller's workspace and its record; 404 for anything else (another
    /// workspace's fork, a discarded or expired one, a malformed id).
    async fn fork_of(&self, who: &Identity, id: &str) -> Result<(Scope, ForkRecord)> {
        let ws = WorkspaceId::parse(id)
            .ok()
            .filter(|w| w.fork_parent().as_ref() == Some(&who.scope.workspace))
            .ok_or_else(|| no_fork(id))?;
        let scope = Scope::new(who.scope.tenant.clone(), ws);
        match self.forks.fork_record(&scope).await {
            Ok(Some((_, record))) => Ok((scope, record)),
            Ok(None) => Err(no_fork(id)),
            Err(_) => {
                self.sweep_if_ended(&scope).await;
                Err(no_fork(id))
            }
        }
    }

    /// Sweeps fork `scope` now if its record says it has ended (expired, or discarded and
    /// not yet erased); a fork with no record costs this one read.
    async fn sweep_if_ended(&self, scope: &Scope) {
        let stored = self.forks.stored();
        let ended = matches!(
            stored.records.record(scope, FORK_RECORD_KIND, FORK_RECORD_KEY).await,
            Ok(Some(r)) if r.expires_at <= self.clock.now_ms()
        );
        if ended {
            self.sweep_now(scope).await;
        }
    }

    /// Sweeps fork `scope` unless it lives (`crate::forks::sweep::sweep_fork`); a failure
    /// is logged and left to the next sweep.
    async fn sweep_now(&self, scope: &Scope) {
        let stored = self.forks.stored();
        let swept = crate::forks::sweep::sweep_fork(
            stored,
            self.fork_eraser().as_ref(),
            scope,
            self.clock.now_ms(),
        )
        .await;
        if let Err(e) = swept {
            tracing::warn!(error = %e, fork = %scope, "expired fork not swept; the next sweep retries");
        }
    }

    fn fork_view(scope: &Scope, record: &ForkRecord) -> Result<Fork> {
        Ok(Fork {
            workspace: scope.workspace.clone(),
            parent: scope
                .workspace
                .fork_parent()
                .ok_or_else(|| WorkspaceError::internal("a fork scope without a parent"))?,
            base_snapshot: record.base_snapshot.clone(),
            base_created_at: record.base_created_at,
            label: record.label.clone(),
            created_at: record.created_at,
            expires_at: record.expires_at,
        })
    }

    /// Forks the caller's workspace as it is now: pins each live file (no body is copied)
    /// and records the fork.
    pub async fn create_fork(&self, who: &Identity, req: ForkRequest) -> Result<Fork> {
        whole_workspace(who)?;
        if let Some(parent) = who.scope.workspace.fork_parent() {
            return Err(WorkspaceError::validation(format!(
                "{} is a fork; a fork is not forked again (fork {parent} instead)",
                who.scope.workspace
            )));
        }
        // A snapshot to start from: read (and checked) before anything is written.
        let from = match req.from.as_deref() {
            None | Some("live") => None,
            Some(id) => Some(self.snapshot_header(&who.scope, id).await?),
        };
        if let Some(label) = &req.label {
            super::snapshots::check_label(label)?;
        }
        let ttl = match req.ttl_seconds {
            None => self.fork_ttl_ms,
            Some(s) => {
                let ms = i64::try_from(s).unwrap_or(i64::MAX).saturating_mul(1000);
                if s == 0 || ms > self.fork_max_ttl_ms {
                    return Err(WorkspaceError::validation(format!(
                        "ttlSeconds must be 1-{}",
                        self.fork_max_ttl_ms / 1000
                    )));
                }
                ms
            }
        };
        // Hex whatever the id source hands out.
        let suffix =
            sha256_hex(self.ids.new_id().as_bytes())[..crate::scope::FORK_SUFFIX_LEN].to_owned();
        let ws = who
            .scope
            .workspace
            .fork(&suffix)
            .ok_or_else(|| WorkspaceError::internal("fork id"))?;
        let scope = Scope::new(who.scope.tenant.clone(), ws);
        let now = self.clock.now_ms();
        let mut record = ForkRecord {
            base_snapshot: base_snapshot_id(now, &suffix, 0),
            base_created_at: now,
            label: req.label.clone(),
            created_at: now,
            expires_at: now.saturating_add(ttl),
            generation: 0,
            base_files: None,
        };
        if let Some(snapshot) = from.as_ref().filter(|s| s.point.is_none()) {
            // A snapshot pinned file by file (taken before points existed): its files are
            // pinned again for the fork, as that build did.
            let snapshot = self.snapshot_record(&who.scope, &snapshot.id).await?;
            return self.fork_of_pinned(who, &scope, record, &snapshot).await;
        }
        // A point: the parent now, or the snapshot's point. The fork record, the base's
        // record and its point in one atomic step, whatever the number of files.
        let at = from
            .as_ref()
            .and_then(|s| s.point.map(|rev| (rev, s.id.as_str())));
        record.base_files = Some(match &from {
            None => self.meta.live_count(&who.scope).await?,
            Some(s) => {
                let rev = s.point.unwrap_or_default();
                self.count_at(&who.scope, rev, s.created_at).await?
            }
        });
        if let Some(s) = &from {
            record.base_created_at = s.created_at;
        }
        self.take_base_at(who, &scope, &record, at).await?;
        self.mark_fork(&scope).await;
        Self::fork_view(&scope, &record)
    }

    /// Leaves an empty object under the fork's key prefix in the body store, once its record
    /// exists: the S3 sweeper finds the workspaces to sweep by their keys in the bucket, and a
    /// fork (or a parent) that writes only small files, kept inline, has no other key there
    /// (`store-aws/src/sweeper.rs`). The fork's erase removes it with everything under the
    /// prefix. Best effort: a fork without it is still found through its parent's keys, or its
    /// own once it stores a larger body.
    async fn mark_fork(&self, scope: &Scope) {
        let key = format!("{}{FORK_MARKER}", scope.key_prefix());
        if let Err(e) = self
            .bodies
            .store()
            .put(&key, Vec::new(), "application/octet-stream")
            .await
        {
            tracing::warn!(error = %e, %scope, "fork marker not stored; the sweep may find the fork late");
        }
    }

    /// Takes `record`'s base as a point of the parent (`record.base_created_at` later than
    /// now's point when the base is a snapshot's: at its point), and stores the record
    /// with it, in one registry swap.
    async fn take_base(&self, who: &Identity, scope: &Scope, record: &ForkRecord) -> Result<()> {
        self.take_base_at(who, scope, record, None).await
    }

    async fn take_base_at(
        &self,
        who: &Identity,
        scope: &Scope,
        record: &ForkRecord,
        at: Option<(u64, &str)>,
    ) -> Result<()> {
        let base = crate::model::Snapshot {
            id: record.base_snapshot.clone(),
            created_at: record.base_created_at,
            expires_at: record.expires_at,
            files: Vec::new(),
            workflow_id: None,
            principal: None,
            label: record.label.clone(),
            keep: false,
            covers: Vec::new(),
            point: None,
        };
        let value = serde_json::to_string(record).map_err(WorkspaceError::internal)?;
        let stored = StoredRecord {
            value,
            expires_at: record.expires_at,
        };
        let fork_record = crate::ports::ScopedRecord {
            scope,
            kind: FORK_RECORD_KIND,
            key: FORK_RECORD_KEY,
            record: &stored,
        };
        self.take_point_with(&who.scope, base, Some(fork_record), at)
            .await
            .map(|_| ())
    }

    /// How many live files `scope` held at point `rev` (taken at `taken_at`): the live
    /// count now, corrected by each path changed since.
    async fn count_at(&self, scope: &Scope, rev: u64, taken_at: Millis) -> Result<u64> {
        let now = self.meta.live_count(scope).await?;
        let mut count = i128::from(now);
        for path in self
            .changed_paths(scope, &PathPrefix::default(), taken_at)
            .await?
        {
            let fp = FilePath::parse(&path)?;
            let was = crate::forks::version_at(self.forks.stored(), scope, &fp, rev)
                .await?
                .is_some_and(|v| !v.deleted);
            let is = self
                .forks
                .stored()
                .head(scope, &fp)
                .await?
                .is_some_and(|h| h.is_live());
            count += i128::from(was) - i128::from(is);
        }
        Ok(u64::try_from(count.max(0)).unwrap_or(0))
    }

    /// The paths of `scope` under `prefix` changed since `since` (by its change log; a
    /// superset: a commit's entry carries the instant its write began, which may be up to
    /// [`COMMIT_SLACK_MS`] before it landed).
    async fn changed_paths(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        since: Millis,
    ) -> Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        let mut before: Option<String> = None;
        loop {
            let query = crate::changes::ChangeQuery {
                from: Some(crate::changes::key_at(
                    since.saturating_sub(COMMIT_SLACK_MS),
                )),
                to: None,
                before: before.clone(),
                prefix: prefix.as_str().to_owned(),
                principal: None,
                paths: crate::PathScope::whole(),
                limit: crate::changes::MAX_CHANGES_PAGE,
            };
            let page = self.forks.stored().list_changes(scope, &query).await?;
            out.extend(
                page.changes
                    .into_iter()
                    .filter(|c| !c.erased)
                    .map(|c| c.path),
            );
            match page.next_before {
                Some(next) if before.as_ref() != Some(&next) => before = Some(next),
                _ => return Ok(out),
            }
        }
    }

    /// A fork whose base is a snapshot pinned file by file (taken by the previous build):
    /// the record first, the base last, as that build did.
    async fn fork_of_pinned(
        &self,
        who: &Identity,
        scope: &Scope,
        record: ForkRecord,
        snapshot: &crate::model::Snapshot,
    ) -> Result<Fork> {
        self.put_fork_record(scope, &record).await?;
        let options = SnapshotOptions {
            label: record.label.clone(),
            ttl_ms: Some(record.expires_at - record.created_at),
            fork_base: true,
            ..SnapshotOptions::default()
        };
        if let Err(e) = self
            .base_from_snapshot(who, &record, snapshot, options)
            .await
        {
            let gone = ForkRecord {
                expires_at: 0,
                ..record
            };
            if let Err(e) = self.put_fork_record(scope, &gone).await {
                tracing::warn!(error = %e, fork = %scope, "fork record left; it expires");
            }
            return Err(e);
        }
        self.mark_fork(scope).await;
        Self::fork_view(scope, &record)
    }

    /// A fork's base made of a snapshot's files: each version the snapshot names is pinned
    /// again for the fork's life (it is still held: the snapshot's own pin keeps it), with
    /// its lineage and body. A version erased from history, or one a kept snapshot no longer
    /// holds in the store (it holds a copy), cannot be a fork's: 409, nothing pinned stays.
    async fn base_from_snapshot(
        &self,
        who: &Identity,
        record: &ForkRecord,
        snapshot: &crate::model::Snapshot,
        options: SnapshotOptions,
    ) -> Result<()> {
        let scope = &who.scope;
        let now = self.clock.now_ms();
        let until = record.expires_at;
        let window = super::pins::Window {
            max_versions: self.limits.max_versions,
        };
        let mut files = Vec::with_capacity(snapshot.files.len());
        for f in &snapshot.files {
            let path = FilePath::parse(&f.path)?;
            let gone = || WorkspaceError::Conflict {
                message: format!(
                    "version {} of {} in snapshot {} is no longer in the store (erased, or \
                     held only by a kept snapshot's copy); fork the live workspace instead",
                    f.version, f.path, snapshot.id
                ),
                current_version: 0,
            };
            if f.erased {
                return Err(gone());
            }
            let item = self
                .meta
                .version(scope, &path, f.seq)
                .await?
                .filter(|v| v.body.is_some() && v.erased.is_none())
                .ok_or_else(gone)?;
            let listed = Head {
                path: f.path.clone(),
                lineage: item.lineage.clone(),
                version: f.version,
                seq: f.seq,
                etag: f.etag.clone(),
                size: f.size,
                content_type: f.content_type.clone(),
                updated_at: f.updated_at,
                deleted: false,
                body: item.body.clone(),
                sha256: f.sha256.clone(),
                pins: Vec::new(),
                pin_rev: 0,
                principal: item.principal.clone(),
                point: item.point,
            };
            super::pins::pin_file(
                self.meta.clone(),
                scope.clone(),
                listed,
                record.base_snapshot.clone(),
                (now, until),
                window,
            )
            .await?
            .ok_or_else(gone)?;
            files.push(SnapshotFile {
                lineage: item.lineage,
                body: item.body,
                kept: None,
                ..f.clone()
            });
        }
        let base = crate::model::Snapshot {
            id: record.base_snapshot.clone(),
            created_at: now,
            expires_at: until,
            files,
            workflow_id: None,
            principal: None,
            label: options.label,
            keep: false,
            covers: Vec::new(),
            point: None,
        };
        self.meta.put_snapshot(scope, &base).await
    }

    async fn put_fork_record(&self, scope: &Scope, record: &ForkRecord) -> Result<()> {
        let value = serde_json::to_string(record).map_err(WorkspaceError::internal)?;
        self.meta
            .put_record(
                scope,
                FORK_RECORD_KIND,
                FORK_RECORD_KEY,
                &StoredRecord {
                    value,
                    expires_at: record.expires_at,
                },
            )
            .await
    }

    /// The caller's workspace's live forks, newest first, `limit` at most, those created
    /// before the fork whose base is `before`.
    pub async fn list_forks(
        &self,
        who: &Identity,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<(Vec<Fork>, Option<String>)> {
        whole_workspace(who)?;
        // A fork has no forks; one that does not exist is 404, as on every route.
        self.forks.fork_record(&who.scope).await?;
        let limit = crate::limits::page_limit(limit, MAX_FORKS_PAGE, MAX_FORKS_PAGE)?;
        if let Some(b) = before {
            if !b.starts_with(BASE_ID_PREFIX) || b.len() > 128 {
                return Err(WorkspaceError::validation(
                    "nextToken is not one this API gave",
                ));
            }
        }
        let page = self
            .meta
            .list_snapshots(&who.scope, BASE_ID_PREFIX, before, limit)
            .await?;
        let next = (page.len() == limit)
            .then(|| page.last().map(|s| s.id.clone()))
            .flatten();
        let now = self.clock.now_ms();
        // Expired forks on this page are swept now (their data and base go); a failure
        // leaves them to the next listing or the sweeper, the answer stands.
        let ended: BTreeSet<&str> = page
            .iter()
            .filter(|s| s.expires_at <= now)
            .filter_map(|s| suffix_of_base(&s.id))
            .collect();
        for suffix in ended {
            let Some(ws) = who.scope.workspace.fork(suffix) else {
                continue;
            };
            // Its base has expired: swept even if its record is already gone.
            self.sweep_now(&Scope::new(who.scope.tenant.clone(), ws))
                .await;
        }
        let mut seen = BTreeSet::new();
        let mut forks = Vec::new();
        for info in page.into_iter().filter(|s| s.expires_at > now) {
            let (Some(suffix), Some(created_at)) =
                (suffix_of_base(&info.id), created_of_base(&info.id))
            else {
                continue;
            };
            // While a merge moves a base, two generations may exist: the first listed
            // (the newer) stands for the fork.
            if !seen.insert(suffix.to_owned()) {
                continue;
            }
            let Some(ws) = who.scope.workspace.fork(suffix) else {
                continue;
            };
            forks.push(Fork {
                workspace: ws,
                parent: who.scope.workspace.clone(),
                base_snapshot: info.id.clone(),
                base_created_at: info.created_at,
                label: info.label,
                created_at,
                expires_at: info.expires_at,
            });
        }
        Ok((forks, next))
    }

    /// One fork of the caller's workspace, with how many paths changed on each side.
    pub async fn get_fork(&self, who: &Identity, id: &str) -> Result<(Fork, ForkCounts)> {
        whole_workspace(who)?;
        let (scope, record) = self.fork_of(who, id).await?;
        let sides = self.sides(&scope, &PathPrefix::default()).await?;
        let diff = three_way::diff(&sides.base, &sides.fork, &sides.parent);
        let counts = ForkCounts {
            fork: diff
                .iter()
                .filter(|d| d.fork_change != Change::Unchanged)
                .count(),
            parent: diff
                .iter()
                .filter(|d| d.parent_change != Change::Unchanged)
                .count(),
            conflicts: diff.iter().filter(|d| d.conflict).count(),
        };
        Ok((Self::fork_view(&scope, &record)?, counts))
    }

    /// Discards a fork: unreachable at once, its base's pins end, its own data erased.
    pub async fn discard_fork(&self, who: &Identity, id: &str) -> Result<()> {
        whole_workspace(who)?;
        let (scope, record) = self.fork_of(who, id).await?;
        self.discard(who, &scope, &record).await
    }

    async fn discard(&self, who: &Identity, scope: &Scope, record: &ForkRecord) -> Result<()> {
        let gone = ForkRecord {
            expires_at: 0,
            ..record.clone()
        };
        self.put_fork_record(scope, &gone).await?;
        let parent = Scope::new(
            scope.tenant.clone(),
            scope
                .workspace
                .fork_parent()
                .ok_or_else(|| WorkspaceError::internal("a fork scope without a parent"))?,
        );
        let parent_who = Self::parent_identity(who, &parent);
        match self
            .delete_snapshot(&parent_who, &record.base_snapshot)
            .await
        {
            Ok(()) | Err(WorkspaceError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        match self.fork_eraser().erase_scope_data(scope).await {
            Err(e) if self.scope_eraser.is_none() => {
                // Without the deployment's eraser, through the stores' own ports, which
                // this process may hold no right to: the fork is gone (its record ended),
                // and what is left of it is the sweeper's.
                tracing::warn!(error = %e, fork = %scope, "discarded fork's data left to the sweeper");
                Ok(())
            }
            other => other,
        }
    }

    /// What erases a fork's data: the deployment's eraser (everything under the scope's
    /// key prefix), else the stores' own ports ([`crate::forks::sweep::StoreEraser`]).
    fn fork_eraser(&self) -> Arc<dyn crate::ports::ScopeEraser> {
        match &self.scope_eraser {
            Some(e) => e.clone(),
            None => Arc::new(crate::forks::sweep::StoreEraser {
                meta: Arc::new(self.forks.stored().clone()),
                bodies: self.bodies.clone(),
                staging: self.staging.clone(),
            }),
        }
    }

    /// Sweeps every ended fork of `parent` (expired, or discarded and not yet erased):
    /// its own data and its base snapshot go, the parent is untouched
    /// (`crate::forks::sweep`); how many.
    pub async fn sweep_expired_forks(&self, parent: &Scope) -> Result<usize> {
        crate::forks::sweep::sweep_expired_forks(
            self.forks.stored(),
            self.fork_eraser().as_ref(),
            parent,
            self.clock.now_ms(),
        )
        .await
    }

    /// Every fork of the caller's workspace (for deleting the workspace).
    pub async fn live_forks(&self, who: &Identity) -> Result<Vec<Fork>> {
        let mut out = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let (page, next) = self
                .list_forks(who, Some(MAX_FORKS_PAGE), before.as_deref())
                .await?;
            out.extend(page);
            match next {
                Some(n) => before = Some(n),
                None => return Ok(out),
            }
        }
    }

    /// Discards every fork of the caller's workspace.
    pub async fn discard_forks(&self, who: &Identity) -> Result<usize> {
        let forks = self.live_forks(who).await?;
        for f in &forks {
            self.discard_fork(who, f.workspace.as_str()).await?;
        }
        Ok(forks.len())
    }

    /// Base, fork and parent under `prefix`, for the paths either side changed since the
    /// base: the fork's own heads, and the parent's change log since the base (never a
    /// scan of every file). Each such path costs one read at the base's point and one of
    /// the parent's head.
    async fn sides(&self, scope: &Scope, prefix: &PathPrefix) -> Result<Sides> {
        let base: Base = self
            .forks
            .base(scope)
            .await?
            .ok_or_else(|| WorkspaceError::internal("not a fork"))?;
        let own: BTreeMap<String, Head> = self
            .forks
            .own_heads(scope, prefix, None)
            .await?
            .into_iter()
            .map(|h| (h.path.clone(), h))
            .collect();
        let mut paths: BTreeSet<String> = own.keys().cloned().collect();
        paths.extend(
            self.changed_paths(&base.parent, prefix, base.record.base_created_at)
                .await?,
        );
        // Each path's base and parent, a few paths side by side.
        let base = Arc::new(base);
        let paths: Vec<String> = paths.into_iter().collect();
        let mut read: BTreeMap<String, (Option<SnapshotFile>, Option<Head>)> = BTreeMap::new();
        for chunk in paths.chunks(SIDE_READS) {
            let mut tasks = tokio::task::JoinSet::new();
            for path in chunk {
                let (forks, base, path) = (self.forks.clone(), base.clone(), path.clone());
                tasks.spawn(async move {
                    let fp = FilePath::parse(&path)?;
                    let (at_base, now) = tokio::join!(
                        forks.base_file(&base, &fp),
                        forks.stored().head(&base.parent, &fp)
                    );
                    Ok::<_, WorkspaceError>((path, at_base?, now?))
                });
            }
            while let Some(done) = tasks.join_next().await {
                let (path, at_base, now) = done.map_err(WorkspaceError::internal)??;
                read.insert(path, (at_base, now));
            }
        }
        let (mut base_map, mut fork, mut parent) =
            (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        let mut base_files = BTreeMap::new();
        for (path, (at_base, now)) in read {
            if let Some(f) = at_base {
                base_map.insert(path.clone(), state_of_file(&f));
                base_files.insert(path.clone(), f);
            }
            match own.get(&path) {
                Some(h) if h.is_live() => {
                    fork.insert(path.clone(), state_of_head(h));
                }
                Some(_) => {}
                None => {
                    if let Some(state) = base_map.get(&path) {
                        fork.insert(path.clone(), state.clone());
                    }
                }
            }
            if let Some(h) = now.filter(|h| h.is_live()) {
                parent.insert(path, state_of_head(&h));
            }
        }
        Ok(Sides {
            base: base_map,
            fork,
            parent,
            own,
            base_files,
        })
    }

    /// The three-way diff of a fork of the caller's workspace, a page at a time.
    pub async fn fork_diff(
        &self,
        who: &Identity,
        id: &str,
        prefix: &PathPrefix,
        limit: Option<usize>,
        after: Option<&str>,
    ) -> Result<ForkDiffPage> {
        whole_workspace(who)?;
        let limit = crate::limits::page_limit(limit, MAX_FORK_DIFF_PAGE, MAX_FORK_DIFF_PAGE)?;
        let (scope, record) = self.fork_of(who, id).await?;
        let sides = self.sides(&scope, prefix).await?;
        let mut changes: Vec<PathDiff> = three_way::diff(&sides.base, &sides.fork, &sides.parent)
            .into_iter()
            .filter(|d| after.is_none_or(|a| d.path.as_str() > a))
            .take(limit + 1)
            .collect();
        let next_after = if changes.len() > limit {
            changes.truncate(limit);
            changes.last().map(|d| d.path.clone())
        } else {
            None
        };
        Ok(ForkDiffPage {
            fork: Self::fork_view(&scope, &record)?,
            changes,
            next_after,
        })
    }

    async fn bytes_of(&self, body: Option<&BodyRef>, path: &str) -> Result<Vec<u8>> {
        let body = body.ok_or_else(|| WorkspaceError::internal(format!("{path}: no body")))?;
        self.bodies
            .get(body)
            .await?
            .ok_or_else(|| WorkspaceError::internal(format!("{path}: body {} missing", body.key)))
    }

    /// The live file's bytes at `path` in `scope` as read now (fork scopes read through).
    async fn live_bytes(&self, scope: &Scope, path: &str) -> Result<Option<(Head, Vec<u8>)>> {
        let fp = FilePath::parse(path)?;
        match self.meta.head(scope, &fp).await? {
            Some(h) if h.is_live() => {
                let bytes = self.bytes_of(h.body.as_ref(), path).await?;
                Ok(Some((h, bytes)))
            }
            _ => Ok(None),
        }
    }

    /// Merges a fork of the caller's workspace back into it (see the module notes).
    pub async fn merge_fork(
        &self,
        who: &Identity,
        id: &str,
        req: MergeRequest,
    ) -> Result<MergeOutcome> {
        self.combine(who, id, req, Direction::Merge).await
    }

    /// Brings the parent's changes since the base into the fork, with the same rules,
    /// strategies (`fork-wins` keeps the fork's side), resolutions and conflict report, and
    /// moves the base to the parent as it is now. Paths the fork never wrote need nothing:
    /// they read through to the new base.
    pub async fn rebase_fork(
        &self,
        who: &Identity,
        id: &str,
        req: MergeRequest,
    ) -> Result<MergeOutcome> {
        if req.discard_fork {
            return Err(WorkspaceError::validation(
                "discardFork is for a merge; a rebase keeps the fork",
            ));
        }
        self.combine(who, id, req, Direction::Rebase).await
    }

    /// A merge or a rebase: decide, apply to the target side, align, move the base.
    async fn combine(
        &self,
        who: &Identity,
        id: &str,
        req: MergeRequest,
        dir: Direction,
    ) -> Result<MergeOutcome> {
        whole_workspace(who)?;
        if req.resolutions.len() > MAX_RESOLUTIONS {
            return Err(WorkspaceError::validation(format!(
                "at most {MAX_RESOLUTIONS} resolutions per merge"
            )));
        }
        if let Some(k) = &req.idempotency_key {
            check_header_value("Idempotency-Key", k)?;
        }
        let fingerprint = self.merge_fingerprint(id, &req, dir);
        if let Some(report) = self.merge_replay(who, &req, &fingerprint).await? {
            return Ok(MergeOutcome::Merged(report));
        }
        let (scope, record) = self.fork_of(who, id).await?;
        let parent = Scope::new(who.scope.tenant.clone(), who.scope.workspace.clone());
        // A merge too large for one commit that stopped midway: its plan finishes it.
        if let Some(key) = req.idempotency_key.as_deref().filter(|_| !req.dry_run) {
            let target = match dir {
                Direction::Merge => &parent,
                Direction::Rebase => &scope,
            };
            if let Some(plan) = self.open_plan(target, key, &fingerprint).await? {
                let target_who = Self::parent_identity(who, target);
                let (merge_id, align) = (plan.merge_id.clone(), plan.align.clone());
                let origin = MergeOrigin {
                    merge_id: merge_id.clone(),
                    fork_id: plan.fork_id.clone(),
                };
                let applied = self.run_plan(&target_who, key, plan, None).await?;
                let done = Combined {
                    merge_id,
                    origin,
                    applied,
                    align,
                    planned: true,
                    target: target.clone(),
                };
                return self
                    .finish_combine(who, &scope, &record, &parent, &req, &fingerprint, done)
                    .await;
            }
        }
        let sides = self.sides(&scope, &PathPrefix::default()).await?;
        let diff = three_way::diff(&sides.base, &sides.fork, &sides.parent);
        for path in req.resolutions.keys() {
            if !diff.iter().any(|d| &d.path == path) {
                return Err(WorkspaceError::validation(format!(
                    "resolution for {path}: it did not change on either side since the base"
                )));
            }
        }
        let base = &sides.base_files;
        // The side changes are applied to, and the side they come from.
        let (target, source) = match dir {
            Direction::Merge => (&parent, &scope),
            Direction::Rebase => (&scope, &parent),
        };

        // 1. Decide every path; read bytes only where text is merged or a conflict is
        //    reported.
        let mut ops: Vec<(ParentOp, Option<FileState>)> = Vec::new();
        let mut conflicts = Vec::new();
        let mut align: Vec<String> = Vec::new();
        for d in &diff {
            let own = sides.own.contains_key(&d.path);
            let decision = three_way::decide(d, req.strategy, req.resolutions.get(&d.path));
            let decision = match decision {
                Decision::MergeText => match self.merge_text(&scope, &parent, base, d).await? {
                    Ok(text) => Decision::Write(text.into_bytes()),
                    Err(report) => {
                        conflicts.push(report);
                        continue;
                    }
                },
                Decision::Conflict => {
                    conflicts.push(self.conflict_report(&scope, &parent, base, d).await?);
                    continue;
                }
                other => other,
            };
            // What the target holds now (the precondition of its change), and what the
            // source holds.
            let (expected, incoming) = match dir {
                Direction::Merge => (&d.parent, &d.fork),
                Direction::Rebase => (&d.fork, &d.parent),
            };
            // The decision in terms of the target: take the source's state, keep its own,
            // or write these bytes.
            let take_source = match (&decision, dir) {
                (Decision::TakeFork, Direction::Merge)
                | (Decision::KeepParent, Direction::Rebase) => true,
                (Decision::Write(_), _) => false,
                _ => {
                    if dir == Direction::Merge && own {
                        align.push(d.path.clone());
                    }
                    continue;
                }
            };
            // A rebase needs no change where the fork holds nothing of its own (the new
            // base brings the parent's state), nor where both sides hold the same.
            if dir == Direction::Rebase
                && (!own || (take_source && !d.conflict && d.fork_change != Change::Unchanged))
            {
                continue;
            }
            let op = if let Decision::Write(content) = decision {
                if dir == Direction::Merge {
                    align.push(d.path.clone());
                }
                let content_type = [&d.parent, &d.fork, &d.base]
                    .into_iter()
                    .flatten()
                    .map(|s| s.content_type.clone())
                    .next()
                    .unwrap_or_else(|| "text/plain".to_owned());
                ParentOp::Put {
                    path: d.path.clone(),
                    content,
                    content_type,
                }
            } else {
                debug_assert!(take_source);
                match incoming {
                    Some(_) => {
                        let (h, content) = self
                            .live_bytes(source, &d.path)
                            .await?
                            .ok_or_else(|| WorkspaceError::internal("source file vanished"))?;
                        ParentOp::Put {
                            path: d.path.clone(),
                            content,
                            content_type: h.content_type,
                        }
                    }
                    None if expected.is_some() => ParentOp::Delete {
                        path: d.path.clone(),
                    },
                    None => continue,
                }
            };
            ops.push((op, expected.clone()));
        }
        if !conflicts.is_empty() {
            return Ok(MergeOutcome::Conflicts(conflicts));
        }
        let merge_id = match &req.idempotency_key {
            Some(_) => sha256_hex(fingerprint.as_bytes())[..32].to_owned(),
            None => self.ids.new_id(),
        };
        if req.dry_run {
            return Ok(MergeOutcome::Merged(MergeReport {
                merge_id,
                fork_id: scope.workspace.to_string(),
                applied: ops.iter().map(|(op, _)| op.planned()).collect(),
                dry_run: true,
                base_snapshot: record.base_snapshot,
                base_created_at: record.base_created_at,
                fork_discarded: false,
            }));
        }

        // 2. Apply: one commit where the store takes it, else a durable plan in batches.
        // Every version the merge writes (and its event) names the merge and the fork.
        let origin = MergeOrigin {
            merge_id: merge_id.clone(),
            fork_id: scope.workspace.to_string(),
        };
        let target_who = Self::parent_identity(who, target);
        let align: Vec<(String, Option<Head>)> = align
            .into_iter()
            .map(|path| {
                let own = sides.own.get(&path).cloned();
                (path, own)
            })
            .collect();
        let slot = apply::PlanSlot {
            key: req
                .idempotency_key
                .clone()
                .unwrap_or_else(|| merge_id.clone()),
            merge_id: merge_id.clone(),
            fingerprint: fingerprint.clone(),
            align: align.clone(),
        };
        let (applied, planned) = self.apply_merge(&target_who, ops, &origin, slot).await?;
        let done = Combined {
            merge_id,
            origin,
            applied,
            align,
            planned,
            target: target.clone(),
        };
        self.finish_combine(who, &scope, &record, &parent, &req, &fingerprint, done)
            .await
    }

    /// Steps 3-5 of a merge whose changes are applied: align the fork, move its base (or
    /// discard it), record the report for a retry, end the plan if there was one.
    #[allow(clippy::too_many_arguments)]
    async fn finish_combine(
        &self,
        who: &Identity,
        scope: &Scope,
        record: &ForkRecord,
        parent: &Scope,
        req: &MergeRequest,
        fingerprint: &str,
        done: Combined,
    ) -> Result<MergeOutcome> {
        // 3. Align the fork where it differs from the merged result.
        let fork_who = Self::parent_identity(who, scope);
        for (path, own) in &done.align {
            self.align(&fork_who, parent, path, own.as_ref(), &done.origin)
                .await?;
        }

        // 4. Move the base (or discard the fork).
        let (base_snapshot, base_created_at, discarded) = if req.discard_fork {
            self.discard(who, scope, record).await?;
            (record.base_snapshot.clone(), record.base_created_at, true)
        } else {
            let moved = self.move_base(who, scope, record).await?;
            (moved.base_snapshot, moved.base_created_at, false)
        };
        if done.target == *parent {
            // A merge (a rebase writes to the fork).
            let written = u64::try_from(done.applied.len()).unwrap_or(u64::MAX);
            crate::metrics::add(crate::metrics::Counter::MergeFiles, written);
        }
        let report = MergeReport {
            merge_id: done.merge_id.clone(),
            fork_id: scope.workspace.to_string(),
            applied: done.applied,
            dry_run: false,
            base_snapshot,
            base_created_at,
            fork_discarded: discarded,
        };
        // 5. Remember the answer for a retry.
        if let Some(key) = &req.idempotency_key {
            let value =
                serde_json::to_string(&(fingerprint, &report)).map_err(WorkspaceError::internal)?;
            self.meta
                .put_record(
                    &who.scope,
                    MERGE_RECORD_KIND,
                    key,
                    &StoredRecord {
                        value,
                        expires_at: self.clock.now_ms().saturating_add(IDEMPOTENCY_TTL_MS),
                    },
                )
                .await?;
        }
        if done.planned {
            // The merge is complete and its report recorded: its plan is done.
            let key = req.idempotency_key.as_deref().unwrap_or(&done.merge_id);
            self.end_plan(&done.target, key).await;
        }
        Ok(MergeOutcome::Merged(report))
    }

    fn merge_fingerprint(&self, id: &str, req: &MergeRequest, dir: Direction) -> String {
        let resolutions: Vec<String> = req
            .resolutions
            .iter()
            .map(|(p, r)| match r {
                Resolution::Fork => format!("{p}=fork"),
                Resolution::Parent => format!("{p}=parent"),
                Resolution::Content(c) => format!("{p}={}", sha256_hex(c)),
            })
            .collect();
        sha256_hex(
            format!(
                "{dir:?}\n{id}\n{:?}\n{}\n{}\n{}",
                req.strategy,
                resolutions.join("\n"),
                req.dry_run,
                req.discard_fork
            )
            .as_bytes(),
        )
    }

    /// The recorded answer of a merge retried with the same `Idempotency-Key`.
    async fn merge_replay(
        &self,
        who: &Identity,
        req: &MergeRequest,
        fingerprint: &str,
    ) -> Result<Option<MergeReport>> {
        let Some(key) = req.idempotency_key.as_deref().filter(|_| !req.dry_run) else {
            return Ok(None);
        };
        let now = self.clock.now_ms();
        let Some(rec) = self
            .meta
            .record(&who.scope, MERGE_RECORD_KIND, key)
            .await?
            .filter(|r| r.expires_at > now)
        else {
            return Ok(None);
        };
        let (recorded, report): (String, MergeReport) =
            serde_json::from_str(&rec.value).map_err(WorkspaceError::internal)?;
        if recorded != fingerprint {
            return Err(WorkspaceError::Conflict {
                message: format!(
                    "Idempotency-Key {key} was already used for a different merge; use a new key"
                ),
                current_version: 0,
            });
        }
        Ok(Some(report))
    }

    /// Both sides' bytes at a path, and their texts merged line by line over the base's
    /// when all three are text.
    async fn text_merge(
        &self,
        fork: &Scope,
        parent: &Scope,
        base: &BTreeMap<String, SnapshotFile>,
        d: &PathDiff,
    ) -> Result<TextMerge> {
        let (f, p) = (
            self.live_bytes(fork, &d.path).await?,
            self.live_bytes(parent, &d.path).await?,
        );
        let mut binary = [&f, &p]
            .into_iter()
            .flatten()
            .any(|(_, bytes)| text::as_text(bytes).is_none());
        let merged = match (&f, &p) {
            (Some((_, f)), Some((_, p))) if !binary => {
                let b = match base.get(&d.path) {
                    Some(file) => self.bytes_of(file.body.as_ref(), &d.path).await?,
                    None => Vec::new(),
                };
                match (text::as_text(&b), text::as_text(p), text::as_text(f)) {
                    (Some(bt), Some(pt), Some(ft)) => Some(text::merge(bt, pt, ft)),
                    _ => {
                        binary = true;
                        None
                    }
                }
            }
            _ => None,
        };
        Ok(TextMerge { binary, merged })
    }

    /// The merged text of a path both sides changed; the conflict report when it is not
    /// all text or does not merge cleanly.
    async fn merge_text(
        &self,
        fork: &Scope,
        parent: &Scope,
        base: &BTreeMap<String, SnapshotFile>,
        d: &PathDiff,
    ) -> Result<std::result::Result<String, ConflictReport>> {
        let m = self.text_merge(fork, parent, base, d).await?;
        Ok(match m.merged {
            Some(Ok(text)) => Ok(text),
            other => Err(ConflictReport {
                diff: d.clone(),
                binary: m.binary,
                merged: other.and_then(std::result::Result::err),
            }),
        })
    }

    /// What a conflict report says of a path: whether it is binary, and the texts merged
    /// (with markers where they overlap) when both sides are live text.
    async fn conflict_report(
        &self,
        fork: &Scope,
        parent: &Scope,
        base: &BTreeMap<String, SnapshotFile>,
        d: &PathDiff,
    ) -> Result<ConflictReport> {
        let m = self.text_merge(fork, parent, base, d).await?;
        Ok(ConflictReport {
            diff: d.clone(),
            binary: m.binary,
            merged: m.merged.map(|r| r.unwrap_or_else(|marked| marked)),
        })
    }

    /// Makes the fork's own file at `path` what the parent now holds, unless the fork
    /// changed it since it was compared (that change stays, for the next merge).
    async fn align(
        &self,
        fork_who: &Identity,
        parent: &Scope,
        path: &str,
        own: Option<&Head>,
        origin: &MergeOrigin,
    ) -> Result<()> {
        let Some(own) = own else {
            return Ok(()); // the fork reads it through from its new base
        };
        let fp = FilePath::parse(path)?;
        let result = match self.live_bytes(parent, path).await? {
            Some((h, content)) => {
                if own.is_live() && own.sha256 == h.sha256 && own.content_type == h.content_type {
                    return Ok(());
                }
                let req = PutRequest {
                    path: Some(fp),
                    content,
                    content_type: Some(h.content_type),
                    if_match: own.is_live().then(|| own.etag.clone()),
                    if_none_match_any: !own.is_live(),
                    idempotency_key: None,
                    merge: Some(origin.clone()),
                };
                self.put_within(
                    fork_who,
                    (
                        self.limits.max_upload_bytes.max(self.limits.max_file_bytes),
                        "maxUploadBytes",
                    ),
                    req,
                )
                .await
                .map(|_| ())
            }
            None if own.is_live() => {
                self.delete_as(fork_who, &fp, Some(&own.etag), Some(origin))
                    .await
            }
            None => Ok(()),
        };
        match result {
            Err(WorkspaceError::Conflict { .. }) => {
                tracing::info!(%path, "fork changed during the merge; its change stays");
                Ok(())
            }
            other => other,
        }
    }

    /// Takes a new base of the parent as it is now, points the fork at it, and ends the
    /// old base's pins.
    async fn move_base(
        &self,
        who: &Identity,
        scope: &Scope,
        record: &ForkRecord,
    ) -> Result<ForkRecord> {
        let suffix = suffix_of_base(&record.base_snapshot)
            .ok_or_else(|| WorkspaceError::internal("fork base id"))?
            .to_owned();
        let now = self.clock.now_ms();
        let generation = record.generation + 1;
        let id = base_snapshot_id(record.created_at, &suffix, generation);
        let moved = ForkRecord {
            base_snapshot: id,
            base_created_at: now,
            generation,
            base_files: Some(self.meta.live_count(&who.scope).await?),
            ..record.clone()
        };
        // The new base and the record that names it in one step.
        self.take_base(who, scope, &moved).await?;
        match self.delete_snapshot(who, &record.base_snapshot).await {
            Ok(()) | Err(WorkspaceError::NotFound(_)) => {}
            Err(e) => {
                tracing::warn!(error = %e, "old fork base not deleted; its pins end at expiry")
            }
        }
        Ok(moved)
    }
}
