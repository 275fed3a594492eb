//! `workspace-local`: every route of template.yaml in one process, over the embedded store.
//! Requests enter in `server.rs`, go through the shared router (`workspace-http`), and bytes
//! land in one redb file under `WORKSPACE_DATA_DIR`. `workspace-local keys …` manages API keys.

mod events;
mod head_gate;
mod keys;
mod listener;
mod mcp_stdio;
mod mcp_stream;
mod models;
mod secret_file;
mod secrets;
mod server;
mod sessions;

use clap::{Parser, Subcommand};
use std::sync::Arc;
use workspace_core::blob::LocalPresign;
use workspace_core::keys::KeyStore;
use workspace_core::ports::{Clock, SystemClock};
use workspace_core::sessions::ports::RegistryOf;
use workspace_core::signed_url::UrlSigner;
use workspace_http::{serve as routes, App};
use workspace_store_embedded::keys::KeyFile;
use workspace_wiring::aws::Aws;
use workspace_wiring::stores::Stores;
use workspace_wiring::{services, Backend, Settings};

/// The Agent Workspace API on this machine. Settings come from WORKSPACE_* variables.
#[derive(Parser)]
#[command(name = "workspace-local", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum WebhooksAction {
    /// Backlog, last delivery and last error of each target.
    Status,
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
    /// The webhooks of WORKSPACE_WEBHOOKS: `status` prints, per target, how far delivery
    /// got, the backlog and the last error (as the running server last wrote them).
    Webhooks {
        #[command(subcommand)]
        action: WebhooksAction,
    },
    /// Create, idempotently, the AWS data plane template.yaml declares, on the endpoint the
    /// standard AWS environment names (AWS_ENDPOINT_URL for an emulator): the table with
    /// its stream and TTL (WORKSPACE_TABLE), the versioned bodies bucket
    /// (WORKSPACE_BUCKET), and where named the cache table (WORKSPACE_CACHE_TABLE), blob
    /// bucket (WORKSPACE_BLOB_S3_BUCKET) and event bus (WORKSPACE_EVENT_BUS). Prints what
    /// it created or found. Then `WORKSPACE_BACKEND=aws workspace-local` serves on them.
    Provision,
    /// Rebuild search indexes from the store: one workspace's now (with --tenant and
    /// --workspace), or every index (removed, each rebuilt when its workspace is next
    /// searched or written). Stop the server first (the database admits one process).
    Reindex {
        #[arg(long, requires = "workspace")]
        tenant: Option<String>,
        #[arg(long, requires = "tenant")]
        workspace: Option<String>,
    },
    /// Erase workspaces idle longer than WORKSPACE_PURGE_AFTER_DAYS (default 90): files,
    /// versions, artifacts, sessions. Stop the server first (the database admits one
    /// process).
    Purge {
        /// Only list what would be erased.
        #[arg(long)]
        dry_run: bool,
    },
    /// Install the embedding model search by meaning runs (all-MiniLM-L6-v2, pinned
    /// weights), or say whether it is installed.
    Models {
        #[command(subcommand)]
        action: models::ModelsAction,
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
        #[arg(long, conflicts_with = "admin")]
        read_only: bool,
        /// Also workspace:admin: may erase versions from history.
        #[arg(long)]
        admin: bool,
        /// Limit the key to paths matching this glob, which it may read and write
        /// (repeatable; e.g. 'memory/**'). Without --allow and --read: every path.
        #[arg(long = "allow", value_name = "GLOB")]
        allow: Vec<String>,
        /// Paths matching this glob the key may only read (repeatable; e.g. 'docs/**').
        #[arg(long = "read", value_name = "GLOB")]
        read: Vec<String>,
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
        Some(Command::Webhooks {
            action: WebhooksAction::Status,
        }) => Settings::from_env().and_then(|s| events::webhooks::print_status(&s.local.data_dir)),
        Some(Command::Provision) => provision().await,
        Some(Command::Reindex { tenant, workspace }) => reindex(tenant, workspace).await,
        Some(Command::Models { action }) => models::manage(action).await,
    };
    if let Err(e) = result {
        eprintln!("workspace-local: {e}");
        std::process::exit(1);
    }
}

/// Whether the admin commands (`keys`, `secrets`, `purge`) act on AWS: with
/// `WORKSPACE_BACKEND=aws`, or with `WORKSPACE_TABLE` set (the table the Lambda authorizer
/// reads keys from), credentials, region and endpoint from the standard AWS environment.
pub(crate) fn admin_on_aws(s: &Settings) -> bool {
    s.local.backend == Backend::Aws || s.aws.table.is_some()
}

/// Keys live beside the local database, or in the DynamoDB table (see [`admin_on_aws`]).
async fn key_store(s: &Settings) -> Result<(Arc<dyn KeyStore>, String), String> {
    if admin_on_aws(s) {
        let aws = Aws::connect(s.clone()).await;
        Ok((aws.keys()?, format!("DynamoDB table {}", s.aws.table()?)))
    } else {
        Ok((
            Arc::new(KeyFile::new(&s.local.data_dir)),
            keys::file_in(&s.local.data_dir),
        ))
    }
}

async fn manage_keys(action: KeysAction) -> Result<(), String> {
    let settings = Settings::from_env()?;
    let (store, place) = key_store(&settings).await?;
    let store = store.as_ref();
    match action {
        KeysAction::Create {
            tenant,
            workspace,
            read_only,
            admin,
            allow,
            read,
            principal,
        } => {
            let access = workspace_core::Access {
                read: true,
                write: !read_only,
                admin,
            };
            let paths = workspace_core::PathScope::new(allow, read)
                .map_err(|e| format!("--allow/--read: {e}"))?;
            let (key, rec) = keys::create(
                store,
                &tenant,
                workspace.as_deref(),
                access,
                &paths,
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

/// `workspace-local reindex`: see [`Command::Reindex`].
async fn reindex(tenant: Option<String>, workspace: Option<String>) -> Result<(), String> {
    let settings = Settings::from_env()?;
    let (Some(tenant), Some(workspace)) = (tenant, workspace) else {
        let dir = workspace_wiring::stores::search_dir(&settings);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
        }
        emit(&[format!(
            "removed every search index in {}; each is rebuilt from the store when next used",
            dir.display()
        )]);
        return Ok(());
    };
    let stores = Stores::open(&settings).await?;
    let search = stores.search(&settings)?;
    let files = stores
        .files(&settings)
        .with_search(search)
        .with_semantic(workspace_wiring::semantic::local(&settings));
    let scope = workspace_core::Scope::new(
        workspace_core::TenantId::parse(&tenant).map_err(|e| e.to_string())?,
        workspace_core::WorkspaceId::parse(&workspace).map_err(|e| e.to_string())?,
    );
    let n = files.reindex(&scope).await.map_err(|e| e.to_string())?;
    emit(&[format!("reindexed {tenant}/{workspace}: {n} files")]);
    Ok(())
}

/// `workspace-local provision`: the AWS data plane, created or found.
async fn provision() -> Result<(), String> {
    let aws = Aws::connect(Settings::from_env()?).await;
    emit(&aws.provision().await?);
    Ok(())
}

/// `workspace-local mcp`: the tools on stdin/stdout over the configured backend.
async fn mcp(who: mcp_stdio::Who) -> Result<(), String> {
    let settings = Settings::from_env()?;
    let stores = Stores::open(&settings).await?;
    let identity = mcp_stdio::identity(&settings, stores.keys.clone(), &who).await?;
    let search = stores.search(&settings)?;
    // As on the HTTP server: a write answers before its scope's index catches up, and a
    // search first applies whatever is still pending.
    let mut files = stores
        .files(&settings)
        .with_search(search)
        .with_semantic(workspace_wiring::semantic::local(&settings));
    // On the embedded store, commits ring a bell so subscribed resources are notified.
    let feed = stores.events.clone().map(|log| mcp_stdio::ChangeFeed {
        log,
        bell: events::Bell::new(),
    });
    if let Some(feed) = &feed {
        files = files.with_event_sink(Arc::new(feed.bell.clone()));
    }
    let (files, index_refresher) = files.with_index_refresh_after_answer();
    let files = Arc::new(files);
    tokio::spawn(index_refresher.run(Arc::downgrade(&files)));
    mcp_stdio::serve(files, identity, feed).await
}

/// Serves every route of the route table over the configured backend.
async fn serve() -> Result<(), String> {
    let settings = Settings::from_env()?;
    let stores = Stores::open(&settings).await?;
    // Bodies a killed process stored but never committed: removed before the first request,
    // while no write can be in flight (the database file admits one process at a time).
    if let Some(inventory) = &stores.inventory {
        let removed = workspace_core::service::sweep::sweep_unreferenced_bodies(
            stores.meta.as_ref(),
            stores.bodies.as_ref(),
            inventory.as_ref(),
        )
        .await
        .map_err(|e| format!("sweeping uncommitted bodies: {e}"))?;
        if removed > 0 {
            tracing::info!(
                removed,
                "removed bodies no version names (left by a stopped process)"
            );
        }
    }
    let local = &settings.local;
    let (auth, key_source) =
        keys::authenticator(local.api_keys.as_deref(), stores.keys.clone()).await?;
    let listener = tokio::net::TcpListener::bind(local.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", local.addr))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let session_key = sessions::token_key(&settings)?;
    let sessions = services::sessions(
        &settings,
        stores.sessions.clone(),
        stores.bodies.clone(),
        stores.erasers.clone(),
        session_key.clone(),
    );
    let files = stores
        .files(&settings)
        // Paging tokens of file listings survive a restart, like the session list's.
        .with_token_key(session_key.clone())
        .with_scope_eraser(services::scope_eraser(
            stores.sessions.clone(),
            stores.erasers.clone(),
        ))
        .with_search(stores.search(&settings)?)
        // Search by meaning when the model is installed; without it the server starts all
        // the same, and discovery and the 503 of semantic searches say why and how.
        .with_semantic(workspace_wiring::semantic::local(&settings));
    match files.semantic() {
        workspace_core::service::Semantic::On(e) => {
            tracing::info!(model = e.model_id(), "search by meaning is on")
        }
        workspace_core::service::Semantic::Off(why) => {
            tracing::info!(reason = %why, "search by meaning is off")
        }
    }
    let semantic = workspace_wiring::semantic::advertised(files.semantic());
    // Commits answer before their index catches up; searches apply what is still pending.
    let (mut files, index_refresher) = files.with_index_refresh_after_answer();
    let registry = Arc::new(RegistryOf(stores.sessions.clone()));
    let mut app = App::new(auth).with_registry(registry);
    app.advertised.semantic = semantic;
    app.advertised.public_url = Some(
        local
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}")),
    );
    // MCP from browsers: the configured origins, and this server's own (its console's).
    app.allowed_origins = settings.mcp_allowed_origins.clone();
    if let Some(own) = &app.advertised.public_url {
        app.allowed_origins.allow(own)?;
    }
    // Events: the store's outbox holds them; each commit rings the bell for the streams and
    // webhooks that deliver them.
    let bell = events::Bell::new();
    let webhooks = events::webhooks::targets_from(local.webhooks.as_deref())?;
    match &stores.events {
        Some(log) => {
            files = files.with_event_sink(Arc::new(bell.clone()));
            app = app.with_event_log(log.clone(), local.event_retention_seconds);
            // MCP sessions, whose streams read the same outbox.
            app.extensions
                .insert(Arc::new(workspace_mcp::sessions::Sessions::new(
                    local.mcp_max_sessions,
                    std::time::Duration::from_secs(local.mcp_session_idle_seconds),
                )));
        }
        None if !webhooks.is_empty() => {
            return Err("WORKSPACE_WEBHOOKS needs the embedded store's outbox; on AWS, subscribe a rule to the event bus instead".to_owned());
        }
        None => {}
    }
    if let Some(cache) = stores.cache.clone() {
        app = app.with_cache(services::cache(&settings, cache, stores.secrets.clone()));
    }
    if let Some(blob_store) = stores.blobs.clone() {
        // Listing cursors survive a restart, like every listing's paging tokens.
        let mut blobs = services::blobs(&settings, blob_store).with_token_key(session_key.clone());
        // On the embedded store, presigned blob URLs and two-step upload URLs are signed
        // here and served by this process at the address clients reach it on (S3
        // presigns its own).
        if stores.signs_urls {
            let signer = LocalPresign {
                signer: UrlSigner::new(secret_file::load_or_create(
                    &local.data_dir,
                    "presign.key",
                )?),
                base_url: local
                    .public_url
                    .clone()
                    .unwrap_or_else(|| format!("http://{addr}")),
            };
            files = files.with_upload_signer(signer.clone());
            blobs = blobs.with_local_presign(signer);
            app = app.serve_signed(&routes::SIGNED_BLOBS);
        }
        app = app.with_blobs(blobs);
    }
    if stores.signs_urls {
        app = app
            .serve_signed(&routes::SIGNED_UPLOADS)
            .serve_signed(&routes::SIGNED_BODIES);
    }
    let app = app
        .with_files(files)
        .with_sessions(Arc::new(sessions))
        .serve_every_function()
        .serve(workspace_mcp::http::ROUTES)
        .serve(workspace_console::ROUTES);
    // Conformance only: off unless OPENWOP_TEST_SEAM_ENABLED=true (then unknown routes).
    let app = if local.test_seams {
        tracing::warn!("OPENWOP_TEST_SEAM_ENABLED=true: serving the conformance test seams, which act as any owner a request names; never in production");
        app.serve_extra(workspace_http::seams::ROUTES)
    } else {
        app
    };
    if let Some(files) = &app.files {
        tokio::spawn(index_refresher.run(Arc::downgrade(files)));
    }
    server::banner(addr, &stores.place, &key_source);
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let events = stores.events.clone().map(|log| events::Events {
        log,
        bell: bell.clone(),
        stopping,
        streams: Arc::new(tokio::sync::Semaphore::new(local.max_event_streams)),
    });
    if let Some(events) = &events {
        events::prune_forever(
            events.log.clone(),
            std::time::Duration::from_secs(local.event_retention_seconds),
        );
        events::webhooks::start(events, webhooks, local.data_dir.clone()).await?;
    }
    let bounds = listener::Bounds {
        timeout: std::time::Duration::from_secs(local.connection_timeout_seconds),
        max_connections: local.max_connections,
        max_buffered_body_bytes: local.max_buffered_body_bytes,
    };
    server::serve(listener, Arc::new(app), bounds, events, stop).await
}
