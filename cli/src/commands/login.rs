//! `ws login`: check the credential with one authenticated request, then store it.

use crate::cli::Global;
use crate::client::Client;
use crate::config::{self, Settings, Stored};
use crate::error::{Error, Kind, Result};
use crate::output;
use crate::route;
use reqwest::Method;
use serde_json::json;
use std::io::{BufRead, IsTerminal};
use std::path::Path;

pub async fn run(global: &Global, config_path: &Path) -> Result<()> {
    // A new key for the same deployment need not repeat its URL.
    let previous = config::load(config_path).ok().and_then(|s| s.url);
    let Some(url) = global.url.clone().or(previous) else {
        return Err(Error::bad_input("cannot log in", "no URL given")
            .with_hint("ws login --url URL --key KEY"));
    };
    let key = match &global.key {
        Some(k) => k.clone(),
        None => read_key()?,
    };
    let settings = Settings {
        url: config::normalize_url(&url)?,
        key,
        workspace: global.workspace.clone(),
    };
    let client = Client::new(settings.clone())?;
    let check = route::with_query(route::FILES, &[("limit", Some("1".into()))]);
    client
        .json(
            client.api(Method::GET, &check),
            &format!("cannot log in to {}", settings.url),
        )
        .await
        .map_err(|e| {
            e.hint_for(
                Kind::Auth,
                "check the key (and --workspace): nothing was stored",
            )
            .hint_for(
                Kind::BadInput,
                "a tenant-wide key needs --workspace W; nothing was stored",
            )
        })?;
    let stored = Stored {
        url: Some(settings.url.clone()),
        key: Some(settings.key),
        workspace: settings.workspace.clone(),
    };
    config::save(config_path, &stored)?;
    if global.json {
        output::json(&json!({
            "url": settings.url,
            "workspace": settings.workspace,
            "config": config_path.display().to_string(),
        }));
    } else {
        let workspace = settings
            .workspace
            .map(|w| format!(" (workspace {w})"))
            .unwrap_or_default();
        output::out(&format!(
            "logged in to {}{workspace}; saved to {}\n",
            settings.url,
            config_path.display()
        ));
    }
    Ok(())
}

/// The key from standard input's first line, so it need not appear in the shell's history
/// or the process list.
fn read_key() -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("key: ");
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::bad_input("cannot read the key from standard input", e))?;
    let key = line.trim().to_owned();
    if key.is_empty() {
        return Err(Error::new(Kind::Auth, "cannot log in", "no key given")
            .with_hint("ws login --url URL --key KEY (or the key on standard input)"));
    }
    Ok(key)
}
