//! Run records (RFC 0059 §D): a workflow host starts a run and gets the workspace as it was
//! at that instant, however it changes afterwards.
//!
//! A run record *is* a snapshot (see `snapshots.rs`) whose id starts with [`RUN_ID_PREFIX`]
//! and which names its `workflowId`: the pins, the expiry and the reads through it
//! (`?snapshot=<runId>`) are the snapshot's, so there is one mechanism, not two. Run ids
//! carry their creation time first (`run_<13-digit ms>_<random>`), so the store's key order
//! is creation order and a listing is a range read, newest first.
//!
//! **Ownership (RFC 0048).** A run records the principal that started it; with the scope it
//! is stored in, that is its owner `{tenant, workspace, principal}`. Its id ends with its
//! workspace's id (`run_<ms>_<random>_<workspace>`), so a read of a run of *another
//! workspace of the caller's tenant* can be told from a read of no run: it fails closed as
//! `run_forbidden` (403, `spec/v1/auth.md` §"Identity claims": "a cross-workspace read MUST
//! fail closed with `run_forbidden`"), after the run is found live there, and never with
//! anything of it. Only the caller's own tenant is ever looked in, so another tenant's run
//! is 404 like no run at all (WCT-1: nothing of another tenant, not even that it exists).
//! An id naming a workspace is no key to it: a forged id finds nothing (16 random hex
//! digits) and is 404.

use super::*;
use crate::model::{Snapshot, SnapshotInfo};
use crate::scope::WorkspaceId;

/// What every run id (and only a run's snapshot id) starts with.
pub const RUN_ID_PREFIX: &str = "run_";
/// Longest accepted `workflowId`.
pub const MAX_WORKFLOW_ID_LEN: usize = 256;
/// Largest page of a run listing, and its default.
pub const MAX_RUNS_PAGE: usize = 100;

fn check_workflow_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_WORKFLOW_ID_LEN || id.chars().any(char::is_control) {
        return Err(WorkspaceError::validation(format!(
            "workflowId must be 1-{MAX_WORKFLOW_ID_LEN} bytes of text without control characters"
        )));
    }
    Ok(())
}

fn unknown_run(id: &str) -> WorkspaceError {
    WorkspaceError::not_found(format!("no run {id} in this workspace (or it expired)"))
}

/// 403 `run_forbidden`: the run is another workspace's.
fn forbidden_run(id: &str) -> WorkspaceError {
    crate::capability::CapabilityCode::RunForbidden.error(format!(
        "run {id} belongs to another workspace; a credential reads only its own workspace's runs"
    ))
}

/// A run id for a run of `workspace` created at `now`: creation time first, so key order
/// is time order; the owning workspace last, so a read from another workspace of the
/// tenant is told from a read of no run.
fn run_id(now: Millis, random: &str, workspace: &WorkspaceId) -> String {
    let tail: String = random
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect();
    format!("{RUN_ID_PREFIX}{now:013}_{tail}_{workspace}")
}

/// The workspace a run id names (none for an id made before ids named it).
fn run_workspace(id: &str) -> Option<WorkspaceId> {
    let mut parts = id.strip_prefix(RUN_ID_PREFIX)?.splitn(3, '_');
    let (_created, _random, workspace) = (parts.next()?, parts.next()?, parts.next()?);
    WorkspaceId::parse(workspace).ok()
}

/// One page of runs, newest first; `next_before` continues it.
#[derive(Debug, Clone)]
pub struct RunPage {
    pub runs: Vec<SnapshotInfo>,
    pub next_before: Option<String>,
}

impl WorkspaceService {
    /// Starts a run of `workflow_id`: a run record whose snapshot holds every live file.
    pub async fn create_run(&self, who: &Identity, workflow_id: &str) -> Result<Snapshot> {
        check_workflow_id(workflow_id)?;
        let id = run_id(
            self.clock.now_ms(),
            &self.ids.new_id(),
            &who.scope.workspace,
        );
        self.take_snapshot(who, id, Some(workflow_id.to_owned()), Default::default())
            .await
    }

    /// A live run of this scope with the files it started with; a live run of another
    /// workspace of the tenant is 403 `run_forbidden`; unknown, expired, other tenants'
    /// and plain snapshots' ids are 404.
    pub async fn get_run(&self, who: &Identity, id: &str) -> Result<Snapshot> {
        if !id.starts_with(RUN_ID_PREFIX) {
            return Err(unknown_run(id));
        }
        super::snapshots::check_id(id)?;
        if let Some(workspace) = run_workspace(id).filter(|w| *w != who.scope.workspace) {
            // Looked up in the caller's own tenant only; nothing of the record is answered.
            let owner = Scope::new(who.scope.tenant.clone(), workspace);
            return match self.snapshot_record(&owner, id).await {
                Ok(s) if s.workflow_id.is_some() => Err(forbidden_run(id)),
                Ok(_) | Err(WorkspaceError::NotFound(_)) => Err(unknown_run(id)),
                Err(e) => Err(e),
            };
        }
        match self.get_snapshot(who, id).await {
            Ok(s) if s.workflow_id.is_some() => Ok(s),
            Ok(_) | Err(WorkspaceError::NotFound(_)) => Err(unknown_run(id)),
            Err(e) => Err(e),
        }
    }

    /// Live runs of this scope, newest first, `limit` at most (default and cap
    /// [`MAX_RUNS_PAGE`]), those created before run `before` when given.
    pub async fn list_runs(
        &self,
        scope: &Scope,
        limit: Option<usize>,
        before: Option<&str>,
    ) -> Result<RunPage> {
        let limit = crate::limits::page_limit(limit, MAX_RUNS_PAGE, MAX_RUNS_PAGE)?;
        if let Some(b) = before {
            if !b.starts_with(RUN_ID_PREFIX) {
                return Err(WorkspaceError::validation("not a run listing token"));
            }
        }
        let page = self
            .meta
            .list_snapshots(scope, RUN_ID_PREFIX, before, limit)
            .await?;
        // A full page may have more behind it; expired records (DynamoDB's TTL removes them
        // late) are skipped but still move the cursor.
        let next_before = (page.len() == limit).then(|| page.last().map(|s| s.id.clone()));
        let now = self.clock.now_ms();
        Ok(RunPage {
            runs: page
                .into_iter()
                .filter(|s| s.expires_at > now && s.workflow_id.is_some())
                .collect(),
            next_before: next_before.flatten(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_creation_time_and_name_their_workspace() {
        let ws = |s: &str| WorkspaceId::parse(s).unwrap();
        let a = run_id(999, "ffff", &ws("zzz"));
        let b = run_id(1_000, "0000", &ws("aaa"));
        assert!(a < b, "{a} < {b}");
        assert!(a.starts_with(RUN_ID_PREFIX));
        let id = run_id(1, "0123456789abcdef0123", &ws("main"));
        assert_eq!(id, "run_0000000000001_0123456789abcdef_main");
        assert_eq!(run_workspace(&id), Some(ws("main")));
        // Workspace ids with `_`, `-` and a fork's `~` come back whole, and every id is a
        // valid snapshot id, within its length limit.
        for w in ["my_ws-1", "main~0123456789abcdef", &"w".repeat(64)] {
            let fork = format!("{w}~0123456789abcdef");
            for w in [w, fork.as_str()] {
                let Ok(w) = WorkspaceId::parse(w) else {
                    continue;
                };
                let id = run_id(Millis::MAX / 2, "not_hex-at all!0123456789", &w);
                assert_eq!(run_workspace(&id), Some(w.clone()), "{id}");
                assert!(super::super::snapshots::check_id(&id).is_ok(), "{id}");
            }
        }
        // Ids made before runs named their workspace name none.
        assert_eq!(run_workspace("run_0000000000001_0123456789abcdef"), None);
        assert_eq!(run_workspace("snapshot"), None);
    }

    #[test]
    fn workflow_ids_are_bounded_text() {
        assert!(check_workflow_id("conformance-noop").is_ok());
        assert!(check_workflow_id("").is_err());
        assert!(check_workflow_id("a\nb").is_err());
        assert!(check_workflow_id(&"x".repeat(MAX_WORKFLOW_ID_LEN + 1)).is_err());
    }
}
