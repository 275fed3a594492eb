//! Reads of files larger than `maxFileBytes` (what two-step uploads make): a response can
//! carry no more than a request (Lambda's payload cap), so such a read answers the metadata
//! and a URL for the exact version's bytes instead of the content. On AWS that is an S3
//! presigned GET pinned to the body's VersionId; elsewhere a URL this process signs and
//! serves ([`WorkspaceService::serve_signed_body`]). Inline reads stay inline.

use super::*;
use crate::blob::{PresignMethod, PresignSpec, PresignedUrl};
use crate::signed_url::SignedUrlError;

/// Path prefix of every locally signed download URL.
pub const SIGNED_BODY_PREFIX: &str = "/v1/signed/body/";

/// A read: the content inline, or (over `maxFileBytes`) where to fetch it.
#[derive(Debug, Clone)]
pub enum FileRead {
    Inline(StoredFile),
    Download { meta: FileMeta, url: PresignedUrl },
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
        let local = self.upload_signer.as_ref().ok_or_else(|| {
            WorkspaceError::NotProvided(
                "this deployment cannot hand out download URLs (no presigning store, no local signer)"
                    .to_owned(),
            )
        })?;
        let ttl_ms =
            i64::try_from(spec.expires_in_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        let expires = spec.now.saturating_add(ttl_ms).div_euclid(1000);
        let path = format!("{SIGNED_BODY_PREFIX}{}", body.key);
        let query = local.signer.sign(
            "GET",
            &path,
            expires,
            &[("v", &body.version_id), ("ct", &meta.content_type)],
        );
        Ok(PresignedUrl {
            url: format!("{}{path}?{query}", local.base_url),
            method: PresignMethod::Get,
            expires_at: expires.saturating_mul(1000),
            headers: Vec::new(),
        })
    }

    /// A GET to a download URL this process signed: the exact body version's bytes and
    /// their content type. The signature covers the key, so no scope can be swapped in.
    pub async fn serve_signed_body(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
    ) -> Result<(String, Vec<u8>)> {
        let invalid = || {
            WorkspaceError::Forbidden(
                "the download URL is not valid (altered, or not issued by this server)".to_owned(),
            )
        };
        let local = self
            .upload_signer
            .as_ref()
            .ok_or_else(|| WorkspaceError::not_found("this deployment serves no signed URLs"))?;
        let params = match local
            .signer
            .verify(method, path, query, self.clock.now_ms())
        {
            Ok(p) => p,
            Err(SignedUrlError::Invalid) => return Err(invalid()),
            Err(SignedUrlError::Expired { expires_at }) => {
                return Err(WorkspaceError::Forbidden(format!(
                    "the download URL expired at {}; read the file again for a new one",
                    format_time(expires_at.saturating_mul(1000))
                )))
            }
        };
        let (Some(key), Some(version_id), Some(ct)) = (
            path.strip_prefix(SIGNED_BODY_PREFIX),
            params.get("v"),
            params.get("ct"),
        ) else {
            return Err(invalid());
        };
        if method != "GET" {
            return Err(invalid());
        }
        let body = BodyRef {
            key: key.to_owned(),
            version_id: version_id.clone(),
        };
        let bytes = self
            .bodies
            .get(&body)
            .await?
            .ok_or_else(|| WorkspaceError::not_found("that version is no longer retained"))?;
        Ok((ct.clone(), bytes))
    }
}
