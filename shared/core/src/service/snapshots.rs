//! Run snapshots (RFC 0059 §D): `{path → version}` of every live file, pinned so that
//! retention never breaks a live snapshot.
//!
//! Protocol (the same on every adapter; the store only needs compare-and-swap on heads):
//! 1. list every live head (path, seq, pin_rev);
//! 2. for each, add a pin `{seq, snapshot, until}` to the head's `pins` with `set_pins`,
//!    conditioned on the head still being exactly what was listed (seq *and* pin_rev).
//!    If a commit got in between, re-read the head and pin the listed seq again, now also
//!    conditioned on its version item still existing (`must_exist`);
//! 3. store the snapshot record (only then can anyone read through it).
//!
//! Why that is safe against a concurrent commit that prunes: every commit also
//! compare-and-swaps the head on (seq, pin_rev) and computes what to prune from the pins
//! of the head it read. Either the pin lands first (the commit's swap then fails, it
//! re-reads the head, sees the pin and keeps the item), or the commit lands first (the
//! pin's swap then fails, and the retry's `must_exist` check refuses an item the commit
//! pruned). A pin never names a pruned item, and no prune removes a pinned one.
//! On DynamoDB the S3 body goes only when its version item is deleted (the stream
//! publisher deletes it on REMOVE), so a kept item keeps its body.
//!
//! When a snapshot expires or is deleted (deletion sets its pins' `until` to 0), the next
//! commit to each path releases the items only it held (`Commit::released`).

use super::pins::{end_pins, pin_file, Window, PIN_ATTEMPTS};
use super::*;
use crate::model::{Snapshot, SnapshotFile, SnapshotInfo, NEVER};

/// Default life of a snapshot: 7 days.
pub const DEFAULT_SNAPSHOT_TTL_MS: Millis = 7 * 24 * 60 * 60 * 1000;
/// Live pins one head may carry (each snapshot adds one per file): bounds the head item.
const MAX_PINS_PER_FILE: usize = 100;
/// Largest snapshot file list (JSON): a DynamoDB item holds 400 KB with its other fields.
pub const MAX_SNAPSHOT_RECORD_BYTES: usize = 350_000;
/// Files pinned side by side.
const PIN_CONCURRENCY: usize = 16;
/// Files a snapshot's creation answers with at most (the first, in path order); one more
/// in what the service returns tells the caller that more follow.
pub const SNAPSHOT_ANSWER_FILES: usize = 100;
/// Largest page of a snapshot listing, and its default.
pub const MAX_SNAPSHOTS_PAGE: usize = 100;

/// Accepted snapshot ids: what `IdSource` hands out (hex), bounded; a run's id also ends
/// with its workspace's id, which in a fork holds a `~` (`service/runs.rs`).
pub(super) fn check_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '~'));
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::validation(
            "snapshot id must be 1-128 letters, digits, '-', '_' or '~'",
        ))
    }
}

fn pinned_body_missing(id: &str, f: &SnapshotFile) -> WorkspaceError {
    WorkspaceError::internal(format!(
        "version item {} of {} pinned by snapshot {id} is missing",
        f.seq, f.path
    ))
}

fn unknown(id: &str) -> WorkspaceError {
    WorkspaceError::not_found(format!(
        "no snapshot {id} in this workspace (or it expired)"
    ))
}

/// A pinned snapshot's file: the head without its lineage and body (reads go through the
/// pinned version item).
fn snapshot_file(h: &Head) -> SnapshotFile {
    SnapshotFile {
        lineage: String::new(),
        body: None,
        ..SnapshotFile::of_head(h)
    }
}

/// A fork base's file: with the lineage and body a fork reads it by.
fn base_file(h: &Head) -> SnapshotFile {
    SnapshotFile::of_head(h)
}

/// What a plain snapshot's id starts with (runs' start with `run_`): creation time first,
/// so a listing is a range read, newest first.
pub const SNAPSHOT_ID_PREFIX: &str = "s";
/// Longest checkpoint label.
pub const MAX_LABEL_LEN: usize = 128;

/// How a snapshot is taken: a checkpoint has a label, and may be kept until deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotOptions {
    pub label: Option<String>,
    pub keep: bool,
    /// How long its pins hold (default: the service's snapshot TTL).
    pub ttl_ms: Option<Millis>,
    /// A fork's base: each file also records its lineage and body (`crate::forks`).
    pub fork_base: bool,
}

pub(super) fn check_label(label: &str) -> Result<()> {
    if label.is_empty() || label.len() > MAX_LABEL_LEN || label.chars().any(char::is_control) {
        return Err(WorkspaceError::validation(format!(
            "label must be 1-{MAX_LABEL_LEN} bytes of text without control characters"
        )));
    }
    Ok(())
}

/// Where a kept snapshot's copy of a file's body lives: beside the file bodies, never
/// taken for one (the sweeper and retention only look under `files/`).
fn kept_key(scope: &Scope, id: &str, path: &str) -> String {
    format!("{}kept/{id}/{path}", scope.key_prefix())
}

impl WorkspaceService {
    /// Every live head of the scope, sorted by path.
    pub(super) async fn all_live(&self, scope: &Scope) -> Result<Vec<Head>> {
        let mut out: Vec<Head> = Vec::new();
        loop {
            let after = out.last().map(|h| FilePath::parse(&h.path)).transpose()?;
            let page = self
                .meta
                .list_live(
                    scope,
                    &PathPrefix::default(),
                    after.as_ref(),
                    MAX_LIST_LIMIT,
                )
                .await?;
            let done = page.len() < MAX_LIST_LIMIT;
            out.extend(page);
            if done {
                return Ok(out);
            }
        }
    }

    /// Takes a snapshot of every live file.
    pub async fn create_snapshot(&self, who: &Identity) -> Result<Snapshot> {
        self.create_checkpoint(who, SnapshotOptions::default())
            .await
    }

    /// Takes a snapshot of every live file, labelled and kept as `options` say.
    pub async fn create_checkpoint(
        &self,
        who: &Identity,
        options: SnapshotOptions,
    ) -> Result<Snapshot> {
        if let Some(label) = &options.label {
            check_label(label)?;
        }
        let id = format!(
            "{SNAPSHOT_ID_PREFIX}{:013}-{}",
            self.clock.now_ms(),
            self.ids.new_id()
        );
        self.take_snapshot(who, id, None, options).await
    }

    /// Takes snapshot `id` of every live file (a run's, when `workflow_id` is given).
    pub(super) async fn take_snapshot(
        &self,
        who: &Identity,
        id: String,
        workflow_id: Option<String>,
        options: SnapshotOptions,
    ) -> Result<Snapshot> {
        let scope = &who.scope;
        let now = self.clock.now_ms();
        let until = now.saturating_add(options.ttl_ms.unwrap_or(self.snapshot_ttl_ms));
        if !options.keep && !options.fork_base {
            // A point in history: one registry swap with the record, whatever the files.
            let mut covers = who.paths.readable_globs();
            covers.sort();
            let snapshot = Snapshot {
                id,
                created_at: now,
                expires_at: until,
                files: Vec::new(),
                principal: workflow_id.as_ref().map(|_| who.principal.clone()),
                workflow_id,
                label: options.label,
                keep: false,
                covers,
                point: None,
            };
            let mut taken = self.take_point(scope, snapshot).await?;
            // The answer shows the first files as the point holds them (one page of the
            // listing, however many there are: `GET` lists them all).
            let covers = super::points::snapshot_covers(&taken)?;
            let keep = |p: &str| covers.as_ref().is_none_or(|c| c.can_read(p));
            let rev = taken.point.unwrap_or_default();
            let (files, _) = self
                .list_at(
                    scope,
                    rev,
                    &PathPrefix::default(),
                    None,
                    SNAPSHOT_ANSWER_FILES + 1,
                    &keep,
                )
                .await?;
            taken.files = files;
            return Ok(taken);
        }
        let file_of = if options.fork_base {
            base_file
        } else {
            snapshot_file
        };
        // A path-scoped key's snapshot holds only the paths it may read, and says so.
        let heads: Vec<Head> = self
            .all_live(scope)
            .await?
            .into_iter()
            .filter(|h| who.paths.can_read(&h.path))
            .collect();
        let mut covers = who.paths.readable_globs();
        covers.sort();
        // The record is one item on DynamoDB (400 KB): refuse before pinning anything.
        let mut listed: Vec<SnapshotFile> = heads.iter().map(file_of).collect();
        if options.keep {
            // Room for each file's copy, as it will be recorded.
            for f in &mut listed {
                f.kept = Some(BodyRef::stored(
                    kept_key(scope, &id, &f.path),
                    "0".repeat(64),
                ));
            }
        }
        let record_bytes = serde_json::to_vec(&listed).map_or(usize::MAX, |v| v.len());
        // A fork's base may be split over several items (DynamoDB), up to its own bound.
        let most = if options.fork_base {
            crate::forks::MAX_FORK_BASE_BYTES
        } else {
            MAX_SNAPSHOT_RECORD_BYTES
        };
        if record_bytes > most {
            return Err(WorkspaceError::TooLarge {
                message: format!(
                    "a snapshot of {} files needs a {record_bytes}-byte record; at most \
                     {most} bytes fit (shorter paths or fewer files)",
                    heads.len()
                ),
                limit: most as u64,
            });
        }
        if let Some(h) = heads
            .iter()
            .find(|h| h.pins.iter().filter(|p| p.until > now).count() >= MAX_PINS_PER_FILE)
        {
            return Err(WorkspaceError::Conflict {
                message: format!(
                    "{} is already held by {MAX_PINS_PER_FILE} live snapshots; delete some first",
                    h.path
                ),
                current_version: h.version,
            });
        }
        let window = Window {
            max_versions: self.limits.max_versions,
        };
        let mut files = Vec::with_capacity(heads.len());
        for chunk in heads.chunks(PIN_CONCURRENCY) {
            let mut tasks = tokio::task::JoinSet::new();
            for h in chunk {
                tasks.spawn(pin_file(
                    self.meta.clone(),
                    scope.clone(),
                    h.clone(),
                    id.clone(),
                    (now, until),
                    window,
                ));
            }
            while let Some(done) = tasks.join_next().await {
                let pinned = done.map_err(WorkspaceError::internal)??;
                if let Some(h) = pinned {
                    files.push(file_of(&h));
                }
            }
        }
        // Files whose listed version was pruned before its pin landed (many writes in the
        // meantime): take them at their current state, pinned the same way.
        let listed: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let missing: Vec<Head> = heads
            .iter()
            .filter(|h| !listed.contains(&h.path.as_str()))
            .cloned()
            .collect();
        for h in missing {
            let path = FilePath::parse(&h.path)?;
            for _ in 0..PIN_ATTEMPTS {
                let head = self.meta.head(scope, &path).await?;
                let Some(current) = live(&head).cloned() else {
                    break; // deleted since: not in the snapshot
                };
                let pinned = pin_file(
                    self.meta.clone(),
                    scope.clone(),
                    current,
                    id.clone(),
                    (now, until),
                    window,
                )
                .await?;
                if let Some(p) = pinned {
                    files.push(file_of(&p));
                    break;
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if options.keep {
            // The pins hold the versions while they are copied; the copies then hold them
            // for as long as the snapshot lives, whatever any store's retention does.
            if let Err(e) = self.keep_copies(scope, &id, &mut files).await {
                self.drop_copies(&files).await;
                return Err(e);
            }
        }
        let snapshot = Snapshot {
            id,
            created_at: now,
            expires_at: if options.keep { NEVER } else { until },
            files,
            // A run records who started it (its owner); a plain snapshot needs no owner.
            principal: workflow_id.as_ref().map(|_| who.principal.clone()),
            workflow_id,
            label: options.label,
            keep: options.keep,
            covers,
            point: None,
        };
        if let Err(e) = self.meta.put_snapshot(scope, &snapshot).await {
            self.drop_copies(&snapshot.files).await;
            return Err(e);
        }
        Ok(snapshot)
    }

    /// Copies each pinned body to the snapshot's own key, one at a time.
    async fn keep_copies(&self, scope: &Scope, id: &str, files: &mut [SnapshotFile]) -> Result<()> {
        for f in files.iter_mut() {
            let bytes = self.snapshot_bytes(scope, id, f).await?;
            let key = kept_key(scope, id, &f.path);
            // Always in the body store, however small: a kept copy outlives every version
            // item, and inline it would fill the checkpoint's record.
            f.kept = Some(
                self.bodies
                    .store()
                    .put(&key, bytes, &f.content_type)
                    .await?,
            );
        }
        Ok(())
    }

    /// Removes a kept snapshot's copies (best effort: each is under the scope's prefix, so
    /// erasing the workspace removes any left).
    async fn drop_copies(&self, files: &[SnapshotFile]) {
        for body in files.iter().filter_map(|f| f.kept.as_ref()) {
            if let Err(e) = self.bodies.delete(body).await {
                tracing::warn!(error = %e, key = %body.key, "kept copy not removed");
            }
        }
    }

    /// Live checkpoints (plain snapshots, not runs) of this scope, newest first, `limit` at
    /// most (default and cap [`MAX_SNAPSHOTS_PAGE`]), those taken before `before`.
    pub async fn list_checkpoints(
        &self,
        scope: &Scope,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<(Vec<SnapshotInfo>, Option<String>)> {
        let limit = crate::limits::page_limit(limit, MAX_SNAPSHOTS_PAGE, MAX_SNAPSHOTS_PAGE)?;
        if let Some(b) = before {
            check_id(b)?;
        }
        let page = self
            .meta
            .list_snapshots(scope, SNAPSHOT_ID_PREFIX, before, limit)
            .await?;
        let next = (page.len() == limit)
            .then(|| page.last().map(|s| s.id.clone()))
            .flatten();
        let now = self.clock.now_ms();
        Ok((
            page.into_iter().filter(|s| s.expires_at > now).collect(),
            next,
        ))
    }

    /// A live snapshot of the caller's scope, holding only the files the caller may read;
    /// unknown, expired and other scopes' ids are 404.
    pub async fn get_snapshot(&self, who: &Identity, id: &str) -> Result<Snapshot> {
        let mut snapshot = self.snapshot_record(&who.scope, id).await?;
        snapshot.files.retain(|f| who.paths.can_read(&f.path));
        Ok(snapshot)
    }

    /// A live snapshot record, whole, with every file (a point's read at its point: for
    /// the service's own use, never answered as is to a path-scoped caller).
    pub(super) async fn snapshot_record(&self, scope: &Scope, id: &str) -> Result<Snapshot> {
        let mut snapshot = self.snapshot_header(scope, id).await?;
        if snapshot.point.is_some() {
            snapshot.files = self.files_at(scope, &snapshot).await?;
        }
        Ok(snapshot)
    }

    /// A live snapshot record as stored (a point's without its files).
    pub(super) async fn snapshot_header(&self, scope: &Scope, id: &str) -> Result<Snapshot> {
        check_id(id)?;
        match self.meta.snapshot(scope, id).await? {
            Some(s) if s.expires_at > self.clock.now_ms() => Ok(s),
            _ => Err(unknown(id)),
        }
    }

    /// Deletes a snapshot: reads through it are 404 at once, and the versions only it held
    /// are released by the next commit to each path.
    pub async fn delete_snapshot(&self, who: &Identity, id: &str) -> Result<()> {
        let snapshot = match self.snapshot_header(&who.scope, id).await {
            // A deletion stopped after its record went: its point still holds what it
            // read. Ending it finishes the deletion (the record said nothing more).
            Err(WorkspaceError::NotFound(_)) if who.paths.is_whole() => {
                let now = self.clock.now_ms();
                let points = self.meta.points(&who.scope).await?;
                if !points.live.iter().any(|p| p.id == id && p.until > now) {
                    return Err(unknown(id));
                }
                return self.end_point(&who.scope, id).await;
            }
            other => other?,
        };
        // A path-scoped key deletes only what it could have taken itself: a snapshot taken
        // through globs it holds too. Decided on the record's globs, never on its files,
        // so the answer says nothing about paths the key cannot see.
        let own = who.paths.readable_globs();
        if !who.paths.is_whole()
            && (snapshot.covers.is_empty() || !snapshot.covers.iter().all(|g| own.contains(g)))
        {
            return Err(WorkspaceError::Forbidden(format!(
                "snapshot {id} was taken by a key that reaches other paths; a key limited to \
                 paths ({}) may delete only snapshots taken through its own globs",
                own.join(", ")
            )));
        }
        if snapshot.point.is_some() {
            // The record goes first: stopped before its point ends, the point only holds
            // what it read until its expiry; the other way round, a read could find the
            // record with what it saw already released.
            if !self.meta.delete_snapshot(&who.scope, id).await? {
                return Err(unknown(id));
            }
            return self.end_point(&who.scope, id).await;
        }
        if !self.meta.delete_snapshot(&who.scope, id).await? {
            return Err(unknown(id));
        }
        self.drop_copies(&snapshot.files).await;
        let now = self.clock.now_ms();
        let window = Window {
            max_versions: self.limits.max_versions,
        };
        // Best effort: a pin left behind still ends at the snapshot's expiry.
        for chunk in snapshot.files.chunks(PIN_CONCURRENCY) {
            let mut tasks = tokio::task::JoinSet::new();
            for f in chunk {
                tasks.spawn(end_pins(
                    self.meta.clone(),
                    who.scope.clone(),
                    f.path.clone(),
                    id.to_owned(),
                    now,
                    window,
                ));
            }
            while let Some(done) = tasks.join_next().await {
                if let Err(e) = done.map_err(WorkspaceError::internal).and_then(|r| r) {
                    tracing::warn!(error = %e, snapshot = id, "pin not released; it ends at expiry");
                }
            }
        }
        Ok(())
    }

    /// Lists the files of a snapshot under `prefix`, a page at a time.
    pub async fn list_snapshot(
        &self,
        who: &Identity,
        id: &str,
        prefix: &PathPrefix,
        limit: Option<usize>,
        after: Option<&FilePath>,
    ) -> Result<FilePage> {
        let limit = list_limit(limit)?;
        let header = self.snapshot_header(&who.scope, id).await?;
        if let Some(rev) = header.point {
            let covers = super::points::snapshot_covers(&header)?;
            let keep =
                |p: &str| who.paths.can_read(p) && covers.as_ref().is_none_or(|c| c.can_read(p));
            let (files, more) = self
                .list_at(&who.scope, rev, prefix, after, limit, &keep)
                .await?;
            let next_after = if more {
                files.last().and_then(|f| FilePath::parse(&f.path).ok())
            } else {
                None
            };
            return Ok(FilePage {
                files: files.iter().map(SnapshotFile::meta).collect(),
                next_after,
            });
        }
        let snapshot = self.get_snapshot(who, id).await?;
        let mut rows: Vec<&SnapshotFile> = snapshot
            .files
            .iter()
            .filter(|f| f.path.starts_with(prefix.as_str()))
            .filter(|f| after.is_none_or(|a| f.path.as_str() > a.as_str()))
            .take(limit + 1)
            .collect();
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next_after = if more {
            rows.last().and_then(|f| FilePath::parse(&f.path).ok())
        } else {
            None
        };
        Ok(FilePage {
            files: rows.iter().map(|f| f.meta()).collect(),
            next_after,
        })
    }

    /// Reads a file as the snapshot pinned it, inline (413 over `maxFileBytes`).
    pub async fn get_in_snapshot(
        &self,
        who: &Identity,
        id: &str,
        path: &FilePath,
    ) -> Result<StoredFile> {
        self.read_in_snapshot(who, id, path, false).await?.inline()
    }

    /// Like [`Self::get_in_snapshot`], but a file over `maxFileBytes` comes as a URL.
    pub async fn open_in_snapshot(
        &self,
        who: &Identity,
        id: &str,
        path: &FilePath,
    ) -> Result<FileRead> {
        self.read_in_snapshot(who, id, path, true).await
    }

    async fn read_in_snapshot(
        &self,
        who: &Identity,
        id: &str,
        path: &FilePath,
        allow_download: bool,
    ) -> Result<FileRead> {
        who.paths.check_read(path)?;
        let scope = &who.scope;
        let not_in = || WorkspaceError::not_found(format!("{path} is not in snapshot {id}"));
        let header = self.snapshot_header(scope, id).await?;
        let found;
        let file = match header.point {
            Some(rev) => {
                let covered = super::points::snapshot_covers(&header)?
                    .is_none_or(|c| c.can_read(path.as_str()));
                found = if covered {
                    self.file_at(scope, path, rev).await?
                } else {
                    None
                };
                found.as_ref().ok_or_else(not_in)?
            }
            None => header
                .files
                .iter()
                .find(|f| f.path == path.as_str())
                .ok_or_else(not_in)?,
        };
        let body = self.snapshot_body(scope, id, file).await?;
        self.deliver(file.meta(), &body, allow_download)
            .await?
            .ok_or_else(|| pinned_body_missing(id, file))
    }

    /// Where a snapshot file's content is: its kept copy, or the pinned version item's
    /// body.
    async fn snapshot_body(&self, scope: &Scope, id: &str, file: &SnapshotFile) -> Result<BodyRef> {
        super::erase::check_not_erased(file, id)?;
        if let Some(kept) = &file.kept {
            return Ok(kept.clone());
        }
        if let Some(body) = &file.body {
            // Read at a point (or a fork base's file): the version's own body.
            return Ok(body.clone());
        }
        let path = FilePath::parse(&file.path)?;
        self.meta
            .version(scope, &path, file.seq)
            .await?
            .and_then(|item| item.body)
            .ok_or_else(|| pinned_body_missing(id, file))
    }

    /// A snapshot file's content, whole.
    pub(super) async fn snapshot_bytes(
        &self,
        scope: &Scope,
        id: &str,
        file: &SnapshotFile,
    ) -> Result<Vec<u8>> {
        let body = self.snapshot_body(scope, id, file).await?;
        self.bodies
            .get(&body)
            .await?
            .ok_or_else(|| pinned_body_missing(id, file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_ids_are_checked() {
        assert!(check_id("0123abcdef").is_ok());
        // A run of a fork names the fork's workspace, `~` and all.
        assert!(check_id("run_0000000000001_0123456789abcdef_main~0123456789abcdef").is_ok());
        for bad in ["", "a/b", "..", "a%2F", "a.b", &"x".repeat(129)] {
            assert!(check_id(bad).is_err(), "{bad}");
        }
    }
}
