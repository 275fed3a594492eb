//! Every setting of every process, read once from the environment. The Lambda functions
//! and the local server both start here; a new setting is one field and one line below.

use crate::env::{
    blob_limits_from_env, cache_limits_from_env, env_u64, fork_ttl_ms_from_env,
    inline_body_bytes_from_env, limits_from_env, redactor_from_env, session_limits_from_env,
    snapshot_ttl_ms_from_env, token_key_from_env, upload_url_seconds_from_env,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use workspace_core::blob::BlobLimits;
use workspace_core::cache::CacheLimits;
use workspace_core::redact::Redactor;
use workspace_core::sessions::token::TokenKey;
use workspace_core::sessions::SessionLimits;
use workspace_core::Limits;

/// Where the local server keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One redb file under the data directory (the default).
    Embedded,
    /// The AWS data plane template.yaml declares, at whatever endpoint the standard AWS
    /// environment names (`AWS_ENDPOINT_URL` for an emulator).
    Aws,
}

/// The AWS resource names (the template passes them to each function).
#[derive(Debug, Clone, Default)]
pub struct AwsNames {
    /// `WORKSPACE_TABLE`: heads, versions, snapshots, keys, secrets, sessions.
    pub table: Option<String>,
    /// `WORKSPACE_BUCKET`: file bodies (versioned).
    pub bucket: Option<String>,
    /// `WORKSPACE_CACHE_TABLE`: the RFC 0019 cache, where the stack has it.
    pub cache_table: Option<String>,
    /// `WORKSPACE_BLOB_S3_BUCKET`: RFC 0019 blobs, where the stack has them.
    pub blob_bucket: Option<String>,
    /// `WORKSPACE_EVENT_BUS`: where `workspace.updated` goes.
    pub event_bus: Option<String>,
}

/// A setting's error as the text a process prints before it stops.
fn e<T>(r: workspace_core::Result<T>) -> Result<T, String> {
    r.map_err(|e| e.to_string())
}

/// A whole number of at least 1.
fn positive(
    get: &impl Fn(&str) -> Option<String>,
    name: &str,
    default: u64,
) -> Result<u64, String> {
    match e(env_u64(get, name, default))? {
        0 => Err(format!("{name} must be at least 1")),
        n => Ok(n),
    }
}

/// A missing required setting.
fn missing(name: &str) -> String {
    format!("{name} must be set")
}

impl AwsNames {
    pub fn table(&self) -> Result<&str, String> {
        self.table
            .as_deref()
            .ok_or_else(|| missing("WORKSPACE_TABLE"))
    }

    pub fn bucket(&self) -> Result<&str, String> {
        self.bucket
            .as_deref()
            .ok_or_else(|| missing("WORKSPACE_BUCKET"))
    }

    pub fn event_bus(&self) -> Result<&str, String> {
        self.event_bus
            .as_deref()
            .ok_or_else(|| missing("WORKSPACE_EVENT_BUS"))
    }
}

/// The local server's own settings.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    /// `WORKSPACE_BACKEND`: `embedded` (default) or `aws`.
    pub backend: Backend,
    /// `WORKSPACE_ADDR` (default 127.0.0.1:8787).
    pub addr: SocketAddr,
    /// `WORKSPACE_DATA_DIR` (default ./.workspace-data): the database, keys, secrets.
    pub data_dir: PathBuf,
    /// `WORKSPACE_API_KEYS`, if set.
    pub api_keys: Option<String>,
    /// `WORKSPACE_PUBLIC_URL`: the base of locally signed URLs (default `http://<addr>`).
    pub public_url: Option<String>,
    /// `WORKSPACE_CONNECTION_TIMEOUT_SECONDS` (default 30): how long a client may take to
    /// send a request's head, or its body, and how long a connection may sit idle.
    pub connection_timeout_seconds: u64,
    /// `WORKSPACE_MAX_CONNECTIONS` (default 512): open connections served at once; one
    /// more is answered 503 and closed.
    pub max_connections: usize,
    /// `WORKSPACE_MAX_EVENT_STREAMS` (default a quarter of the connections, 128): event
    /// streams open at once, so streams, which hold their connection for as long as the
    /// client listens, never take every connection; one more is answered 503.
    pub max_event_streams: usize,
    /// `WORKSPACE_MAX_BUFFERED_BODY_BYTES` (default 256 MiB): request bodies held in memory
    /// at once, all connections together; a body that would pass it is answered 503.
    pub max_buffered_body_bytes: u64,
    /// `WORKSPACE_EVENT_RETENTION_SECONDS` (default 7 days): how long the outbox keeps
    /// events for streams resuming with `Last-Event-ID` and webhooks catching up.
    pub event_retention_seconds: u64,
    /// `WORKSPACE_WEBHOOKS`: a JSON array of `{url, secret, tenant?, workspace?}`.
    pub webhooks: Option<String>,
    /// `OPENWOP_TEST_SEAM_ENABLED=true` (exactly): serve the openwop conformance test seams
    /// (`/v1/host/sample/...`, which act as any owner named in the body). Off otherwise.
    pub test_seams: bool,
    /// `WORKSPACE_SEARCH=off` (exactly): keep no search index (each commit then skips
    /// indexing; `GET /v1/host/workspace/search` and the MCP `search` tool answer 501).
    pub search: bool,
    /// `WORKSPACE_MCP_MAX_SESSIONS` (default 256): MCP sessions held at once.
    pub mcp_max_sessions: usize,
    /// `WORKSPACE_MCP_SESSION_IDLE_SECONDS` (default 1800): an MCP session without a
    /// request or an open stream for this long ends.
    pub mcp_session_idle_seconds: u64,
}

/// JWT claim names the Lambda functions read identity from.
#[derive(Debug, Clone)]
pub struct ClaimNames {
    pub tenant: String,
    pub workspace: String,
    pub principal: String,
    pub scopes: String,
    /// The claim that limits a token to some paths (`allow:<glob> read:<glob> …`; see
    /// `workspace_core::PathScope`); absent, the token reaches the whole workspace.
    pub paths: String,
}

#[derive(Clone)]
pub struct Settings {
    pub limits: Limits,
    /// `WORKSPACE_MEMORY_PREFIX` (default `memories`): where the memory tool's `/memories`
    /// lives in each workspace.
    pub memory_prefix: workspace_core::FilePath,
    pub redactor: Redactor,
    /// `WORKSPACE_SNAPSHOT_TTL_SECONDS`, in ms.
    pub snapshot_ttl_ms: i64,
    /// `WORKSPACE_INLINE_BODY_BYTES` (default 2048, at most 65536, 0 for none): bodies of at
    /// most this many bytes are kept with their commit in the metadata store, not the body
    /// store (`workspace_core::blob::inline`).
    pub inline_body_bytes: u64,
    /// A fork's default and longest life, ms.
    pub fork_ttl_ms: (i64, i64),
    /// `WORKSPACE_UPLOAD_URL_SECONDS`.
    pub upload_url_seconds: u64,
    pub blob_limits: BlobLimits,
    pub cache_limits: CacheLimits,
    pub session_limits: SessionLimits,
    /// `WORKSPACE_SESSION_TOKEN_KEY`: signs session paging tokens (required on AWS).
    pub session_token_key: Option<TokenKey>,
    /// `WORKSPACE_ORPHAN_GRACE_SECONDS` (default 3600): how old an uncommitted body must
    /// be before the sweeper removes it.
    pub orphan_grace_seconds: u64,
    /// `WORKSPACE_MCP_ALLOWED_ORIGINS`: browser origins MCP's routes accept, comma-separated
    /// (default none; the local server adds its own, where its console runs).
    pub mcp_allowed_origins: workspace_http::origin::AllowedOrigins,
    /// `WORKSPACE_MODEL_DIR`: the embedding model's folder (search by meaning). Unset: the
    /// local server looks in `<data dir>/models/all-minilm-l6-v2`, where
    /// `workspace-local models install` puts it; a Lambda function carries none.
    pub model_dir: Option<std::path::PathBuf>,
    /// `WORKSPACE_SEMANTIC_MODEL` (AWS): the model id the search functions carry, for the
    /// discovery answer of the function that carries none.
    pub semantic_model: Option<String>,
    pub aws: AwsNames,
    pub claims: ClaimNames,
    pub local: LocalSettings,
}

impl Settings {
    /// From the process environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_source(|k| std::env::var(k).ok())
    }

    /// From `get` (tests pass a map).
    pub fn from_source(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let or = |k: &str, d: &str| get(k).unwrap_or_else(|| d.to_owned());
        let addr_text = or("WORKSPACE_ADDR", "127.0.0.1:8787");
        let addr = addr_text.parse().map_err(|_| {
            format!("WORKSPACE_ADDR must be host:port like 127.0.0.1:8787, got '{addr_text}'")
        })?;
        let backend = match get("WORKSPACE_BACKEND").as_deref().map(str::trim) {
            None | Some("embedded") => Backend::Embedded,
            Some("aws") => Backend::Aws,
            Some(other) => {
                return Err(format!(
                    "WORKSPACE_BACKEND must be 'embedded' or 'aws', got '{other}'"
                ))
            }
        };
        let public_url = match get("WORKSPACE_PUBLIC_URL") {
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
        let memory_text = or(
            "WORKSPACE_MEMORY_PREFIX",
            workspace_core::memory::DEFAULT_MEMORY_PREFIX,
        );
        let memory_prefix = workspace_core::FilePath::parse(memory_text.trim_end_matches('/'))
            .map_err(|e| {
                format!("WORKSPACE_MEMORY_PREFIX must be a workspace path like 'memories': {e}")
            })?;
        Ok(Self {
            memory_prefix,
            limits: e(limits_from_env(&get))?,
            redactor: e(redactor_from_env(&get))?,
            snapshot_ttl_ms: e(snapshot_ttl_ms_from_env(&get))?,
            inline_body_bytes: e(inline_body_bytes_from_env(&get))?,
            fork_ttl_ms: e(fork_ttl_ms_from_env(&get))?,
            upload_url_seconds: e(upload_url_seconds_from_env(&get))?,
            blob_limits: e(blob_limits_from_env(&get))?,
            cache_limits: e(cache_limits_from_env(&get))?,
            session_limits: e(session_limits_from_env(&get))?,
            session_token_key: e(token_key_from_env(&get))?,
            orphan_grace_seconds: e(env_u64(&get, "WORKSPACE_ORPHAN_GRACE_SECONDS", 3600))?,
            mcp_allowed_origins: workspace_http::origin::AllowedOrigins::parse(
                &get("WORKSPACE_MCP_ALLOWED_ORIGINS").unwrap_or_default(),
            )
            .map_err(|e| format!("WORKSPACE_MCP_ALLOWED_ORIGINS: {e}"))?,
            model_dir: get("WORKSPACE_MODEL_DIR").map(Into::into),
            semantic_model: get("WORKSPACE_SEMANTIC_MODEL"),
            aws: AwsNames {
                table: get("WORKSPACE_TABLE"),
                bucket: get("WORKSPACE_BUCKET"),
                cache_table: get("WORKSPACE_CACHE_TABLE"),
                blob_bucket: get("WORKSPACE_BLOB_S3_BUCKET"),
                event_bus: get("WORKSPACE_EVENT_BUS"),
            },
            claims: ClaimNames {
                tenant: or("WORKSPACE_TENANT_CLAIM", "tenant_id"),
                workspace: or("WORKSPACE_WORKSPACE_CLAIM", "workspace_id"),
                principal: or("WORKSPACE_PRINCIPAL_CLAIM", "sub"),
                scopes: or("WORKSPACE_SCOPE_CLAIM", "scope"),
                paths: or("WORKSPACE_PATHS_CLAIM", "workspace_paths"),
            },
            local: LocalSettings {
                backend,
                addr,
                data_dir: or("WORKSPACE_DATA_DIR", "./.workspace-data").into(),
                api_keys: get("WORKSPACE_API_KEYS"),
                public_url,
                connection_timeout_seconds: positive(
                    &get,
                    "WORKSPACE_CONNECTION_TIMEOUT_SECONDS",
                    30,
                )?,
                max_connections: usize::try_from(positive(&get, "WORKSPACE_MAX_CONNECTIONS", 512)?)
                    .unwrap_or(usize::MAX),
                max_event_streams: usize::try_from(positive(
                    &get,
                    "WORKSPACE_MAX_EVENT_STREAMS",
                    128,
                )?)
                .unwrap_or(usize::MAX),
                max_buffered_body_bytes: positive(
                    &get,
                    "WORKSPACE_MAX_BUFFERED_BODY_BYTES",
                    256 * 1024 * 1024,
                )?,
                event_retention_seconds: positive(
                    &get,
                    "WORKSPACE_EVENT_RETENTION_SECONDS",
                    7 * 24 * 3600,
                )?,
                webhooks: get("WORKSPACE_WEBHOOKS"),
                test_seams: get("OPENWOP_TEST_SEAM_ENABLED").as_deref() == Some("true"),
                search: get("WORKSPACE_SEARCH").as_deref() != Some("off"),
                mcp_max_sessions: usize::try_from(positive(
                    &get,
                    "WORKSPACE_MCP_MAX_SESSIONS",
                    256,
                )?)
                .unwrap_or(usize::MAX),
                mcp_session_idle_seconds: positive(
                    &get,
                    "WORKSPACE_MCP_SESSION_IDLE_SECONDS",
                    1800,
                )?,
            },
        })
    }

    /// What discovery advertises on AWS, where one function answers discovery and others
    /// serve the families: a configured blob bucket (S3 presigns) and cache table.
    pub fn advertised_on_aws(&self) -> workspace_http::Advertised {
        workspace_http::Advertised {
            blobs: self
                .aws
                .blob_bucket
                .as_ref()
                .map(|_| (self.blob_limits.clone(), true)),
            cache: self.aws.cache_table.as_ref().map(|_| self.cache_limits),
            events: workspace_http::AdvertisedEvents {
                event_bridge: true,
                ..Default::default()
            },
            // The API's own URL is API Gateway's, which a function does not know.
            public_url: None,
            semantic: self.semantic_model.clone().ok_or_else(|| {
                "this stack's search functions carry no embedding model: give fn-search, fn-indexer and fn-mcp the model's folder in WORKSPACE_MODEL_DIR and its id in WORKSPACE_SEMANTIC_MODEL (docs/search.md)".to_owned()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from_source(move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_and_names() {
        let s = from(&[]).unwrap();
        assert_eq!(s.local.backend, Backend::Embedded);
        assert_eq!(s.local.addr.to_string(), "127.0.0.1:8787");
        assert_eq!(s.claims.tenant, "tenant_id");
        assert_eq!(s.aws.table(), Err("WORKSPACE_TABLE must be set".to_owned()));
        assert!(s.advertised_on_aws().blobs.is_none());
        let s = from(&[
            ("WORKSPACE_BACKEND", "aws"),
            ("WORKSPACE_TABLE", "t"),
            ("WORKSPACE_BLOB_S3_BUCKET", "b"),
            ("WORKSPACE_TENANT_CLAIM", "org"),
        ])
        .unwrap();
        assert_eq!(s.local.backend, Backend::Aws);
        assert_eq!(s.aws.table(), Ok("t"));
        assert_eq!(s.claims.tenant, "org");
        assert!(s.advertised_on_aws().blobs.is_some());
        assert!(s.advertised_on_aws().cache.is_none());
    }

    #[test]
    fn bad_values_name_the_setting() {
        for (k, v) in [
            ("WORKSPACE_BACKEND", "s3"),
            ("WORKSPACE_ADDR", "nowhere"),
            ("WORKSPACE_PUBLIC_URL", "ftp://x"),
            ("WORKSPACE_MAX_FILES", "many"),
            ("WORKSPACE_ORPHAN_GRACE_SECONDS", "-1"),
        ] {
            let err = from(&[(k, v)]).err().unwrap_or_default();
            assert!(err.contains(k), "{k}={v}: {err}");
        }
    }
}
