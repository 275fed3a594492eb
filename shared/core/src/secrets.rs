//! Registered secrets (WSR-1): exact values a tenant registers (a database password, a
//! provider key) so that they are stored as `[REDACTED:<id>]` wherever an agent writes them,
//! in every workspace of the tenant. Unlike the structural rules this can never be switched
//! off. The value is needed in plain text to find it in content, so the store holding it is
//! as sensitive as a secret manager: `secrets.json` (mode 0600) beside the local database, or
//! the DynamoDB table (encrypted at rest) under a tenant-prefixed partition no workspace can
//! name. No API, listing or log line ever returns a value.

use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use crate::redact::{RegisteredSecret, MIN_REGISTERED_LEN};
use crate::scope::TenantId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Longest registered value: a PEM key fits, a document does not.
pub const MAX_SECRET_LEN: usize = 16 * 1024;
/// Longest secret id.
pub const MAX_SECRET_ID_LEN: usize = 64;

/// What the store keeps of one registered secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretRecord {
    pub tenant: String,
    /// Names the secret in `[REDACTED:<id>]`, listings and removals.
    pub id: String,
    pub value: String,
    pub created_at: Millis,
}

impl SecretRecord {
    /// A checked record: the id is safe to show inside stored text and the value is long
    /// enough that redacting it cannot eat ordinary words.
    pub fn new(tenant: &TenantId, id: &str, value: &str, created_at: Millis) -> Result<Self> {
        check_secret_id(id)?;
        let len = value.chars().count();
        if len < MIN_REGISTERED_LEN || value.len() > MAX_SECRET_LEN {
            return Err(WorkspaceError::validation(format!(
                "a registered secret must be {MIN_REGISTERED_LEN} characters to {MAX_SECRET_LEN} bytes long"
            )));
        }
        if value.trim() != value {
            return Err(WorkspaceError::validation(
                "a registered secret must not start or end with whitespace (a trailing newline from `echo` is the usual cause; use printf)",
            ));
        }
        Ok(Self {
            tenant: tenant.to_string(),
            id: id.to_owned(),
            value: value.to_owned(),
            created_at,
        })
    }

    pub fn as_registered(&self) -> RegisteredSecret {
        RegisteredSecret {
            id: self.id.clone(),
            value: self.value.clone(),
        }
    }
}

/// Secret ids appear in stored text as `[REDACTED:<id>]`: lower-case letters, digits, `-`
/// and `_`, so an id can never close the marker or look like a rule's id with a twist.
pub fn check_secret_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_SECRET_ID_LEN
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::validation(format!(
            "a secret id must be 1-{MAX_SECRET_ID_LEN} characters of a-z 0-9 - _, starting with a letter or digit"
        )))
    }
}

/// Where registered secrets live.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// Registers a secret, replacing one with the same tenant and id.
    async fn put_secret(&self, record: SecretRecord) -> Result<()>;
    /// Every secret registered for `tenant` (read on each write, so a new one counts at once).
    async fn secrets_of(&self, tenant: &TenantId) -> Result<Vec<SecretRecord>>;
    /// Removes a secret; false when the tenant has none with that id.
    async fn remove_secret(&self, tenant: &TenantId, id: &str) -> Result<bool>;
    /// The tenant's secrets and the epoch they were read at, where the store keeps one
    /// (registering or removing a secret moves it): a writer may then keep them between
    /// writes and let each commit check the epoch (`Commit::secrets_epoch`). `None`: no
    /// epoch here; read the secrets on each write.
    async fn secrets_at(&self, _tenant: &TenantId) -> Result<Option<(Vec<SecretRecord>, u64)>> {
        Ok(None)
    }
}

/// A secret store with nothing registered, for deployments and tests that register none.
pub struct NoSecrets;

#[async_trait]
impl SecretStore for NoSecrets {
    async fn put_secret(&self, _: SecretRecord) -> Result<()> {
        Err(WorkspaceError::validation(
            "this deployment has no secret store",
        ))
    }
    async fn secrets_of(&self, _: &TenantId) -> Result<Vec<SecretRecord>> {
        Ok(Vec::new())
    }
    async fn remove_secret(&self, _: &TenantId, _: &str) -> Result<bool> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_values_are_checked() {
        let t = TenantId::parse("acme").unwrap();
        assert!(SecretRecord::new(&t, "db-password", "hunter2-long", 0).is_ok());
        for id in ["", "DB", "a b", "a]b", "-a", &"a".repeat(65)] {
            assert!(
                SecretRecord::new(&t, id, "hunter2-long", 0).is_err(),
                "{id:?}"
            );
        }
        for value in ["short", " padded-secret", "trailing-newline\n"] {
            assert!(SecretRecord::new(&t, "x", value, 0).is_err(), "{value:?}");
        }
        assert!(SecretRecord::new(&t, "x", &"v".repeat(MAX_SECRET_LEN + 1), 0).is_err());
    }
}
