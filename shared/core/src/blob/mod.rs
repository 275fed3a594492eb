//! Blob storage (openwop RFC 0019 `blobStorage`): binary objects in logical buckets, read
//! and written directly or through presigned URLs. Objects are scoped to the caller's
//! tenant·workspace like files: every storage key starts with `Scope::key_prefix()`, then
//! `blobs/<bucket>/<key>`, so a sibling tenant or another workspace using the same bucket
//! and key names a different object.
//!
//! `service.rs` holds the rules, `local_presign.rs` the URLs the local server signs itself.

pub(crate) mod local_presign;
mod service;

pub use local_presign::{LocalPresign, SignedOutcome, SIGNED_BLOB_PREFIX};
pub use service::{BlobService, ListedBlobs, PresignRequest};
// Where they have always been found; defined in `crate::presign`.
pub use crate::presign::{PresignMethod, PresignSpec, PresignedUrl};

use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use crate::path::{FilePath, PathPrefix};
use crate::scope::Scope;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Deployment settings: the logical buckets and the limits discovery advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobLimits {
    pub buckets: Vec<String>,
    /// Largest object, direct or through a presigned PUT. The default keeps a base64
    /// encoded body under Lambda's 6 MB payload cap.
    pub max_object_bytes: u64,
    pub max_presign_seconds: u64,
}

impl Default for BlobLimits {
    fn default() -> Self {
        Self {
            buckets: vec!["default".to_owned()],
            max_object_bytes: 4 * 1024 * 1024,
            max_presign_seconds: 900,
        }
    }
}

/// Checks a logical bucket name: 1-63 of `a-z 0-9 -`, starting with a letter or digit.
pub fn check_bucket_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::validation(
            "bucket names are 1-63 characters of a-z 0-9 -, starting with a letter or digit",
        ))
    }
}

/// A validated object key: the file path rule (`A-Z a-z 0-9 . _ / -`, no empty, `.` or `..`
/// segment, at most 256 bytes), so a key can never climb out of its bucket's prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobKey(FilePath);

impl BlobKey {
    pub fn parse(s: &str) -> Result<Self> {
        FilePath::parse(s).map(Self).map_err(|e| match e {
            WorkspaceError::Validation(m) => {
                WorkspaceError::Validation(format!("blob key: {}", m.replacen("path", "key", 1)))
            }
            other => other,
        })
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// One object's address: scope, logical bucket (already checked against the configuration)
/// and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobLocation {
    pub scope: Scope,
    pub bucket: String,
    pub key: BlobKey,
}

/// Where a scope's objects of `bucket` live: `t/<tenant>/w/<workspace>/blobs/<bucket>/`.
pub fn bucket_prefix(scope: &Scope, bucket: &str) -> String {
    format!("{}blobs/{bucket}/", scope.key_prefix())
}

impl BlobLocation {
    /// The storage key: the bucket prefix, then the key.
    pub fn storage_key(&self) -> String {
        format!(
            "{}{}",
            bucket_prefix(&self.scope, &self.bucket),
            self.key.as_str()
        )
    }
}

/// What a store knows about an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobMeta {
    /// The key within its bucket (no scope prefix).
    pub key: String,
    pub size: u64,
    /// Opaque quoted string (S3's ETag on AWS).
    pub etag: String,
    pub content_type: String,
    pub updated_at: Millis,
    /// The store's version of this object (an S3 VersionId), for pinned reads.
    pub version_id: String,
}

impl BlobMeta {
    /// What a store that keeps the bytes itself (memory, redb) records for a new object:
    /// a content etag and a fresh version id.
    pub fn for_new_object(
        loc: &BlobLocation,
        bytes: &[u8],
        content_type: &str,
        now: Millis,
    ) -> Self {
        use crate::ports::{IdSource, RandomIds};
        Self {
            key: loc.key.as_str().to_owned(),
            size: bytes.len() as u64,
            etag: content_etag(bytes),
            content_type: content_type.to_owned(),
            updated_at: now,
            version_id: RandomIds.new_id(),
        }
    }
}

/// The blob port. Keys passed in are full storage keys under the scope's prefix.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Replaces the object; `now` is its `updated_at` where the store keeps no clock. The
    /// version replaced stays readable by its id (a pinned GET) for `keep_superseded_ms`
    /// more: the longest a URL presigned before the overwrite can live. S3 keeps versions
    /// itself (the bucket's noncurrent-version lifecycle); stores that keep the bytes
    /// themselves drop them after that.
    async fn put(
        &self,
        loc: &BlobLocation,
        bytes: Vec<u8>,
        content_type: &str,
        now: Millis,
        keep_superseded_ms: u64,
    ) -> Result<BlobMeta>;
    /// The current object, or `Some` of the given version when `version_id` is set.
    async fn get(
        &self,
        loc: &BlobLocation,
        version_id: Option<&str>,
    ) -> Result<Option<(BlobMeta, Vec<u8>)>>;
    async fn head(&self, loc: &BlobLocation) -> Result<Option<BlobMeta>>;
    /// Removes the object with every stored version; a missing object is not an error.
    async fn delete(&self, loc: &BlobLocation) -> Result<()>;
    /// Objects of `bucket` in the scope whose key starts with `prefix`, sorted by key,
    /// strictly after `after`, at most `limit`.
    async fn list(
        &self,
        scope: &Scope,
        bucket: &str,
        prefix: &PathPrefix,
        after: Option<&BlobKey>,
        limit: usize,
    ) -> Result<Vec<BlobMeta>>;
    /// Whether [`BlobStore::presign`] answers with URLs of its own.
    fn presigns(&self) -> bool {
        false
    }
    /// A URL the store itself honours (S3 presigning). `None`: the store has none, and the
    /// service signs a URL the local server serves instead.
    async fn presign(
        &self,
        _loc: &BlobLocation,
        _spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        Ok(None)
    }
}

/// A version an overwrite replaced, as the local stores keep it for pinned reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupersededBlob {
    pub meta: BlobMeta,
    /// From when on nobody can read it any more (the overwrite plus the longest presign).
    pub readable_until: Millis,
}

/// An opaque etag for stores without their own: a quoted prefix of the content's SHA-256.
pub fn content_etag(bytes: &[u8]) -> String {
    format!("\"{}\"", &crate::model::sha256_hex(bytes)[..32])
}
