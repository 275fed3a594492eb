//! The session paging-token key of the local server, and `workspace-local purge [--dry-run]`.
//!
//! Paging tokens are signed with `WORKSPACE_SESSION_TOKEN_KEY` when set, else with a key
//! generated on first start and kept in `<data dir>/session-token.key` (mode 0600), so
//! tokens survive a restart.

use crate::emit;
use workspace_core::model::format_time;
use workspace_core::sessions::token::TokenKey;
use workspace_wiring::stores::{self, Stores};
use workspace_wiring::{services, Settings};

pub const TOKEN_KEY_FILE: &str = "session-token.key";

pub fn token_key(settings: &Settings) -> Result<TokenKey, String> {
    if let Some(k) = &settings.session_token_key {
        return Ok(k.clone());
    }
    let bytes = crate::secret_file::load_or_create(&settings.local.data_dir, TOKEN_KEY_FILE)?;
    TokenKey::new(bytes).map_err(|e| format!("{TOKEN_KEY_FILE}: {e}"))
}

/// `workspace-local purge [--dry-run]`: over the local database (stop the server first:
/// the database admits one process), or on AWS (see [`crate::admin_on_aws`]) over the
/// table and bucket.
pub async fn purge(dry_run: bool) -> Result<(), String> {
    let settings = Settings::from_env()?;
    let stores: Stores = if crate::admin_on_aws(&settings) {
        if settings.aws.bucket.is_none() {
            return Err("WORKSPACE_BUCKET must be set with WORKSPACE_TABLE".to_owned());
        }
        stores::aws(&settings).await?
    } else {
        stores::embedded(&settings)
            .map_err(|e| format!("{e} (is the server running? stop it before purging)"))?
    };
    // Purging issues no paging tokens; any key will do.
    let svc = services::sessions(
        &settings,
        stores.sessions,
        stores.bodies,
        stores.erasers,
        TokenKey::random(),
    );
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
