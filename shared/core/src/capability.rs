//! Error codes of the blob and cache capabilities (openwop RFC 0019). The domain names the
//! refusal; the HTTP layer maps each code to its status.

// The refusals these codes make (`CapabilityCode::error`) are built in `error.rs`, so this
// module depends on nothing.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapabilityCode {
    /// 404: the logical bucket is not configured in this deployment.
    BlobBucketNotFound,
    /// 404: no object under that key (in the caller's scope).
    BlobObjectNotFound,
    /// 413: the object is over `maxObjectBytes`.
    BlobObjectTooLarge,
    /// 403: a presigned URL used at or after its `expiresAt`.
    BlobPresignExpired,
    /// 413: the JSON value is over `maxValueBytes`.
    CacheValueTooLarge,
    /// 400: `ttlSeconds` is over `maxTtlSeconds`.
    CacheTtlExceedsMax,
    /// 410: the events after a `Last-Event-ID` were already dropped by retention.
    EventsExpired,
    /// 410: the version was erased from history.
    VersionErased,
    /// 403: a run of another workspace of the caller's tenant (RFC 0048 §D).
    RunForbidden,
}

impl CapabilityCode {
    /// The envelope's `error` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BlobBucketNotFound => "blob_bucket_not_found",
            Self::BlobObjectNotFound => "blob_object_not_found",
            Self::BlobObjectTooLarge => "blob_object_too_large",
            Self::BlobPresignExpired => "blob_presign_expired",
            Self::CacheValueTooLarge => "cache_value_too_large",
            Self::CacheTtlExceedsMax => "cache_ttl_exceeds_max",
            Self::EventsExpired => "events_expired",
            Self::VersionErased => "gone",
            Self::RunForbidden => "run_forbidden",
        }
    }
}
