//! In-memory cache and blob adapters (RFC 0019), keyed by full storage keys so scopes never
//! meet. A blob keeps the versions an overwrite replaced while a presigned URL may still
//! name them (`SupersededBlob::readable_until`), as S3 keeps them.

use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use workspace_core::blob::{
    bucket_prefix, BlobKey, BlobLocation, BlobMeta, BlobPrefix, BlobStore, SupersededBlob,
};
use workspace_core::cache::{CacheEntry, CacheKey, CacheStore};
use workspace_core::model::Millis;
use workspace_core::{Result, Scope, WorkspaceError};

fn poisoned<T>(_: T) -> WorkspaceError {
    WorkspaceError::internal("memory store lock poisoned")
}

/// Cache entries in memory: `<scope prefix>cache/<key>` → entry.
#[derive(Default, Clone)]
pub struct MemoryCache {
    entries: Arc<Mutex<HashMap<String, CacheEntry>>>,
}

fn cache_key(scope: &Scope, key: &CacheKey) -> String {
    format!("{}cache/{}", scope.key_prefix(), key.as_str())
}

#[async_trait]
impl CacheStore for MemoryCache {
    async fn put(&self, scope: &Scope, key: &CacheKey, entry: CacheEntry) -> Result<()> {
        self.entries
            .lock()
            .map_err(poisoned)?
            .insert(cache_key(scope, key), entry);
        Ok(())
    }

    async fn get(&self, scope: &Scope, key: &CacheKey) -> Result<Option<CacheEntry>> {
        Ok(self
            .entries
            .lock()
            .map_err(poisoned)?
            .get(&cache_key(scope, key))
            .cloned())
    }

    async fn delete(&self, scope: &Scope, key: &CacheKey) -> Result<()> {
        self.entries
            .lock()
            .map_err(poisoned)?
            .remove(&cache_key(scope, key));
        Ok(())
    }
}

/// Storage key → object, sorted for listing.
type ObjectMap = BTreeMap<String, Object>;

struct Object {
    meta: BlobMeta,
    bytes: Vec<u8>,
    /// Versions overwrites replaced that a pinned read may still ask for.
    superseded: Vec<(SupersededBlob, Vec<u8>)>,
}

/// Blobs in memory.
#[derive(Default, Clone)]
pub struct MemoryBlobs {
    objects: Arc<Mutex<ObjectMap>>,
}

#[async_trait]
impl BlobStore for MemoryBlobs {
    async fn put(
        &self,
        loc: &BlobLocation,
        bytes: Vec<u8>,
        content_type: &str,
        now: Millis,
        keep_superseded_ms: u64,
    ) -> Result<BlobMeta> {
        let meta = BlobMeta::for_new_object(loc, &bytes, content_type, now);
        let mut objects = self.objects.lock().map_err(poisoned)?;
        let mut superseded = Vec::new();
        if let Some(old) = objects.remove(&loc.storage_key()) {
            superseded = old.superseded;
            superseded.retain(|(s, _)| s.readable_until > now);
            let until = now.saturating_add(i64::try_from(keep_superseded_ms).unwrap_or(i64::MAX));
            superseded.push((
                SupersededBlob {
                    meta: old.meta,
                    readable_until: until,
                },
                old.bytes,
            ));
        }
        objects.insert(
            loc.storage_key(),
            Object {
                meta: meta.clone(),
                bytes,
                superseded,
            },
        );
        Ok(meta)
    }

    async fn get(
        &self,
        loc: &BlobLocation,
        version_id: Option<&str>,
    ) -> Result<Option<(BlobMeta, Vec<u8>)>> {
        let objects = self.objects.lock().map_err(poisoned)?;
        let Some(o) = objects.get(&loc.storage_key()) else {
            return Ok(None);
        };
        Ok(match version_id {
            None => Some((o.meta.clone(), o.bytes.clone())),
            Some(v) if v == o.meta.version_id => Some((o.meta.clone(), o.bytes.clone())),
            Some(v) => o
                .superseded
                .iter()
                .find(|(s, _)| s.meta.version_id == v)
                .map(|(s, b)| (s.meta.clone(), b.clone())),
        })
    }

    async fn head(&self, loc: &BlobLocation) -> Result<Option<BlobMeta>> {
        Ok(self.get(loc, None).await?.map(|(m, _)| m))
    }

    async fn delete(&self, loc: &BlobLocation) -> Result<()> {
        self.objects
            .lock()
            .map_err(poisoned)?
            .remove(&loc.storage_key());
        Ok(())
    }

    async fn list(
        &self,
        scope: &Scope,
        bucket: &str,
        prefix: &BlobPrefix,
        after: Option<&BlobKey>,
        limit: usize,
    ) -> Result<Vec<BlobMeta>> {
        let base = bucket_prefix(scope, bucket);
        let wanted = format!("{base}{}", prefix.as_str());
        let guard = self.objects.lock().map_err(poisoned)?;
        Ok(guard
            .range(wanted.clone()..)
            .take_while(|(k, _)| k.starts_with(&wanted))
            .filter(|(_, o)| after.is_none_or(|a| o.meta.key.as_str() > a.as_str()))
            .take(limit)
            .map(|(_, o)| o.meta.clone())
            .collect())
    }
}

/// Both maps are keyed by storage keys that start with the scope's prefix.
macro_rules! keys_under {
    ($ty:ty, $field:ident) => {
        impl $ty {
            pub(crate) fn erase_keys_under(&self, prefix: &str) -> Result<u64> {
                let mut map = self.$field.lock().map_err(poisoned)?;
                let before = map.len();
                map.retain(|k, _| !k.starts_with(prefix));
                Ok((before - map.len()) as u64)
            }

            pub(crate) fn count_keys_under(&self, prefix: &str) -> Result<u64> {
                let map = self.$field.lock().map_err(poisoned)?;
                Ok(map.keys().filter(|k| k.starts_with(prefix)).count() as u64)
            }
        }
    };
}

keys_under!(MemoryCache, entries);
keys_under!(MemoryBlobs, objects);
