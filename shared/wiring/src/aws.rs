//! The AWS adapters, from the settings' resource names and the standard AWS environment.
//! Each client is built at most once per process, and only where its feature is on: a
//! function enables the features of the clients it calls (`fn-snapshots`: DynamoDB alone).

use crate::Settings;
#[allow(unused_imports)]
use std::sync::{Arc, OnceLock};
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
    #[cfg(feature = "aws-s3")]
    s3: OnceLock<aws_sdk_s3::Client>,
    #[cfg(feature = "aws-dynamodb")]
    dynamodb: OnceLock<aws_sdk_dynamodb::Client>,
    #[cfg(feature = "aws-eventbridge")]
    eventbridge: OnceLock<aws_sdk_eventbridge::Client>,
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
            #[cfg(feature = "aws-s3")]
            s3: OnceLock::new(),
            #[cfg(feature = "aws-dynamodb")]
            dynamodb: OnceLock::new(),
            #[cfg(feature = "aws-eventbridge")]
            eventbridge: OnceLock::new(),
        }
    }
}

#[cfg(feature = "aws-dynamodb")]
mod dynamodb {
    use super::*;
    use workspace_core::cache::CacheStore;
    use workspace_core::keys::KeyStore;
    use workspace_core::ports::MetaStore;
    use workspace_core::secrets::SecretStore;
    use workspace_core::sessions::ports::SessionStore;
    use workspace_store_aws::keys_table::DynamoKeys;
    use workspace_store_aws::secrets_table::DynamoSecrets;
    use workspace_store_aws::sessions::DynamoSessions;
    use workspace_store_aws::{DynamoCache, DynamoMeta};

    impl Aws {
        pub fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
            self.dynamodb.get_or_init(|| self.config.dynamodb()).clone()
        }

        fn table(&self) -> Result<String, String> {
            self.settings.aws.table().map(str::to_owned)
        }

        pub fn meta(&self) -> Result<Arc<dyn MetaStore>, String> {
            Ok(Arc::new(DynamoMeta::new(self.dynamodb(), self.table()?)))
        }

        pub fn secrets(&self) -> Result<Arc<dyn SecretStore>, String> {
            Ok(Arc::new(DynamoSecrets::new(self.dynamodb(), self.table()?)))
        }

        pub fn keys(&self) -> Result<Arc<dyn KeyStore>, String> {
            Ok(Arc::new(DynamoKeys::new(self.dynamodb(), self.table()?)))
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
    }
}

#[cfg(feature = "aws-s3")]
mod s3 {
    use super::*;
    use workspace_core::blob::BlobStore;
    use workspace_core::ports::BodyStore;
    use workspace_store_aws::{S3Blobs, S3Bodies};

    impl Aws {
        pub fn s3(&self) -> aws_sdk_s3::Client {
            self.s3.get_or_init(|| self.config.s3()).clone()
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
    }
}

#[cfg(feature = "aws-eventbridge")]
impl Aws {
    pub fn eventbridge(&self) -> aws_sdk_eventbridge::Client {
        self.eventbridge
            .get_or_init(|| self.config.eventbridge())
            .clone()
    }
}

#[cfg(all(feature = "aws-s3", feature = "aws-dynamodb"))]
mod both {
    use super::*;
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
