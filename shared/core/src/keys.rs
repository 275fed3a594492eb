//! Managed API keys: created, listed and revoked by an operator, stored only as SHA-256
//! digests. A key reads `wsk_<id>_<secret>`: the id names it in listings and revocations,
//! the secret never leaves the `keys create` output.

use crate::error::Result;
use crate::model::{sha256_hex, Millis};
use crate::path_scope::PathScope;
use crate::scope::Access;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What the store keeps of a key (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedKey {
    pub id: String,
    /// SHA-256 of the whole key, hex.
    pub digest: String,
    pub tenant: String,
    /// `None`: tenant-wide.
    pub workspace: Option<String>,
    pub principal: String,
    pub read: bool,
    pub write: bool,
    /// `workspace:admin`: may erase versions from history.
    #[serde(default)]
    pub admin: bool,
    /// Globs of the paths the key may read and write (`keys create --allow`); with
    /// `read_paths`, empty for the whole workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_paths: Vec<String>,
    /// Globs of the paths the key may only read (`keys create --read`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_paths: Vec<String>,
    pub created_at: Millis,
    pub revoked_at: Option<Millis>,
}

impl ManagedKey {
    pub fn access(&self) -> Access {
        Access {
            read: self.read,
            write: self.write,
            admin: self.admin,
        }
    }

    /// The paths the key reaches (checked when the key was created; a record that no
    /// longer parses is refused by the caller, never widened).
    pub fn paths(&self) -> Result<PathScope> {
        PathScope::new(self.allow_paths.clone(), self.read_paths.clone())
    }

    /// The claim that carries the key's paths to a route function (`None`: the whole
    /// workspace), checked for its form but not compiled (see [`crate::path_scope::claim_of`]).
    pub fn path_claim(&self) -> Result<Option<String>> {
        crate::path_scope::claim_of(&self.allow_paths, &self.read_paths)
    }
}

/// A fresh key and its id.
pub fn new_key() -> (String, String) {
    let id = hex::encode(rand::random::<[u8; 4]>());
    let secret = hex::encode(rand::random::<[u8; 24]>());
    (format!("wsk_{id}_{secret}"), id)
}

pub fn key_digest(key: &str) -> String {
    sha256_hex(key.as_bytes())
}

/// Where managed keys live: a file beside the local database, or the DynamoDB table.
#[async_trait]
pub trait KeyStore: Send + Sync {
    async fn insert_key(&self, key: ManagedKey) -> Result<()>;
    async fn key_by_digest(&self, digest: &str) -> Result<Option<ManagedKey>>;
    async fn list_keys(&self) -> Result<Vec<ManagedKey>>;
    /// Marks the key revoked; false when no key has that id.
    async fn revoke_key(&self, id: &str, at: Millis) -> Result<bool>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_carry_their_id() {
        let (k1, id1) = new_key();
        let (k2, _) = new_key();
        assert_ne!(k1, k2);
        assert!(k1.starts_with(&format!("wsk_{id1}_")));
        assert_eq!(key_digest(&k1).len(), 64);
        assert_ne!(key_digest(&k1), key_digest(&k2));
    }
}
