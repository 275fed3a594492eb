//! Rolling a workspace back to a snapshot (a checkpoint or a run's): every file that
//! differs is written back as a new version, every file created since is deleted, and
//! unchanged files are left alone, each change through the ordinary write path (quotas,
//! redaction, events, the caller as principal).
//!
//! What is atomic: each file's change (one commit, on every backend); the rollback as a
//! whole is not. Stopped midway, some files are back and the rest are not; running it again
//! finishes it, because it is planned from what the workspace holds now (a file already
//! back is unchanged, a file already deleted is gone). Each write or delete is conditioned
//! on the version it planned against, so a concurrent writer is never overwritten blindly:
//! that file is planned again.

use super::*;
use crate::globs::{GlobSyntax, Globs};
use crate::model::SnapshotFile;
use crate::path_scope::PathScope;
use crate::ports::StoredRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Rounds of planning one file again when a concurrent writer got in first.
const RESTORE_ATTEMPTS: usize = 8;
/// How long a rollback's report is kept for its `Idempotency-Key`.
const RESTORE_RECORD_MS: Millis = IDEMPOTENCY_TTL_MS;
/// Most globs in one rollback.
pub const MAX_RESTORE_GLOBS: usize = 100;

/// A rollback request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreRequest {
    /// Only paths matching one of these globs (all when empty).
    pub paths: Vec<String>,
    /// Refuse (409) if anything matching changed since this snapshot was taken (its id)
    /// or since this instant.
    pub if_unchanged_since: Option<Since>,
    pub idempotency_key: Option<String>,
}

/// A precondition's point in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    Snapshot(String),
    Time(Millis),
}

/// What a rollback did, path by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    pub restored: Vec<String>,
    pub deleted: Vec<String>,
    pub unchanged: Vec<String>,
}

fn matcher(globs: &[String]) -> Result<Option<Globs>> {
    if globs.is_empty() {
        return Ok(None);
    }
    if globs.len() > MAX_RESTORE_GLOBS {
        return Err(WorkspaceError::validation(format!(
            "at most {MAX_RESTORE_GLOBS} globs in paths"
        )));
    }
    Globs::new(globs.iter().map(String::as_str), GlobSyntax::DEFAULT)
        .map(Some)
        .map_err(|e| {
            WorkspaceError::validation(format!(
                "paths: '{}' is not a glob: {}",
                e.glob.escape_debug(),
                e.reason
            ))
        })
}

fn matches(set: &Option<Globs>, path: &str) -> bool {
    set.as_ref().is_none_or(|s| s.is_match(path))
}

/// What the file at `path` needs: nothing, its snapshot content back, or to go.
enum Plan {
    Unchanged,
    Restore { over: Option<String> },
    Delete { etag: String },
}

fn plan(want: Option<&SnapshotFile>, have: Option<&Head>, want_sha: &str) -> Plan {
    match (want, have) {
        (None, None) => Plan::Unchanged,
        (None, Some(h)) => Plan::Delete {
            etag: h.etag.clone(),
        },
        (Some(_), None) => Plan::Restore { over: None },
        (Some(w), Some(h)) if h.sha256 == want_sha && h.content_type == w.content_type => {
            Plan::Unchanged
        }
        (Some(_), Some(h)) => Plan::Restore {
            over: Some(h.etag.clone()),
        },
    }
}

impl WorkspaceService {
    /// Brings the workspace (the paths `req.paths` matches) back to snapshot `id`.
    pub async fn restore_snapshot(
        &self,
        who: &Identity,
        id: &str,
        req: RestoreRequest,
    ) -> Result<RestoreReport> {
        let scope = &who.scope;
        let set = matcher(&req.paths)?;
        // The caller's path scope is part of the request: a report is never replayed to a
        // key that could not have made it.
        let fingerprint = format!(
            "{id}\n{:?}\n{:?}\n{}",
            req.paths,
            req.if_unchanged_since,
            who.paths.to_claim()
        );
        if let Some(key) = &req.idempotency_key {
            check_header_value("Idempotency-Key", key)?;
            if let Some(done) = self.meta.record(scope, "restore", key).await? {
                if done.expires_at > self.clock.now_ms() {
                    let (seen, report): (String, RestoreReport) =
                        serde_json::from_str(&done.value).map_err(WorkspaceError::internal)?;
                    if seen != fingerprint {
                        return Err(WorkspaceError::Conflict {
                            message: format!(
                                "Idempotency-Key {key} was already used for a different rollback; use a new key"
                            ),
                            current_version: 0,
                        });
                    }
                    return Ok(report);
                }
            }
        }
        let snapshot = self.snapshot_record(scope, id).await?;
        // What the rollback may touch: paths the caller may write, that the snapshot covers
        // (a path-scoped key's snapshot says nothing of other paths, so they stay), and
        // that the request's globs select.
        let covered = PathScope::new(snapshot.covers.clone(), Vec::new())?;
        let in_reach = |p: &str| who.paths.can_write(p) && covered.can_read(p) && matches(&set, p);
        let wanted: BTreeMap<&str, &SnapshotFile> = snapshot
            .files
            .iter()
            .filter(|f| in_reach(&f.path))
            .map(|f| (f.path.as_str(), f))
            .collect();
        // A file whose snapshot version was erased cannot come back: it is left as it is.
        let erased: Vec<&str> = wanted
            .iter()
            .filter(|(_, f)| f.erased)
            .map(|(p, _)| *p)
            .collect();
        let live: BTreeMap<String, Head> = self
            .all_live(scope)
            .await?
            .into_iter()
            .filter(|h| in_reach(&h.path))
            .map(|h| (h.path.clone(), h))
            .collect();
        if let Some(since) = &req.if_unchanged_since {
            let changed = self
                .changed_since(scope, since, &in_reach, &live, &wanted)
                .await?;
            if !changed.is_empty() {
                return Err(WorkspaceError::Conflict {
                    message: format!(
                        "{} file(s) changed since {}: {}",
                        changed.len(),
                        match since {
                            Since::Snapshot(s) => format!("snapshot {s}"),
                            Since::Time(t) => format_time(*t),
                        },
                        changed.join(", ")
                    ),
                    current_version: 0,
                });
            }
        }
        let mut report = RestoreReport::default();
        // Deletes first, so a workspace near maxFiles has room for what comes back.
        let mut paths: Vec<&str> = live
            .keys()
            .map(String::as_str)
            .filter(|p| !wanted.contains_key(p))
            .collect();
        paths.extend(wanted.keys().copied().filter(|p| !erased.contains(p)));
        report
            .unchanged
            .extend(erased.iter().map(|p| (*p).to_owned()));
        for path in paths {
            let want = wanted.get(path).copied();
            let mut have = live.get(path).cloned();
            let file = FilePath::parse(path)?;
            let mut done = false;
            for _ in 0..RESTORE_ATTEMPTS {
                let want_sha = match want {
                    Some(w) => self.sha_of(scope, w).await?,
                    None => String::new(),
                };
                let outcome = match plan(want, have.as_ref(), &want_sha) {
                    Plan::Unchanged => {
                        report.unchanged.push(path.to_owned());
                        Ok(())
                    }
                    Plan::Delete { etag } => self
                        .delete(who, &file, Some(&etag))
                        .await
                        .map(|()| report.deleted.push(path.to_owned())),
                    Plan::Restore { over } => {
                        let w =
                            want.ok_or_else(|| WorkspaceError::internal("restore without a file"))?;
                        self.write_back(who, &snapshot.id, w, over)
                            .await
                            .map(|()| report.restored.push(path.to_owned()))
                    }
                };
                match outcome {
                    Ok(()) => {
                        done = true;
                        break;
                    }
                    // Someone wrote in between: plan this file again from what is there.
                    Err(WorkspaceError::Conflict { .. } | WorkspaceError::NotFound(_)) => {
                        have = live_head(&self.meta.head(scope, &file).await?);
                    }
                    Err(e) => return Err(e),
                }
            }
            if !done {
                return Err(WorkspaceError::Conflict {
                    message: format!("{path} kept changing during the rollback; run it again"),
                    current_version: 0,
                });
            }
        }
        if let Some(key) = &req.idempotency_key {
            let value = serde_json::to_string(&(&fingerprint, &report))
                .map_err(WorkspaceError::internal)?;
            let record = StoredRecord {
                value,
                expires_at: self.clock.now_ms().saturating_add(RESTORE_RECORD_MS),
            };
            self.meta.put_record(scope, "restore", key, &record).await?;
        }
        Ok(report)
    }

    /// The SHA-256 of a snapshot file's content (read from its version item in records
    /// written before snapshots kept it).
    async fn sha_of(&self, scope: &Scope, f: &SnapshotFile) -> Result<String> {
        if !f.sha256.is_empty() {
            return Ok(f.sha256.clone());
        }
        let path = FilePath::parse(&f.path)?;
        Ok(self
            .meta
            .version(scope, &path, f.seq)
            .await?
            .map(|v| v.sha256)
            .unwrap_or_default())
    }

    /// Writes a snapshot file's content back as a new version, over exactly `over` (or
    /// only where nothing is).
    async fn write_back(
        &self,
        who: &Identity,
        id: &str,
        f: &SnapshotFile,
        over: Option<String>,
    ) -> Result<()> {
        let path = FilePath::parse(&f.path)?;
        let limits = self.limits;
        let limit = if limits.max_upload_bytes > limits.max_file_bytes {
            (limits.max_upload_bytes, "maxUploadBytes")
        } else {
            (limits.max_file_bytes, "maxFileBytes")
        };
        let content = self.snapshot_bytes(&who.scope, id, f).await?;
        self.put_within(
            who,
            limit,
            PutRequest {
                merge: None,
                path: Some(path),
                content,
                content_type: Some(f.content_type.clone()),
                if_none_match_any: over.is_none(),
                if_match: over,
                idempotency_key: None,
            },
        )
        .await
        .map(|_| ())
    }

    /// Whether anything matching changed since the precondition's point: the paths that
    /// did.
    async fn changed_since(
        &self,
        scope: &Scope,
        since: &Since,
        in_reach: &impl Fn(&str) -> bool,
        live: &BTreeMap<String, Head>,
        wanted: &BTreeMap<&str, &SnapshotFile>,
    ) -> Result<Vec<String>> {
        let mut changed = Vec::new();
        match since {
            Since::Snapshot(base) => {
                let base = self.snapshot_record(scope, base).await?;
                let then: BTreeMap<&str, &str> = base
                    .files
                    .iter()
                    .filter(|f| in_reach(&f.path))
                    .map(|f| (f.path.as_str(), f.etag.as_str()))
                    .collect();
                for (path, etag) in &then {
                    if live.get(*path).map(|h| h.etag.as_str()) != Some(*etag) {
                        changed.push((*path).to_owned());
                    }
                }
                changed.extend(
                    live.keys()
                        .filter(|p| !then.contains_key(p.as_str()))
                        .cloned(),
                );
            }
            Since::Time(t) => {
                changed.extend(
                    live.values()
                        .filter(|h| h.updated_at > *t)
                        .map(|h| h.path.clone()),
                );
                // Deleted since: the tombstones of the paths the rollback would bring back.
                for path in wanted.keys().filter(|p| !live.contains_key(**p)) {
                    let head = self.meta.head(scope, &FilePath::parse(path)?).await?;
                    if head.is_some_and(|h| h.deleted && h.updated_at > *t) {
                        changed.push((*path).to_owned());
                    }
                }
            }
        }
        changed.sort();
        Ok(changed)
    }
}

fn live_head(head: &Option<Head>) -> Option<Head> {
    live(head).cloned()
}
