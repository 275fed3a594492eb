//! The TTL cache (openwop RFC 0019 `cache`): JSON values under short keys, each with an
//! expiry. Entries are scoped to the caller's tenant·workspace like files, so neither a
//! sibling tenant nor another workspace of the same tenant can read or overwrite them.
//!
//! Expiry is judged here, on every read, with the injected clock: a store may keep an
//! expired entry for a while (DynamoDB TTL deletes days later), and it is never served.

use crate::capability::CapabilityCode;
use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use crate::ports::Clock;
use crate::redact::{Redactor, RegisteredSecret};
use crate::scope::Scope;
use crate::secrets::{NoSecrets, SecretStore};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Longest cache key, in bytes.
pub const MAX_CACHE_KEY_LEN: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// Largest value, as compact JSON bytes.
    pub max_value_bytes: u64,
    /// Longest `ttlSeconds` accepted.
    pub max_ttl_seconds: u64,
}

impl Default for CacheLimits {
    fn default() -> Self {
        Self {
            max_value_bytes: 256 * 1024,
            max_ttl_seconds: 24 * 60 * 60,
        }
    }
}

/// A validated cache key: 1-256 characters of `A-Z a-z 0-9 . _ - : = +`, not only dots.
/// Clients memoising requests hash them into such keys; anything else (slashes, spaces,
/// control bytes, percent signs) is refused, never rewritten.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    pub fn parse(s: &str) -> Result<Self> {
        let ok_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '=' | '+');
        if s.is_empty() || s.len() > MAX_CACHE_KEY_LEN {
            return Err(WorkspaceError::validation(format!(
                "cache key must be 1-{MAX_CACHE_KEY_LEN} characters"
            )));
        }
        if !s.chars().all(ok_char) || s.chars().all(|c| c == '.') {
            return Err(WorkspaceError::validation(
                "cache key may contain only A-Z a-z 0-9 . _ - : = + (and not only dots)",
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a store keeps per key: the value as compact JSON text and its expiry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheEntry {
    pub value_json: String,
    pub expires_at: Millis,
}

/// The cache port. Adapters keep entries per scope; they may return expired entries.
#[async_trait]
pub trait CacheStore: Send + Sync {
    async fn put(&self, scope: &Scope, key: &CacheKey, entry: CacheEntry) -> Result<()>;
    async fn get(&self, scope: &Scope, key: &CacheKey) -> Result<Option<CacheEntry>>;
    async fn delete(&self, scope: &Scope, key: &CacheKey) -> Result<()>;
}

/// A hit: the value and when it stops being served.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheHit {
    pub value: serde_json::Value,
    pub expires_at: Millis,
}

pub struct CacheService {
    store: Arc<dyn CacheStore>,
    clock: Arc<dyn Clock>,
    limits: CacheLimits,
    redactor: Redactor,
    secrets: Arc<dyn SecretStore>,
}

/// What a cache write redacts with: the deployment's rules and the tenant's secrets.
struct Redaction<'a> {
    redactor: &'a Redactor,
    registered: &'a [RegisteredSecret],
}

fn redact_str(with: &Redaction<'_>, s: &str, hits: &mut Vec<String>) -> String {
    let r = with.redactor.redact(s, with.registered);
    hits.extend(r.hits);
    r.text
}

/// WSR-1 for cache values: every string in the value (object keys included) goes through
/// the file redactor one by one, so a replacement can never break the JSON around it.
fn redact_value(
    redactor: &Redaction<'_>,
    value: &serde_json::Value,
    hits: &mut Vec<String>,
) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(redact_str(redactor, s, hits)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| redact_value(redactor, v, hits))
                .collect(),
        ),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let k = redact_str(redactor, k, hits);
                let v = redact_value(redactor, v, hits);
                out.insert(k, v);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

impl CacheService {
    pub fn new(store: Arc<dyn CacheStore>, clock: Arc<dyn Clock>, limits: CacheLimits) -> Self {
        Self {
            store,
            clock,
            limits,
            redactor: Redactor::default(),
            secrets: Arc::new(NoSecrets),
        }
    }

    /// Where the tenants' registered secrets are read from (WSR-1; default: none), so a
    /// cached value never holds one either.
    pub fn with_secrets(mut self, secrets: Arc<dyn SecretStore>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Replaces the WSR-1 redactor (the default applies every structural rule).
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn limits(&self) -> CacheLimits {
        self.limits
    }

    /// Stores `value` for `ttl_seconds`; returns when it expires.
    pub async fn put(
        &self,
        scope: &Scope,
        key: &CacheKey,
        value: &serde_json::Value,
        ttl_seconds: u64,
    ) -> Result<Millis> {
        if ttl_seconds == 0 {
            return Err(WorkspaceError::validation(
                "ttlSeconds must be a positive integer",
            ));
        }
        if ttl_seconds > self.limits.max_ttl_seconds {
            return Err(CapabilityCode::CacheTtlExceedsMax.over_limit(
                format!(
                    "ttlSeconds {ttl_seconds} is over maxTtlSeconds = {}",
                    self.limits.max_ttl_seconds
                ),
                self.limits.max_ttl_seconds,
            ));
        }
        // WSR-1: what is stored (and read back) is the redacted value.
        let registered: Vec<RegisteredSecret> = self
            .secrets
            .secrets_of(&scope.tenant)
            .await?
            .iter()
            .map(|s| s.as_registered())
            .collect();
        let with = Redaction {
            redactor: &self.redactor,
            registered: &registered,
        };
        let mut hits = Vec::new();
        let value = redact_value(&with, value, &mut hits);
        if !hits.is_empty() {
            tracing::info!(rules = ?hits, key = key.as_str(), "secrets redacted before caching");
        }
        let value_json = serde_json::to_string(&value).map_err(WorkspaceError::internal)?;
        if value_json.len() as u64 > self.limits.max_value_bytes {
            return Err(CapabilityCode::CacheValueTooLarge.over_limit(
                format!(
                    "value is {} bytes of JSON; maxValueBytes = {}",
                    value_json.len(),
                    self.limits.max_value_bytes
                ),
                self.limits.max_value_bytes,
            ));
        }
        let ttl_ms = i64::try_from(ttl_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        let expires_at = self.clock.now_ms().saturating_add(ttl_ms);
        self.store
            .put(
                scope,
                key,
                CacheEntry {
                    value_json,
                    expires_at,
                },
            )
            .await?;
        Ok(expires_at)
    }

    /// The live entry; a miss and an expired entry are the same 404.
    pub async fn get(&self, scope: &Scope, key: &CacheKey) -> Result<CacheHit> {
        let miss = || WorkspaceError::not_found(format!("no live cache entry '{}'", key.as_str()));
        let entry = self.store.get(scope, key).await?.ok_or_else(miss)?;
        if entry.expires_at <= self.clock.now_ms() {
            return Err(miss());
        }
        let value = serde_json::from_str(&entry.value_json).map_err(WorkspaceError::internal)?;
        Ok(CacheHit {
            value,
            expires_at: entry.expires_at,
        })
    }

    /// Removes the entry; removing a missing one is not an error (like `DEL`).
    pub async fn delete(&self, scope: &Scope, key: &CacheKey) -> Result<()> {
        self.store.delete(scope, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for ok in [
            "a",
            "user:42",
            "sha256=abc+def",
            "x.y-z_1",
            &"k".repeat(256),
        ] {
            assert!(CacheKey::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a%2F",
            "a\0",
            "ä",
            "a\\b",
            &"k".repeat(257),
        ] {
            assert!(CacheKey::parse(bad).is_err(), "{bad:?}");
        }
    }
}
