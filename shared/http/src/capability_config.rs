//! RFC 0019 settings, read the same way by every transport: the logical blob buckets and the
//! blob and cache limits discovery advertises and the services enforce.

use crate::config::env_u64;
use workspace_core::blob::{check_bucket_name, BlobLimits};
use workspace_core::cache::CacheLimits;
use workspace_core::{Result, WorkspaceError};

fn at_least_one(name: &str, v: u64) -> Result<u64> {
    if v == 0 {
        Err(WorkspaceError::validation(format!(
            "{name} must be at least 1"
        )))
    } else {
        Ok(v)
    }
}

/// `WORKSPACE_BLOB_BUCKETS` (comma-separated logical names, default `default`),
/// `WORKSPACE_BLOB_MAX_OBJECT_BYTES`, `WORKSPACE_BLOB_MAX_PRESIGN_SECONDS`.
pub fn blob_limits_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<BlobLimits> {
    let d = BlobLimits::default();
    let buckets = match get("WORKSPACE_BLOB_BUCKETS").filter(|v| !v.trim().is_empty()) {
        None => d.buckets,
        Some(list) => {
            let mut names: Vec<String> = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                check_bucket_name(name).map_err(|e| {
                    WorkspaceError::validation(format!("WORKSPACE_BLOB_BUCKETS: '{name}': {e}"))
                })?;
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
            if names.is_empty() {
                return Err(WorkspaceError::validation(
                    "WORKSPACE_BLOB_BUCKETS names no bucket",
                ));
            }
            names
        }
    };
    let max_object_bytes = "WORKSPACE_BLOB_MAX_OBJECT_BYTES";
    let max_presign = "WORKSPACE_BLOB_MAX_PRESIGN_SECONDS";
    let presign = at_least_one(
        max_presign,
        env_u64(get, max_presign, d.max_presign_seconds)?,
    )?;
    // SigV4 presigned URLs live at most 7 days.
    if presign > 7 * 24 * 3600 {
        return Err(WorkspaceError::validation(format!(
            "{max_presign} must be at most 604800 (7 days)"
        )));
    }
    Ok(BlobLimits {
        buckets,
        max_object_bytes: at_least_one(
            max_object_bytes,
            env_u64(get, max_object_bytes, d.max_object_bytes)?,
        )?,
        max_presign_seconds: presign,
    })
}

/// `WORKSPACE_CACHE_MAX_VALUE_BYTES`, `WORKSPACE_CACHE_MAX_TTL_SECONDS`.
pub fn cache_limits_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<CacheLimits> {
    let d = CacheLimits::default();
    let value = "WORKSPACE_CACHE_MAX_VALUE_BYTES";
    let ttl = "WORKSPACE_CACHE_MAX_TTL_SECONDS";
    Ok(CacheLimits {
        max_value_bytes: at_least_one(value, env_u64(get, value, d.max_value_bytes)?)?,
        max_ttl_seconds: at_least_one(ttl, env_u64(get, ttl, d.max_ttl_seconds)?)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_lists_and_errors() {
        let none = |_: &str| None;
        assert_eq!(blob_limits_from_env(&none).unwrap(), BlobLimits::default());
        assert_eq!(
            cache_limits_from_env(&none).unwrap(),
            CacheLimits::default()
        );
        let list =
            |k: &str| (k == "WORKSPACE_BLOB_BUCKETS").then(|| " media, default ,media,".to_owned());
        assert_eq!(
            blob_limits_from_env(&list).unwrap().buckets,
            ["media", "default"]
        );
        for (k, v) in [
            ("WORKSPACE_BLOB_BUCKETS", "Bad_Name"),
            ("WORKSPACE_BLOB_BUCKETS", " , "),
            ("WORKSPACE_BLOB_MAX_OBJECT_BYTES", "0"),
            ("WORKSPACE_BLOB_MAX_PRESIGN_SECONDS", "604801"),
            ("WORKSPACE_BLOB_MAX_PRESIGN_SECONDS", "ten"),
        ] {
            let get = |key: &str| (key == k).then(|| v.to_owned());
            assert!(blob_limits_from_env(&get).is_err(), "{k}={v}");
        }
        let ttl = |k: &str| (k == "WORKSPACE_CACHE_MAX_TTL_SECONDS").then(|| "60".to_owned());
        assert_eq!(cache_limits_from_env(&ttl).unwrap().max_ttl_seconds, 60);
        let zero = |k: &str| (k == "WORKSPACE_CACHE_MAX_VALUE_BYTES").then(|| "0".to_owned());
        assert!(cache_limits_from_env(&zero).is_err());
    }
}
