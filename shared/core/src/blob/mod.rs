//! Blob storage (openwop RFC 0019 `blobStorage`): binary objects in logical buckets, read
//! and written directly or through presigned URLs. Objects are scoped to the caller's
//! tenant·workspace like files: every storage key starts with `Scope::key_prefix()`, then
//! `blobs/<bucket>/<key>`, so a sibling tenant or another workspace using the same bucket
//! and key names a different object.
//!
//! `service.rs` holds the rules, `local_presign.rs` the URLs the local server signs itself.

pub mod inline;
pub(crate) mod local_presign;
mod service;

pub use local_presign::{LocalPresign, SignedOutcome, SIGNED_BLOB_PREFIX};
pub use service::{BlobService, ListedBlobs, PresignRequest};
// Where they have always been found; defined in `crate::presign`.
pub use crate::presign::{PresignMethod, PresignSpec, PresignedUrl};

use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
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

/// Longest object key, in bytes of UTF-8. With the longest storage prefix
/// (`t/<tenant>/w/<workspace>/blobs/<bucket>/`, at most 222 bytes) the S3 key stays under
/// S3's 1,024.
pub const MAX_BLOB_KEY_BYTES: usize = 512;

/// What no key or listing prefix may hold: more than [`MAX_BLOB_KEY_BYTES`], a control
/// character (C0, DEL, C1), or a `.` or `..` segment among `complete` (every URL parser
/// removes dot segments, RFC 3986 §5.2.4, so such a key would be addressed as another).
fn check_key_text(what: &str, s: &str, complete: &str) -> Result<()> {
    if s.len() > MAX_BLOB_KEY_BYTES {
        return Err(WorkspaceError::validation(format!(
            "blob {what} is {} bytes; the limit is {MAX_BLOB_KEY_BYTES}",
            s.len()
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(WorkspaceError::validation(format!(
            "blob {what} must not contain control characters"
        )));
    }
    if complete.split('/').any(|seg| seg == "." || seg == "..") {
        return Err(WorkspaceError::validation(format!(
            "blob {what} must not contain a '.' or '..' segment"
        )));
    }
    Ok(())
}

/// A validated object key: any UTF-8 text S3 accepts as a key, refused only where it cannot
/// be stored and addressed safely: empty, over [`MAX_BLOB_KEY_BYTES`], a control character,
/// or a `.` or `..` segment. The key is appended to its bucket's prefix and every store
/// treats it as an opaque string (no store resolves a path), so no key reaches outside its
/// bucket, and nothing is normalised: two spellings are two keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobKey(String);

impl BlobKey {
    pub fn parse(s: &str) -> Result<Self> {
        if s.is_empty() {
            return Err(WorkspaceError::validation("blob key must not be empty"));
        }
        check_key_text("key", s, s)?;
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A validated listing prefix: a key's rule, but it may be empty, and only its complete
/// segments (those a `/` ends) are held to the dot-segment rule (`.h` is the start of
/// `.hidden`). A prefix is only ever compared, never resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlobPrefix(String);

impl BlobPrefix {
    pub fn parse(s: &str) -> Result<Self> {
        let complete = s.rfind('/').map_or("", |i| &s[..i]);
        check_key_text("prefix", s, complete)?;
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
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
        prefix: &BlobPrefix,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_s3_accepts_are_keys_and_unsafe_ones_are_not() {
        let max = "k".repeat(MAX_BLOB_KEY_BYTES);
        for k in [
            "__probe__",
            ".hidden",
            "-x",
            "_x",
            "a b",
            "a//b",
            "/abs",
            "a/",
            "a\\b",
            "a?b#c%20d",
            "ａ．ｂ",
            "é",
            "e\u{301}",
            "...",
            "a/..b/.c",
            max.as_str(),
        ] {
            assert_eq!(
                BlobKey::parse(k).map(|b| b.as_str().to_owned()),
                Ok(k.to_owned())
            );
        }
        let over = "k".repeat(MAX_BLOB_KEY_BYTES + 1);
        let wide = "é".repeat(MAX_BLOB_KEY_BYTES / 2 + 1);
        for k in [
            "",
            "..",
            ".",
            "../x",
            "a/../b",
            "a/./b",
            "a/..",
            "a\0b",
            "a\nb",
            "a\u{7f}b",
            "a\u{85}b",
            over.as_str(),
            wide.as_str(),
        ] {
            assert!(
                matches!(BlobKey::parse(k), Err(WorkspaceError::Validation(_))),
                "{k:?}"
            );
        }
    }

    #[test]
    fn prefixes_hold_complete_segments_to_the_dot_rule() {
        for p in ["", "a/", ".h", "a/.", "a/..", "a//", "a b/", "__"] {
            assert!(BlobPrefix::parse(p).is_ok(), "{p:?}");
        }
        for p in ["../", "a/../", "./x", "a/./b", "a\tb"] {
            assert!(BlobPrefix::parse(p).is_err(), "{p:?}");
        }
    }
}
