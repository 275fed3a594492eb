//! File bodies in one versioned S3 bucket. Every put makes a new S3 version of the file's
//! key; reads and deletes name the exact VersionId, so a reader gets the committed bytes
//! whatever was written after.

use crate::dynamo::aws_err;
use async_trait::async_trait;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use workspace_core::model::BodyRef;
use workspace_core::ports::BodyStore;
use workspace_core::{Result, WorkspaceError};

#[derive(Clone)]
pub struct S3Bodies {
    client: Client,
    bucket: String,
}

impl S3Bodies {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

#[async_trait]
impl BodyStore for S3Bodies {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<BodyRef> {
        let out = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(aws_err)?;
        let version_id = out.version_id.ok_or_else(|| {
            WorkspaceError::internal(format!(
                "bucket {} returned no VersionId: versioning must be enabled",
                self.bucket
            ))
        })?;
        Ok(BodyRef {
            key: key.to_owned(),
            version_id,
        })
    }

    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        let res = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(&body.key)
            .version_id(&body.version_id)
            .send()
            .await;
        match res {
            Ok(out) => {
                let bytes = out.body.collect().await.map_err(aws_err)?;
                Ok(Some(bytes.into_bytes().to_vec()))
            }
            Err(SdkError::ServiceError(e))
                if matches!(e.err().code(), Some("NoSuchKey" | "NoSuchVersion"))
                    || e.raw().status().as_u16() == 404 =>
            {
                Ok(None)
            }
            Err(e) => Err(aws_err(e)),
        }
    }

    async fn delete(&self, body: &BodyRef) -> Result<()> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(&body.key)
            .version_id(&body.version_id)
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }
}
