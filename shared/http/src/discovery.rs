//! `GET /.well-known/openwop` and `GET /v1/host/capabilities`: each capability family at the
//! document root and again under `capabilities`, with the limits this deployment enforces.

use serde_json::{json, Value};
use workspace_core::blob::{BlobLimits, BlobService};
use workspace_core::cache::{CacheLimits, CacheService};
use workspace_core::Limits;

/// The document of a deployment that provides neither blobs nor the cache.
pub fn document(limits: &Limits) -> Value {
    document_for(limits, None, None)
}

/// The document with the blob and cache families as this deployment provides them; an
/// absent service is advertised unsupported, with the limits a client would meet.
pub fn document_for(
    limits: &Limits,
    blobs: Option<&BlobService>,
    cache: Option<&CacheService>,
) -> Value {
    let default_blobs = BlobLimits::default();
    let b = blobs.map_or(&default_blobs, |s| s.limits());
    let c = cache.map_or_else(CacheLimits::default, |s| s.limits());
    let families = json!({
        "workspace": {
            "supported": true,
            "versioned": true,
            "maxFileBytes": limits.max_file_bytes,
            "maxFiles": limits.max_files,
            "maxVersions": limits.max_versions,
            "maxUploadBytes": limits.max_upload_bytes,
        },
        "blobStorage": {
            "supported": blobs.is_some(),
            "buckets": b.buckets,
            "presignSupported": blobs.is_some_and(BlobService::presign_supported),
            "maxObjectBytes": b.max_object_bytes,
            "maxPresignSeconds": b.max_presign_seconds,
        },
        "cache": {
            "supported": cache.is_some(),
            "maxValueBytes": c.max_value_bytes,
            "maxTtlSeconds": c.max_ttl_seconds,
        },
    });
    let mut doc = json!({
        "protocol": "openwop",
        "service": "agent-workspace",
        "version": env!("CARGO_PKG_VERSION"),
    });
    if let (Some(root), Some(fams)) = (doc.as_object_mut(), families.as_object()) {
        for (k, v) in fams {
            root.insert(k.clone(), v.clone());
        }
        root.insert("capabilities".to_owned(), families.clone());
    }
    doc
}
