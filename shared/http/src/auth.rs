//! Identity. Tenant and workspace come only from the credential, never from the request
//! body, query or other headers. Each deployment plugs in an `Authenticator`: opaque API keys
//! on the local server, authorizer claims on Lambda.

use crate::request::single_header;
use async_trait::async_trait;
use http::request::Parts;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;
use workspace_core::keys::{key_digest, KeyStore};
use workspace_core::sessions::Caller;
use workspace_core::{
    Access, Identity, PathScope, Result, Scope, TenantId, WorkspaceError, WorkspaceId,
};

#[async_trait]
pub trait Authenticator: Send + Sync {
    /// What the credential grants: tenant, principal, access, and a workspace when the
    /// credential is bound to one. Each transport reads it its own way (API keys here,
    /// authorizer claims on Lambda); everything after is one rule ([`resolve`]).
    async fn grant(&self, parts: &Parts) -> Result<Grant>;

    /// The identity a request acts as, by [`resolve`] (no registry check: the app adds it).
    async fn authenticate(&self, parts: &Parts) -> Result<Identity> {
        resolve(&self.grant(parts).await?, parts)
    }

    /// Tenant and principal alone, for the `/workspaces` API, which names no workspace in
    /// the credential (a tenant-wide key needs no `X-Workspace-Id` there).
    async fn caller(&self, parts: &Parts) -> Result<Caller> {
        Ok(self.grant(parts).await?.caller())
    }
}

/// The bearer token of a request, if it has one.
pub fn bearer_token(parts: &Parts) -> Result<&str> {
    let missing = || {
        WorkspaceError::Unauthenticated(
            "missing credential: send Authorization: Bearer <api key>".to_owned(),
        )
    };
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?;
    let (scheme, token) = value.split_once(' ').ok_or_else(missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(missing());
    }
    Ok(token.trim())
}

struct KeyEntry {
    digest: [u8; 32],
    grant: Grant,
}

/// What a credential grants: one workspace, or (tenant-wide) the workspaces of one tenant.
#[derive(Debug, Clone)]
pub struct Grant {
    pub tenant: TenantId,
    /// `None`: tenant-wide; each request names its workspace in `X-Workspace-Id`.
    pub workspace: Option<WorkspaceId>,
    pub principal: String,
    pub access: Access,
    /// The paths of the workspace the credential reaches.
    pub paths: PathScope,
}

impl Grant {
    /// Tenant and principal alone (the `/workspaces` API).
    pub fn caller(&self) -> Caller {
        Caller {
            tenant: self.tenant.clone(),
            principal: self.principal.clone(),
            access: self.access,
        }
    }
}

/// The header a tenant-wide credential names its workspace with.
pub const WORKSPACE_HEADER: &str = "x-workspace-id";

/// Opaque API keys, each bound to one tenant/workspace or tenant-wide. Only SHA-256 digests
/// are kept in memory, and a lookup compares against every entry in constant time, so
/// neither timing nor a memory dump reveals a key.
#[derive(Default)]
pub struct ApiKeys {
    entries: Vec<KeyEntry>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl ApiKeys {
    /// Parses `WORKSPACE_API_KEYS`: comma-separated `<key>=<tenant>/<workspace>` (a key
    /// bound to one workspace) or `<key>=<tenant>` (tenant-wide: each request names its
    /// workspace in `X-Workspace-Id`). Error messages never repeat a key.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut keys = Self::default();
        for (i, entry) in spec.split(',').map(str::trim).enumerate() {
            if entry.is_empty() {
                continue;
            }
            let bad = |why: &str| {
                WorkspaceError::validation(format!(
                    "WORKSPACE_API_KEYS entry {} {why}; expected <key>=<tenant>/<workspace> or <key>=<tenant>",
                    i + 1
                ))
            };
            let (key, scope) = entry.split_once('=').ok_or_else(|| bad("has no '='"))?;
            if key.len() < 16 {
                return Err(bad("has a key shorter than 16 characters"));
            }
            let principal = format!("apikey:{}", i + 1);
            match scope.split_once('/') {
                Some((tenant, workspace)) => {
                    let scope = Scope::parse(tenant, workspace).map_err(|e| bad(&e.to_string()))?;
                    keys.add(key, scope, principal);
                }
                None => {
                    let tenant = TenantId::parse(scope).map_err(|e| bad(&e.to_string()))?;
                    keys.add_tenant_wide(key, tenant, principal, Access::READ_WRITE);
                }
            }
        }
        Ok(keys)
    }

    /// Adds a read-write key bound to one workspace.
    pub fn add(&mut self, key: &str, scope: Scope, principal: String) {
        self.add_with_access(key, scope, principal, Access::READ_WRITE);
    }

    pub fn add_with_access(&mut self, key: &str, scope: Scope, principal: String, access: Access) {
        self.add_scoped(key, scope, principal, access, PathScope::whole());
    }

    /// Adds a key bound to one workspace and limited to `paths` of it.
    pub fn add_scoped(
        &mut self,
        key: &str,
        scope: Scope,
        principal: String,
        access: Access,
        paths: PathScope,
    ) {
        self.entries.push(KeyEntry {
            digest: digest(key),
            grant: Grant {
                tenant: scope.tenant,
                workspace: Some(scope.workspace),
                principal,
                access,
                paths,
            },
        });
    }

    /// Adds a key for every workspace of `tenant`.
    pub fn add_tenant_wide(
        &mut self,
        key: &str,
        tenant: TenantId,
        principal: String,
        access: Access,
    ) {
        self.entries.push(KeyEntry {
            digest: digest(key),
            grant: Grant {
                tenant,
                workspace: None,
                principal,
                access,
                paths: PathScope::whole(),
            },
        });
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn lookup(&self, key: &str) -> Option<&Grant> {
        let d = digest(key);
        let mut found = None;
        // No early exit: every entry is compared.
        for e in &self.entries {
            if bool::from(e.digest.ct_eq(&d)) {
                found = Some(&e.grant);
            }
        }
        found
    }
}

/// The workspace a request acts on: the key's own, or for a tenant-wide key the one named
/// in `X-Workspace-Id`, always inside the key's tenant (the header names a workspace id,
/// never a tenant). A key bound to a workspace also reaches that workspace's forks by
/// naming them (a fork's id names its parent); a key bound to a fork reaches only the fork.
/// A bound key naming any other workspace is refused, not redirected.
pub fn resolve(grant: &Grant, parts: &Parts) -> Result<Identity> {
    let named = single_header(parts, &http::HeaderName::from_static(WORKSPACE_HEADER))?
        .map(|w| {
            WorkspaceId::parse(w)
                .map_err(|e| WorkspaceError::validation(format!("X-Workspace-Id: {e}")))
        })
        .transpose()?;
    let workspace = match (&grant.workspace, named) {
        (Some(own), None) => own.clone(),
        (Some(own), Some(n)) if *own == n || n.fork_parent().as_ref() == Some(own) => n,
        (Some(_), Some(_)) => {
            return Err(WorkspaceError::Forbidden(
                "this credential is bound to one workspace; X-Workspace-Id names another"
                    .to_owned(),
            ))
        }
        (None, Some(n)) => n,
        (None, None) => {
            return Err(WorkspaceError::validation(
                "a tenant-wide credential must name its workspace in the X-Workspace-Id header",
            ))
        }
    };
    Ok(Identity {
        scope: Scope::new(grant.tenant.clone(), workspace),
        principal: grant.principal.clone(),
        access: grant.access,
        paths: grant.paths.clone(),
    })
}

#[async_trait]
impl Authenticator for ApiKeys {
    async fn grant(&self, parts: &Parts) -> Result<Grant> {
        let token = bearer_token(parts)?;
        self.lookup(token)
            .cloned()
            .ok_or_else(|| WorkspaceError::Unauthenticated("unknown API key".to_owned()))
    }
}

/// Managed keys, looked up by digest on every request, so a key created or revoked while
/// the server runs counts at the next request.
pub struct ManagedKeys {
    store: Arc<dyn KeyStore>,
}

impl ManagedKeys {
    pub fn new(store: Arc<dyn KeyStore>) -> Self {
        Self { store }
    }
}

#[async_trait]
impl Authenticator for ManagedKeys {
    async fn grant(&self, parts: &Parts) -> Result<Grant> {
        let token = bearer_token(parts)?;
        let unknown = || WorkspaceError::Unauthenticated("unknown or revoked API key".to_owned());
        let key = self
            .store
            .key_by_digest(&key_digest(token))
            .await?
            .filter(|k| k.revoked_at.is_none())
            .ok_or_else(unknown)?;
        let grant = Grant {
            tenant: TenantId::parse(&key.tenant).map_err(|_| unknown())?,
            workspace: key
                .workspace
                .as_deref()
                .map(WorkspaceId::parse)
                .transpose()
                .map_err(|_| unknown())?,
            principal: key.principal.clone(),
            access: key.access(),
            paths: key.paths().map_err(|_| unknown())?,
        };
        Ok(grant)
    }
}

/// Tries each authenticator in turn; the first that knows the credential decides.
pub struct AnyOf(pub Vec<Arc<dyn Authenticator>>);

#[async_trait]
impl Authenticator for AnyOf {
    async fn grant(&self, parts: &Parts) -> Result<Grant> {
        let mut last = WorkspaceError::Unauthenticated("unknown API key".to_owned());
        for a in &self.0 {
            match a.grant(parts).await {
                Err(e @ WorkspaceError::Unauthenticated(_)) => last = e,
                decided => return decided,
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let keys =
            ApiKeys::parse("k1-aaaaaaaaaaaaaaaa=acme/main, k2-bbbbbbbbbbbbbbbb=beta/w2").unwrap();
        assert_eq!(keys.len(), 2);
        let grant = keys.lookup("k2-bbbbbbbbbbbbbbbb").unwrap();
        assert_eq!(
            (
                grant.tenant.as_str(),
                grant.workspace.as_ref().map(|w| w.as_str())
            ),
            ("beta", Some("w2"))
        );
        let wide = ApiKeys::parse("k3-cccccccccccccccc=gamma").unwrap();
        assert!(wide
            .lookup("k3-cccccccccccccccc")
            .unwrap()
            .workspace
            .is_none());
        assert!(keys.lookup("k2-bbbbbbbbbbbbbbbX").is_none());
    }

    /// A key bound to a workspace reaches its forks by name; one bound to a fork reaches
    /// only that fork: never its parent, a sibling fork, or another workspace's.
    #[test]
    fn bound_keys_reach_their_forks_and_fork_keys_only_their_fork() {
        let parent = "main";
        let fork = "main~0123456789abcdef";
        let sibling = "main~fedcba9876543210";
        let keys = ApiKeys::parse(&format!(
            "kp-aaaaaaaaaaaaaaaa=acme/{parent}, kf-bbbbbbbbbbbbbbbb=acme/{fork}"
        ))
        .unwrap();
        let reach = |key: &str, named: Option<&str>| {
            let mut req = http::Request::builder().uri("/v1/host/workspace/files");
            if let Some(n) = named {
                req = req.header(WORKSPACE_HEADER, n);
            }
            let (parts, ()) = req.body(()).unwrap().into_parts();
            resolve(keys.lookup(key).unwrap(), &parts).map(|who| who.scope.workspace.to_string())
        };
        let p = "kp-aaaaaaaaaaaaaaaa";
        let f = "kf-bbbbbbbbbbbbbbbb";
        assert_eq!(reach(p, None).unwrap(), parent);
        assert_eq!(reach(p, Some(fork)).unwrap(), fork);
        assert_eq!(reach(p, Some(sibling)).unwrap(), sibling);
        assert!(matches!(
            reach(p, Some("other~0123456789abcdef")),
            Err(WorkspaceError::Forbidden(_))
        ));
        assert_eq!(reach(f, None).unwrap(), fork);
        assert_eq!(reach(f, Some(fork)).unwrap(), fork);
        for other in [parent, sibling, "other"] {
            assert!(
                matches!(reach(f, Some(other)), Err(WorkspaceError::Forbidden(_))),
                "{other}"
            );
        }
    }

    #[test]
    fn bad_entries_do_not_echo_the_key() {
        for spec in [
            "secretsecretsecret",
            "secretsecretsecret=ac/me/x",
            "secretsecretsecret=a#b",
            "short=a/b",
        ] {
            let err = ApiKeys::parse(spec).err().expect(spec).to_string();
            assert!(!err.contains("secretsecret"), "{err}");
        }
    }
}
