//! Managed keys for the local server: `keys.json` in the data directory, holding digests
//! only. It is a separate file because the database admits one process at a time, and
//! `workspace-local keys …` must work while the server runs: the CLI replaces the file
//! atomically (write a temporary file, rename), and the server re-reads it whenever its
//! modification time changes, so a new or revoked key counts at the next request.

use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use workspace_core::keys::{KeyStore, ManagedKey};
use workspace_core::model::Millis;
use workspace_core::{Result, WorkspaceError};

pub const KEYS_FILE: &str = "keys.json";

pub struct KeyFile {
    path: PathBuf,
    cache: Mutex<Option<(SystemTime, Vec<ManagedKey>)>>,
}

fn io(path: &Path, e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::internal(format!("{}: {e}", path.display()))
}

impl KeyFile {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(KEYS_FILE),
            cache: Mutex::new(None),
        }
    }

    fn read(&self) -> Result<Vec<ManagedKey>> {
        let modified = match std::fs::metadata(&self.path) {
            Ok(m) => m.modified().map_err(|e| io(&self.path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&self.path, e)),
        };
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| WorkspaceError::internal("key cache poisoned"))?;
        if let Some((at, keys)) = cache.as_ref() {
            if *at == modified {
                return Ok(keys.clone());
            }
        }
        let text = std::fs::read_to_string(&self.path).map_err(|e| io(&self.path, e))?;
        let keys: Vec<ManagedKey> = serde_json::from_str(&text).map_err(|e| io(&self.path, e))?;
        *cache = Some((modified, keys.clone()));
        Ok(keys)
    }

    fn write(&self, keys: &[ManagedKey]) -> Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io(dir, e))?;
        serde_json::to_writer_pretty(&mut tmp, keys).map_err(|e| io(&self.path, e))?;
        tmp.as_file().sync_all().map_err(|e| io(&self.path, e))?;
        tmp.persist(&self.path).map_err(|e| io(&self.path, e))?;
        Ok(())
    }
}

#[async_trait]
impl KeyStore for KeyFile {
    async fn insert_key(&self, key: ManagedKey) -> Result<()> {
        let mut keys = self.read()?;
        keys.push(key);
        self.write(&keys)
    }

    async fn key_by_digest(&self, digest: &str) -> Result<Option<ManagedKey>> {
        Ok(self.read()?.into_iter().find(|k| k.digest == digest))
    }

    async fn list_keys(&self) -> Result<Vec<ManagedKey>> {
        self.read()
    }

    async fn revoke_key(&self, id: &str, at: Millis) -> Result<bool> {
        let mut keys = self.read()?;
        let mut found = false;
        for k in keys
            .iter_mut()
            .filter(|k| k.id == id && k.revoked_at.is_none())
        {
            k.revoked_at = Some(at);
            found = true;
        }
        if found {
            self.write(&keys)?;
        }
        Ok(found)
    }
}
