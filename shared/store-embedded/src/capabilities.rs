//! Cache and blob adapters (RFC 0019) in the same redb file. Keys start with the scope's
//! `t/<tenant>/w/<workspace>/` prefix like every other table's.
//!
//! Tables:
//! - `cache`:      prefix + `cache/` + key  → CacheEntry (JSON)
//! - `blob_meta`:  blob storage key         → BlobMeta (JSON)
//! - `blob_bytes`: blob storage key         → bytes
//! - `blob_superseded`: (storage key, version id) → SupersededBlob (JSON)
//! - `blob_superseded_bytes`: (storage key, version id) → bytes
//!
//! Meta and bytes of an object change in one write transaction. An overwrite moves the
//! version it replaces to the superseded tables, where a pinned read (a presigned GET)
//! still finds it until `readable_until`; the next overwrite of the key drops the ones past
//! it, and a delete drops them all, as S3's DELETE of every version does.

use super::{db_err, decode, encode, EmbeddedStore};
use async_trait::async_trait;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};
use workspace_core::blob::{
    bucket_prefix, BlobKey, BlobLocation, BlobMeta, BlobPrefix, BlobStore, SupersededBlob,
};
use workspace_core::cache::{CacheEntry, CacheKey, CacheStore};
use workspace_core::model::Millis;
use workspace_core::{Result, Scope};

pub(crate) const CACHE: TableDefinition<&str, &[u8]> = TableDefinition::new("cache");
pub(crate) const BLOB_META: TableDefinition<&str, &[u8]> = TableDefinition::new("blob_meta");
pub(crate) const BLOB_BYTES: TableDefinition<&str, &[u8]> = TableDefinition::new("blob_bytes");
pub(crate) const BLOB_SUPERSEDED: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("blob_superseded");
pub(crate) const BLOB_SUPERSEDED_BYTES: TableDefinition<(&str, &str), &[u8]> =
    TableDefinition::new("blob_superseded_bytes");

/// Creates the tables at open, so readers never meet a missing one.
pub(crate) fn create_tables(txn: &WriteTransaction) -> Result<()> {
    txn.open_table(CACHE).map_err(db_err)?;
    txn.open_table(BLOB_META).map_err(db_err)?;
    txn.open_table(BLOB_BYTES).map_err(db_err)?;
    txn.open_table(BLOB_SUPERSEDED).map_err(db_err)?;
    txn.open_table(BLOB_SUPERSEDED_BYTES).map_err(db_err)?;
    Ok(())
}

fn cache_key(scope: &Scope, key: &CacheKey) -> String {
    format!("{}cache/{}", scope.key_prefix(), key.as_str())
}

#[async_trait]
impl CacheStore for EmbeddedStore {
    async fn put(&self, scope: &Scope, key: &CacheKey, entry: CacheEntry) -> Result<()> {
        let k = cache_key(scope, key);
        let v = encode(&entry)?;
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            txn.open_table(CACHE)
                .map_err(db_err)?
                .insert(k.as_str(), v.as_slice())
                .map_err(db_err)?;
            txn.commit().map_err(db_err)
        })
        .await
    }

    async fn get(&self, scope: &Scope, key: &CacheKey) -> Result<Option<CacheEntry>> {
        let k = cache_key(scope, key);
        self.get_json(CACHE, k).await
    }

    async fn delete(&self, scope: &Scope, key: &CacheKey) -> Result<()> {
        let k = cache_key(scope, key);
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            txn.open_table(CACHE)
                .map_err(db_err)?
                .remove(k.as_str())
                .map_err(db_err)?;
            txn.commit().map_err(db_err)
        })
        .await
    }
}

#[async_trait]
impl BlobStore for EmbeddedStore {
    async fn put(
        &self,
        loc: &BlobLocation,
        bytes: Vec<u8>,
        content_type: &str,
        now: Millis,
        keep_superseded_ms: u64,
    ) -> Result<BlobMeta> {
        let meta = BlobMeta::for_new_object(loc, &bytes, content_type, now);
        let k = loc.storage_key();
        let m = encode(&meta)?;
        let until = now.saturating_add(i64::try_from(keep_superseded_ms).unwrap_or(i64::MAX));
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            drop_superseded(&txn, &k, |s| s.readable_until <= now)?;
            {
                let mut metas = txn.open_table(BLOB_META).map_err(db_err)?;
                let mut data = txn.open_table(BLOB_BYTES).map_err(db_err)?;
                let old = metas.insert(k.as_str(), m.as_slice()).map_err(db_err)?;
                let old_meta: Option<BlobMeta> = old.map(|o| decode(o.value())).transpose()?;
                let old_bytes = data
                    .insert(k.as_str(), bytes.as_slice())
                    .map_err(db_err)?
                    .map(|b| b.value().to_vec());
                if let (Some(meta), Some(old_bytes)) = (old_meta, old_bytes) {
                    let v = meta.version_id.clone();
                    let kept = encode(&SupersededBlob {
                        readable_until: until,
                        meta,
                    })?;
                    txn.open_table(BLOB_SUPERSEDED_BYTES)
                        .map_err(db_err)?
                        .insert((k.as_str(), v.as_str()), old_bytes.as_slice())
                        .map_err(db_err)?;
                    txn.open_table(BLOB_SUPERSEDED)
                        .map_err(db_err)?
                        .insert((k.as_str(), v.as_str()), kept.as_slice())
                        .map_err(db_err)?;
                }
            }
            txn.commit().map_err(db_err)
        })
        .await?;
        Ok(meta)
    }

    async fn get(
        &self,
        loc: &BlobLocation,
        version_id: Option<&str>,
    ) -> Result<Option<(BlobMeta, Vec<u8>)>> {
        let k = loc.storage_key();
        let version = version_id.map(str::to_owned);
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let metas = txn.open_table(BLOB_META).map_err(db_err)?;
            let Some(m) = metas.get(k.as_str()).map_err(db_err)? else {
                return Ok(None);
            };
            let meta: BlobMeta = decode(m.value())?;
            match version {
                Some(v) if v != meta.version_id => {
                    let kept = txn.open_table(BLOB_SUPERSEDED).map_err(db_err)?;
                    let Some(s) = kept.get((k.as_str(), v.as_str())).map_err(db_err)? else {
                        return Ok(None);
                    };
                    let s: SupersededBlob = decode(s.value())?;
                    let data = txn.open_table(BLOB_SUPERSEDED_BYTES).map_err(db_err)?;
                    let found = data.get((k.as_str(), v.as_str())).map_err(db_err)?;
                    Ok(found.map(|b| (s.meta, b.value().to_vec())))
                }
                _ => {
                    let data = txn.open_table(BLOB_BYTES).map_err(db_err)?;
                    let found = data.get(k.as_str()).map_err(db_err)?;
                    Ok(found.map(|b| (meta, b.value().to_vec())))
                }
            }
        })
        .await
    }

    async fn head(&self, loc: &BlobLocation) -> Result<Option<BlobMeta>> {
        let k = loc.storage_key();
        self.get_json(BLOB_META, k).await
    }

    async fn delete(&self, loc: &BlobLocation) -> Result<()> {
        let k = loc.storage_key();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                txn.open_table(BLOB_META)
                    .map_err(db_err)?
                    .remove(k.as_str())
                    .map_err(db_err)?;
                txn.open_table(BLOB_BYTES)
                    .map_err(db_err)?
                    .remove(k.as_str())
                    .map_err(db_err)?;
            }
            drop_superseded(&txn, &k, |_| true)?;
            txn.commit().map_err(db_err)
        })
        .await
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
        let start = match after {
            Some(a) if a.as_str() >= prefix.as_str() => format!("{base}{}", a.as_str()),
            _ => wanted.clone(),
        };
        let skip = after.map(|a| format!("{base}{}", a.as_str()));
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let metas = txn.open_table(BLOB_META).map_err(db_err)?;
            let mut out = Vec::new();
            for item in metas.range(start.as_str()..).map_err(db_err)? {
                let (k, v) = item.map_err(db_err)?;
                let k = k.value();
                if !k.starts_with(&wanted) {
                    break;
                }
                if skip.as_deref() == Some(k) {
                    continue;
                }
                out.push(decode(v.value())?);
                if out.len() >= limit {
                    break;
                }
            }
            Ok(out)
        })
        .await
    }
}

/// Removes the superseded versions of storage key `k` that `gone` picks.
fn drop_superseded(
    txn: &WriteTransaction,
    k: &str,
    gone: impl Fn(&SupersededBlob) -> bool,
) -> Result<()> {
    let mut kept = txn.open_table(BLOB_SUPERSEDED).map_err(db_err)?;
    let mut doomed = Vec::new();
    for item in kept.range((k, "")..).map_err(db_err)? {
        let (key, v) = item.map_err(db_err)?;
        let (key_of, version) = key.value();
        if key_of != k {
            break;
        }
        if gone(&decode(v.value())?) {
            doomed.push(version.to_owned());
        }
    }
    let mut bytes = txn.open_table(BLOB_SUPERSEDED_BYTES).map_err(db_err)?;
    for v in &doomed {
        kept.remove((k, v.as_str())).map_err(db_err)?;
        bytes.remove((k, v.as_str())).map_err(db_err)?;
    }
    Ok(())
}
