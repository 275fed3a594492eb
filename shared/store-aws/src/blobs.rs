//! Blobs in their own versioned S3 bucket, under `t/<tenant>/w/<workspace>/blobs/<bucket>/<key>`
//! (a separate bucket from file bodies, so the orphan sweeper never sees them and IAM can
//! grant blob functions this bucket alone). Presigned URLs are S3's own SigV4 URLs: GET
//! pinned to the VersionId current when presigned, PUT with a signed `content-length` when
//! the client names the size.

use crate::aws_err;
use crate::s3::{delete_every_version, or_missing, presign_object};
use async_trait::async_trait;
use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::Client;
use workspace_core::blob::{
    bucket_prefix, BlobKey, BlobLocation, BlobMeta, BlobPrefix, BlobStore, PresignSpec,
    PresignedUrl,
};
use workspace_core::model::Millis;
use workspace_core::{Result, Scope, WorkspaceError};

#[derive(Clone)]
pub struct S3Blobs {
    client: Client,
    bucket: String,
}

fn millis(t: Option<&DateTime>) -> Millis {
    t.and_then(|d| d.to_millis().ok()).unwrap_or(0)
}

impl S3Blobs {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }
}

#[async_trait]
impl BlobStore for S3Blobs {
    async fn put(
        &self,
        loc: &BlobLocation,
        bytes: Vec<u8>,
        content_type: &str,
        now: Millis,
        // S3 keeps the replaced version itself, under the bucket's lifecycle.
        _keep_superseded_ms: u64,
    ) -> Result<BlobMeta> {
        let size = bytes.len() as u64;
        let out = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(loc.storage_key())
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(BlobMeta {
            key: loc.key.as_str().to_owned(),
            size,
            etag: out.e_tag.unwrap_or_default(),
            content_type: content_type.to_owned(),
            updated_at: now,
            version_id: out.version_id.ok_or_else(|| {
                WorkspaceError::internal(format!(
                    "bucket {} returned no VersionId: versioning must be enabled",
                    self.bucket
                ))
            })?,
        })
    }

    async fn get(
        &self,
        loc: &BlobLocation,
        version_id: Option<&str>,
    ) -> Result<Option<(BlobMeta, Vec<u8>)>> {
        let res = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(loc.storage_key())
            .set_version_id(version_id.map(str::to_owned))
            .send()
            .await;
        let Some(out) = or_missing(res)? else {
            return Ok(None);
        };
        let meta = BlobMeta {
            key: loc.key.as_str().to_owned(),
            size: out
                .content_length
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            etag: out.e_tag.clone().unwrap_or_default(),
            content_type: out
                .content_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_owned()),
            updated_at: millis(out.last_modified.as_ref()),
            version_id: out.version_id.clone().unwrap_or_default(),
        };
        let bytes = out
            .body
            .collect()
            .await
            .map_err(aws_err)?
            .into_bytes()
            .to_vec();
        Ok(Some((
            BlobMeta {
                size: bytes.len() as u64,
                ..meta
            },
            bytes,
        )))
    }

    async fn head(&self, loc: &BlobLocation) -> Result<Option<BlobMeta>> {
        let res = self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(loc.storage_key())
            .send()
            .await;
        let Some(out) = or_missing(res)? else {
            return Ok(None);
        };
        Ok(Some(BlobMeta {
            key: loc.key.as_str().to_owned(),
            size: out
                .content_length
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0),
            etag: out.e_tag.unwrap_or_default(),
            content_type: out
                .content_type
                .unwrap_or_else(|| "application/octet-stream".to_owned()),
            updated_at: millis(out.last_modified.as_ref()),
            version_id: out.version_id.unwrap_or_default(),
        }))
    }

    /// Every version and delete marker of the key goes, so a GET URL pinned to an older
    /// version stops working too.
    async fn delete(&self, loc: &BlobLocation) -> Result<()> {
        delete_every_version(&self.client, &self.bucket, &loc.storage_key()).await
    }

    async fn list(
        &self,
        scope: &Scope,
        bucket: &str,
        prefix: &BlobPrefix,
        after: Option<&BlobKey>,
        limit: usize,
    ) -> Result<Vec<BlobMeta>> {
        let base = bucket_prefix(scope, bucket);
        let out = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(format!("{base}{}", prefix.as_str()))
            .set_start_after(after.map(|a| format!("{base}{}", a.as_str())))
            .max_keys(i32::try_from(limit).unwrap_or(1000).min(1000))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(out
            .contents()
            .iter()
            .filter_map(|o| {
                let key = o.key()?.strip_prefix(&base)?.to_owned();
                Some(BlobMeta {
                    key,
                    size: o.size().and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
                    etag: o.e_tag().unwrap_or_default().to_owned(),
                    content_type: String::new(),
                    updated_at: millis(o.last_modified()),
                    version_id: String::new(),
                })
            })
            .collect())
    }

    fn presigns(&self) -> bool {
        true
    }

    async fn presign(
        &self,
        loc: &BlobLocation,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        presign_object(&self.client, &self.bucket, &loc.storage_key(), spec)
            .await
            .map(Some)
    }
}
