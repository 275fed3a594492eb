//! The domain services, built from their ports and the settings that tune them. Every
//! process builds a service here, whichever adapters it plugs in.

use crate::Settings;
use std::sync::Arc;
use workspace_core::blob::{BlobService, BlobStore};
use workspace_core::cache::{CacheService, CacheStore};
use workspace_core::ports::{
    Bodies, FromCommittedState, MetaPorts, RandomIds, Staging, SystemClock,
};
use workspace_core::secrets::SecretStore;
use workspace_core::sessions::ports::{BodyEraser, SessionStore};
use workspace_core::sessions::token::TokenKey;
use workspace_core::sessions::SessionService;
use workspace_core::WorkspaceService;

/// The file store (host.workspace). Events come from committed state (the DynamoDB stream
/// on AWS), never from the request path, so the service only logs them.
/// A process passes the ports its routes reach (on Lambda, `MetaPorts::reads_of` and
/// `NoBodies` where a function only reads or holds no bodies: see `aws.rs`).
pub fn files(
    s: &Settings,
    meta: MetaPorts,
    bodies: Arc<dyn Bodies>,
    staging: Arc<dyn Staging>,
    secrets: Arc<dyn SecretStore>,
) -> WorkspaceService {
    let service = WorkspaceService::wired(
        meta,
        bodies,
        staging,
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        s.limits,
    )
    .with_redactor(s.redactor.clone())
    .with_secrets(secrets)
    .with_snapshot_ttl_ms(s.snapshot_ttl_ms)
    .with_inline_body_bytes(s.inline_body_bytes)
    .with_fork_ttl(s.fork_ttl_ms.0, s.fork_ttl_ms.1)
    .with_upload_url_seconds(s.upload_url_seconds)
    .with_memory_prefix(s.memory_prefix.clone());
    match &s.session_token_key {
        Some(key) => service.with_token_key(key.clone()),
        None => service,
    }
}

/// The RFC 0019 TTL cache; values are redacted like files (WSR-1).
pub fn cache(
    s: &Settings,
    store: Arc<dyn CacheStore>,
    secrets: Arc<dyn SecretStore>,
) -> CacheService {
    CacheService::new(store, Arc::new(SystemClock), s.cache_limits)
        .with_redactor(s.redactor.clone())
        .with_secrets(secrets)
}

/// RFC 0019 blob storage.
pub fn blobs(s: &Settings, store: Arc<dyn BlobStore>) -> BlobService {
    let service = BlobService::new(store, Arc::new(SystemClock), s.blob_limits.clone());
    match &s.session_token_key {
        Some(key) => service.with_token_key(key.clone()),
        None => service,
    }
}

/// The session service (`SessionService`); `erasers` hold everything a deleted or
/// purged workspace leaves behind, by its key prefix.
pub fn sessions(
    s: &Settings,
    store: Arc<dyn SessionStore>,
    bodies: Arc<dyn Bodies>,
    erasers: Vec<Arc<dyn BodyEraser>>,
    token_key: TokenKey,
) -> SessionService {
    SessionService::new(
        store,
        bodies,
        erasers,
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        token_key,
        s.session_limits,
    )
}

/// What erases a discarded fork's data: its metadata items and everything under its key
/// prefix, as a workspace delete erases them.
pub fn scope_eraser(
    store: Arc<dyn SessionStore>,
    erasers: Vec<Arc<dyn BodyEraser>>,
) -> Arc<dyn workspace_core::ports::ScopeEraser> {
    Arc::new(workspace_core::sessions::lifecycle::ScopeData { store, erasers })
}

/// Search over indexes kept in this process's memory, caught up from `feed` (the local
/// server on AWS; the embedded store's indexes are files, see `stores::Stores::search`).
#[cfg(feature = "search")]
pub fn search_in_memory(
    feed: Arc<dyn workspace_core::search::ChangeFeed>,
) -> workspace_core::service::SearchWiring {
    workspace_core::service::SearchWiring {
        indexes: Arc::new(workspace_search::LocalIndexes::in_memory()),
        feed,
        max_file_bytes: workspace_core::search::MAX_INDEXED_FILE_BYTES,
        max_scan_bytes: workspace_core::search::MAX_SCAN_BYTES,
        max_regex_millis: workspace_core::search::MAX_REGEX_MILLIS,
        max_catch_up_paths: workspace_core::search::MAX_CATCH_UP_PATHS,
    }
}
