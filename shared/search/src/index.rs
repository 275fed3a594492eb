//! One workspace's index: a table of files (path, version, etag, why skipped, text) and
//! two FTS5 indexes over its text, kept in step by hand (external content tables).

use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use workspace_core::search::{IndexedFile, Ranked, Skipped, TextIndex};
use workspace_core::{Result, WorkspaceError};

/// Marks `highlight()` puts around matched words: private-use characters, which a file's
/// text almost never holds (a text that does gets no ranges, never wrong ones).
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
-- The index is rebuilt from the store when lost, so it needs no fsync per change.
PRAGMA synchronous = OFF;
-- Reads through a memory map (the OS page cache, shared and evictable) instead of a read
-- call per page: a query over a large index touches many pages.
PRAGMA mmap_size = 268435456;
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    version INTEGER NOT NULL,
    etag TEXT NOT NULL,
    skipped TEXT,
    body TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(
    body, content = 'files', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5(
    body, content = 'files', content_rowid = 'id', tokenize = 'trigram'
);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
";

fn db_err(e: rusqlite::Error) -> WorkspaceError {
    WorkspaceError::internal(format!("search index: {e}"))
}

pub struct SqliteIndex {
    db: Connection,
}

/// An FTS5 phrase: the text in double quotes, quotes doubled.
fn phrase(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Any of the words (each one tokenized, so stemmed, by the table's tokenizer).
fn any_word(words: &[String]) -> String {
    words
        .iter()
        .map(|w| phrase(w))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// The exclusive upper bound of paths starting with `prefix` (`None`: no bound).
fn prefix_end(prefix: &str) -> Option<String> {
    // Paths are printable ASCII-safe UTF-8; bumping the last char bounds the range.
    let mut chars: Vec<char> = prefix.chars().collect();
    let last = chars.pop()?;
    chars.push(char::from_u32(last as u32 + 1)?);
    Some(chars.into_iter().collect())
}

impl SqliteIndex {
    pub fn open(path: &Path) -> Result<SqliteIndex> {
        // Created owner-only before SQLite opens it; SQLite gives its -wal and -shm files
        // the database file's mode.
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(path).map_err(|e| {
            WorkspaceError::internal(format!("cannot create {}: {e}", path.display()))
        })?;
        let db = Connection::open(path).map_err(db_err)?;
        Self::with(db)
    }

    pub fn in_memory() -> Result<SqliteIndex> {
        Self::with(Connection::open_in_memory().map_err(db_err)?)
    }

    /// An index in memory from the bytes [`Self::to_bytes`] made (an index object).
    pub fn from_bytes(bytes: &[u8]) -> Result<SqliteIndex> {
        let mut db = Connection::open_in_memory().map_err(db_err)?;
        db.deserialize_read_exact(rusqlite::MAIN_DB, bytes, bytes.len(), false)
            .map_err(db_err)?;
        Self::with(db)
    }

    fn with(db: Connection) -> Result<SqliteIndex> {
        db.execute_batch(SCHEMA).map_err(db_err)?;
        Ok(SqliteIndex { db })
    }

    fn id_and_body(&self, path: &str) -> Result<Option<(i64, Option<String>)>> {
        self.db
            .query_row("SELECT id, body FROM files WHERE path = ?1", [path], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(db_err)
    }

    fn unindex(&self, id: i64, body: &str) -> Result<()> {
        for table in ["words", "grams"] {
            self.db
                .execute(
                    &format!("INSERT INTO {table}({table}, rowid, body) VALUES ('delete', ?1, ?2)"),
                    params![id, body],
                )
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Paths under `prefix` as a SQL condition on `files.path` (?2 and ?3).
    fn range(prefix: &str) -> (String, Option<String>) {
        (prefix.to_owned(), prefix_end(prefix))
    }
}

impl TextIndex for SqliteIndex {
    fn cursor(&self) -> Result<Option<String>> {
        self.db
            .query_row("SELECT v FROM meta WHERE k = 'cursor'", [], |r| r.get(0))
            .optional()
            .map_err(db_err)
    }

    fn set_cursor(&mut self, cursor: &str) -> Result<()> {
        self.db
            .execute(
                "INSERT INTO meta (k, v) VALUES ('cursor', ?1) ON CONFLICT(k) DO UPDATE SET v = ?1",
                [cursor],
            )
            .map(drop)
            .map_err(db_err)
    }

    fn file(&self, path: &str) -> Result<Option<IndexedFile>> {
        self.db
            .query_row(
                "SELECT version, etag, skipped FROM files WHERE path = ?1",
                [path],
                |r| {
                    Ok(IndexedFile {
                        version: r.get::<_, i64>(0)? as u64,
                        etag: r.get(1)?,
                        skipped: r.get(2)?,
                    })
                },
            )
            .optional()
            .map_err(db_err)
    }

    fn put(&mut self, path: &str, file: &IndexedFile, text: Option<&str>) -> Result<()> {
        self.remove(path)?;
        let text = text.filter(|_| file.skipped.is_none());
        self.db
            .execute(
                "INSERT INTO files (path, version, etag, skipped, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![path, file.version as i64, file.etag, file.skipped, text],
            )
            .map_err(db_err)?;
        if let Some(body) = text {
            let id = self.db.last_insert_rowid();
            for table in ["words", "grams"] {
                self.db
                    .execute(
                        &format!("INSERT INTO {table}(rowid, body) VALUES (?1, ?2)"),
                        params![id, body],
                    )
                    .map_err(db_err)?;
            }
        }
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<()> {
        if let Some((id, body)) = self.id_and_body(path)? {
            if let Some(body) = body {
                self.unindex(id, &body)?;
            }
            self.db
                .execute("DELETE FROM files WHERE id = ?1", [id])
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn clear(&mut self) -> Result<()> {
        self.db
            .execute_batch(
                "DELETE FROM files; DELETE FROM meta;
                 INSERT INTO words(words) VALUES ('delete-all');
                 INSERT INTO grams(grams) VALUES ('delete-all');",
            )
            .map_err(db_err)
    }

    fn begin(&mut self) -> Result<()> {
        self.db.execute_batch("BEGIN").map_err(db_err)
    }

    fn commit(&mut self) -> Result<()> {
        self.db.execute_batch("COMMIT").map_err(db_err)
    }

    fn files(&self, prefix: &str) -> Result<Vec<(String, IndexedFile)>> {
        let (from, to) = Self::range(prefix);
        let mut stmt = self
            .db
            .prepare_cached(
                "SELECT path, version, etag, skipped FROM files
                 WHERE path >= ?1 AND (?2 IS NULL OR path < ?2) ORDER BY path",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![from, to], |r| {
                Ok((
                    r.get(0)?,
                    IndexedFile {
                        version: r.get::<_, i64>(1)? as u64,
                        etag: r.get(2)?,
                        skipped: r.get(3)?,
                    },
                ))
            })
            .map_err(db_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_err)
    }

    fn counts(&self, prefix: &str, max_skipped: usize) -> Result<(u64, u64, Vec<Skipped>)> {
        let (from, to) = Self::range(prefix);
        let (indexed, total): (i64, i64) = self
            .db
            .prepare_cached(
                // A file's text is indexed exactly when it is not skipped; counting the
                // short `skipped` column never reads the texts.
                "SELECT count(*) - count(skipped), count(*) FROM files
                 WHERE path >= ?1 AND (?2 IS NULL OR path < ?2)",
            )
            .map_err(db_err)?
            .query_row(params![from, to], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?;
        let mut stmt = self
            .db
            .prepare_cached(
                "SELECT path, skipped FROM files
                 WHERE skipped IS NOT NULL AND path >= ?1 AND (?2 IS NULL OR path < ?2)
                 ORDER BY path LIMIT ?3",
            )
            .map_err(db_err)?;
        let skipped = stmt
            .query_map(params![from, to, max_skipped as i64], |r| {
                Ok(Skipped {
                    path: r.get(0)?,
                    reason: r.get(1)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)?;
        Ok((indexed as u64, total as u64, skipped))
    }

    fn keyword(&self, words: &[String], prefix: &str, max: Option<usize>) -> Result<Vec<Ranked>> {
        let (from, to) = Self::range(prefix);
        // `rank` is bm25() by default: FTS5 orders by it without computing it twice.
        let mut stmt = self
            .db
            .prepare_cached(
                "SELECT f.path, f.version, f.etag, words.rank
                 FROM words JOIN files f ON f.id = words.rowid
                 WHERE words MATCH ?1 AND f.path >= ?2 AND (?3 IS NULL OR f.path < ?3)
                 ORDER BY words.rank, f.path LIMIT ?4",
            )
            .map_err(db_err)?;
        let limit = max.map_or(-1, |m| m as i64);
        let rows = stmt
            .query_map(params![any_word(words), from, to, limit], |r| {
                Ok(Ranked {
                    path: r.get(0)?,
                    version: r.get::<_, i64>(1)? as u64,
                    etag: r.get(2)?,
                    score: -r.get::<_, f64>(3)?,
                })
            })
            .map_err(db_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_err)
    }

    fn keyword_ranges(&self, path: &str, words: &[String]) -> Result<Vec<(usize, usize)>> {
        let marked: Option<String> = self
            .db
            .query_row(
                "SELECT highlight(words, 0, ?3, ?4) FROM words
                 WHERE words MATCH ?1 AND rowid = (SELECT id FROM files WHERE path = ?2)",
                params![any_word(words), path, OPEN.to_string(), CLOSE.to_string()],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        let Some(marked) = marked else {
            return Ok(Vec::new());
        };
        let original_has_marks = self
            .text(path)?
            .is_some_and(|(_, t)| t.contains(OPEN) || t.contains(CLOSE));
        if original_has_marks {
            return Ok(Vec::new());
        }
        // Offsets in the original text: the marked text minus the marks before each.
        let mut ranges = Vec::new();
        let (mut removed, mut start) = (0usize, None);
        for (i, c) in marked.char_indices() {
            if c == OPEN {
                start = Some(i - removed);
                removed += OPEN.len_utf8();
            } else if c == CLOSE {
                if let Some(s) = start.take() {
                    ranges.push((s, i - removed));
                }
                removed += CLOSE.len_utf8();
            }
        }
        Ok(ranges)
    }

    fn substring_candidates(&self, needle: &str, prefix: &str) -> Result<Option<Vec<String>>> {
        // The trigram tokenizer matches substrings of three or more characters.
        if needle.chars().count() < 3 {
            return Ok(None);
        }
        let (from, to) = Self::range(prefix);
        let mut stmt = self
            .db
            .prepare_cached(
                "SELECT f.path FROM grams JOIN files f ON f.id = grams.rowid
                 WHERE grams MATCH ?1 AND f.path >= ?2 AND (?3 IS NULL OR f.path < ?3)
                 ORDER BY f.path",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![phrase(needle), from, to], |r| r.get(0))
            .map_err(db_err)?;
        rows.collect::<rusqlite::Result<_>>()
            .map(Some)
            .map_err(db_err)
    }

    fn text(&self, path: &str) -> Result<Option<(IndexedFile, String)>> {
        self.db
            .query_row(
                "SELECT version, etag, skipped, body FROM files WHERE path = ?1 AND body IS NOT NULL",
                [path],
                |r| {
                    Ok((
                        IndexedFile {
                            version: r.get::<_, i64>(0)? as u64,
                            etag: r.get(1)?,
                            skipped: r.get(2)?,
                        },
                        r.get(3)?,
                    ))
                },
            )
            .optional()
            .map_err(db_err)
    }

    fn to_bytes(&mut self) -> Result<Vec<u8>> {
        Ok(self
            .db
            .serialize(rusqlite::MAIN_DB)
            .map_err(db_err)?
            .to_vec())
    }
}
