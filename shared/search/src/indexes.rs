//! Where the local server keeps its indexes: one SQLite file per workspace in a directory
//! beside the embedded store (or in memory, for the in-memory store), opened on first use.

use crate::SqliteIndex;
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use workspace_core::search::{IndexHandle, SearchIndexes, TextIndex};
use workspace_core::{Result, Scope, WorkspaceError};

/// Indexes kept open at once (each holds a SQLite connection and its page cache, a few
/// MB at most); past it the least recently used file-backed one is closed.
pub const MAX_OPEN_INDEXES: usize = 64;

pub struct LocalIndexes {
    /// `None`: in memory (an index is never closed then: it would be lost).
    dir: Option<PathBuf>,
    open: Mutex<HashMap<String, (IndexHandle, u64)>>,
    uses: std::sync::atomic::AtomicU64,
}

impl LocalIndexes {
    /// Indexes as files in `dir` (created when missing).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Result<LocalIndexes> {
        let dir = dir.into();
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        // The indexes hold the workspace's text: owner only, like the rest of the data dir.
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|e| {
            WorkspaceError::internal(format!("cannot create {}: {e}", dir.display()))
        })?;
        Ok(Self::with(Some(dir)))
    }

    pub fn in_memory() -> LocalIndexes {
        Self::with(None)
    }

    fn with(dir: Option<PathBuf>) -> LocalIndexes {
        LocalIndexes {
            dir,
            open: Mutex::new(HashMap::new()),
            uses: Default::default(),
        }
    }

    /// The file of a scope's index: its key prefix hashed (ids may hold characters a file
    /// name should not).
    fn file_of(&self, scope: &Scope) -> Option<PathBuf> {
        let name = hex::encode(Sha256::digest(scope.key_prefix().as_bytes()));
        self.dir.as_ref().map(|d| d.join(format!("{name}.sqlite")))
    }

    fn make(&self, scope: &Scope) -> Result<SqliteIndex> {
        match self.file_of(scope) {
            None => SqliteIndex::in_memory(),
            Some(file) => match SqliteIndex::open(&file) {
                Ok(index) => Ok(index),
                // A corrupt file is only a lost cache: start it again from the store.
                Err(e) => {
                    tracing::warn!(error = %e, file = %file.display(), "search index unreadable; rebuilding it");
                    let _ = std::fs::remove_file(&file);
                    SqliteIndex::open(&file)
                }
            },
        }
    }
}

#[async_trait]
impl SearchIndexes for LocalIndexes {
    async fn open(&self, scope: &Scope) -> Result<IndexHandle> {
        let key = scope.key_prefix();
        let tick = self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((handle, used)) = open.get_mut(&key) {
            *used = tick;
            return Ok(handle.clone());
        }
        if self.dir.is_some() && open.len() >= MAX_OPEN_INDEXES {
            // Close the least recently used one nobody holds.
            if let Some(oldest) = open
                .iter()
                .filter(|(_, (h, _))| Arc::strong_count(h) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            {
                open.remove(&oldest);
            }
        }
        let index: Box<dyn TextIndex> = Box::new(self.make(scope)?);
        let handle: IndexHandle = Arc::new(tokio::sync::Mutex::new(index));
        open.insert(key, (handle.clone(), tick));
        Ok(handle)
    }

    fn scratch(&self) -> Result<Box<dyn TextIndex>> {
        Ok(Box::new(SqliteIndex::in_memory()?))
    }

    async fn forget(&self, scope: &Scope) -> Result<()> {
        let removed = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&scope.key_prefix());
        if let Some((handle, _)) = removed {
            // Wait for whoever holds it, then empty it (another holder may keep the Arc).
            let mut index = handle.lock().await;
            index.clear()?;
        }
        if let Some(file) = self.file_of(scope) {
            for suffix in ["", "-wal", "-shm"] {
                let mut f = file.clone().into_os_string();
                f.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(f));
            }
        }
        Ok(())
    }
}

/// A deleted or purged workspace, or a discarded fork, loses its index with its data
/// (the service erases by the scope's key prefix).
#[async_trait]
impl workspace_core::sessions::ports::BodyEraser for LocalIndexes {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        match Scope::from_key_prefix(prefix) {
            Some(scope) => {
                let had = self.file_of(&scope).is_some_and(|f| f.exists());
                self.forget(&scope).await?;
                Ok(u64::from(had))
            }
            None => Ok(0),
        }
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        Ok(Scope::from_key_prefix(prefix)
            .and_then(|s| self.file_of(&s))
            .is_some_and(|f| f.exists())
            .into())
    }
}
