//! Reads of files larger than `maxFileBytes` (what two-step uploads make): a response can
//! carry no more than a request (Lambda's payload cap), so such a read answers the metadata
//! and a URL for the exact version's bytes instead of the content. On AWS that is an S3
//! presigned GET pinned to the body's VersionId; elsewhere a URL this process signs and
//! serves (`local_urls.rs`). Inline reads stay inline.

use super::*;
use crate::blob::{PresignMethod, PresignSpec, PresignedUrl};

/// A read: the content inline, or (over `maxFileBytes`) where to fetch it.
#[derive(Debug, Clone)]
pub enum FileRead {
    Inline(StoredFile),
    Download { meta: FileMeta, url: PresignedUrl },
}

impl FileRead {
    /// The inline file; a read that could answer a URL was not asked for one.
    pub(super) fn inline(self) -> Result<StoredFile> {
        match self {
            Self::Inline(file) => Ok(file),
            Self::Download { .. } => Err(WorkspaceError::internal("inline read answered a URL")),
        }
    }
}

fn too_large_to_inline(meta: &FileMeta, limit: u64) -> WorkspaceError {
    WorkspaceError::TooLarge {
        message: format!(
            "{} is {} bytes, over maxFileBytes = {limit}; GET /v1/host/workspace/files/{} answers a download URL for it",
            meta.path, meta.size, meta.path
        ),
        limit,
    }
}

impl WorkspaceService {
    /// The content when it may travel inline, else a download URL (`allow_download`) or a
    /// 413 naming the route that answers one. `Ok(None)`: the body is gone (pruned).
    pub(super) async fn deliver(
        &self,
        meta: FileMeta,
        body: &BodyRef,
        allow_download: bool,
    ) -> Result<Option<FileRead>> {
        let limit = self.limits.max_file_bytes;
        if meta.size > limit {
            if !allow_download {
                return Err(too_large_to_inline(&meta, limit));
            }
            let url = self.download_url(&meta, body).await?;
            return Ok(Some(FileRead::Download { meta, url }));
        }
        Ok(self
            .bodies
            .get(body)
            .await?
            .map(|content| FileRead::Inline(StoredFile { meta, content })))
    }

    async fn download_url(&self, meta: &FileMeta, body: &BodyRef) -> Result<PresignedUrl> {
        let spec = PresignSpec {
            method: PresignMethod::Get,
            expires_in_seconds: self.upload_url_seconds,
            version_id: Some(body.version_id.clone()),
            content_length: None,
            content_type: Some(meta.content_type.clone()),
            now: self.clock.now_ms(),
        };
        if let Some(url) = self.bodies.presign_get(body, &spec).await? {
            return Ok(url);
        }
        self.local_download_url(meta, body, &spec)
    }
}
