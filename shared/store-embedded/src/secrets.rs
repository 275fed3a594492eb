//! Registered secrets for the local server: `secrets.json` in the data directory (mode
//! 0600), changed by `workspace-local secrets …` while the server runs and re-read by the
//! server whenever it changes, so a newly registered secret is redacted from the next write.

use crate::json_file::JsonFile;
use async_trait::async_trait;
use std::path::Path;
use workspace_core::secrets::{SecretRecord, SecretStore};
use workspace_core::{Result, TenantId};

pub const SECRETS_FILE: &str = "secrets.json";

pub struct SecretFile(JsonFile<SecretRecord>);

impl SecretFile {
    pub fn new(data_dir: &Path) -> Self {
        Self(JsonFile::new(data_dir.join(SECRETS_FILE)))
    }
}

#[async_trait]
impl SecretStore for SecretFile {
    async fn put_secret(&self, record: SecretRecord) -> Result<()> {
        self.0.update(|all| {
            all.retain(|s| !(s.tenant == record.tenant && s.id == record.id));
            all.push(record);
        })
    }

    async fn secrets_of(&self, tenant: &TenantId) -> Result<Vec<SecretRecord>> {
        Ok(self
            .0
            .read()?
            .into_iter()
            .filter(|s| s.tenant == tenant.as_str())
            .collect())
    }

    async fn remove_secret(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        let before = self.0.read()?.len();
        let after = self.0.update(|all| {
            all.retain(|s| !(s.tenant == tenant.as_str() && s.id == id));
            all.len()
        })?;
        Ok(after < before)
    }
}
