//! `workspace-local mcp`: the MCP tools over stdin/stdout (newline-delimited JSON-RPC, the
//! MCP stdio transport) for clients that spawn the server. Same tools, same service and
//! store as `POST /mcp`; stdout carries only protocol messages, logs go to stderr.
//!
//! Whose workspace: `WORKSPACE_API_KEY` (a key the server would accept: managed or from
//! `WORKSPACE_API_KEYS`; a tenant-wide key also needs `--workspace`), or, for a person's own
//! machine, `--tenant T --workspace W` (whoever can run this can read the data directory
//! anyway). Nothing in the messages can change it.

use http::request::Parts;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use workspace_core::keys::KeyStore;
use workspace_core::{Access, Identity, Scope, WorkspaceService};
use workspace_http::auth::{AnyOf, ApiKeys, Authenticator, ManagedKeys, WORKSPACE_HEADER};
use workspace_mcp::{handle_payload, Reply, Workspace};
use workspace_wiring::Settings;

/// The `mcp` command's flags.
pub struct Who {
    pub tenant: Option<String>,
    pub workspace: Option<String>,
    pub read_only: bool,
}

/// The variable holding the API key the stdio server acts with.
pub const KEY_VAR: &str = "WORKSPACE_API_KEY";

fn request_with(key: &str, workspace: Option<&str>) -> Result<Parts, String> {
    let mut req =
        http::Request::builder().header(http::header::AUTHORIZATION, format!("Bearer {key}"));
    if let Some(w) = workspace {
        req = req.header(WORKSPACE_HEADER, w);
    }
    req.body(())
        .map(|r| r.into_parts().0)
        .map_err(|_| format!("{KEY_VAR} or --workspace is not a valid header value"))
}

/// The identity this process acts as, from the key or the flags.
pub async fn identity(
    settings: &Settings,
    keys: Arc<dyn KeyStore>,
    who: &Who,
) -> Result<Identity, String> {
    let key = std::env::var(KEY_VAR).ok().filter(|k| !k.trim().is_empty());
    match (key, &who.tenant) {
        (Some(_), Some(_)) => Err(format!(
            "give either {KEY_VAR} or --tenant/--workspace, not both"
        )),
        (Some(key), None) => {
            let mut chain: Vec<Arc<dyn Authenticator>> = Vec::new();
            if let Some(spec) = settings.local.api_keys.as_deref() {
                chain.push(Arc::new(ApiKeys::parse(spec).map_err(|e| e.to_string())?));
            }
            chain.push(Arc::new(ManagedKeys::new(keys)));
            let parts = request_with(key.trim(), who.workspace.as_deref())?;
            let mut id = AnyOf(chain)
                .authenticate(&parts)
                .await
                .map_err(|e| format!("{KEY_VAR}: {e}"))?;
            if who.read_only {
                id.access.write = false;
            }
            Ok(id)
        }
        (None, Some(tenant)) => {
            let workspace = who
                .workspace
                .as_deref()
                .ok_or("--tenant needs --workspace")?;
            let scope = Scope::parse(tenant, workspace).map_err(|e| e.to_string())?;
            Ok(Identity {
                scope,
                principal: "mcp-stdio".to_owned(),
                access: if who.read_only {
                    Access::READ_ONLY
                } else {
                    Access::READ_WRITE
                },
                // The operator's own session (no key): every path.
                paths: workspace_core::PathScope::whole(),
            })
        }
        (None, None) => Err(format!(
            "`workspace-local mcp` needs a credential: set {KEY_VAR}=<api key>, or pass --tenant T --workspace W"
        )),
    }
}

/// Answers each line of stdin on stdout until stdin closes.
pub async fn serve(service: WorkspaceService, who: Identity) -> Result<(), String> {
    tracing::info!(scope = %who.scope, "MCP on stdio");
    let ws = Workspace {
        service: &service,
        who: &who,
    };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        if line.trim().is_empty() {
            continue;
        }
        let reply = match handle_payload(&ws, line.as_bytes()).await {
            Reply::Json(v) | Reply::Invalid(v) => v,
            Reply::Accepted => continue,
        };
        let mut text = reply.to_string();
        text.push('\n');
        // A closed stdout means the client went away: stop quietly.
        if out.write_all(text.as_bytes()).await.is_err() || out.flush().await.is_err() {
            break;
        }
    }
    Ok(())
}
