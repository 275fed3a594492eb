//! The whole data plane of the local server behind its ports, on either backend
//! (`WORKSPACE_BACKEND`): the embedded store in the data directory, or the AWS resources
//! template.yaml declares.

use crate::{Backend, Settings};
use std::sync::Arc;
use workspace_core::blob::BlobStore;
use workspace_core::cache::CacheStore;
use workspace_core::events::EventLog;
use workspace_core::keys::KeyStore;
use workspace_core::ports::{BodyInventory, BodyStore, MetaStore};
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
}

impl Stores {
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
    Ok(Stores {
        meta: store.clone(),
        bodies: store.clone(),
        secrets: Arc::new(SecretFile::new(dir)),
        keys: Arc::new(KeyFile::new(dir)),
        cache: Some(store.clone()),
        blobs: Some(store.clone()),
        sessions: store.clone(),
        // Blobs and cache entries live in the same database: the store erases them too.
        erasers: vec![store.clone()],
        place: dir.display().to_string(),
        signs_urls: true,
        inventory: Some(store.clone()),
        events: Some(store),
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
    })
}
