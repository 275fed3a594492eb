//! The local server's settings, all from the environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use workspace_core::blob::BlobLimits;
use workspace_core::cache::CacheLimits;
use workspace_core::redact::Redactor;
use workspace_core::Limits;
use workspace_http::capability_config::{blob_limits_from_env, cache_limits_from_env};
use workspace_http::config::{
    limits_from_env, redactor_from_env, snapshot_ttl_ms_from_env, upload_url_seconds_from_env,
};

pub struct Config {
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
    pub limits: Limits,
    pub redactor: Redactor,
    /// `WORKSPACE_API_KEYS`, if set.
    pub api_keys: Option<String>,
    pub blob_limits: BlobLimits,
    pub cache_limits: CacheLimits,
    /// `WORKSPACE_PUBLIC_URL`: the base of presigned URLs (default `http://<listen address>`).
    pub public_url: Option<String>,
    /// `WORKSPACE_SNAPSHOT_TTL_SECONDS`, in ms.
    pub snapshot_ttl_ms: i64,
    /// `WORKSPACE_UPLOAD_URL_SECONDS`.
    pub upload_url_seconds: u64,
}

impl Config {
    pub fn from_env() -> Result<Self, String> {
        let get = |k: &str| std::env::var(k).ok();
        let addr_text = get("WORKSPACE_ADDR").unwrap_or_else(|| "127.0.0.1:8787".to_owned());
        let addr = addr_text.parse().map_err(|_| {
            format!("WORKSPACE_ADDR must be host:port like 127.0.0.1:8787, got '{addr_text}'")
        })?;
        let data_dir = get("WORKSPACE_DATA_DIR")
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| "./.workspace-data".to_owned())
            .into();
        let limits = limits_from_env(&get).map_err(|e| e.to_string())?;
        let redactor = redactor_from_env(&get).map_err(|e| e.to_string())?;
        let api_keys = get("WORKSPACE_API_KEYS").filter(|k| !k.trim().is_empty());
        let blob_limits = blob_limits_from_env(&get).map_err(|e| e.to_string())?;
        let cache_limits = cache_limits_from_env(&get).map_err(|e| e.to_string())?;
        let public_url = match get("WORKSPACE_PUBLIC_URL").filter(|u| !u.trim().is_empty()) {
            None => None,
            Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
                Some(u.trim().trim_end_matches('/').to_owned())
            }
            Some(u) => {
                return Err(format!(
                    "WORKSPACE_PUBLIC_URL must start with http:// or https://, got '{u}'"
                ))
            }
        };
        let snapshot_ttl_ms = snapshot_ttl_ms_from_env(&get).map_err(|e| e.to_string())?;
        let upload_url_seconds = upload_url_seconds_from_env(&get).map_err(|e| e.to_string())?;
        Ok(Self {
            snapshot_ttl_ms,
            upload_url_seconds,
            addr,
            data_dir,
            limits,
            redactor,
            api_keys,
            blob_limits,
            cache_limits,
            public_url,
        })
    }
}
