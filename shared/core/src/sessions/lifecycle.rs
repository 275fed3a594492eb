//! Deleting a workspace and everything it holds, and the inactivity purge.
//!
//! A delete erases by the scope's key prefix, never by a list of references, so it is
//! resumable: if it stops half way the workspace record is still there (it goes last), and
//! the next delete (or the purge) erases whatever is left and then the record.

use super::model::WorkspaceRecord;
use super::ports::{BodyEraser, SessionStore};
use super::{Caller, SessionService};
use crate::error::Result;
use crate::model::Millis;
use crate::scope::{Scope, TenantId, WorkspaceId};
use std::sync::Arc;

const DAY_MS: Millis = 24 * 60 * 60 * 1000;

/// What a purge run found: the workspaces it removed (or would remove, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeReport {
    pub cutoff: Millis,
    pub dry_run: bool,
    pub workspaces: Vec<WorkspaceRecord>,
}

impl SessionService {
    /// `DELETE /workspaces/{id}`: files, versions, artifacts, sessions, bodies, then the
    /// record itself.
    pub async fn delete_workspace(&self, caller: &Caller, workspace_id: &str) -> Result<()> {
        let ws = self.get(caller, workspace_id).await?;
        self.erase(&ws).await
    }

    /// Erases one workspace completely; safe to run again on a half-erased one.
    pub async fn erase(&self, ws: &WorkspaceRecord) -> Result<()> {
        let scope = Scope::parse(&ws.tenant, &ws.workspace_id)?;
        let (items, bodies) = self.erase_data(&scope).await?;
        self.store.remove_workspace(ws).await?;
        tracing::info!(
            tenant = %ws.tenant,
            workspace = %ws.workspace_id,
            items,
            bodies,
            "workspace erased"
        );
        Ok(())
    }

    /// Erases a scope's metadata items and bodies: (items, bodies) removed.
    async fn erase_data(&self, scope: &Scope) -> Result<(u64, u64)> {
        erase_scope(self.store.as_ref(), &self.erasers, scope).await
    }

    /// How much of a workspace is left in storage: (metadata items, bodies).
    pub async fn remains(&self, scope: &Scope) -> Result<(u64, u64)> {
        let mut bodies = 0;
        for eraser in &self.erasers {
            bodies += eraser.count_prefix(&scope.key_prefix()).await?;
        }
        Ok((self.store.items_under(scope).await?, bodies))
    }

    /// Erases every workspace idle since before `now - purge_after_days`; a dry run only
    /// reports them.
    pub async fn purge(&self, dry_run: bool) -> Result<PurgeReport> {
        let days = i64::try_from(self.limits.purge_after_days).unwrap_or(i64::MAX / DAY_MS);
        let cutoff = self.now().saturating_sub(days.saturating_mul(DAY_MS));
        let mut idle: Vec<_> = self
            .store
            .all_workspaces()
            .await?
            .into_iter()
            .filter(|w| w.last_active_at < cutoff)
            .collect();
        idle.sort_by(|a, b| (&a.tenant, &a.workspace_id).cmp(&(&b.tenant, &b.workspace_id)));
        if !dry_run {
            let mut erased = Vec::with_capacity(idle.len());
            for ws in idle {
                // Read it again: an upload since the scan makes it active, and it stays.
                let tenant = TenantId::parse(&ws.tenant)?;
                let id = WorkspaceId::parse(&ws.workspace_id)?;
                match self.store.workspace(&tenant, &ws.user, &id).await? {
                    Some(now) if now.last_active_at < cutoff => {
                        self.erase(&now).await?;
                        erased.push(now);
                    }
                    _ => {}
                }
            }
            idle = erased;
        }
        Ok(PurgeReport {
            cutoff,
            dry_run,
            workspaces: idle,
        })
    }
}

/// Erases a scope's metadata items, then everything under its key prefix: (items, bodies).
async fn erase_scope(
    store: &dyn SessionStore,
    erasers: &[Arc<dyn BodyEraser>],
    scope: &Scope,
) -> Result<(u64, u64)> {
    let items = store.erase_scope(scope).await?;
    let mut bodies = 0;
    for eraser in erasers {
        bodies += eraser.erase_prefix(&scope.key_prefix()).await?;
    }
    Ok((items, bodies))
}

/// Erases a discarded fork's data the way a deleted workspace's goes (without needing the
/// rest of the session service).
pub struct ScopeData {
    pub store: Arc<dyn SessionStore>,
    pub erasers: Vec<Arc<dyn BodyEraser>>,
}

#[async_trait::async_trait]
impl crate::ports::ScopeEraser for ScopeData {
    async fn erase_scope_data(&self, scope: &Scope) -> Result<()> {
        let (items, bodies) = erase_scope(self.store.as_ref(), &self.erasers, scope).await?;
        tracing::info!(%scope, items, bodies, "scope erased");
        Ok(())
    }
}
