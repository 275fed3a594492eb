//! What the session service needs from storage. Adapters (memory, redb, DynamoDB) keep
//! workspaces per (tenant, user), and artifacts and sessions under the workspace's own
//! scope prefix, beside its files, so erasing a scope erases all of them.

use super::model::{ArtifactRecord, SessionRecord, WorkspaceRecord};
use crate::error::Result;
use crate::model::Millis;
use crate::scope::{Scope, TenantId, WorkspaceId};
use async_trait::async_trait;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    New,
    /// A local workspace of the same (tenant, user, localPath) already exists.
    Existing(WorkspaceRecord),
}

#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Inserts `rec`. A local workspace is inserted only if (tenant, user, localPath) has
    /// none yet, decided by one conditional write (never read-then-write), so concurrent
    /// creates yield one workspace.
    async fn create_workspace(&self, rec: &WorkspaceRecord) -> Result<Created>;
    async fn workspace(
        &self,
        tenant: &TenantId,
        user: &str,
        id: &WorkspaceId,
    ) -> Result<Option<WorkspaceRecord>>;
    /// The user's workspaces sorted by id, strictly after `after`, at most `limit`.
    async fn list_workspaces(
        &self,
        tenant: &TenantId,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<WorkspaceRecord>>;
    /// Every workspace of every tenant (the inactivity purge).
    async fn all_workspaces(&self) -> Result<Vec<WorkspaceRecord>>;
    async fn touch_workspace(&self, rec: &WorkspaceRecord, at: Millis) -> Result<()>;
    /// Removes the record and its local-path claim (the last step of a delete).
    async fn remove_workspace(&self, rec: &WorkspaceRecord) -> Result<()>;

    /// Stores an artifact and updates its session (created, lastTaskAt, task ids). A
    /// session_history artifact atomically replaces the session's previous one, whose
    /// record is removed and returned (its body is the caller's to delete).
    async fn put_artifact(
        &self,
        scope: &Scope,
        art: &ArtifactRecord,
    ) -> Result<Option<ArtifactRecord>>;
    async fn artifact(&self, scope: &Scope, id: &str) -> Result<Option<ArtifactRecord>>;
    async fn artifacts(&self, scope: &Scope) -> Result<Vec<ArtifactRecord>>;
    async fn session(&self, scope: &Scope, id: &str) -> Result<Option<SessionRecord>>;
    async fn sessions(&self, scope: &Scope) -> Result<Vec<SessionRecord>>;
    /// Removes a session and its artifacts, returning the removed artifacts.
    async fn delete_session(&self, scope: &Scope, id: &str) -> Result<Vec<ArtifactRecord>>;

    /// Removes every metadata item of the scope: file heads, versions, idempotency
    /// records, counters, artifacts, sessions. Returns how many were removed; safe to
    /// repeat after an interruption.
    async fn erase_scope(&self, scope: &Scope) -> Result<u64>;
    /// How many metadata items the scope still holds (0 once erased).
    async fn items_under(&self, scope: &Scope) -> Result<u64>;
}

/// Erasing bodies by key prefix (every body of a scope starts with `Scope::key_prefix`),
/// and the same for other per-workspace data (blobs, cache entries).
#[async_trait]
pub trait BodyEraser: Send + Sync {
    /// Deletes every body (every stored version) under `prefix`; returns how many.
    async fn erase_prefix(&self, prefix: &str) -> Result<u64>;
    async fn count_prefix(&self, prefix: &str) -> Result<u64>;
}

/// The workspace registry as identity resolution reads it: is a registered workspace the
/// user's? One read; kept apart from [`SessionStore`] so a function that only resolves
/// identities links only that read.
#[async_trait]
pub trait WorkspaceRegistry: Send + Sync {
    async fn is_registered_to(
        &self,
        tenant: &TenantId,
        user: &str,
        id: &WorkspaceId,
    ) -> Result<bool>;
}

/// The registry of a session store.
pub struct RegistryOf<S: ?Sized>(pub std::sync::Arc<S>);

#[async_trait]
impl<S: SessionStore + ?Sized> WorkspaceRegistry for RegistryOf<S> {
    async fn is_registered_to(
        &self,
        tenant: &TenantId,
        user: &str,
        id: &WorkspaceId,
    ) -> Result<bool> {
        Ok(self.0.workspace(tenant, user, id).await?.is_some())
    }
}
