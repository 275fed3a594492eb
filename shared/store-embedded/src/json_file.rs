//! A small JSON file beside the database, for what `workspace-local` commands change while
//! the server runs (the database admits one process at a time): managed keys and registered
//! secrets. Writers replace the file atomically (temporary file, fsync, rename; the
//! temporary file is created 0600, so the file is readable by its owner only), and readers
//! re-parse it whenever its modification time or length changes, so a change counts at the
//! next request without a restart.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use workspace_core::{Result, WorkspaceError};

/// What identifies one version of the file: modification time and length.
type Stamp = (SystemTime, u64);

pub struct JsonFile<T> {
    path: PathBuf,
    cache: Mutex<Option<(Stamp, Vec<T>)>>,
}

fn io(path: &Path, e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::internal(format!("{}: {e}", path.display()))
}

impl<T: Clone + Serialize + DeserializeOwned> JsonFile<T> {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            cache: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every record; none when the file does not exist yet.
    pub fn read(&self) -> Result<Vec<T>> {
        let stamp = match std::fs::metadata(&self.path) {
            Ok(m) => (m.modified().map_err(|e| io(&self.path, e))?, m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&self.path, e)),
        };
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| WorkspaceError::internal("file cache poisoned"))?;
        if let Some((at, records)) = cache.as_ref() {
            if *at == stamp {
                return Ok(records.clone());
            }
        }
        let text = std::fs::read_to_string(&self.path).map_err(|e| io(&self.path, e))?;
        let records: Vec<T> = serde_json::from_str(&text).map_err(|e| io(&self.path, e))?;
        *cache = Some((stamp, records.clone()));
        Ok(records)
    }

    /// Replaces every record atomically.
    pub fn write(&self, records: &[T]) -> Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        crate::private_dir(dir).map_err(|e| io(dir, e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io(dir, e))?;
        serde_json::to_writer_pretty(&mut tmp, records).map_err(|e| io(&self.path, e))?;
        tmp.as_file().sync_all().map_err(|e| io(&self.path, e))?;
        tmp.persist(&self.path).map_err(|e| io(&self.path, e))?;
        Ok(())
    }

    /// Read, change, write. Concurrent writers are operators running commands by hand; the
    /// last rename wins, as with any config file.
    pub fn update<R>(&self, change: impl FnOnce(&mut Vec<T>) -> R) -> Result<R> {
        let mut records = self.read()?;
        let r = change(&mut records);
        self.write(&records)?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_by_another_handle_is_seen_at_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let a: JsonFile<String> = JsonFile::new(dir.path().join("x.json"));
        let b: JsonFile<String> = JsonFile::new(dir.path().join("x.json"));
        assert!(a.read().unwrap().is_empty());
        b.write(&["one".to_owned()]).unwrap();
        assert_eq!(a.read().unwrap(), ["one"]);
        b.update(|v| v.push("two-longer".to_owned())).unwrap();
        assert_eq!(a.read().unwrap(), ["one", "two-longer"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f: JsonFile<String> = JsonFile::new(dir.path().join("x.json"));
        f.write(&["s".to_owned()]).unwrap();
        let mode = std::fs::metadata(f.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }
}
