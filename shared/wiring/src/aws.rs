//! The AWS adapters, from the settings' resource names and the standard AWS environment.
//! Each client is built at most once per process, and only where its feature is on: a
//! function enables the features of the clients it calls (`fn-list`, `fn-delete`, `fn-cache`:
//! DynamoDB alone).

use crate::Settings;
use std::any::Any;
#[allow(unused_imports)]
use std::sync::Arc;
use std::sync::Mutex;
use workspace_store_aws::AwsConfig;

/// The AWS side of one process.
pub struct Aws {
    pub settings: Settings,
    #[cfg_attr(
        not(any(
            feature = "aws-s3",
            feature = "aws-dynamodb",
            feature = "aws-eventbridge"
        )),
        allow(dead_code)
    )]
    config: AwsConfig,
    /// The clients built so far, one per type. Held type-erased, so a binary links the
    /// code of only the clients it builds: `sam build` compiles every function with the
    /// features of the whole workspace, and a typed field per client would pull each
    /// client's drop glue into every function.
    clients: Mutex<Vec<Box<dyn Any + Send + Sync>>>,
}

impl Aws {
    /// Loads credentials, region and endpoint (`AWS_ENDPOINT_URL` for an emulator).
    pub async fn connect(settings: Settings) -> Self {
        Self::with_config(settings, AwsConfig::from_env().await)
    }

    pub fn with_config(settings: Settings, config: AwsConfig) -> Self {
        Self {
            settings,
            config,
            clients: Mutex::new(Vec::new()),
        }
    }

    /// The client of type `C`, built by `build` the first time it is asked for.
    #[cfg_attr(
        not(any(
            feature = "aws-s3",
            feature = "aws-dynamodb",
            feature = "aws-eventbridge"
        )),
        allow(dead_code)
    )]
    fn client<C: Clone + Send + Sync + 'static>(&self, build: impl FnOnce() -> C) -> C {
        let mut held = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = held.iter().find_map(|c| c.downcast_ref::<C>()) {
            return c.clone();
        }
        let c = build();
        held.push(Box::new(c.clone()));
        c
    }
}

#[cfg(feature = "aws-dynamodb")]
mod dynamodb {
    use super::*;
    use crate::services;
    use workspace_core::cache::{CacheService, CacheStore};
    use workspace_core::keys::KeyStore;
    use workspace_core::ports::{MetaPorts, MetaStore, NoBodies};
    use workspace_core::secrets::{NoSecrets, SecretStore};
    use workspace_core::sessions::ports::{RegistryOf, SessionStore, WorkspaceRegistry};
    use workspace_core::WorkspaceService;
    use workspace_store_aws::keys_table::DynamoKeys;
    use workspace_store_aws::secrets_table::DynamoSecrets;
    use workspace_store_aws::sessions::DynamoSessions;
    use workspace_store_aws::{DynamoCache, DynamoMeta};

    impl Aws {
        pub fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
            self.client(|| self.config.dynamodb())
        }

        fn table(&self) -> Result<String, String> {
            self.settings.aws.table().map(str::to_owned)
        }

        /// The metadata table as its own type, so a function wires from it only the
        /// ports it uses (each port its own trait object; see `MetaPorts`).
        pub fn dynamo_meta(&self) -> Result<Arc<DynamoMeta>, String> {
            Ok(Arc::new(DynamoMeta::new(self.dynamodb(), self.table()?)))
        }

        /// The metadata table as the whole store (the local server on AWS).
        pub fn meta(&self) -> Result<Arc<dyn MetaStore>, String> {
            Ok(self.dynamo_meta()?)
        }

        pub fn secrets(&self) -> Result<Arc<dyn SecretStore>, String> {
            Ok(Arc::new(DynamoSecrets::new(self.dynamodb(), self.table()?)))
        }

        pub fn keys(&self) -> Result<Arc<dyn KeyStore>, String> {
            Ok(Arc::new(self.key_table()?))
        }

        /// The key table as its own type (the authorizer reads it without dynamic dispatch).
        pub fn key_table(&self) -> Result<DynamoKeys, String> {
            Ok(DynamoKeys::new(self.dynamodb(), self.table()?))
        }

        /// The workspace registry identity resolution reads (one GetItem; the concrete
        /// type keeps the rest of the sessions adapter out of functions that only check).
        pub fn registry(&self) -> Result<Arc<dyn WorkspaceRegistry>, String> {
            Ok(Arc::new(RegistryOf(Arc::new(DynamoSessions::new(
                self.dynamodb(),
                self.table()?,
            )))))
        }

        pub fn sessions(&self) -> Result<Arc<dyn SessionStore>, String> {
            Ok(Arc::new(DynamoSessions::new(
                self.dynamodb(),
                self.table()?,
            )))
        }

        /// The cache table, where the stack has one.
        pub fn cache(&self) -> Option<Arc<dyn CacheStore>> {
            let table = self.settings.aws.cache_table.clone()?;
            Some(Arc::new(DynamoCache::new(self.dynamodb(), table)))
        }

        /// The cache service of a function that serves it (the table is required).
        pub fn cache_service(&self) -> Result<CacheService, String> {
            let table = self.cache().ok_or("WORKSPACE_CACHE_TABLE must be set")?;
            Ok(services::cache(&self.settings, table, self.secrets()?))
        }

        /// Search on Lambda: each workspace's index is an object in the bodies bucket, kept
        /// by the indexer function; an instance holds the ones it used in memory, loads one
        /// again only when the object changed, and catches it up from the change log before
        /// every answer (so a search never waits for the indexer to be fresh).
        #[cfg(all(feature = "search", feature = "aws-s3"))]
        pub fn search(&self) -> Result<workspace_core::service::SearchWiring, String> {
            let objects = workspace_store_aws::search_index::S3IndexObjects::new(
                self.s3(),
                self.settings.aws.bucket()?,
            );
            Ok(workspace_core::service::SearchWiring {
                indexes: Arc::new(workspace_search::SharedIndexes::new(Arc::new(objects))),
                feed: Arc::new(workspace_core::search::ChangeLogFeed {
                    meta: self.dynamo_meta()?,
                    clock: Arc::new(workspace_core::ports::SystemClock),
                }),
                max_file_bytes: workspace_core::search::MAX_INDEXED_FILE_BYTES,
                max_scan_bytes: workspace_core::search::MAX_SCAN_BYTES,
                max_regex_millis: workspace_core::search::MAX_REGEX_MILLIS,
                max_catch_up_paths: workspace_core::search::MAX_CATCH_UP_PATHS,
            })
        }

        /// The file service of a function that touches DynamoDB only and commits
        /// (`delete`): no body store and no secrets, since nothing it serves reads a body
        /// or writes content.
        pub fn metadata_files(&self) -> Result<WorkspaceService, String> {
            Ok(services::files(
                &self.settings,
                MetaPorts::of(self.dynamo_meta()?),
                Arc::new(NoBodies),
                Arc::new(NoBodies),
                Arc::new(NoSecrets),
            ))
        }

        /// The file service of a function that lists and never commits (`list`): the
        /// read ports of the table alone.
        pub fn listing_files(&self) -> Result<WorkspaceService, String> {
            Ok(services::files(
                &self.settings,
                MetaPorts::reads_of(self.dynamo_meta()?),
                Arc::new(NoBodies),
                Arc::new(NoBodies),
                Arc::new(NoSecrets),
            ))
        }
    }
}

#[cfg(feature = "aws-s3")]
mod s3 {
    use super::*;
    use workspace_core::blob::{BlobService, BlobStore};
    use workspace_core::ports::BodyStore;
    use workspace_store_aws::{S3Blobs, S3Bodies};

    impl Aws {
        pub fn s3(&self) -> aws_sdk_s3::Client {
            self.client(|| self.config.s3())
        }

        pub fn s3_bodies(&self) -> Result<S3Bodies, String> {
            Ok(S3Bodies::new(self.s3(), self.settings.aws.bucket()?))
        }

        pub fn bodies(&self) -> Result<Arc<dyn BodyStore>, String> {
            Ok(Arc::new(self.s3_bodies()?))
        }

        /// The blob bucket, where the stack has one.
        pub fn blobs(&self) -> Option<Arc<dyn BlobStore>> {
            let bucket = self.settings.aws.blob_bucket.clone()?;
            Some(Arc::new(S3Blobs::new(self.s3(), bucket)))
        }

        /// The blob service of a function that serves it (the bucket is required).
        pub fn blob_service(&self) -> Result<BlobService, String> {
            let bucket = self.blobs().ok_or("WORKSPACE_BLOB_S3_BUCKET must be set")?;
            Ok(crate::services::blobs(&self.settings, bucket))
        }
    }
}

#[cfg(feature = "aws-eventbridge")]
impl Aws {
    pub fn eventbridge(&self) -> aws_sdk_eventbridge::Client {
        self.client(|| self.config.eventbridge())
    }
}

#[cfg(all(feature = "aws-s3", feature = "aws-dynamodb"))]
mod both {
    use super::*;
    use workspace_core::ports::{MetaPorts, NoBodies};
    use workspace_core::secrets::NoSecrets;
    use workspace_core::sessions::ports::BodyEraser;
    use workspace_store_aws::sessions::{PartitionEraser, S3Eraser};
    use workspace_store_aws::sweeper::Sweeper;

    impl Aws {
        /// Everything a workspace delete or purge erases by the workspace's key prefix:
        /// the file bodies, and, where the stack has them, the cache table's partition and
        /// the blob bucket's objects. The first is the bodies' eraser.
        pub fn erasers(&self) -> Result<Vec<Arc<dyn BodyEraser>>, String> {
            let names = &self.settings.aws;
            let mut erasers: Vec<Arc<dyn BodyEraser>> =
                vec![Arc::new(S3Eraser::new(self.s3(), names.bucket()?))];
            if let Some(t) = &names.cache_table {
                erasers.push(Arc::new(PartitionEraser::new(self.dynamodb(), t.clone())));
            }
            if let Some(b) = &names.blob_bucket {
                erasers.push(Arc::new(S3Eraser::new(self.s3(), b.clone())));
            }
            Ok(erasers)
        }

        /// The file service with bodies in S3 and the tenant's registered secrets.
        pub fn files(&self) -> Result<workspace_core::WorkspaceService, String> {
            let bodies = Arc::new(self.s3_bodies()?);
            Ok(crate::services::files(
                &self.settings,
                MetaPorts::of(self.dynamo_meta()?),
                bodies.clone(),
                bodies,
                self.secrets()?,
            ))
        }

        /// The file service of a function that reads and never commits (`get`,
        /// `search`): the table's read ports and the bodies to read; no staging area and
        /// no secrets, which only writes use.
        pub fn reading_files(&self) -> Result<workspace_core::WorkspaceService, String> {
            Ok(crate::services::files(
                &self.settings,
                MetaPorts::reads_of(self.dynamo_meta()?),
                Arc::new(self.s3_bodies()?),
                Arc::new(NoBodies),
                Arc::new(NoSecrets),
            ))
        }

        /// The orphan sweeper over the bodies bucket and the table.
        pub fn sweeper(&self) -> Result<Sweeper, String> {
            Ok(Sweeper {
                s3: self.s3(),
                dynamodb: self.dynamodb(),
                bucket: self.settings.aws.bucket()?.to_owned(),
                table: self.settings.aws.table()?.to_owned(),
            })
        }
    }
}

#[cfg(all(feature = "aws-s3", feature = "aws-eventbridge"))]
impl Aws {
    /// The stream publisher: `workspace.updated` on the bus, pruned bodies deleted.
    pub fn publisher(&self) -> Result<workspace_store_aws::publisher::Publisher, String> {
        Ok(workspace_store_aws::publisher::Publisher {
            sink: workspace_store_aws::events::EventBridgeSink::new(
                self.eventbridge(),
                self.settings.aws.event_bus()?,
            ),
            bodies: self.s3_bodies()?,
        })
    }
}

#[cfg(all(
    feature = "aws-s3",
    feature = "aws-dynamodb",
    feature = "aws-eventbridge"
))]
impl Aws {
    /// Creates what the settings name, idempotently (`workspace-local provision`): the
    /// table (with its stream) and bodies bucket, which are required, and the cache table,
    /// blob bucket and event bus where named. One line per resource: created, found, or
    /// skipped (and why).
    pub async fn provision(&self) -> Result<Vec<String>, String> {
        use workspace_store_aws::provision::{self, Stream};
        let names = &self.settings.aws;
        let e = |r: workspace_core::WorkspaceError| r.to_string();
        let mut lines = Vec::new();
        let (outcome, _) =
            provision::table(&self.dynamodb(), names.table()?, Stream::NewAndOldImages)
                .await
                .map_err(e)?;
        lines.push(format!(
            "{outcome} table {} (WORKSPACE_TABLE; stream, TTL on expiresAt)",
            names.table()?
        ));
        let outcome = provision::bucket(&self.s3(), names.bucket()?)
            .await
            .map_err(e)?;
        lines.push(format!(
            "{outcome} bucket {} (WORKSPACE_BUCKET; versioned)",
            names.bucket()?
        ));
        match &names.cache_table {
            Some(t) => {
                let (outcome, _) = provision::table(&self.dynamodb(), t, Stream::None)
                    .await
                    .map_err(e)?;
                lines.push(format!(
                    "{outcome} cache table {t} (WORKSPACE_CACHE_TABLE; TTL on expiresAt)"
                ));
            }
            None => lines.push("skipped the cache table: WORKSPACE_CACHE_TABLE is not set".into()),
        }
        match &names.blob_bucket {
            Some(b) => {
                let outcome = provision::bucket(&self.s3(), b).await.map_err(e)?;
                lines.push(format!(
                    "{outcome} blob bucket {b} (WORKSPACE_BLOB_S3_BUCKET; versioned)"
                ));
            }
            None => {
                lines.push("skipped the blob bucket: WORKSPACE_BLOB_S3_BUCKET is not set".into())
            }
        }
        match &names.event_bus {
            Some(bus) => {
                let outcome = provision::event_bus(&self.eventbridge(), bus)
                    .await
                    .map_err(e)?;
                lines.push(format!("{outcome} event bus {bus} (WORKSPACE_EVENT_BUS)"));
            }
            None => lines.push("skipped the event bus: WORKSPACE_EVENT_BUS is not set".into()),
        }
        Ok(lines)
    }
}
