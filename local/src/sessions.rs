//! The workspace service for agent sessions on the local server, and
//! `workspace-local purge [--dry-run]`.
//!
//! Paging tokens are signed with `WORKSPACE_SESSION_TOKEN_KEY` when set, else with a key
//! generated on first start and kept in `<data dir>/session-token.key` (mode 0600), so
//! tokens survive a restart.

use crate::{config, emit};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use workspace_core::model::format_time;
use workspace_core::ports::{BodyStore, RandomIds, SystemClock};
use workspace_core::sessions::ports::{BodyEraser, SessionStore};
use workspace_core::sessions::token::TokenKey;
use workspace_core::sessions::SessionService;
use workspace_http::config::{session_limits_from_env, token_key_from_env};
use workspace_store_aws::sessions::{workspace_erasers, DynamoSessions};
use workspace_store_aws::{AwsClients, S3Bodies};
use workspace_store_embedded::EmbeddedStore;

pub const TOKEN_KEY_FILE: &str = "session-token.key";

fn token_key(data_dir: &Path) -> Result<TokenKey, String> {
    let get = |k: &str| std::env::var(k).ok();
    if let Some(k) = token_key_from_env(&get).map_err(|e| e.to_string())? {
        return Ok(k);
    }
    let path = data_dir.join(TOKEN_KEY_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let bytes =
            hex::decode(text.trim()).map_err(|_| format!("{} is not a hex key", path.display()))?;
        return TokenKey::new(bytes).map_err(|e| format!("{}: {e}", path.display()));
    }
    let bytes = rand::random::<[u8; 32]>();
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(&path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(hex::encode(bytes).as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    TokenKey::new(bytes.to_vec()).map_err(|e| e.to_string())
}

fn build(
    store: Arc<dyn SessionStore>,
    bodies: Arc<dyn BodyStore>,
    erasers: Vec<Arc<dyn BodyEraser>>,
    key: TokenKey,
) -> Result<SessionService, String> {
    let get = |k: &str| std::env::var(k).ok();
    Ok(SessionService::new(
        store,
        bodies,
        erasers,
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        key,
        session_limits_from_env(&get).map_err(|e| e.to_string())?,
    ))
}

/// The service over the server's embedded store.
pub fn service(store: Arc<EmbeddedStore>, data_dir: &Path) -> Result<SessionService, String> {
    // Blobs and cache entries live in the same database: the store erases them too.
    build(
        store.clone(),
        store.clone(),
        vec![store],
        token_key(data_dir)?,
    )
}

/// `workspace-local purge [--dry-run]`: over the local database (stop the server first:
/// the database admits one process), or with `WORKSPACE_TABLE` and `WORKSPACE_BUCKET`
/// set, over that table and bucket.
pub async fn purge(dry_run: bool) -> Result<(), String> {
    let cfg = config::Config::from_env()?;
    let svc = match std::env::var("WORKSPACE_TABLE")
        .ok()
        .filter(|t| !t.is_empty())
    {
        Some(table) => {
            let bucket = std::env::var("WORKSPACE_BUCKET")
                .ok()
                .filter(|b| !b.is_empty())
                .ok_or("WORKSPACE_BUCKET must be set with WORKSPACE_TABLE")?;
            let clients = AwsClients::from_env().await;
            build(
                Arc::new(DynamoSessions::new(clients.dynamodb.clone(), table)),
                Arc::new(S3Bodies::new(clients.s3.clone(), bucket.clone())),
                workspace_erasers(&|k: &str| std::env::var(k).ok(), &clients, &bucket),
                TokenKey::random(),
            )?
        }
        None => {
            let store = Arc::new(
                EmbeddedStore::open(&cfg.data_dir)
                    .map_err(|e| format!("{e} (is the server running? stop it before purging)"))?,
            );
            build(
                store.clone(),
                store.clone(),
                vec![store],
                TokenKey::random(),
            )?
        }
    };
    let report = svc.purge(dry_run).await.map_err(|e| e.to_string())?;
    let verb = if dry_run { "would purge" } else { "purged" };
    let mut lines: Vec<String> = report
        .workspaces
        .iter()
        .map(|w| {
            format!(
                "{verb} {}/{} (user {}, last active {})",
                w.tenant,
                w.workspace_id,
                w.user,
                format_time(w.last_active_at)
            )
        })
        .collect();
    lines.push(format!(
        "{} workspace(s) idle since before {}{}",
        report.workspaces.len(),
        format_time(report.cutoff),
        if dry_run {
            "; dry run, nothing changed"
        } else {
            ""
        }
    ));
    emit(&lines);
    Ok(())
}
