//! The session service (`SessionService`): workspace lifecycle (idempotent local
//! create, list, get, cascade delete, inactivity purge), artifact uploads and the session
//! list. Tenant and user always come from the caller ([`Caller`]); every artifact text is
//! redacted (WSR-1) through [`WorkspaceService::redact_for`] before it is stored.

pub mod artifacts;
pub mod lifecycle;
pub mod model;
pub mod ports;
pub mod token;

use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use crate::ports::{Bodies, Clock, IdSource};
use crate::scope::{Access, Identity, Scope, TenantId, WorkspaceId};
use model::{WorkspaceKind, WorkspaceRecord};
use ports::{BodyEraser, Created, SessionStore};
use std::sync::Arc;
use token::TokenKey;

/// Workspace ids that begin with this are the registry's (`POST /workspaces` issues them):
/// a tenant-wide credential reaches one only if the registry holds it for the credential's
/// own user. Other ids name tenant-level workspaces.
pub const REGISTERED_PREFIX: &str = "ws-";

/// Longest accepted `localPath`.
pub const MAX_LOCAL_PATH_LEN: usize = 1024;
/// Largest page of `GET /workspaces`.
pub const MAX_WORKSPACE_PAGE: usize = 100;
/// Page of `GET /workspaces` when the caller names none.
pub const DEFAULT_WORKSPACE_PAGE: usize = 50;

/// The authenticated caller of the workspace API: a tenant and a user (the credential's
/// principal), never taken from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub tenant: TenantId,
    pub principal: String,
    pub access: Access,
}

impl Caller {
    /// The identity for acting inside one of the caller's workspaces.
    pub fn in_workspace(&self, workspace: &WorkspaceId) -> Identity {
        Identity {
            scope: Scope::new(self.tenant.clone(), workspace.clone()),
            principal: self.principal.clone(),
            access: self.access,
            // The workspace API refuses path-scoped credentials, so a caller here reaches
            // every path.
            paths: crate::PathScope::whole(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Largest artifact (decoded bytes, or the serialized history).
    pub max_artifact_bytes: u64,
    /// Workspaces idle longer than this are purged.
    pub purge_after_days: u64,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_artifact_bytes: 1_048_576,
            purge_after_days: 90,
        }
    }
}

pub struct SessionService {
    store: Arc<dyn SessionStore>,
    bodies: Arc<dyn Bodies>,
    /// Everything a delete erases by the scope's key prefix: file bodies, and where deployed
    /// the RFC 0019 blobs and cache entries.
    erasers: Vec<Arc<dyn BodyEraser>>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    token_key: TokenKey,
    limits: SessionLimits,
}

/// What `POST /workspaces` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOutcome {
    pub workspace: WorkspaceRecord,
    pub created: bool,
}

impl SessionService {
    pub fn new(
        store: Arc<dyn SessionStore>,
        bodies: Arc<dyn Bodies>,
        erasers: Vec<Arc<dyn BodyEraser>>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
        token_key: TokenKey,
        limits: SessionLimits,
    ) -> Self {
        Self {
            store,
            bodies,
            erasers,
            clock,
            ids,
            token_key,
            limits,
        }
    }

    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    pub fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    /// `local` needs a `localPath` (the key of its idempotency); other scopes refuse one.
    pub async fn create(
        &self,
        caller: &Caller,
        kind: WorkspaceKind,
        local_path: Option<String>,
    ) -> Result<CreateOutcome> {
        let local_path = match (kind, local_path) {
            (WorkspaceKind::Local, Some(p)) => {
                let ok = !p.trim().is_empty()
                    && p.len() <= MAX_LOCAL_PATH_LEN
                    && !p.chars().any(char::is_control);
                if !ok {
                    return Err(WorkspaceError::validation(format!(
                        "localPath must be 1-{MAX_LOCAL_PATH_LEN} bytes without control characters"
                    )));
                }
                Some(p)
            }
            (WorkspaceKind::Local, None) => {
                return Err(WorkspaceError::validation(
                    "a local workspace needs localPath",
                ))
            }
            (_, Some(_)) => {
                return Err(WorkspaceError::validation(
                    "localPath is only accepted for workspaceScope local",
                ))
            }
            (_, None) => None,
        };
        let now = self.now();
        // Workspace ids are valid `WorkspaceId`s, so the files API addresses them too.
        let id = format!("{REGISTERED_PREFIX}{}", self.ids.new_id());
        WorkspaceId::parse(&id)?;
        let rec = WorkspaceRecord {
            tenant: caller.tenant.to_string(),
            user: caller.principal.clone(),
            workspace_id: id,
            kind,
            local_path,
            created_at: now,
            last_active_at: now,
        };
        match self.store.create_workspace(&rec).await? {
            Created::New => Ok(CreateOutcome {
                workspace: rec,
                created: true,
            }),
            Created::Existing(existing) => Ok(CreateOutcome {
                workspace: existing,
                created: false,
            }),
        }
    }

    /// The caller's workspace; another user's or tenant's is simply not found.
    pub async fn get(&self, caller: &Caller, id: &str) -> Result<WorkspaceRecord> {
        let not_found = || WorkspaceError::not_found(format!("no workspace {id}"));
        let wid = WorkspaceId::parse(id).map_err(|_| not_found())?;
        self.store
            .workspace(&caller.tenant, &caller.principal, &wid)
            .await?
            .ok_or_else(not_found)
    }

    /// One page of the caller's workspaces, sorted by id, and the token of the next.
    pub async fn list(
        &self,
        caller: &Caller,
        token: Option<&str>,
        limit: Option<usize>,
    ) -> Result<(Vec<WorkspaceRecord>, Option<String>)> {
        let limit = crate::limits::page_limit(limit, DEFAULT_WORKSPACE_PAGE, MAX_WORKSPACE_PAGE)?;
        let binding = format!("workspaces|{}|{}", caller.tenant, caller.principal);
        let after = token
            .map(|t| self.token_key.verify(&binding, t))
            .transpose()?
            .map(|p| p.session_id);
        let after = after.as_deref();
        let mut page = self
            .store
            .list_workspaces(&caller.tenant, &caller.principal, after, limit + 1)
            .await?;
        let next = if page.len() > limit {
            page.truncate(limit);
            page.last().map(|w| {
                self.token_key.issue(
                    &binding,
                    &token::Position {
                        last_task_at: 0,
                        session_id: w.workspace_id.clone(),
                    },
                )
            })
        } else {
            None
        };
        Ok((page, next))
    }
}
