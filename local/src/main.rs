//! `workspace-local`: every route of template.yaml in one process, over the embedded store.
//! Requests enter in `server.rs`, go through the shared router (`workspace-http`), and bytes
//! land in one redb file under `WORKSPACE_DATA_DIR`. `workspace-local keys …` manages API keys.

mod config;
mod keys;
mod mcp_stdio;
mod presign_secret;
mod secrets;
mod server;
mod sessions;

use clap::{Parser, Subcommand};
use std::sync::Arc;
use workspace_core::blob::{BlobService, LocalPresign};
use workspace_core::cache::CacheService;
use workspace_core::keys::KeyStore;
use workspace_core::ports::{Clock, LogEvents, RandomIds, SystemClock};
use workspace_core::signed_url::UrlSigner;
use workspace_core::WorkspaceService;
use workspace_http::App;
use workspace_store_aws::keys_table::DynamoKeys;
use workspace_store_aws::AwsClients;
use workspace_store_embedded::keys::KeyFile;
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;

/// The Agent Workspace API on this machine. Settings come from WORKSPACE_* variables.
#[derive(Parser)]
#[command(name = "workspace-local", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (what runs without a command).
    Serve,
    /// Serve the MCP tools on stdin/stdout for a client that spawns this process. The
    /// workspace comes from the API key in WORKSPACE_API_KEY, or from --tenant/--workspace.
    Mcp {
        #[arg(long)]
        tenant: Option<String>,
        /// The workspace (with --tenant, or for a tenant-wide WORKSPACE_API_KEY).
        #[arg(long)]
        workspace: Option<String>,
        /// Only workspace:read, whatever the credential allows.
        #[arg(long)]
        read_only: bool,
    },
    /// Create, list and revoke API keys, stored hashed in the data directory (or, with
    /// WORKSPACE_TABLE set, in that DynamoDB table for the Lambda authorizer).
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Register, list and remove a tenant's secrets (WSR-1): values redacted as
    /// [REDACTED:<id>] from every write of the tenant, whatever WORKSPACE_REDACT_STRUCTURAL
    /// says. Kept in the data directory (or, with WORKSPACE_TABLE set, in that table).
    Secrets {
        #[command(subcommand)]
        action: SecretsAction,
    },
    /// Erase workspaces idle longer than WORKSPACE_PURGE_AFTER_DAYS (default 90): files,
    /// versions, artifacts, sessions. Stop the server first (the database admits one
    /// process).
    Purge {
        /// Only list what would be erased.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
enum SecretsAction {
    /// Register a secret; its value is read from standard input (never from the command
    /// line, where shell history and `ps` would keep it). One trailing newline is dropped.
    Set {
        #[arg(long)]
        tenant: String,
        /// Names the secret in stored text: [REDACTED:<id>].
        #[arg(long)]
        id: String,
    },
    /// List a tenant's secret ids (never the values).
    List {
        #[arg(long)]
        tenant: String,
    },
    /// Remove a secret; later writes are no longer redacted for it.
    Remove {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        id: String,
    },
}

#[derive(Subcommand)]
enum KeysAction {
    /// Create a key; the key alone is printed on the first line, details after.
    Create {
        #[arg(long)]
        tenant: String,
        /// Bind the key to this workspace; without it the key is tenant-wide.
        #[arg(long)]
        workspace: Option<String>,
        /// Only workspace:read.
        #[arg(long)]
        read_only: bool,
        /// Name recorded as the principal of its writes.
        #[arg(long)]
        principal: Option<String>,
    },
    /// List keys (ids and grants, never the keys).
    List,
    /// Revoke a key by id; a running server refuses it from the next request on.
    Revoke { id: String },
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        None | Some(Command::Serve) => serve().await,
        Some(Command::Keys { action }) => manage_keys(action).await,
        Some(Command::Secrets { action }) => secrets::manage(action).await,
        Some(Command::Mcp {
            tenant,
            workspace,
            read_only,
        }) => {
            mcp(mcp_stdio::Who {
                tenant,
                workspace,
                read_only,
            })
            .await
        }
        Some(Command::Purge { dry_run }) => sessions::purge(dry_run).await,
    };
    if let Err(e) = result {
        eprintln!("workspace-local: {e}");
        std::process::exit(1);
    }
}

/// The DynamoDB table the admin commands (`keys`, `secrets`) act on instead of the data
/// directory, when `WORKSPACE_TABLE` is set (credentials, region and endpoint from the
/// standard AWS environment): its client, name, and a description for their output.
pub(crate) async fn admin_table() -> Option<(AwsClients, String, String)> {
    let table = std::env::var("WORKSPACE_TABLE")
        .ok()
        .filter(|t| !t.is_empty())?;
    let clients = AwsClients::from_env().await;
    let place = format!("DynamoDB table {table}");
    Some((clients, table, place))
}

/// Keys live beside the local database, or in the table of [`admin_table`].
async fn key_store(cfg: &config::Config) -> (Box<dyn KeyStore>, String) {
    match admin_table().await {
        Some((aws, table, place)) => (Box::new(DynamoKeys::new(aws.dynamodb, table)), place),
        None => (
            Box::new(KeyFile::new(&cfg.data_dir)),
            keys::file_in(&cfg.data_dir),
        ),
    }
}

async fn manage_keys(action: KeysAction) -> Result<(), String> {
    let cfg = config::Config::from_env()?;
    let (store, place) = key_store(&cfg).await;
    let store = store.as_ref();
    match action {
        KeysAction::Create {
            tenant,
            workspace,
            read_only,
            principal,
        } => {
            let (key, rec) = keys::create(
                store,
                &tenant,
                workspace.as_deref(),
                read_only,
                principal.as_deref(),
            )
            .await?;
            emit(&[
                key,
                keys::describe(&rec),
                format!("stored hashed in {place}; this is the only time the key is shown"),
            ]);
        }
        KeysAction::List => {
            let listed = store.list_keys().await.map_err(|e| e.to_string())?;
            emit(&listed.iter().map(keys::describe).collect::<Vec<_>>());
        }
        KeysAction::Revoke { id } => {
            if !store
                .revoke_key(&id, SystemClock.now_ms())
                .await
                .map_err(|e| e.to_string())?
            {
                return Err(format!("no active key with id {id}"));
            }
            emit(&[format!("revoked {id}")]);
        }
    }
    Ok(())
}

/// Prints command output. A reader that stops early (`keys create | head -n 1`) closes the
/// pipe; that ends the output quietly instead of panicking like `println!`.
pub(crate) fn emit(lines: &[String]) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
    let _ = out.flush();
}

/// The service over the embedded store in the data directory.
fn local_service(cfg: &config::Config) -> Result<(WorkspaceService, Arc<EmbeddedStore>), String> {
    let store = Arc::new(EmbeddedStore::open(&cfg.data_dir).map_err(|e| e.to_string())?);
    let service = WorkspaceService::new(
        store.clone(),
        store.clone(),
        Arc::new(LogEvents),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        cfg.limits,
    )
    .with_redactor(cfg.redactor.clone())
    .with_secrets(Arc::new(SecretFile::new(&cfg.data_dir)))
    .with_snapshot_ttl_ms(cfg.snapshot_ttl_ms)
    .with_upload_url_seconds(cfg.upload_url_seconds);
    Ok((service, store))
}

async fn mcp(who: mcp_stdio::Who) -> Result<(), String> {
    let cfg = config::Config::from_env()?;
    let (service, _) = local_service(&cfg)?;
    let identity = mcp_stdio::identity(&cfg, &who).await?;
    mcp_stdio::serve(service, identity).await
}

async fn serve() -> Result<(), String> {
    let cfg = config::Config::from_env()?;
    let (service, store) = local_service(&cfg)?;
    let (auth, key_source) = keys::authenticator(cfg.api_keys.as_deref(), &cfg.data_dir).await?;
    let session_service = Arc::new(sessions::service(store.clone(), &cfg.data_dir)?);
    let listener = tokio::net::TcpListener::bind(cfg.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // RFC 0019: blobs and the cache in the same database. Presigned blob URLs and
    // two-step upload URLs are signed here and served by this process at the address
    // clients reach it on.
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let local = LocalPresign {
        signer: UrlSigner::new(presign_secret::load_or_create(&cfg.data_dir)?),
        base_url: cfg
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}")),
    };
    let service = service.with_upload_signer(local.clone());
    let app = Arc::new(
        App::new(service, auth)
            .with_cache(
                CacheService::new(store.clone(), clock.clone(), cfg.cache_limits)
                    .with_redactor(cfg.redactor.clone())
                    .with_secrets(Arc::new(SecretFile::new(&cfg.data_dir))),
            )
            .with_blobs(
                BlobService::new(store, clock, cfg.blob_limits.clone()).with_local_presign(local),
            )
            .with_sessions(session_service),
    );
    server::banner(addr, &cfg.data_dir, &key_source);
    server::serve(listener, app).await
}
