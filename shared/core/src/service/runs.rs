//! Run records (RFC 0059 §D): a workflow host starts a run and gets the workspace as it was
//! at that instant, however it changes afterwards.
//!
//! A run record *is* a snapshot (see `snapshots.rs`) whose id starts with [`RUN_ID_PREFIX`]
//! and which names its `workflowId`: the pins, the expiry and the reads through it
//! (`?snapshot=<runId>`) are the snapshot's, so there is one mechanism, not two. Run ids
//! carry their creation time first (`run_<13-digit ms>_<random>`), so the store's key order
//! is creation order and a listing is a range read, newest first.

use super::*;
use crate::model::{Snapshot, SnapshotInfo};

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

/// A run id for a run created at `now`: creation time first, so key order is time order.
fn run_id(now: Millis, random: &str) -> String {
    let tail: String = random.chars().take(16).collect();
    format!("{RUN_ID_PREFIX}{now:013}_{tail}")
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
        let id = run_id(self.clock.now_ms(), &self.ids.new_id());
        self.take_snapshot(who, id, Some(workflow_id.to_owned()), Default::default())
            .await
    }

    /// A live run of this scope with the files it started with; unknown, expired, other
    /// scopes' ids and plain snapshots' ids are 404.
    pub async fn get_run(&self, who: &Identity, id: &str) -> Result<Snapshot> {
        if !id.starts_with(RUN_ID_PREFIX) {
            return Err(unknown_run(id));
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
    fn run_ids_sort_by_creation_time() {
        let a = run_id(999, "ffff");
        let b = run_id(1_000, "0000");
        assert!(a < b, "{a} < {b}");
        assert!(a.starts_with(RUN_ID_PREFIX));
        assert_eq!(
            run_id(1, "0123456789abcdef0123"),
            "run_0000000000001_0123456789abcdef"
        );
    }

    #[test]
    fn workflow_ids_are_bounded_text() {
        assert!(check_workflow_id("conformance-noop").is_ok());
        assert!(check_workflow_id("").is_err());
        assert!(check_workflow_id("a\nb").is_err());
        assert!(check_workflow_id(&"x".repeat(MAX_WORKFLOW_ID_LEN + 1)).is_err());
    }
}
