//! How each setting is read from the environment: names, defaults, bounds, and the
//! message that names a bad value. [`crate::Settings`] reads them all at once.

use workspace_core::blob::{check_bucket_name, BlobLimits};
use workspace_core::cache::CacheLimits;
use workspace_core::redact::Redactor;
use workspace_core::{Limits, Result, WorkspaceError};

/// Reads an integer setting; absent means the default, anything unparsable is an error
/// that names the variable.
pub fn env_u64(get: &impl Fn(&str) -> Option<String>, name: &str, default: u64) -> Result<u64> {
    match get(name) {
        None => Ok(default),
        Some(v) if v.trim().is_empty() => Ok(default),
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            WorkspaceError::validation(format!("{name} must be a whole number, got '{v}'"))
        }),
    }
}

/// Reads a yes/no setting (`true`/`false`, `1`/`0`, `on`/`off`, `yes`/`no`).
pub fn env_bool(get: &impl Fn(&str) -> Option<String>, name: &str, default: bool) -> Result<bool> {
    match get(name).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(default),
        Some(v) if v.is_empty() => Ok(default),
        Some(v) if ["true", "1", "on", "yes"].contains(&v.as_str()) => Ok(true),
        Some(v) if ["false", "0", "off", "no"].contains(&v.as_str()) => Ok(false),
        Some(v) => Err(WorkspaceError::validation(format!(
            "{name} must be true or false, got '{v}'"
        ))),
    }
}

/// The WSR-1 redactor from `WORKSPACE_REDACT_STRUCTURAL` (default on). Registered-secret
/// redaction has no switch.
pub fn redactor_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<Redactor> {
    Ok(Redactor::new(env_bool(
        get,
        "WORKSPACE_REDACT_STRUCTURAL",
        true,
    )?))
}

/// The limits from `WORKSPACE_MAX_FILE_BYTES`, `WORKSPACE_MAX_FILES`,
/// `WORKSPACE_MAX_VERSIONS` and `WORKSPACE_MAX_UPLOAD_BYTES`.
pub fn limits_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<Limits> {
    let d = Limits::default();
    Limits {
        max_file_bytes: env_u64(get, "WORKSPACE_MAX_FILE_BYTES", d.max_file_bytes)?,
        max_files: env_u64(get, "WORKSPACE_MAX_FILES", d.max_files)?,
        max_versions: env_u64(get, "WORKSPACE_MAX_VERSIONS", d.max_versions)?,
        max_upload_bytes: env_u64(get, "WORKSPACE_MAX_UPLOAD_BYTES", d.max_upload_bytes)?,
    }
    .validated()
}

/// Life of an upload URL from `WORKSPACE_UPLOAD_URL_SECONDS` (default 900), in seconds.
pub fn upload_url_seconds_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<u64> {
    use workspace_core::service::{DEFAULT_UPLOAD_URL_SECONDS, MAX_UPLOAD_URL_SECONDS};
    let secs = env_u64(
        get,
        "WORKSPACE_UPLOAD_URL_SECONDS",
        DEFAULT_UPLOAD_URL_SECONDS,
    )?;
    if !(1..=MAX_UPLOAD_URL_SECONDS).contains(&secs) {
        return Err(WorkspaceError::validation(format!(
            "WORKSPACE_UPLOAD_URL_SECONDS must be between 1 and {MAX_UPLOAD_URL_SECONDS}, got {secs}"
        )));
    }
    Ok(secs)
}

/// Life of a run snapshot from `WORKSPACE_SNAPSHOT_TTL_SECONDS` (default 7 days), in ms.
/// At most 30 days: on AWS the bucket's lifecycle rule may expire a noncurrent S3 version
/// 30 days after it became noncurrent, and a pinned version becomes noncurrent no earlier
/// than the snapshot is taken, so a snapshot that ends within 30 days never loses a body.
pub fn snapshot_ttl_ms_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<i64> {
    const MAX_SECS: u64 = 30 * 24 * 60 * 60;
    let default =
        u64::try_from(workspace_core::service::DEFAULT_SNAPSHOT_TTL_MS / 1000).unwrap_or(MAX_SECS);
    let secs = env_u64(get, "WORKSPACE_SNAPSHOT_TTL_SECONDS", default)?;
    if !(1..=MAX_SECS).contains(&secs) {
        return Err(WorkspaceError::validation(format!(
            "WORKSPACE_SNAPSHOT_TTL_SECONDS must be between 1 and {MAX_SECS}, got {secs}"
        )));
    }
    Ok(i64::try_from(secs).unwrap_or(0) * 1000)
}

/// The inline-body threshold from `WORKSPACE_INLINE_BODY_BYTES` (see
/// `workspace_core::blob::inline`): 0 to keep every body in the body store, at most
/// `MAX_INLINE_BODY_BYTES`.
pub fn inline_body_bytes_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<u64> {
    use workspace_core::blob::inline::{DEFAULT_INLINE_BODY_BYTES, MAX_INLINE_BODY_BYTES};
    let bytes = env_u64(
        get,
        "WORKSPACE_INLINE_BODY_BYTES",
        DEFAULT_INLINE_BODY_BYTES,
    )?;
    if bytes > MAX_INLINE_BODY_BYTES {
        return Err(WorkspaceError::validation(format!(
            "WORKSPACE_INLINE_BODY_BYTES must be between 0 and {MAX_INLINE_BODY_BYTES}, got {bytes}"
        )));
    }
    Ok(bytes)
}

/// A fork's default and longest life, in ms, from `WORKSPACE_FORK_TTL_SECONDS` (default 7
/// days) and `WORKSPACE_FORK_MAX_TTL_SECONDS` (default and cap 30 days, for the same reason
/// as a snapshot's: a fork's base is a snapshot).
pub fn fork_ttl_ms_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<(i64, i64)> {
    const MAX_SECS: u64 = 30 * 24 * 60 * 60;
    let secs = |ms: i64| u64::try_from(ms / 1000).unwrap_or(MAX_SECS);
    let max = env_u64(
        get,
        "WORKSPACE_FORK_MAX_TTL_SECONDS",
        secs(workspace_core::forks::MAX_FORK_TTL_MS),
    )?;
    if !(1..=MAX_SECS).contains(&max) {
        return Err(WorkspaceError::validation(format!(
            "WORKSPACE_FORK_MAX_TTL_SECONDS must be between 1 and {MAX_SECS}, got {max}"
        )));
    }
    let default = env_u64(
        get,
        "WORKSPACE_FORK_TTL_SECONDS",
        secs(workspace_core::forks::DEFAULT_FORK_TTL_MS).min(max),
    )?;
    if !(1..=max).contains(&default) {
        return Err(WorkspaceError::validation(format!(
            "WORKSPACE_FORK_TTL_SECONDS must be between 1 and WORKSPACE_FORK_MAX_TTL_SECONDS ({max}), got {default}"
        )));
    }
    let ms = |s: u64| i64::try_from(s).unwrap_or(0) * 1000;
    Ok((ms(default), ms(max)))
}

/// The session service's limits: `WORKSPACE_MAX_ARTIFACT_BYTES` (default 1 MiB) and
/// `WORKSPACE_PURGE_AFTER_DAYS` (default 90).
pub fn session_limits_from_env(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<workspace_core::sessions::SessionLimits> {
    let d = workspace_core::sessions::SessionLimits::default();
    let limits = workspace_core::sessions::SessionLimits {
        max_artifact_bytes: env_u64(get, "WORKSPACE_MAX_ARTIFACT_BYTES", d.max_artifact_bytes)?,
        purge_after_days: env_u64(get, "WORKSPACE_PURGE_AFTER_DAYS", d.purge_after_days)?,
    };
    if limits.max_artifact_bytes == 0 || limits.purge_after_days == 0 {
        return Err(WorkspaceError::validation(
            "WORKSPACE_MAX_ARTIFACT_BYTES and WORKSPACE_PURGE_AFTER_DAYS must be at least 1",
        ));
    }
    Ok(limits)
}

/// The paging-token key from `WORKSPACE_SESSION_TOKEN_KEY` (32+ characters), if set.
pub fn token_key_from_env(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<workspace_core::sessions::token::TokenKey>> {
    get("WORKSPACE_SESSION_TOKEN_KEY")
        .filter(|k| !k.trim().is_empty())
        .map(|k| {
            workspace_core::sessions::token::TokenKey::new(k.trim().as_bytes().to_vec()).map_err(
                |_| {
                    WorkspaceError::validation(
                        "WORKSPACE_SESSION_TOKEN_KEY must be at least 32 characters",
                    )
                },
            )
        })
        .transpose()
}

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

    #[test]
    fn defaults_overrides_and_errors() {
        let none = |_: &str| None;
        assert_eq!(limits_from_env(&none).unwrap(), Limits::default());
        let some = |k: &str| (k == "WORKSPACE_MAX_FILES").then(|| "7".to_owned());
        assert_eq!(limits_from_env(&some).unwrap().max_files, 7);
        let bad = |k: &str| (k == "WORKSPACE_MAX_VERSIONS").then(|| "ten".to_owned());
        assert!(limits_from_env(&bad)
            .unwrap_err()
            .to_string()
            .contains("WORKSPACE_MAX_VERSIONS"));
        let zero = |k: &str| (k == "WORKSPACE_MAX_FILE_BYTES").then(|| "0".to_owned());
        assert!(limits_from_env(&zero).is_err());
        let off = |k: &str| (k == "WORKSPACE_REDACT_STRUCTURAL").then(|| "off".to_owned());
        assert!(!env_bool(&off, "WORKSPACE_REDACT_STRUCTURAL", true).unwrap());
        let bad = |k: &str| (k == "WORKSPACE_REDACT_STRUCTURAL").then(|| "maybe".to_owned());
        assert!(redactor_from_env(&bad).is_err());
        assert_eq!(
            snapshot_ttl_ms_from_env(&none).unwrap(),
            7 * 24 * 3600 * 1000
        );
        let ttl = |k: &str| (k == "WORKSPACE_SNAPSHOT_TTL_SECONDS").then(|| "60".to_owned());
        assert_eq!(snapshot_ttl_ms_from_env(&ttl).unwrap(), 60_000);
        let long = |k: &str| (k == "WORKSPACE_SNAPSHOT_TTL_SECONDS").then(|| "9999999".to_owned());
        assert!(snapshot_ttl_ms_from_env(&long).is_err());
        let day = 24 * 60 * 60 * 1000;
        assert_eq!(fork_ttl_ms_from_env(&none).unwrap(), (7 * day, 30 * day));
        let short = |k: &str| {
            (k == "WORKSPACE_FORK_MAX_TTL_SECONDS" || k == "WORKSPACE_FORK_TTL_SECONDS")
                .then(|| "60".to_owned())
        };
        assert_eq!(fork_ttl_ms_from_env(&short).unwrap(), (60_000, 60_000));
        let over = |k: &str| (k == "WORKSPACE_FORK_TTL_SECONDS").then(|| "99999999".to_owned());
        assert!(fork_ttl_ms_from_env(&over).is_err());
    }
}
