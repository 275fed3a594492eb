//! The staging area of two-step uploads. One object per key, in one of two places:
//!
//! - small objects (an upload's declaration, `put_staged`) are a value of the `staged`
//!   table: the stored-at time (8 bytes, big-endian milliseconds) followed by the bytes;
//! - an upload's bytes (`put_staged_pieces`, up to `maxUploadBytes`) are streamed into a
//!   file of their own in the data directory's `staging/` folder, which a row of the
//!   `staged_files` table names (key → stored-at, size, file name). The commit reads them
//!   from there and stores them in `bodies` like any other body.
//!
//! Why a file and not redb: a redb value is written inside one write transaction, and redb
//! has one writer at a time, so a slow client streaming its upload would stall every commit
//! for as long as it sends; written instead in pieces of one transaction each, the pages
//! would stay in redb's page cache (up to 1 GiB), so an upload would still cost about its
//! size in memory. A file costs one buffer of `STREAM_PIECE_BYTES` per upload in flight.
//!
//! Crash safety: the file is written under a fresh random name and fsynced (with its
//! folder) before one durable redb transaction names it, replacing whatever the key held
//! (a value or another file); a replaced or deleted file is unlinked after that transaction
//! commits. A body that fails or ends short removes its file. A process stopped anywhere in
//! between leaves at most a file no row names, which [`sweep_orphans`] removes when the store
//! opens (one process opens the database at a time), so nothing is left forever. redb keeps
//! one version of a key, so a put replaces and a delete leaves nothing behind.

use super::{db_err, STAGED};
use crate::sessions::drain_str_where;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use workspace_core::model::Millis;
use workspace_core::ports::{BodyPieces, IdSource, RandomIds, Staged, STREAM_PIECE_BYTES};
use workspace_core::{Result, WorkspaceError};

/// The folder of streamed uploads, inside the data directory.
pub const STAGING_DIR: &str = "staging";

/// Staged files: staging key → stored-at (8 bytes) + size (8 bytes) + file name.
pub(crate) const STAGED_FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("staged_files");

const STAMP: usize = 8;

fn stored_at(value: &[u8]) -> Result<Millis> {
    value
        .get(..STAMP)
        .and_then(|b| <[u8; STAMP]>::try_from(b).ok())
        .map(i64::from_be_bytes)
        .ok_or_else(|| WorkspaceError::internal("a staged upload record is truncated"))
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::internal(format!(
        "embedded store: cannot {what} {}: {e}",
        path.display()
    ))
}

/// A row of `staged_files`.
struct FileRow {
    stored_at: Millis,
    size: u64,
    name: String,
}

impl FileRow {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(2 * STAMP + self.name.len());
        v.extend_from_slice(&self.stored_at.to_be_bytes());
        v.extend_from_slice(&self.size.to_be_bytes());
        v.extend_from_slice(self.name.as_bytes());
        v
    }

    fn decode(v: &[u8]) -> Result<FileRow> {
        let truncated = || WorkspaceError::internal("a staged file record is truncated");
        let size = v
            .get(STAMP..2 * STAMP)
            .and_then(|b| <[u8; STAMP]>::try_from(b).ok())
            .map(u64::from_be_bytes)
            .ok_or_else(truncated)?;
        let name = std::str::from_utf8(&v[2 * STAMP..])
            .ok()
            .filter(|n| is_file_name(n))
            .ok_or_else(truncated)?;
        Ok(FileRow {
            stored_at: stored_at(v)?,
            size,
            name: name.to_owned(),
        })
    }
}

/// Names this module gives files (hex digits): nothing else is ever opened or removed.
fn is_file_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Creates the staging folder (owner-only) and removes every file in it that no row names.
pub(crate) fn open(db: &Database, data_dir: &Path) -> Result<PathBuf> {
    let dir = data_dir.join(STAGING_DIR);
    crate::private_dir(&dir).map_err(|e| io_err("create", &dir, e))?;
    sweep_orphans(db, &dir)?;
    Ok(dir)
}

/// Removes the files of `dir` that no row of `staged_files` names: those of uploads cut
/// short, or replaced or deleted, by a process that stopped before it cleaned up.
fn sweep_orphans(db: &Database, dir: &Path) -> Result<u64> {
    let named: HashSet<String> = {
        let txn = db.begin_read().map_err(db_err)?;
        let t = txn.open_table(STAGED_FILES).map_err(db_err)?;
        let mut named = HashSet::new();
        for item in t.iter().map_err(db_err)? {
            let (_, v) = item.map_err(db_err)?;
            named.insert(FileRow::decode(v.value())?.name);
        }
        named
    };
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| io_err("list", dir, e))? {
        let entry = entry.map_err(|e| io_err("list", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_file_name(&name) && !named.contains(&name) {
            std::fs::remove_file(entry.path()).map_err(|e| io_err("remove", &entry.path(), e))?;
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(removed, "removed staged upload files no upload names");
    }
    Ok(removed)
}

/// Unlinks staged files a committed transaction no longer names. A failure only leaves a
/// file the next start removes.
pub(crate) fn unlink(dir: &Path, names: impl IntoIterator<Item = String>) {
    for name in names {
        let path = dir.join(&name);
        if let Err(e) = std::fs::remove_file(&path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(error = %e, file = %path.display(), "could not remove a staged upload file");
            }
        }
    }
}

/// Removes the `staged_files` rows under `prefix` that `doomed` picks (by stored-at),
/// in `txn`; the names of their files, to unlink once it commits.
pub(crate) fn drain_files(
    txn: &WriteTransaction,
    prefix: &str,
    mut doomed: impl FnMut(Millis) -> bool,
) -> Result<Vec<String>> {
    let mut names = Vec::new();
    drain_str_where(txn, STAGED_FILES, prefix, |v| {
        // An unreadable row counts as doomed: it names no file this module would open.
        match FileRow::decode(v) {
            Ok(row) if doomed(row.stored_at) => {
                names.push(row.name);
                true
            }
            Ok(_) => false,
            Err(_) => true,
        }
    })?;
    Ok(names)
}

/// Removes `key` from both tables in `txn`; the file it named, if any.
fn remove_key(txn: &WriteTransaction, key: &str) -> Result<Option<String>> {
    txn.open_table(STAGED)
        .map_err(db_err)?
        .remove(key)
        .map_err(db_err)?;
    let mut files = txn.open_table(STAGED_FILES).map_err(db_err)?;
    let old = files.remove(key).map_err(db_err)?;
    old.map(|v| FileRow::decode(v.value()).map(|r| r.name))
        .transpose()
}

pub(crate) fn put(db: &Database, dir: &Path, key: &str, bytes: &[u8], now: Millis) -> Result<()> {
    let mut value = Vec::with_capacity(STAMP + bytes.len());
    value.extend_from_slice(&now.to_be_bytes());
    value.extend_from_slice(bytes);
    let txn = db.begin_write().map_err(db_err)?;
    let old = remove_key(&txn, key)?;
    {
        let mut t = txn.open_table(STAGED).map_err(db_err)?;
        t.insert(key, value.as_slice()).map_err(db_err)?;
    }
    txn.commit().map_err(db_err)?;
    unlink(dir, old);
    Ok(())
}

/// Names the streamed file `name` (`size` bytes, written and synced) as what `key` holds,
/// in one durable transaction; unlinks whatever file `key` held before.
pub(crate) fn adopt(
    db: &Database,
    dir: &Path,
    key: &str,
    name: &str,
    size: u64,
    now: Millis,
) -> Result<()> {
    let row = FileRow {
        stored_at: now,
        size,
        name: name.to_owned(),
    };
    let txn = db.begin_write().map_err(db_err)?;
    let old = remove_key(&txn, key)?;
    {
        let mut t = txn.open_table(STAGED_FILES).map_err(db_err)?;
        t.insert(key, row.encode().as_slice()).map_err(db_err)?;
    }
    txn.commit().map_err(db_err)?;
    unlink(dir, old);
    Ok(())
}

pub(crate) fn get(db: &Database, dir: &Path, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
    let txn = db.begin_read().map_err(db_err)?;
    let files = txn.open_table(STAGED_FILES).map_err(db_err)?;
    if let Some(found) = files.get(key).map_err(db_err)? {
        let row = FileRow::decode(found.value())?;
        let bytes = if row.size <= max_bytes {
            let path = dir.join(&row.name);
            match std::fs::read(&path) {
                Ok(b) if b.len() as u64 == row.size => Some(b),
                Ok(b) => {
                    return Err(WorkspaceError::internal(format!(
                        "embedded store: staged file {} holds {} bytes, not {}",
                        path.display(),
                        b.len(),
                        row.size
                    )))
                }
                // Removed from under the store: the upload is gone.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tracing::warn!(file = %path.display(), "a staged upload file is missing");
                    return Ok(None);
                }
                Err(e) => return Err(io_err("read", &path, e)),
            }
        } else {
            None
        };
        return Ok(Some(Staged {
            size: row.size,
            stored_at: row.stored_at,
            bytes,
        }));
    }
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

pub(crate) fn delete(db: &Database, dir: &Path, key: &str) -> Result<()> {
    let txn = db.begin_write().map_err(db_err)?;
    let old = remove_key(&txn, key)?;
    txn.commit().map_err(db_err)?;
    unlink(dir, old);
    Ok(())
}

pub(crate) fn prune(db: &Database, dir: &Path, prefix: &str, cutoff: Millis) -> Result<u64> {
    let txn = db.begin_write().map_err(db_err)?;
    // An unreadable stamp counts as old: such a record is garbage either way.
    let n = drain_str_where(&txn, STAGED, prefix, |v| {
        stored_at(v).map_or(true, |at| at < cutoff)
    })?;
    let files = drain_files(&txn, prefix, |at| at < cutoff)?;
    txn.commit().map_err(db_err)?;
    let n = n + files.len() as u64;
    unlink(dir, files);
    Ok(n)
}

/// Writes what `pieces` yields to a new file in `dir`, holding at most
/// [`STREAM_PIECE_BYTES`] of it in memory (a single larger piece, already in memory, is
/// written as it is), then syncs the file and the folder. Answers its name and size; when
/// `pieces` fails, the file is removed and its error returned.
pub(crate) async fn write_pieces(
    dir: &Arc<PathBuf>,
    pieces: &mut dyn BodyPieces,
) -> Result<(String, u64)> {
    let name = RandomIds.new_id();
    let path = dir.join(&name);
    let file = {
        let path = path.clone();
        blocking(move || {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            options.open(&path).map_err(|e| io_err("create", &path, e))
        })
        .await?
    };
    match fill(file, dir.clone(), pieces).await {
        Ok(size) => Ok((name, size)),
        Err(e) => {
            let dir = dir.clone();
            let _ = blocking(move || {
                unlink(&dir, [name]);
                Ok(())
            })
            .await;
            Err(e)
        }
    }
}

async fn fill(file: std::fs::File, dir: Arc<PathBuf>, pieces: &mut dyn BodyPieces) -> Result<u64> {
    let mut file = file;
    let mut buf = Vec::with_capacity(STREAM_PIECE_BYTES);
    let mut size = 0u64;
    while let Some(piece) = pieces.next_piece().await? {
        size = size.saturating_add(piece.len() as u64);
        if buf.len() + piece.len() > STREAM_PIECE_BYTES && !buf.is_empty() {
            (file, buf) = write_out(file, buf, &dir).await?;
        }
        if piece.len() >= STREAM_PIECE_BYTES {
            (file, _) = write_out(file, piece, &dir).await?;
        } else {
            buf.extend_from_slice(&piece);
        }
    }
    blocking(move || {
        file.write_all(&buf)
            .and_then(|()| file.sync_all())
            .map_err(|e| io_err("write", &dir, e))?;
        // The folder too, so the file's name survives a crash once a row names it.
        #[cfg(unix)]
        std::fs::File::open(dir.as_path())
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err("sync", &dir, e))?;
        Ok(())
    })
    .await?;
    Ok(size)
}

/// Appends `bytes` to `file` off the async runtime; hands both back, `bytes` emptied.
async fn write_out(
    mut file: std::fs::File,
    mut bytes: Vec<u8>,
    dir: &Arc<PathBuf>,
) -> Result<(std::fs::File, Vec<u8>)> {
    let dir = dir.clone();
    blocking(move || {
        file.write_all(&bytes)
            .map_err(|e| io_err("write to", &dir, e))?;
        bytes.clear();
        Ok((file, bytes))
    })
    .await
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(db_err)?
}
