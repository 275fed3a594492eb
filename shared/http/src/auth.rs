//! Identity. Tenant and workspace come only from the credential, never from the request
//! body, query or other headers. Each deployment plugs in an `Authenticator`: opaque API keys
//! on the local server, authorizer claims on Lambda.

use async_trait::async_trait;
use http::request::Parts;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use workspace_core::{Access, Identity, Result, Scope, WorkspaceError};

#[async_trait]
pub trait Authenticator: Send + Sync {
    async fn authenticate(&self, parts: &Parts) -> Result<Identity>;
}

/// The bearer token of a request, if it has one.
pub fn bearer_token(parts: &Parts) -> Result<&str> {
    let missing = || {
        WorkspaceError::Unauthenticated(
            "missing credential: send Authorization: Bearer <api key>".to_owned(),
        )
    };
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?;
    let (scheme, token) = value.split_once(' ').ok_or_else(missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(missing());
    }
    Ok(token.trim())
}

struct KeyEntry {
    digest: [u8; 32],
    identity: Identity,
}

/// Opaque API keys, each bound to one tenant/workspace. Only SHA-256 digests are kept in
/// memory, and a lookup compares against every entry in constant time, so neither timing nor
/// a memory dump reveals a key.
#[derive(Default)]
pub struct ApiKeys {
    entries: Vec<KeyEntry>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl ApiKeys {
    /// Parses `WORKSPACE_API_KEYS`: comma-separated `<key>=<tenant>/<workspace>`.
    /// Error messages never repeat a key.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut keys = Self::default();
        for (i, entry) in spec.split(',').map(str::trim).enumerate() {
            if entry.is_empty() {
                continue;
            }
            let bad = |why: &str| {
                WorkspaceError::validation(format!(
                    "WORKSPACE_API_KEYS entry {} {why}; expected <key>=<tenant>/<workspace>",
                    i + 1
                ))
            };
            let (key, scope) = entry.split_once('=').ok_or_else(|| bad("has no '='"))?;
            let (tenant, workspace) = scope
                .split_once('/')
                .ok_or_else(|| bad("names no workspace"))?;
            if key.len() < 16 {
                return Err(bad("has a key shorter than 16 characters"));
            }
            let scope = Scope::parse(tenant, workspace).map_err(|e| bad(&e.to_string()))?;
            keys.add(key, scope, format!("apikey:{}", i + 1));
        }
        Ok(keys)
    }

    /// Adds a read-write key.
    pub fn add(&mut self, key: &str, scope: Scope, principal: String) {
        self.add_with_access(key, scope, principal, Access::READ_WRITE);
    }

    pub fn add_with_access(&mut self, key: &str, scope: Scope, principal: String, access: Access) {
        self.entries.push(KeyEntry {
            digest: digest(key),
            identity: Identity {
                scope,
                principal,
                access,
            },
        });
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn lookup(&self, key: &str) -> Option<&Identity> {
        let d = digest(key);
        let mut found = None;
        // No early exit: every entry is compared.
        for e in &self.entries {
            if bool::from(e.digest.ct_eq(&d)) {
                found = Some(&e.identity);
            }
        }
        found
    }
}

#[async_trait]
impl Authenticator for ApiKeys {
    async fn authenticate(&self, parts: &Parts) -> Result<Identity> {
        let token = bearer_token(parts)?;
        self.lookup(token)
            .cloned()
            .ok_or_else(|| WorkspaceError::Unauthenticated("unknown API key".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let keys =
            ApiKeys::parse("k1-aaaaaaaaaaaaaaaa=acme/main, k2-bbbbbbbbbbbbbbbb=beta/w2").unwrap();
        assert_eq!(keys.len(), 2);
        let id = keys.lookup("k2-bbbbbbbbbbbbbbbb").unwrap();
        assert_eq!(id.scope, Scope::parse("beta", "w2").unwrap());
        assert!(keys.lookup("k2-bbbbbbbbbbbbbbbX").is_none());
    }

    #[test]
    fn bad_entries_do_not_echo_the_key() {
        for spec in [
            "secretsecretsecret",
            "secretsecretsecret=acme",
            "secretsecretsecret=ac/me/x",
            "short=a/b",
        ] {
            let err = ApiKeys::parse(spec).err().expect(spec).to_string();
            assert!(!err.contains("secretsecret"), "{err}");
        }
    }
}
