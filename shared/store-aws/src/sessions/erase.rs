//! Bulk deletes: DynamoDB items by key (`paging::batch_write`) and every S3 object version
//! and delete marker under a prefix.

use super::DynamoSessions;
use crate::aws_err;
use crate::items::s;
#[cfg(feature = "s3")]
use crate::s3::object_versions;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
#[cfg(feature = "s3")]
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use workspace_core::sessions::ports::BodyEraser;
use workspace_core::{Result, WorkspaceError};

impl DynamoSessions {
    /// Deletes the items with these keys; returns how many were asked for.
    pub(crate) async fn delete_keys(&self, keys: Vec<(String, String)>) -> Result<u64> {
        let total = keys.len() as u64;
        let requests = keys
            .iter()
            .map(|(pk, sk)| {
                DeleteRequest::builder()
                    .key("pk", s(pk))
                    .key("sk", s(sk))
                    .build()
                    .map(|d| WriteRequest::builder().delete_request(d).build())
                    .map_err(aws_err)
            })
            .collect::<Result<_>>()?;
        crate::paging::batch_write(&self.client, &self.table, requests).await?;
        Ok(total)
    }
}

/// Erases S3 bodies by prefix, every version and delete marker.
#[derive(Clone)]
#[cfg(feature = "s3")]
pub struct S3Eraser {
    client: aws_sdk_s3::Client,
    bucket: String,
}

#[cfg(feature = "s3")]
impl S3Eraser {
    pub fn new(client: aws_sdk_s3::Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    /// Every (key, version id) under `prefix`, as DeleteObjects takes them.
    async fn versions(&self, prefix: &str) -> Result<Vec<ObjectIdentifier>> {
        object_versions(&self.client, &self.bucket, prefix)
            .await?
            .into_iter()
            .map(|(key, version)| {
                ObjectIdentifier::builder()
                    .key(key)
                    .set_version_id(version)
                    .build()
                    .map_err(aws_err)
            })
            .collect()
    }
}

#[cfg(feature = "s3")]
#[async_trait]
impl BodyEraser for S3Eraser {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        let all = self.versions(prefix).await?;
        for chunk in all.chunks(1000) {
            let out = self
                .client
                .delete_objects()
                .bucket(&self.bucket)
                .delete(
                    Delete::builder()
                        .set_objects(Some(chunk.to_vec()))
                        .quiet(true)
                        .build()
                        .map_err(aws_err)?,
                )
                .send()
                .await
                .map_err(aws_err)?;
            if let Some(e) = out.errors().first() {
                return Err(WorkspaceError::internal(format!(
                    "S3 DeleteObjects failed for {:?}: {:?}",
                    e.key(),
                    e.code()
                )));
            }
        }
        Ok(all.len() as u64)
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        Ok(self.versions(prefix).await?.len() as u64)
    }
}

/// Every item of a workspace's partition in another table of ours (the RFC 0019 cache
/// table), erased with the workspace. The prefix handed over is the scope's key prefix.
pub struct PartitionEraser(DynamoSessions);

impl PartitionEraser {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self(DynamoSessions::new(client, table))
    }
}

fn scope_of(prefix: &str) -> Result<workspace_core::Scope> {
    workspace_core::Scope::from_key_prefix(prefix).ok_or_else(|| {
        WorkspaceError::internal(format!("'{prefix}' is not a workspace key prefix"))
    })
}

#[async_trait]
impl BodyEraser for PartitionEraser {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        use workspace_core::sessions::ports::SessionStore;
        self.0.erase_scope(&scope_of(prefix)?).await
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        use workspace_core::sessions::ports::SessionStore;
        self.0.items_under(&scope_of(prefix)?).await
    }
}
