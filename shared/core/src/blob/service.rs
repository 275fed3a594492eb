//! The rules of blob storage over the [`BlobStore`] port: configured buckets only, keys and
//! content types checked, sizes bounded by `maxObjectBytes`, presign lifetimes by
//! `maxPresignSeconds`, listings paged with an opaque cursor (a paging token sealed like
//! every listing's, `crate::sessions::token`).

use super::{
    check_bucket_name, BlobKey, BlobLimits, BlobLocation, BlobMeta, BlobPrefix, BlobStore,
    LocalPresign, PresignMethod, PresignSpec, PresignedUrl,
};
use crate::capability::CapabilityCode;
use crate::error::{Result, WorkspaceError};
use crate::ports::Clock;
use crate::scope::Scope;
use crate::sessions::token::TokenKey;
use std::sync::Arc;

/// Largest page of a listing.
pub const MAX_BLOB_LIST_LIMIT: usize = 1000;
const MAX_CONTENT_TYPE_LEN: usize = 255;

/// `POST /v1/host/blob/{bucket}/presign`, as parsed from its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresignRequest {
    pub key: String,
    pub method: String,
    pub expires_in_seconds: u64,
    pub content_length: Option<u64>,
    pub content_type: Option<String>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedBlobs {
    pub entries: Vec<BlobMeta>,
    pub next_cursor: Option<String>,
}

pub struct BlobService {
    pub(super) store: Arc<dyn BlobStore>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) limits: BlobLimits,
    pub(super) local: Option<LocalPresign>,
    /// Seals the listing cursors (random unless configured: then a cursor only verifies in
    /// the process that issued it).
    token_key: TokenKey,
}

pub(super) fn too_large(size: u64, limit: u64) -> WorkspaceError {
    CapabilityCode::BlobObjectTooLarge.over_limit(
        format!("object is {size} bytes; maxObjectBytes = {limit}"),
        limit,
    )
}

pub(super) fn no_object(loc: &BlobLocation) -> WorkspaceError {
    CapabilityCode::BlobObjectNotFound.error(format!(
        "no object '{}' in bucket '{}'",
        loc.key.as_str(),
        loc.bucket
    ))
}

/// A media type: printable ASCII with a `/`, at most 255 characters.
pub fn check_content_type(ct: &str) -> Result<()> {
    let ok = !ct.is_empty()
        && ct.len() <= MAX_CONTENT_TYPE_LEN
        && ct.contains('/')
        && ct.chars().all(|c| c.is_ascii_graphic() || c == ' ');
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::validation(format!(
            "Content-Type must be a media type like image/png (printable ASCII, at most {MAX_CONTENT_TYPE_LEN} characters)"
        )))
    }
}

/// What a cursor is bound to: the listing and the caller's scope, so one issued for another
/// bucket, prefix or workspace is refused.
fn cursor_binding(scope: &Scope, bucket: &str, prefix: &BlobPrefix) -> String {
    format!("blob list|{scope}|{bucket}|{}", prefix.as_str())
}

impl BlobService {
    pub fn new(store: Arc<dyn BlobStore>, clock: Arc<dyn Clock>, limits: BlobLimits) -> Self {
        Self {
            store,
            clock,
            limits,
            local: None,
            token_key: TokenKey::random(),
        }
    }

    /// The key listing cursors are sealed with; every process of a deployment needs the
    /// same (`WORKSPACE_SESSION_TOKEN_KEY`).
    pub fn with_token_key(mut self, key: TokenKey) -> Self {
        self.token_key = key;
        self
    }

    /// Presigned URLs signed and served by this process, for stores that cannot presign.
    pub fn with_local_presign(mut self, local: LocalPresign) -> Self {
        self.local = Some(local);
        self
    }

    pub fn limits(&self) -> &BlobLimits {
        &self.limits
    }

    pub fn presign_supported(&self) -> bool {
        self.store.presigns() || self.local.is_some()
    }

    /// The local signer, when this process serves signed URLs itself.
    pub fn local_presign(&self) -> Option<&LocalPresign> {
        self.local.as_ref()
    }

    /// Checks the bucket against the configuration (a 404 of its own otherwise).
    pub fn bucket(&self, bucket: &str) -> Result<String> {
        check_bucket_name(bucket).map_err(|_| self.unknown_bucket(bucket))?;
        if self.limits.buckets.iter().any(|b| b == bucket) {
            Ok(bucket.to_owned())
        } else {
            Err(self.unknown_bucket(bucket))
        }
    }

    fn unknown_bucket(&self, bucket: &str) -> WorkspaceError {
        CapabilityCode::BlobBucketNotFound.error(format!(
            "no bucket '{}'; this deployment has {}",
            bucket.escape_debug(),
            self.limits.buckets.join(", ")
        ))
    }

    pub fn location(&self, scope: &Scope, bucket: &str, key: &str) -> Result<BlobLocation> {
        Ok(BlobLocation {
            scope: scope.clone(),
            bucket: self.bucket(bucket)?,
            key: BlobKey::parse(key)?,
        })
    }

    pub async fn put(
        &self,
        loc: &BlobLocation,
        bytes: Vec<u8>,
        content_type: Option<&str>,
    ) -> Result<BlobMeta> {
        let ct = content_type.unwrap_or("application/octet-stream");
        check_content_type(ct)?;
        let size = bytes.len() as u64;
        if size > self.limits.max_object_bytes {
            return Err(too_large(size, self.limits.max_object_bytes));
        }
        self.store
            .put(
                loc,
                bytes,
                ct,
                self.clock.now_ms(),
                self.keep_superseded_ms(),
            )
            .await
    }

    /// How long a replaced version stays readable by id: a GET URL presigned for it just
    /// before the overwrite lives at most this long.
    pub(super) fn keep_superseded_ms(&self) -> u64 {
        self.limits.max_presign_seconds.saturating_mul(1000)
    }

    pub async fn get(&self, loc: &BlobLocation) -> Result<(BlobMeta, Vec<u8>)> {
        self.store
            .get(loc, None)
            .await?
            .ok_or_else(|| no_object(loc))
    }

    pub async fn delete(&self, loc: &BlobLocation) -> Result<()> {
        self.store.delete(loc).await
    }

    pub async fn list(
        &self,
        scope: &Scope,
        bucket: &str,
        prefix: &str,
        cursor: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ListedBlobs> {
        let bucket = self.bucket(bucket)?;
        let prefix = BlobPrefix::parse(prefix)?;
        let binding = cursor_binding(scope, &bucket, &prefix);
        let after = cursor
            .map(|c| {
                let bad = |_| {
                    WorkspaceError::validation(
                        "cursor is not one this server issued for this listing",
                    )
                };
                BlobKey::parse(&self.token_key.open(&binding, c).map_err(bad)?).map_err(bad)
            })
            .transpose()?;
        let limit = crate::limits::page_limit(limit, MAX_BLOB_LIST_LIMIT, MAX_BLOB_LIST_LIMIT)?;
        // One more than asked says whether another page follows.
        let mut entries = self
            .store
            .list(scope, &bucket, &prefix, after.as_ref(), limit + 1)
            .await?;
        let next_cursor = if entries.len() > limit {
            entries.truncate(limit);
            entries
                .last()
                .map(|m| self.token_key.seal(&binding, &m.key))
        } else {
            None
        };
        Ok(ListedBlobs {
            entries,
            next_cursor,
        })
    }

    pub async fn presign(
        &self,
        scope: &Scope,
        bucket: &str,
        req: PresignRequest,
    ) -> Result<PresignedUrl> {
        let loc = self.location(scope, bucket, &req.key)?;
        let method = match req.method.as_str() {
            "GET" => PresignMethod::Get,
            "PUT" => PresignMethod::Put,
            other => {
                return Err(WorkspaceError::validation(format!(
                    "method must be GET or PUT, got '{}'",
                    other.escape_debug()
                )))
            }
        };
        let max = self.limits.max_presign_seconds;
        if req.expires_in_seconds == 0 || req.expires_in_seconds > max {
            return Err(WorkspaceError::validation(format!(
                "expiresInSeconds must be 1-{max} (maxPresignSeconds)"
            )));
        }
        let mut spec = PresignSpec {
            method,
            expires_in_seconds: req.expires_in_seconds,
            version_id: None,
            content_length: None,
            content_type: None,
            now: self.clock.now_ms(),
        };
        match method {
            PresignMethod::Get => {
                if req.content_length.is_some() || req.content_type.is_some() {
                    return Err(WorkspaceError::validation(
                        "contentLength and contentType apply to PUT only",
                    ));
                }
                // Pinned to the version that exists now: an overwrite or delete later
                // does not change what the URL reads.
                let meta = self
                    .store
                    .head(&loc)
                    .await?
                    .ok_or_else(|| no_object(&loc))?;
                spec.version_id = Some(meta.version_id);
            }
            PresignMethod::Put => {
                if let Some(n) = req.content_length {
                    if n > self.limits.max_object_bytes {
                        return Err(too_large(n, self.limits.max_object_bytes));
                    }
                }
                if let Some(ct) = &req.content_type {
                    check_content_type(ct)?;
                }
                spec.content_length = req.content_length;
                spec.content_type = req.content_type;
            }
        }
        if self.store.presigns() {
            if let Some(url) = self.store.presign(&loc, &spec).await? {
                return Ok(url);
            }
        }
        match &self.local {
            Some(local) => Ok(local.url_for(&loc, &spec, self.clock.now_ms(), &self.limits)),
            None => Err(WorkspaceError::NotProvided(
                "this deployment does not presign blob URLs".to_owned(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_bindings_name_the_scope_bucket_and_prefix() {
        let scope = Scope::parse("acme", "main").unwrap();
        let p = |s: &str| BlobPrefix::parse(s).unwrap();
        let b = cursor_binding(&scope, "media", &p("img/"));
        assert_ne!(b, cursor_binding(&scope, "media", &p("doc/")));
        assert_ne!(b, cursor_binding(&scope, "other", &p("img/")));
        let elsewhere = Scope::parse("acme", "side").unwrap();
        assert_ne!(b, cursor_binding(&elsewhere, "media", &p("img/")));
    }
}
