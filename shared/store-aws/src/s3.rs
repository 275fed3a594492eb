//! File bodies in one versioned S3 bucket. Every put makes a new S3 version of the file's
//! key; reads and deletes name the exact VersionId, so a reader gets the committed bytes
//! whatever was written after.
//!
//! Two-step uploads stage in the same bucket under `t/<tenant>/w/<workspace>/uploads/`:
//! the client PUTs to a presigned URL (length and content type signed), the commit reads
//! the current version, and removes every version after. The hourly sweeper removes staged
//! objects older than a day (`prune_staged` does nothing here).

use crate::aws_err;
use async_trait::async_trait;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::list_object_versions::ListObjectVersionsOutput;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use std::time::{Duration, UNIX_EPOCH};
use workspace_core::blob::{PresignMethod, PresignSpec, PresignedUrl};
use workspace_core::model::{BodyRef, Millis};
use workspace_core::ports::{Bodies, Staged, Staging};
use workspace_core::{Result, WorkspaceError};

/// S3's "no such object" in its several spellings.
fn is_missing<E: ProvideErrorMetadata>(
    e: &SdkError<E, aws_smithy_runtime_api::http::Response>,
) -> bool {
    match e {
        SdkError::ServiceError(se) => {
            matches!(
                se.err().code(),
                Some("NoSuchKey" | "NoSuchVersion" | "NotFound")
            ) || se.raw().status().as_u16() == 404
        }
        _ => false,
    }
}

/// The pages of `ListObjectVersions` under a prefix, read one at a time (so a caller can
/// act on each before it reads the next): the one paging loop over an S3 listing.
pub(crate) struct VersionPages<'a> {
    client: &'a Client,
    bucket: &'a str,
    prefix: &'a str,
    /// Where the next page starts (key and version markers); `None` once the last is read.
    next: Option<(Option<String>, Option<String>)>,
}

impl<'a> VersionPages<'a> {
    pub(crate) fn new(client: &'a Client, bucket: &'a str, prefix: &'a str) -> Self {
        Self {
            client,
            bucket,
            prefix,
            next: Some((None, None)),
        }
    }

    /// The next page, or `None` after the last.
    pub(crate) async fn next(&mut self) -> Result<Option<ListObjectVersionsOutput>> {
        let Some((key_marker, version_marker)) = self.next.take() else {
            return Ok(None);
        };
        let page = self
            .client
            .list_object_versions()
            .bucket(self.bucket)
            .prefix(self.prefix)
            .set_key_marker(key_marker)
            .set_version_id_marker(version_marker)
            .send()
            .await
            .map_err(aws_err)?;
        if page.is_truncated() == Some(true) {
            self.next = Some((
                page.next_key_marker().map(str::to_owned),
                page.next_version_id_marker().map(str::to_owned),
            ));
        }
        Ok(Some(page))
    }
}

/// Every version and delete marker under `prefix`, as (key, version id), all pages.
pub(crate) async fn object_versions(
    client: &Client,
    bucket: &str,
    prefix: &str,
) -> Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    let mut pages = VersionPages::new(client, bucket, prefix);
    while let Some(page) = pages.next().await? {
        let found = page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            );
        for (key, version) in found {
            if let Some(key) = key {
                out.push((key.to_owned(), version.map(str::to_owned)));
            }
        }
    }
    Ok(out)
}

/// Deletes every version and delete marker of exactly `key` (not of longer keys sharing
/// the prefix), one DeleteObject per version.
pub(crate) async fn delete_every_version(client: &Client, bucket: &str, key: &str) -> Result<()> {
    for (k, version) in object_versions(client, bucket, key).await? {
        if k != key {
            continue;
        }
        client
            .delete_object()
            .bucket(bucket)
            .key(key)
            .set_version_id(version)
            .send()
            .await
            .map_err(aws_err)?;
    }
    Ok(())
}

/// An S3 answer with "no such object" (in any of its spellings) as `None`.
pub(crate) fn or_missing<T, E: ProvideErrorMetadata>(
    res: std::result::Result<T, SdkError<E, aws_smithy_runtime_api::http::Response>>,
) -> Result<Option<T>>
where
    SdkError<E, aws_smithy_runtime_api::http::Response>: std::error::Error,
{
    match res {
        Ok(out) => Ok(Some(out)),
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(aws_err(e)),
    }
}

/// S3's own SigV4 URL for `spec`: GET pinned to a version when given, PUT with the
/// content length and type signed when given (S3 then refuses any other).
pub(crate) async fn presign_object(
    client: &Client,
    bucket: &str,
    key: &str,
    spec: &PresignSpec,
) -> Result<PresignedUrl> {
    let start = UNIX_EPOCH + Duration::from_millis(u64::try_from(spec.now).unwrap_or(0));
    let config = PresigningConfig::builder()
        .start_time(start)
        .expires_in(Duration::from_secs(spec.expires_in_seconds))
        .build()
        .map_err(|e| WorkspaceError::validation(format!("cannot presign: {e}")))?;
    let req = match spec.method {
        PresignMethod::Get => client
            .get_object()
            .bucket(bucket)
            .key(key)
            .set_version_id(spec.version_id.clone())
            .presigned(config)
            .await
            .map_err(aws_err)?,
        PresignMethod::Put => client
            .put_object()
            .bucket(bucket)
            .key(key)
            .set_content_length(spec.content_length.and_then(|n| i64::try_from(n).ok()))
            .set_content_type(spec.content_type.clone())
            .presigned(config)
            .await
            .map_err(aws_err)?,
    };
    // SigV4 signs the start time to the second (X-Amz-Date) and S3 ends the URL at that
    // second plus X-Amz-Expires: advertise exactly that instant, never a later one.
    let expires_at = workspace_core::signed_url::expiry_second(spec.now, spec.expires_in_seconds)
        .saturating_mul(1000);
    Ok(PresignedUrl {
        url: req.uri().to_owned(),
        method: spec.method,
        expires_at,
        headers: req
            .headers()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect(),
    })
}

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
impl Bodies for S3Bodies {
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
        Ok(BodyRef::stored(key, version_id))
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
        let Some(out) = or_missing(res)? else {
            return Ok(None);
        };
        let bytes = out.body.collect().await.map_err(aws_err)?;
        Ok(Some(bytes.into_bytes().to_vec()))
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

    async fn presign_get(
        &self,
        body: &BodyRef,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        let spec = PresignSpec {
            version_id: Some(body.version_id.clone()),
            ..spec.clone()
        };
        presign_object(&self.client, &self.bucket, &body.key, &spec)
            .await
            .map(Some)
    }
}

#[async_trait]
impl Staging for S3Bodies {
    async fn put_staged(&self, key: &str, bytes: Vec<u8>, _now: Millis) -> Result<()> {
        self.put(key, bytes, "application/octet-stream")
            .await
            .map(drop)
    }

    /// The current version; its size is known from the response headers before the body
    /// is read, so an oversized object is never pulled into memory.
    async fn get_staged(&self, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
        let res = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await;
        let Some(out) = or_missing(res)? else {
            return Ok(None);
        };
        let size = out
            .content_length
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0);
        let stored_at = out
            .last_modified
            .as_ref()
            .and_then(|t| t.to_millis().ok())
            .unwrap_or(Millis::MAX);
        let bytes = if size <= max_bytes {
            Some(out.body.collect().await.map_err(aws_err)?.to_vec())
        } else {
            None
        };
        Ok(Some(Staged {
            size: bytes.as_ref().map_or(size, |b| b.len() as u64),
            stored_at,
            bytes,
        }))
    }

    async fn delete_staged(&self, key: &str) -> Result<()> {
        delete_every_version(&self.client, &self.bucket, key).await
    }

    async fn prune_staged(&self, _prefix: &str, _cutoff: Millis) -> Result<u64> {
        Ok(0) // the sweeper's job on AWS (see `sweeper.rs`)
    }

    async fn presign_staged_put(
        &self,
        key: &str,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        presign_object(&self.client, &self.bucket, key, spec)
            .await
            .map(Some)
    }
}
