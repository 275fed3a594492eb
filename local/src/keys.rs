//! API keys for the local server. `WORKSPACE_API_KEYS` is a development shortcut; managed
//! keys live hashed in `<data dir>/keys.json` and are created, listed and revoked with
//! `workspace-local keys …`, also while the server runs. On a first start with neither,
//! one key for tenant `local`, workspace `default` is created and printed once.

use std::path::Path;
use std::sync::Arc;
use workspace_core::keys::{key_digest, new_key, KeyStore, ManagedKey};
use workspace_core::ports::{Clock, SystemClock};
use workspace_core::{TenantId, WorkspaceId};
use workspace_http::auth::{AnyOf, ApiKeys, Authenticator, ManagedKeys};
use workspace_store_embedded::keys::KEYS_FILE;

pub const DEFAULT_TENANT: &str = "local";
pub const DEFAULT_WORKSPACE: &str = "default";

/// How the keys were found, for the start-up banner.
pub enum KeySource {
    Env,
    /// Created now; the only time this key is ever shown.
    Generated {
        key: String,
    },
    Managed {
        count: usize,
    },
}

/// Creates a key and returns it (the only time it exists in plain text).
pub async fn create(
    store: &dyn KeyStore,
    tenant: &str,
    workspace: Option<&str>,
    access: workspace_core::Access,
    paths: &workspace_core::PathScope,
    principal: Option<&str>,
) -> Result<(String, ManagedKey), String> {
    TenantId::parse(tenant).map_err(|e| format!("--tenant: {e}"))?;
    if let Some(w) = workspace {
        WorkspaceId::parse(w).map_err(|e| format!("--workspace: {e}"))?;
    }
    let (key, id) = new_key();
    let record = ManagedKey {
        id: id.clone(),
        digest: key_digest(&key),
        tenant: tenant.to_owned(),
        workspace: workspace.map(str::to_owned),
        principal: principal.map_or_else(|| format!("key:{id}"), str::to_owned),
        read: access.read,
        write: access.write,
        admin: access.admin,
        allow_paths: paths.allow().to_vec(),
        read_paths: paths.read().to_vec(),
        created_at: SystemClock.now_ms(),
        revoked_at: None,
    };
    store
        .insert_key(record.clone())
        .await
        .map_err(|e| e.to_string())?;
    Ok((key, record))
}

/// The server's authenticator: the environment's keys (if any), then the managed keys.
pub async fn authenticator(
    spec: Option<&str>,
    store: Arc<dyn KeyStore>,
) -> Result<(Arc<dyn Authenticator>, KeySource), String> {
    let mut chain: Vec<Arc<dyn Authenticator>> = Vec::new();
    let source = if let Some(spec) = spec {
        let keys = ApiKeys::parse(spec).map_err(|e| e.to_string())?;
        if keys.is_empty() {
            return Err("WORKSPACE_API_KEYS is set but holds no key".to_owned());
        }
        chain.push(Arc::new(keys));
        KeySource::Env
    } else {
        let usable = store
            .list_keys()
            .await
            .map_err(|e| e.to_string())?
            .iter()
            .filter(|k| k.revoked_at.is_none())
            .count();
        if usable == 0 {
            let (key, _) = create(
                store.as_ref(),
                DEFAULT_TENANT,
                Some(DEFAULT_WORKSPACE),
                workspace_core::Access::READ_WRITE,
                &workspace_core::PathScope::whole(),
                Some("local-key"),
            )
            .await?;
            KeySource::Generated { key }
        } else {
            KeySource::Managed { count: usable }
        }
    };
    chain.push(Arc::new(ManagedKeys::new(store)));
    Ok((Arc::new(AnyOf(chain)), source))
}

/// `keys list` output: one line per key, never a secret.
pub fn describe(k: &ManagedKey) -> String {
    format!(
        "{id}  tenant={tenant}  workspace={ws}  access={access}{paths}  principal={principal}  {state}",
        id = k.id,
        tenant = k.tenant,
        ws = k.workspace.as_deref().unwrap_or("*"),
        access = match (k.write, k.admin) {
            (_, true) => "read,write,admin",
            (true, false) => "read,write",
            (false, false) => "read",
        },
        paths = match k.paths() {
            Ok(p) if p.is_whole() => String::new(),
            Ok(p) => format!("  paths={}", p.to_claim()),
            Err(_) => "  paths=<unreadable: the key is refused>".to_owned(),
        },
        principal = k.principal,
        state = if k.revoked_at.is_some() {
            "revoked"
        } else {
            "active"
        },
    )
}

pub fn file_in(data_dir: &Path) -> String {
    data_dir.join(KEYS_FILE).display().to_string()
}
