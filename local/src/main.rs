//! `workspace-local`: every route of template.yaml in one process, over the embedded store.
//! Requests enter in `server.rs`, go through the shared router (`workspace-http`), and bytes
//! land in one redb file under `WORKSPACE_DATA_DIR`.

mod config;
mod keys;
mod server;

use std::sync::Arc;
use workspace_core::ports::{LogEvents, RandomIds, SystemClock};
use workspace_core::WorkspaceService;
use workspace_http::App;
use workspace_store_embedded::EmbeddedStore;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = run().await {
        eprintln!("workspace-local: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let cfg = config::Config::from_env()?;
    let store = Arc::new(EmbeddedStore::open(&cfg.data_dir).map_err(|e| e.to_string())?);
    let (api_keys, key_source) = keys::load(cfg.api_keys.as_deref(), &cfg.data_dir)?;
    let service = WorkspaceService::new(
        store.clone(),
        store,
        Arc::new(LogEvents),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        cfg.limits,
    )
    .with_redactor(cfg.redactor);
    let app = Arc::new(App::new(service, Arc::new(api_keys)));
    let listener = tokio::net::TcpListener::bind(cfg.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    server::banner(addr, &cfg.data_dir, &key_source);
    server::serve(listener, app).await
}
