//! Sweeping expired forks: a fork past its `expiresAt` answers 404 at once (its record is
//! judged on every call), and its own data goes when a sweep finds it: its heads, versions,
//! change log, records (the fork record last of all) and bodies, and its base snapshot in
//! the parent (whose pins have ended with it). The parent is untouched.
//!
//! Who sweeps: the service, for the forks a listing of the parent's forks finds expired
//! (`WorkspaceService::list_forks`) and for one a route of the parent names
//! (`/forks/{id}...`), and the AWS sweeper for every workspace it sees in the bucket
//! (`workspace_store_aws::sweeper`). Each step is safe to repeat: an interrupted
//! sweep is finished by the next, since the fork record (what finds the fork) goes last.

use super::{suffix_of_base, ForkRecord, BASE_ID_PREFIX, FORK_RECORD_KEY, FORK_RECORD_KIND};
use crate::error::Result;
use crate::model::{BodyRef, Millis};
use crate::path::PathPrefix;
use crate::ports::{Bodies, MetaStore, RecordStore, ScopeEraser, SnapshotStore, Staging};
use crate::scope::Scope;
use std::sync::Arc;

/// Heads, versions and snapshots read per page while finding a fork's bodies.
const PAGE: usize = 1000;

/// Erases a scope's data through the stores' own ports: every body its version items and
/// kept snapshots name, its staged uploads, then every metadata item
/// (`ScopeItemStore::erase_scope_items`). What a fork is erased with where no
/// [`ScopeEraser`] of the deployment is wired (the contract harness); a deployment's own
/// eraser removes everything under the scope's key prefix instead.
pub struct StoreEraser {
    pub meta: Arc<dyn MetaStore>,
    pub bodies: Arc<dyn Bodies>,
    pub staging: Arc<dyn Staging>,
}

impl StoreEraser {
    /// Every body the scope's retained version items and kept snapshots name.
    async fn bodies_of(&self, scope: &Scope) -> Result<Vec<BodyRef>> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let heads = self
                .meta
                .list_heads(scope, &PathPrefix::default(), after.as_ref(), PAGE)
                .await?;
            for h in &heads {
                let path = crate::path::FilePath::parse(&h.path)?;
                let mut before = None;
                loop {
                    let page = self.meta.list_versions(scope, &path, before, PAGE).await?;
                    before = page.last().map(|v| v.seq);
                    let done = page.len() < PAGE;
                    // An inline body goes with its item.
                    out.extend(
                        page.into_iter()
                            .filter_map(|v| v.body)
                            .filter(|b| !b.is_inline()),
                    );
                    if done {
                        break;
                    }
                }
            }
            if heads.len() < PAGE {
                break;
            }
            after = heads
                .last()
                .map(|h| crate::path::FilePath::parse(&h.path))
                .transpose()?;
        }
        let mut before: Option<String> = None;
        loop {
            let snaps = self
                .meta
                .list_snapshots(scope, "", before.as_deref(), PAGE)
                .await?;
            for info in &snaps {
                if let Some(s) = self.meta.snapshot(scope, &info.id).await? {
                    out.extend(s.files.into_iter().filter_map(|f| f.kept));
                }
            }
            if snaps.len() < PAGE {
                return Ok(out);
            }
            before = snaps.last().map(|s| s.id.clone());
        }
    }
}

#[async_trait::async_trait]
impl ScopeEraser for StoreEraser {
    async fn erase_scope_data(&self, scope: &Scope) -> Result<()> {
        let bodies = self.bodies_of(scope).await?;
        for body in &bodies {
            self.bodies.delete(body).await?;
        }
        let staged = self
            .staging
            .prune_staged(&format!("{}uploads/", scope.key_prefix()), Millis::MAX)
            .await?;
        let items = self.meta.erase_scope_items(scope).await?;
        tracing::info!(%scope, items, bodies = bodies.len(), staged, "fork data erased");
        Ok(())
    }
}

/// The fork record of `fork`, read without judging its age.
async fn record_of(meta: &dyn RecordStore, fork: &Scope) -> Result<Option<ForkRecord>> {
    match meta.record(fork, FORK_RECORD_KIND, FORK_RECORD_KEY).await? {
        None => Ok(None),
        Some(stored) => {
            let mut r: ForkRecord = serde_json::from_str(&stored.value)
                .map_err(crate::error::WorkspaceError::internal)?;
            // The stored expiry is what reads judge (a discard sets it to 0).
            r.expires_at = stored.expires_at;
            Ok(Some(r))
        }
    }
}

/// Every base snapshot id of the parent's forks, with its expiry.
async fn bases_of(meta: &dyn SnapshotStore, parent: &Scope) -> Result<Vec<(String, Millis)>> {
    let mut out = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = meta
            .list_snapshots(parent, BASE_ID_PREFIX, before.as_deref(), PAGE)
            .await?;
        let done = page.len() < PAGE;
        before = page.last().map(|s| s.id.clone());
        out.extend(page.into_iter().map(|s| (s.id, s.expires_at)));
        if done {
            return Ok(out);
        }
    }
}

/// Sweeps fork `fork` if it has ended (its record expired, discarded, or gone): its data
/// through `eraser`, then every base snapshot of it left in the parent. `false` (nothing
/// done) while it lives, or when `fork` is not a fork's scope.
pub async fn sweep_fork(
    meta: &dyn MetaStore,
    eraser: &dyn ScopeEraser,
    fork: &Scope,
    now: Millis,
) -> Result<bool> {
    let Some(parent_ws) = fork.workspace.fork_parent() else {
        return Ok(false);
    };
    if record_of(meta, fork)
        .await?
        .is_some_and(|r| r.expires_at > now)
    {
        return Ok(false);
    }
    eraser.erase_scope_data(fork).await?;
    let parent = Scope::new(fork.tenant.clone(), parent_ws);
    let suffix = fork
        .workspace
        .as_str()
        .split_once(crate::scope::FORK_SEPARATOR)
        .map(|(_, s)| s);
    for (id, _) in bases_of(meta, &parent).await? {
        if suffix.is_some() && suffix_of_base(&id) == suffix {
            // Its pins ended with the fork (their `until` is its expiry, or 0 after a
            // discard); the next commit of each path releases what only they held.
            meta.delete_snapshot(&parent, &id).await?;
        }
    }
    Ok(true)
}

/// Sweeps every ended fork of `parent` its base snapshots name; how many were swept.
pub async fn sweep_expired_forks(
    meta: &dyn MetaStore,
    eraser: &dyn ScopeEraser,
    parent: &Scope,
    now: Millis,
) -> Result<usize> {
    if parent.workspace.fork_parent().is_some() {
        return Ok(0);
    }
    let mut suffixes: Vec<String> = bases_of(meta, parent)
        .await?
        .into_iter()
        .filter(|(_, expires_at)| *expires_at <= now)
        .filter_map(|(id, _)| suffix_of_base(&id).map(str::to_owned))
        .collect();
    suffixes.sort();
    suffixes.dedup();
    let mut swept = 0;
    for suffix in suffixes {
        let Some(ws) = parent.workspace.fork(&suffix) else {
            continue;
        };
        let fork = Scope::new(parent.tenant.clone(), ws);
        if sweep_fork(meta, eraser, &fork, now).await? {
            swept += 1;
        }
    }
    Ok(swept)
}
