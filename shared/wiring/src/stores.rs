//! The whole data plane of the local server behind its ports, on either backend
//! (`WORKSPACE_BACKEND`): the embedded store in the data directory, or the AWS resources
//! template.yaml declares.

use crate::{Backend, Settings};
use std::sync::Arc;
use workspace_core::blob::BlobStore;
use workspace_core::cache::CacheStore;
use workspace_core::events::EventLog;
use workspace_core::keys::KeyStore;
use workspace_core::ports::{BodyInventory, BodyStore, MetaPorts, MetaStore};
use workspace_core::secrets::SecretStore;
use workspace_core::sessions::ports::{BodyEraser, SessionStore};

pub struct Stores {
    pub meta: Arc<dyn MetaStore>,
    pub bodies: Arc<dyn BodyStore>,
    pub secrets: Arc<dyn SecretStore>,
    pub keys: Arc<dyn KeyStore>,
    pub cache: Option<Arc<dyn CacheStore>>,
    pub blobs: Option<Arc<dyn BlobStore>>,
    pub sessions: Arc<dyn SessionStore>,
    /// What a workspace delete or purge erases by key prefix.
    pub erasers: Vec<Arc<dyn BodyEraser>>,
    /// Where the data lives, for messages ("DynamoDB table t", a directory).
    pub place: String,
    /// Whether this process signs (and serves) its own upload, download and blob URLs;
    /// S3 presigns them itself.
    pub signs_urls: bool,
    /// What the body store holds, where the server sweeps orphaned bodies itself at start
    /// (the embedded store; on AWS the scheduled sweep function does it).
    pub inventory: Option<Arc<dyn BodyInventory>>,
    /// The outbox of `workspace.updated`, where the store keeps one (the embedded store;
    /// on AWS events come from the table's stream).
    pub events: Option<Arc<dyn EventLog>>,
    /// The search indexes beside the embedded store (also among `erasers`, so a deleted
    /// workspace's index goes with it); `None` on AWS or with `WORKSPACE_SEARCH=off`.
    pub indexes: Option<Arc<workspace_search::LocalIndexes>>,
}

impl Stores {
    /// Search over these stores: on the embedded store, indexes in `<data dir>/search`
    /// caught up from its outbox (exact, so every commit's catch-up reads only new events);
    /// on AWS, indexes in memory caught up from the change log.
    /// `None` with `WORKSPACE_SEARCH=off`.
    pub fn search(
        &self,
        s: &Settings,
    ) -> Result<Option<workspace_core::service::SearchWiring>, String> {
        use workspace_core::search::{ChangeLogFeed, OutboxFeed};
        if !s.local.search {
            return Ok(None);
        }
        match (&self.events, &self.indexes) {
            // The same indexes the erasers hold, so a deleted workspace's goes with it.
            (Some(log), Some(indexes)) => Ok(Some(workspace_core::service::SearchWiring {
                indexes: indexes.clone(),
                feed: Arc::new(OutboxFeed(log.clone())),
                max_file_bytes: workspace_core::search::MAX_INDEXED_FILE_BYTES,
                max_scan_bytes: workspace_core::search::MAX_SCAN_BYTES,
                max_regex_millis: workspace_core::search::MAX_REGEX_MILLIS,
                max_catch_up_paths: workspace_core::search::MAX_CATCH_UP_PATHS,
            })),
            _ => Ok(Some(crate::services::search_in_memory(Arc::new(
                ChangeLogFeed {
                    meta: self.meta.clone(),
                    clock: Arc::new(workspace_core::ports::SystemClock),
                },
            )))),
        }
    }

    /// The file service over every port of these stores.
    pub fn files(&self, s: &Settings) -> workspace_core::WorkspaceService {
        crate::services::files(
            s,
            MetaPorts::of_store(self.meta.clone()),
            self.bodies.clone(),
            self.bodies.clone(),
            self.secrets.clone(),
        )
    }

    /// Opens the backend the settings name.
    pub async fn open(s: &Settings) -> Result<Self, String> {
        match s.local.backend {
            Backend::Embedded => embedded(s),
            Backend::Aws => aws(s).await,
        }
    }
}

/// The embedded store (one redb file) and the key and secret files beside it.
pub fn embedded(s: &Settings) -> Result<Stores, String> {
    use workspace_store_embedded::keys::KeyFile;
    use workspace_store_embedded::secrets::SecretFile;
    use workspace_store_embedded::EmbeddedStore;
    let dir = &s.local.data_dir;
    let store = Arc::new(EmbeddedStore::open(dir).map_err(|e| e.to_string())?);
    let indexes = if s.local.search {
        Some(Arc::new(
            workspace_search::LocalIndexes::in_dir(search_dir(s)).map_err(|e| e.to_string())?,
        ))
    } else {
        None
    };
    let mut erasers: Vec<Arc<dyn BodyEraser>> = vec![store.clone()];
    if let Some(i) = &indexes {
        erasers.push(i.clone());
    }
    Ok(Stores {
        meta: store.clone(),
        bodies: store.clone(),
        secrets: Arc::new(SecretFile::new(dir)),
        keys: Arc::new(KeyFile::new(dir)),
        cache: Some(store.clone()),
        blobs: Some(store.clone()),
        sessions: store.clone(),
        // Blobs and cache entries live in the same database: the store erases them too.
        erasers,
        place: dir.display().to_string(),
        signs_urls: true,
        inventory: Some(store.clone()),
        events: Some(store),
        indexes,
    })
}

/// The AWS data plane: `WORKSPACE_TABLE` and `WORKSPACE_BUCKET` are required, the cache
/// table and blob bucket optional, as on Lambda.
pub async fn aws(s: &Settings) -> Result<Stores, String> {
    let aws = crate::aws::Aws::connect(s.clone()).await;
    Ok(Stores {
        meta: aws.meta()?,
        bodies: aws.bodies()?,
        secrets: aws.secrets()?,
        keys: aws.keys()?,
        cache: aws.cache(),
        blobs: aws.blobs(),
        sessions: aws.sessions()?,
        erasers: aws.erasers()?,
        place: format!("DynamoDB table {}", s.aws.table()?),
        signs_urls: false,
        inventory: None,
        events: None,
        indexes: None,
    })
}

/// Where the embedded store's search indexes live: beside its database, rebuilt from it
/// when missing (`workspace-local reindex` removes them).
pub fn search_dir(s: &Settings) -> std::path::PathBuf {
    s.local.data_dir.join("search")
}
