//! Indexes shared between processes through an object store (`IndexObjects`: on AWS, one
//! object per workspace in the bodies bucket). Each process keeps the indexes it used in
//! memory with the tag they were loaded at, and loads one again only when the stored
//! object changed; a writer (the indexer function) stores it back conditionally on that
//! tag, so two writers never overwrite each other's update.

use crate::SqliteIndex;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use workspace_core::search::{IndexHandle, IndexObjects, Loaded, SearchIndexes, TextIndex};
use workspace_core::{Result, Scope};

/// Indexes one process keeps in memory at once (each about two to three times its
/// workspace's text); past it the oldest is dropped (it is loaded again when needed).
pub const MAX_CACHED_INDEXES: usize = 16;

struct Cached {
    index: IndexHandle,
    /// The stored object's tag it was loaded from or last stored as; `None`: built here
    /// and never stored.
    tag: Option<String>,
    used: u64,
}

pub struct SharedIndexes {
    objects: Arc<dyn IndexObjects>,
    cache: Mutex<(HashMap<String, Cached>, u64)>,
}

impl SharedIndexes {
    pub fn new(objects: Arc<dyn IndexObjects>) -> SharedIndexes {
        SharedIndexes {
            objects,
            cache: Mutex::new((HashMap::new(), 0)),
        }
    }

    fn cached(&self, key: &str) -> Option<(IndexHandle, Option<String>)> {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.1 += 1;
        let tick = cache.1;
        cache.0.get_mut(key).map(|c| {
            c.used = tick;
            (c.index.clone(), c.tag.clone())
        })
    }

    fn remember(&self, key: String, index: IndexHandle, tag: Option<String>) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.1 += 1;
        let used = cache.1;
        if !cache.0.contains_key(&key) && cache.0.len() >= MAX_CACHED_INDEXES {
            if let Some(oldest) = cache
                .0
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| k.clone())
            {
                cache.0.remove(&oldest);
            }
        }
        cache.0.insert(key, Cached { index, tag, used });
    }
}

fn handle(index: SqliteIndex) -> IndexHandle {
    let boxed: Box<dyn TextIndex> = Box::new(index);
    Arc::new(tokio::sync::Mutex::new(boxed))
}

#[async_trait]
impl SearchIndexes for SharedIndexes {
    async fn open(&self, scope: &Scope) -> Result<IndexHandle> {
        let key = scope.key_prefix();
        let cached = self.cached(&key);
        let known = cached.as_ref().and_then(|(_, tag)| tag.clone());
        match self.objects.load(scope, known.as_deref()).await? {
            Loaded::Unchanged => {
                if let Some((index, _)) = cached {
                    return Ok(index);
                }
                // Only a cached index has a tag to compare; defensive: start empty.
                let index = handle(SqliteIndex::in_memory()?);
                self.remember(key, index.clone(), None);
                Ok(index)
            }
            Loaded::Fresh { bytes, tag } => {
                let index = match SqliteIndex::from_bytes(&bytes) {
                    Ok(index) => index,
                    // A damaged object is only a lost cache: rebuilt, then stored over it.
                    Err(e) => {
                        tracing::warn!(error = %e, "index object unreadable; rebuilding it");
                        SqliteIndex::in_memory()?
                    }
                };
                let index = handle(index);
                self.remember(key, index.clone(), Some(tag));
                Ok(index)
            }
            Loaded::Missing => match cached {
                // Built here and never stored: still the best there is.
                Some((index, None)) => Ok(index),
                // None stored (or the stored one was lost): start empty; the catch-up
                // rebuilds it from the store.
                _ => {
                    let index = handle(SqliteIndex::in_memory()?);
                    self.remember(key, index.clone(), None);
                    Ok(index)
                }
            },
        }
    }

    async fn save(&self, scope: &Scope, index: &IndexHandle) -> Result<bool> {
        let key = scope.key_prefix();
        let expected = match self.cached(&key) {
            Some((cached, tag)) if Arc::ptr_eq(&cached, index) => tag,
            // Not the index this process holds for the scope (dropped meanwhile): do not
            // store over whatever is there without knowing what it was.
            _ => return Ok(false),
        };
        let bytes = index.lock().await.to_bytes()?;
        match self
            .objects
            .store(scope, bytes, expected.as_deref())
            .await?
        {
            Some(tag) => {
                self.remember(key, index.clone(), Some(tag));
                Ok(true)
            }
            None => {
                // Someone stored a newer one: forget ours, the next open loads theirs.
                self.cache
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .0
                    .remove(&key);
                Ok(false)
            }
        }
    }

    fn scratch(&self) -> Result<Box<dyn TextIndex>> {
        Ok(Box::new(SqliteIndex::in_memory()?))
    }

    async fn forget(&self, scope: &Scope) -> Result<()> {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .remove(&scope.key_prefix());
        Ok(())
    }
}
