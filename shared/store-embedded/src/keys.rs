//! Managed keys for the local server: `keys.json` in the data directory, holding digests
//! only (a [`JsonFile`], so `workspace-local keys …` works while the server runs and a new or
//! revoked key counts at the next request).

use crate::json_file::JsonFile;
use async_trait::async_trait;
use std::path::Path;
use workspace_core::keys::{KeyStore, ManagedKey};
use workspace_core::model::Millis;
use workspace_core::Result;

pub const KEYS_FILE: &str = "keys.json";

pub struct KeyFile(JsonFile<ManagedKey>);

impl KeyFile {
    pub fn new(data_dir: &Path) -> Self {
        Self(JsonFile::new(data_dir.join(KEYS_FILE)))
    }
}

#[async_trait]
impl KeyStore for KeyFile {
    async fn insert_key(&self, key: ManagedKey) -> Result<()> {
        self.0.update(|keys| keys.push(key))
    }

    async fn key_by_digest(&self, digest: &str) -> Result<Option<ManagedKey>> {
        Ok(self.0.read()?.into_iter().find(|k| k.digest == digest))
    }

    async fn list_keys(&self) -> Result<Vec<ManagedKey>> {
        self.0.read()
    }

    async fn revoke_key(&self, id: &str, at: Millis) -> Result<bool> {
        let active = |k: &ManagedKey| k.id == id && k.revoked_at.is_none();
        if !self.0.read()?.iter().any(active) {
            return Ok(false);
        }
        self.0.update(|keys| {
            for k in keys.iter_mut().filter(|k| active(k)) {
                k.revoked_at = Some(at);
            }
        })?;
        Ok(true)
    }
}
