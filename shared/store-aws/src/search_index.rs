//! Each workspace's search index as one object in the bodies bucket,
//! `t/<tenant>/w/<workspace>/search/index.sqlite`: under the workspace's own prefix, so the
//! same IAM isolation covers it and erasing the workspace erases it; outside `files/`, so
//! the sweeper never takes it for an orphaned body.
//!
//! Writes are conditional (`If-Match` on the ETag the writer loaded, `If-None-Match: *`
//! when there was none): of two indexers racing on one workspace, the second gets 412 and
//! starts again from the first's object. The bucket is versioned, so each write leaves the
//! previous version behind; the writer deletes it once its own is stored.

use crate::aws_err;
use async_trait::async_trait;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use workspace_core::search::{IndexObjects, Loaded};
use workspace_core::{Result, Scope};

pub struct S3IndexObjects {
    client: Client,
    bucket: String,
}

impl S3IndexObjects {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self {
            client,
            bucket: bucket.into(),
        }
    }

    pub fn key(scope: &Scope) -> String {
        format!("{}search/index.sqlite", scope.key_prefix())
    }
}

/// A tag: the object's ETag, and its version id (to delete once superseded).
fn tag(etag: &str, version: Option<&str>) -> String {
    format!("{etag}\n{}", version.unwrap_or_default())
}

fn untag(tag: &str) -> (&str, &str) {
    tag.split_once('\n').unwrap_or((tag, ""))
}

fn status<E>(e: &SdkError<E, aws_smithy_runtime_api::http::Response>) -> Option<u16> {
    match e {
        SdkError::ServiceError(se) => Some(se.raw().status().as_u16()),
        _ => None,
    }
}

#[async_trait]
impl IndexObjects for S3IndexObjects {
    async fn load(&self, scope: &Scope, known: Option<&str>) -> Result<Loaded> {
        let res = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(Self::key(scope))
            .set_if_none_match(known.map(|t| untag(t).0.to_owned()))
            .send()
            .await;
        match res {
            Ok(out) => {
                let etag = out.e_tag().unwrap_or_default().to_owned();
                let version = out.version_id().map(str::to_owned);
                let bytes = out.body.collect().await.map_err(aws_err)?.into_bytes();
                Ok(Loaded::Fresh {
                    bytes: bytes.to_vec(),
                    tag: tag(&etag, version.as_deref()),
                })
            }
            Err(e) if status(&e) == Some(304) => Ok(Loaded::Unchanged),
            Err(e) if status(&e) == Some(404) || e.code() == Some("NoSuchKey") => {
                Ok(Loaded::Missing)
            }
            Err(e) => Err(aws_err(e)),
        }
    }

    async fn store(
        &self,
        scope: &Scope,
        bytes: Vec<u8>,
        expected: Option<&str>,
    ) -> Result<Option<String>> {
        let key = Self::key(scope);
        let put = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(&key)
            .content_type("application/vnd.sqlite3")
            .body(ByteStream::from(bytes));
        let put = match expected {
            Some(t) => put.if_match(untag(t).0),
            None => put.if_none_match("*"),
        };
        let out = match put.send().await {
            Ok(out) => out,
            // Another writer stored first (412), or the object it expected is gone (404).
            Err(e)
                if matches!(status(&e), Some(412 | 404 | 409))
                    || e.code() == Some("PreconditionFailed") =>
            {
                return Ok(None)
            }
            Err(e) => return Err(aws_err(e)),
        };
        if let Some((_, old)) = expected.map(untag).filter(|(_, v)| !v.is_empty()) {
            // The superseded version: best effort (an old version left is only storage).
            if let Err(e) = self
                .client
                .delete_object()
                .bucket(&self.bucket)
                .key(&key)
                .version_id(old)
                .send()
                .await
            {
                tracing::warn!(error = %aws_err(e), "superseded index version not deleted");
            }
        }
        Ok(Some(tag(out.e_tag().unwrap_or_default(), out.version_id())))
    }
}
