//! The session service's store in memory. One mutex over everything, so each operation
//! (a local create with its path claim, an artifact with its session, an erase) is atomic.

use super::{poisoned, MemoryBodies, MemoryMeta};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use workspace_core::model::Millis;
use workspace_core::sessions::model::{ArtifactRecord, SessionRecord, WorkspaceRecord};
use workspace_core::sessions::ports::{BodyEraser, Created, SessionStore};
use workspace_core::{Result, Scope, TenantId, WorkspaceError, WorkspaceId};

#[derive(Default)]
struct State {
    /// (tenant, user, workspace id) → record.
    workspaces: BTreeMap<(String, String, String), WorkspaceRecord>,
    /// (tenant, user, localPath) → workspace id.
    claims: HashMap<(String, String, String), String>,
    artifacts: HashMap<Scope, BTreeMap<String, ArtifactRecord>>,
    sessions: HashMap<Scope, BTreeMap<String, SessionRecord>>,
}

/// Shares the file metadata of a [`MemoryMeta`] so erasing a scope erases its files too.
#[derive(Clone)]
pub struct MemorySessions {
    meta: MemoryMeta,
    state: Arc<Mutex<State>>,
}

impl MemorySessions {
    pub fn new(meta: MemoryMeta) -> Self {
        Self {
            meta,
            state: Arc::default(),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state
            .lock()
            .map_err(|_| WorkspaceError::internal("memory store lock poisoned"))
    }
}

fn wkey(rec: &WorkspaceRecord) -> (String, String, String) {
    (
        rec.tenant.clone(),
        rec.user.clone(),
        rec.workspace_id.clone(),
    )
}

#[async_trait]
impl SessionStore for MemorySessions {
    async fn create_workspace(&self, rec: &WorkspaceRecord) -> Result<Created> {
        let mut st = self.lock()?;
        if let Some(path) = &rec.local_path {
            let claim = (rec.tenant.clone(), rec.user.clone(), path.clone());
            if let Some(id) = st.claims.get(&claim) {
                let key = (rec.tenant.clone(), rec.user.clone(), id.clone());
                if let Some(existing) = st.workspaces.get(&key) {
                    return Ok(Created::Existing(existing.clone()));
                }
            }
            st.claims.insert(claim, rec.workspace_id.clone());
        }
        st.workspaces.insert(wkey(rec), rec.clone());
        Ok(Created::New)
    }

    async fn workspace(
        &self,
        tenant: &TenantId,
        user: &str,
        id: &WorkspaceId,
    ) -> Result<Option<WorkspaceRecord>> {
        let key = (tenant.to_string(), user.to_owned(), id.to_string());
        Ok(self.lock()?.workspaces.get(&key).cloned())
    }

    async fn list_workspaces(
        &self,
        tenant: &TenantId,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<WorkspaceRecord>> {
        let st = self.lock()?;
        Ok(st
            .workspaces
            .values()
            .filter(|w| w.tenant == tenant.as_str() && w.user == user)
            .filter(|w| after.is_none_or(|a| w.workspace_id.as_str() > a))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn all_workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        Ok(self.lock()?.workspaces.values().cloned().collect())
    }

    async fn touch_workspace(&self, rec: &WorkspaceRecord, at: Millis) -> Result<()> {
        if let Some(w) = self.lock()?.workspaces.get_mut(&wkey(rec)) {
            w.last_active_at = w.last_active_at.max(at);
        }
        Ok(())
    }

    async fn remove_workspace(&self, rec: &WorkspaceRecord) -> Result<()> {
        let mut st = self.lock()?;
        st.workspaces.remove(&wkey(rec));
        if let Some(path) = &rec.local_path {
            st.claims
                .remove(&(rec.tenant.clone(), rec.user.clone(), path.clone()));
        }
        Ok(())
    }

    async fn put_artifact(
        &self,
        scope: &Scope,
        art: &ArtifactRecord,
    ) -> Result<Option<ArtifactRecord>> {
        let mut st = self.lock()?;
        let prev = st
            .sessions
            .get(scope)
            .and_then(|s| s.get(&art.session_id))
            .cloned();
        let (session, replaced) = SessionRecord::with_artifact(prev, art);
        st.sessions
            .entry(scope.clone())
            .or_default()
            .insert(session.session_id.clone(), session);
        let arts = st.artifacts.entry(scope.clone()).or_default();
        arts.insert(art.artifact_id.clone(), art.clone());
        Ok(replaced.and_then(|id| arts.remove(&id)))
    }

    async fn artifact(&self, scope: &Scope, id: &str) -> Result<Option<ArtifactRecord>> {
        Ok(self
            .lock()?
            .artifacts
            .get(scope)
            .and_then(|a| a.get(id))
            .cloned())
    }

    async fn artifacts(&self, scope: &Scope) -> Result<Vec<ArtifactRecord>> {
        Ok(self
            .lock()?
            .artifacts
            .get(scope)
            .map(|a| a.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn session(&self, scope: &Scope, id: &str) -> Result<Option<SessionRecord>> {
        Ok(self
            .lock()?
            .sessions
            .get(scope)
            .and_then(|s| s.get(id))
            .cloned())
    }

    async fn sessions(&self, scope: &Scope) -> Result<Vec<SessionRecord>> {
        Ok(self
            .lock()?
            .sessions
            .get(scope)
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn delete_session(&self, scope: &Scope, id: &str) -> Result<Vec<ArtifactRecord>> {
        let mut st = self.lock()?;
        if let Some(s) = st.sessions.get_mut(scope) {
            s.remove(id);
        }
        let Some(arts) = st.artifacts.get_mut(scope) else {
            return Ok(Vec::new());
        };
        let gone: Vec<String> = arts
            .values()
            .filter(|a| a.session_id == id)
            .map(|a| a.artifact_id.clone())
            .collect();
        Ok(gone.iter().filter_map(|k| arts.remove(k)).collect())
    }

    async fn erase_scope(&self, scope: &Scope) -> Result<u64> {
        let mut n = 0;
        {
            let mut st = self.lock()?;
            n += st.artifacts.remove(scope).map_or(0, |a| a.len() as u64);
            n += st.sessions.remove(scope).map_or(0, |s| s.len() as u64);
        }
        n += self.meta.erase_events_of(scope)?;
        if let Some(files) = self.meta.lock()?.remove(scope) {
            n += files.items() as u64;
        }
        Ok(n)
    }

    async fn items_under(&self, scope: &Scope) -> Result<u64> {
        let mut n = 0;
        {
            let st = self.lock()?;
            n += st.artifacts.get(scope).map_or(0, |a| a.len() as u64);
            n += st.sessions.get(scope).map_or(0, |s| s.len() as u64);
        }
        if let Some(files) = self.meta.lock()?.get(scope) {
            n += files.items() as u64;
        }
        Ok(n)
    }
}

#[async_trait]
impl BodyEraser for MemoryBodies {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        let staged = self.drop_staged(prefix, None)?;
        let mut bodies = self.bodies.lock().map_err(poisoned)?;
        let before = bodies.len();
        bodies.retain(|(k, _), _| !k.starts_with(prefix));
        Ok((before - bodies.len()) as u64 + staged)
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        let staged = self.count_staged(prefix)?;
        let bodies = self.bodies.lock().map_err(poisoned)?;
        Ok(bodies.keys().filter(|(k, _)| k.starts_with(prefix)).count() as u64 + staged)
    }
}

#[async_trait]
impl BodyEraser for crate::MemoryCache {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        self.erase_keys_under(prefix)
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        self.count_keys_under(prefix)
    }
}

#[async_trait]
impl BodyEraser for crate::MemoryBlobs {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        self.erase_keys_under(prefix)
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        self.count_keys_under(prefix)
    }
}
