//! `GET /.well-known/openwop` and `GET /v1/host/capabilities`: each capability family at the
//! document root and again under `capabilities`, with the limits this deployment enforces.

use serde_json::{json, Value};
use workspace_core::Limits;

pub fn document(limits: &Limits) -> Value {
    let families = json!({
        "workspace": {
            "supported": true,
            "versioned": true,
            "maxFileBytes": limits.max_file_bytes,
            "maxFiles": limits.max_files,
            "maxVersions": limits.max_versions,
            "maxUploadBytes": limits.max_upload_bytes,
        },
        // Not provided by this deployment yet: advertised as unsupported with the limits a
        // client would meet, so clients can feature-detect without a failed call.
        "blobStorage": {
            "supported": false,
            "buckets": ["default"],
            "presignSupported": false,
            "maxObjectBytes": limits.max_upload_bytes,
            "maxPresignSeconds": 900,
        },
        "cache": {
            "supported": false,
            "maxValueBytes": 262_144,
            "maxTtlSeconds": 86_400,
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
