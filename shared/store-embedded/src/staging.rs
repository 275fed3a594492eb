//! The staging area of two-step uploads in the `staged` table: one value per key, the
//! stored-at time (8 bytes, big-endian milliseconds) followed by the bytes. redb keeps one
//! version of a key, so a put replaces and a delete leaves nothing behind.

use super::{db_err, STAGED};
use crate::sessions::drain_str_where;
use redb::{Database, ReadableDatabase};
use workspace_core::model::Millis;
use workspace_core::ports::Staged;
use workspace_core::{Result, WorkspaceError};

const STAMP: usize = 8;

fn stored_at(value: &[u8]) -> Result<Millis> {
    value
        .get(..STAMP)
        .and_then(|b| <[u8; STAMP]>::try_from(b).ok())
        .map(i64::from_be_bytes)
        .ok_or_else(|| WorkspaceError::internal("a staged upload record is truncated"))
}

pub(crate) fn put(db: &Database, key: &str, bytes: &[u8], now: Millis) -> Result<()> {
    let mut value = Vec::with_capacity(STAMP + bytes.len());
    value.extend_from_slice(&now.to_be_bytes());
    value.extend_from_slice(bytes);
    let txn = db.begin_write().map_err(db_err)?;
    {
        let mut t = txn.open_table(STAGED).map_err(db_err)?;
        t.insert(key, value.as_slice()).map_err(db_err)?;
    }
    txn.commit().map_err(db_err)
}

pub(crate) fn get(db: &Database, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
    let txn = db.begin_read().map_err(db_err)?;
    let t = txn.open_table(STAGED).map_err(db_err)?;
    let Some(found) = t.get(key).map_err(db_err)? else {
        return Ok(None);
    };
    let value = found.value();
    let body = &value[STAMP.min(value.len())..];
    let size = body.len() as u64;
    Ok(Some(Staged {
        size,
        stored_at: stored_at(value)?,
        bytes: (size <= max_bytes).then(|| body.to_vec()),
    }))
}

pub(crate) fn delete(db: &Database, key: &str) -> Result<()> {
    let txn = db.begin_write().map_err(db_err)?;
    {
        let mut t = txn.open_table(STAGED).map_err(db_err)?;
        t.remove(key).map_err(db_err)?;
    }
    txn.commit().map_err(db_err)
}

pub(crate) fn prune(db: &Database, prefix: &str, cutoff: Millis) -> Result<u64> {
    let txn = db.begin_write().map_err(db_err)?;
    // An unreadable stamp counts as old: such a record is garbage either way.
    let n = drain_str_where(&txn, STAGED, prefix, |v| {
        stored_at(v).map_or(true, |at| at < cutoff)
    })?;
    txn.commit().map_err(db_err)?;
    Ok(n)
}
