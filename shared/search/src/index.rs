//! One workspace's index: a table of files (path, version, etag, why skipped, text), two
//! FTS5 indexes over its text, kept in step by hand (external content tables), and the
//! embeddings of its passages (search by meaning), quantized to 8 bits.

use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeMap;
use std::path::Path;
use workspace_core::search::{
    IndexedFile, KeywordText, NearPassage, PassageVector, Ranked, Skipped, TextIndex,
};
use workspace_core::{Result, WorkspaceError};

/// Marks `highlight()` puts around matched words: private-use characters, which a file's
/// text almost never holds (a text that does gets no ranges, never wrong ones).
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// Bumped whenever the tables below change: an index of another version is dropped and
/// rebuilt from the store (an index is derived data, never the only copy of anything).
const SCHEMA_VERSION: i64 = 3;

const PRAGMAS: &str = "
PRAGMA journal_mode = WAL;
-- The index is rebuilt from the store when lost, so it needs no fsync per change.
PRAGMA synchronous = OFF;
-- Reads through a memory map (the OS page cache, shared and evictable) instead of a read
-- call per page: a query over a large index touches many pages.
PRAGMA mmap_size = 268435456;
";

const DROP: &str = "
DROP TABLE IF EXISTS words;
DROP TABLE IF EXISTS grams;
DROP TABLE IF EXISTS files;
DROP TABLE IF EXISTS texts;
DROP TABLE IF EXISTS passages;
DROP TABLE IF EXISTS meta;
";

const SCHEMA: &str = "
-- One narrow row per file (counting and listing never read texts).
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    version INTEGER NOT NULL,
    etag TEXT NOT NULL,
    skipped TEXT
);
-- Counting under a prefix reads this index alone; listing skipped files, the second.
CREATE INDEX files_counted ON files (path, skipped);
CREATE INDEX files_skipped ON files (path) WHERE skipped IS NOT NULL;
-- The text of each file that is not skipped, under the file's id.
CREATE TABLE texts (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
-- Words: stemmed, with positions (BM25 and highlighted ranges read them).
CREATE VIRTUAL TABLE words USING fts5(
    body, content = 'texts', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Merges its segments sooner than the default (4): each commit adds one, and every term
-- a query or a highlight reads is looked up in every segment.
INSERT INTO words (words, rank) VALUES ('automerge', 2);
-- Trigrams, as a filter only: which files hold every trigram of an exact needle (no
-- positions, no copy of the text; the candidates' texts are then matched exactly). A
-- contentless table deletes by id without reading the old text again.
CREATE VIRTUAL TABLE grams USING fts5(
    body, content = '', contentless_delete = 1, detail = none, tokenize = 'trigram'
);
-- Each passage's embedding, 8 bits a component (`quantize`), under its file's id.
CREATE TABLE passages (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    scale REAL NOT NULL,
    vec BLOB NOT NULL
);
CREATE INDEX passages_of_file ON passages (file_id);
CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
";

/// The most one weightless word adds to a file's BM25 score: its IDF (1e-6) times the
/// largest term-frequency factor, k1 + 1 (FTS5's k1 is 1.2).
const MAX_WEIGHTLESS_SCORE: f64 = 1e-6 * 2.2;

/// Trigrams an exact needle's candidate query holds at most (spread over the needle):
/// more only narrow a candidate list that is matched exactly anyway.
const MAX_NEEDLE_TRIGRAMS: usize = 16;

fn db_err(e: rusqlite::Error) -> WorkspaceError {
    WorkspaceError::internal(format!("search index: {e}"))
}

pub struct SqliteIndex {
    db: Connection,
    /// Every passage's vector in memory, by path, loaded on the first search by meaning and
    /// kept in step with each change after it: a query then reads no database page. `None`
    /// until loaded, and again after a transaction that never committed (it is reloaded).
    vectors: Option<BTreeMap<String, FileVectors>>,
    /// A transaction is open (`begin` without `commit`).
    in_transaction: bool,
}

/// One file's passages in memory.
struct FileVectors {
    version: u64,
    etag: String,
    spans: Vec<(u32, u32)>,
    scales: Vec<f32>,
    /// The passages' codes, one after another.
    codes: Vec<i8>,
}

/// A unit vector as 8-bit codes and one scale: component = code × scale, the scale chosen so
/// the largest component is ±127. Embeddings are unit length with small, even components
/// (all-MiniLM-L6-v2: largest about 0.2), so the error is under 0.4% of the largest, which
/// moves a cosine by about 1e-3 and leaves rankings as they were (the evaluation in
/// bench/semantic measures it), at a quarter of the bytes of f32.
fn quantize(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    (scale, v.iter().map(|x| (x / scale).round() as i8).collect())
}

/// A query's embedding as 16-bit codes and one scale, so each passage's score is an integer
/// dot product: integer sums may be reordered, so the compiler turns them into vector
/// instructions, which it may not do with a running f32 sum. A search scans every passage in
/// scope (46,294 at the 10,000-file bench corpus): 10.3 ms with f32 at opt-level 3 (26.5 at
/// the release profile's "z"), 2.6 ms with these (7.3). The query's codes keep 15 bits, far
/// finer than the passages' 8, and stay small enough that no sum can overflow an i32.
fn quantize_query(query: &[f32]) -> (f32, Vec<i16>) {
    let max = query.iter().fold(0f32, |m, x| m.max(x.abs()));
    // |code| ≤ top and |passage code| ≤ 127, so a sum of `len` products fits in an i32.
    let top = (i32::MAX as usize / (127 * query.len().max(1))).min(i16::MAX as usize) as f32;
    if max == 0.0 || top < 1.0 {
        return (0.0, vec![0; query.len()]);
    }
    let scale = max / top;
    (
        scale,
        query.iter().map(|x| (x / scale).round() as i16).collect(),
    )
}

/// The integer dot product of a query's codes with a passage's ([`quantize_query`]).
fn dot(query: &[i16], codes: &[i8]) -> i32 {
    query
        .iter()
        .zip(codes)
        .map(|(&q, &c)| i32::from(q) * i32::from(c))
        .sum()
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

/// Distinct three-character windows of `needle`, at most [`MAX_NEEDLE_TRIGRAMS`] spread
/// over it (empty when it is shorter than three characters). A file holding the needle
/// holds each of them, so the files holding all of them are a superset of the answer.
fn trigrams(needle: &str) -> Vec<String> {
    let chars: Vec<char> = needle.chars().collect();
    let windows: Vec<String> = chars.windows(3).map(|w| w.iter().collect()).collect();
    let step = windows.len().div_ceil(MAX_NEEDLE_TRIGRAMS).max(1);
    let mut picked: Vec<String> = windows.iter().step_by(step).cloned().collect();
    if let Some(last) = windows.last() {
        picked.push(last.clone());
    }
    picked.sort();
    picked.dedup();
    picked
}

/// Byte ranges in the original text of the words `highlight()` marked: each mark's offset
/// less the marks before it.
fn ranges_of(marked: &str) -> Vec<(usize, usize)> {
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
    ranges
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
        db.execute_batch(PRAGMAS).map_err(db_err)?;
        let version: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(db_err)?;
        if version != SCHEMA_VERSION {
            // Another version's index (or a new file): start empty; the next catch-up
            // finds no cursor and rebuilds it from the store.
            db.execute_batch(&format!(
                "BEGIN; {DROP} {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))
            .map_err(db_err)?;
        }
        Ok(SqliteIndex {
            db,
            vectors: None,
            in_transaction: false,
        })
    }

    /// Loads every passage's vector into memory (once).
    fn load_vectors(&mut self) -> Result<&BTreeMap<String, FileVectors>> {
        if self.vectors.is_none() {
            let mut map: BTreeMap<String, FileVectors> = BTreeMap::new();
            let mut stmt = self
                .db
                .prepare_cached(
                    "SELECT f.path, f.version, f.etag, p.start_line, p.end_line, p.scale, p.vec
                     FROM passages p JOIN files f ON f.id = p.file_id ORDER BY p.id",
                )
                .map_err(db_err)?;
            let mut rows = stmt.query([]).map_err(db_err)?;
            while let Some(r) = rows.next().map_err(db_err)? {
                let path: String = r.get(0).map_err(db_err)?;
                let entry = map.entry(path).or_insert_with(|| FileVectors {
                    version: r.get::<_, i64>(1).unwrap_or_default() as u64,
                    etag: r.get(2).unwrap_or_default(),
                    spans: Vec::new(),
                    scales: Vec::new(),
                    codes: Vec::new(),
                });
                entry
                    .spans
                    .push((r.get(3).map_err(db_err)?, r.get(4).map_err(db_err)?));
                entry
                    .scales
                    .push(r.get::<_, f64>(5).map_err(db_err)? as f32);
                let blob: Vec<u8> = r.get(6).map_err(db_err)?;
                entry.codes.extend(blob.into_iter().map(|b| b as i8));
            }
            drop(rows);
            drop(stmt);
            self.vectors = Some(map);
        }
        Ok(self.vectors.as_ref().expect("loaded above"))
    }

    fn id_and_body(&self, path: &str) -> Result<Option<(i64, Option<String>)>> {
        self.db
            .prepare_cached(
                "SELECT f.id, t.body FROM files f LEFT JOIN texts t ON t.id = f.id WHERE f.path = ?1",
            )
            .map_err(db_err)?
            .query_row([path], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(db_err)
    }

    /// Takes the text with id `id` out of both indexes and the texts table.
    fn unindex(&self, id: i64, body: &str) -> Result<()> {
        // An external-content table deletes with the old text (to find its words).
        self.db
            .prepare_cached("INSERT INTO words(words, rowid, body) VALUES ('delete', ?1, ?2)")
            .map_err(db_err)?
            .execute(params![id, body])
            .map_err(db_err)?;
        for sql in [
            "DELETE FROM grams WHERE rowid = ?1",
            "DELETE FROM texts WHERE id = ?1",
        ] {
            self.db
                .prepare_cached(sql)
                .map_err(db_err)?
                .execute([id])
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Files under `prefix` matching any of `words`, by BM25 (the best `max`, when given).
    fn ranked(&self, words: &[String], prefix: &str, max: Option<usize>) -> Result<Vec<Ranked>> {
        // `rank` is bm25(). Ties are broken by id, the same way in both forms, so pages of
        // an unchanged index follow one order.
        let query = any_word(words);
        let limit = max.map_or(-1, |m| m as i64);
        let row = |r: &rusqlite::Row| {
            Ok(Ranked {
                path: r.get(0)?,
                version: r.get::<_, i64>(1)? as u64,
                etag: r.get(2)?,
                score: -r.get::<_, f64>(3)?,
            })
        };
        let ranked = if prefix.is_empty() {
            // The whole workspace: rank and cut in the full-text table alone, then look up
            // only the page's files (not every match's).
            self.db
                .prepare_cached(
                    "SELECT f.path, f.version, f.etag, w.rank FROM
                        (SELECT rowid, rank FROM words WHERE words MATCH ?1
                         ORDER BY rank, rowid LIMIT ?2) w
                     JOIN files f ON f.id = w.rowid
                     ORDER BY w.rank, w.rowid",
                )
                .map_err(db_err)?
                .query_map(params![query, limit], row)
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
        } else {
            let (from, to) = Self::range(prefix);
            self.db
                .prepare_cached(
                    "SELECT f.path, f.version, f.etag, words.rank
                     FROM words JOIN files f ON f.id = words.rowid
                     WHERE words MATCH ?1 AND f.path >= ?2 AND (?3 IS NULL OR f.path < ?3)
                     ORDER BY words.rank, words.rowid LIMIT ?4",
                )
                .map_err(db_err)?
                .query_map(params![query, from, to, limit], row)
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
        };
        ranked.map_err(db_err)
    }

    /// The query's words that are in half the indexed texts or more (BM25 gives them no
    /// weight), and the others.
    fn split_weightless(&self, words: &[String]) -> Result<(Vec<String>, Vec<String>)> {
        let texts: i64 = self
            .db
            .prepare_cached("SELECT count(*) FROM files WHERE skipped IS NULL")
            .map_err(db_err)?
            .query_row([], |r| r.get(0))
            .map_err(db_err)?;
        // FTS5's IDF is ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6 once n >= N / 2;
        // counting stops there.
        let half = (texts + 1) / 2;
        let mut split = (Vec::new(), Vec::new());
        for word in words {
            let hits: i64 = self
                .db
                .prepare_cached(
                    "SELECT count(*) FROM (SELECT 1 FROM words WHERE words MATCH ?1 LIMIT ?2)",
                )
                .map_err(db_err)?
                .query_row(params![phrase(word), half], |r| r.get(0))
                .map_err(db_err)?;
            if texts > 0 && 2 * hits >= texts {
                split.0.push(word.clone());
            } else {
                split.1.push(word.clone());
            }
        }
        Ok(split)
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
            .prepare_cached("SELECT version, etag, skipped FROM files WHERE path = ?1")
            .map_err(db_err)?
            .query_row([path], |r| {
                Ok(IndexedFile {
                    version: r.get::<_, i64>(0)? as u64,
                    etag: r.get(1)?,
                    skipped: r.get(2)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn put(
        &mut self,
        path: &str,
        file: &IndexedFile,
        text: Option<&str>,
        passages: &[PassageVector],
    ) -> Result<()> {
        self.remove(path)?;
        let text = text.filter(|_| file.skipped.is_none());
        let passages = if text.is_some() { passages } else { &[] };
        self.db
            .prepare_cached(
                "INSERT INTO files (path, version, etag, skipped) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(db_err)?
            .execute(params![path, file.version as i64, file.etag, file.skipped])
            .map_err(db_err)?;
        if let Some(body) = text {
            let id = self.db.last_insert_rowid();
            for sql in [
                "INSERT INTO texts (id, body) VALUES (?1, ?2)",
                "INSERT INTO words (rowid, body) VALUES (?1, ?2)",
                "INSERT INTO grams (rowid, body) VALUES (?1, ?2)",
            ] {
                self.db
                    .prepare_cached(sql)
                    .map_err(db_err)?
                    .execute(params![id, body])
                    .map_err(db_err)?;
            }
            let mut cached = FileVectors {
                version: file.version,
                etag: file.etag.clone(),
                spans: Vec::with_capacity(passages.len()),
                scales: Vec::with_capacity(passages.len()),
                codes: Vec::new(),
            };
            for p in passages {
                let (scale, codes) = quantize(&p.vector);
                let blob: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
                self.db
                    .prepare_cached(
                        "INSERT INTO passages (file_id, start_line, end_line, scale, vec)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )
                    .map_err(db_err)?
                    .execute(params![
                        id,
                        p.start_line,
                        p.end_line,
                        f64::from(scale),
                        blob
                    ])
                    .map_err(db_err)?;
                cached.spans.push((p.start_line, p.end_line));
                cached.scales.push(scale);
                cached.codes.extend(codes);
            }
            if let (Some(map), false) = (&mut self.vectors, passages.is_empty()) {
                map.insert(path.to_owned(), cached);
            }
        }
        Ok(())
    }

    fn remove(&mut self, path: &str) -> Result<()> {
        if let Some(map) = &mut self.vectors {
            map.remove(path);
        }
        if let Some((id, body)) = self.id_and_body(path)? {
            if let Some(body) = body {
                self.unindex(id, &body)?;
            }
            for sql in [
                "DELETE FROM passages WHERE file_id = ?1",
                "DELETE FROM files WHERE id = ?1",
            ] {
                self.db
                    .prepare_cached(sql)
                    .map_err(db_err)?
                    .execute([id])
                    .map_err(db_err)?;
            }
        }
        Ok(())
    }

    fn clear(&mut self) -> Result<()> {
        self.db
            .execute_batch(
                "DELETE FROM files; DELETE FROM texts; DELETE FROM passages; DELETE FROM meta;
                 INSERT INTO words(words) VALUES ('delete-all');
                 INSERT INTO grams(grams) VALUES ('delete-all');",
            )
            .map_err(db_err)?;
        if let Some(map) = &mut self.vectors {
            map.clear();
        }
        Ok(())
    }

    fn begin(&mut self) -> Result<()> {
        if self.in_transaction {
            // The last transaction never committed: what it changed in memory may not be
            // in the database.
            self.vectors = None;
        }
        self.db.execute_batch("BEGIN").map_err(db_err)?;
        self.in_transaction = true;
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.db.execute_batch("COMMIT").map_err(db_err)?;
        self.in_transaction = false;
        Ok(())
    }

    fn model(&self) -> Result<Option<String>> {
        self.db
            .query_row("SELECT v FROM meta WHERE k = 'model'", [], |r| r.get(0))
            .optional()
            .map_err(db_err)
    }

    fn set_model(&mut self, model: Option<&str>) -> Result<()> {
        match model {
            Some(m) => self.db.execute(
                "INSERT INTO meta (k, v) VALUES ('model', ?1) ON CONFLICT(k) DO UPDATE SET v = ?1",
                [m],
            ),
            None => self.db.execute("DELETE FROM meta WHERE k = 'model'", []),
        }
        .map(drop)
        .map_err(db_err)
    }

    fn passages(&mut self, path: &str) -> Result<Option<(String, Vec<PassageVector>)>> {
        let map = self.load_vectors()?;
        Ok(map.get(path).map(|f| {
            let dims = f.codes.len() / f.spans.len().max(1);
            let vectors = f
                .codes
                .chunks_exact(dims.max(1))
                .zip(&f.scales)
                .zip(&f.spans)
                .map(|((codes, &scale), &(start_line, end_line))| PassageVector {
                    start_line,
                    end_line,
                    vector: codes.iter().map(|&c| f32::from(c) * scale).collect(),
                })
                .collect();
            (f.etag.clone(), vectors)
        }))
    }

    fn nearest(
        &mut self,
        query: &[f32],
        prefix: &str,
        min_score: f64,
        max: usize,
        admit: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<NearPassage>> {
        let dims = query.len();
        let (query_scale, query) = quantize_query(query);
        let map = self.load_vectors()?;
        let end = prefix_end(prefix);
        let range = map.range::<str, _>((
            std::ops::Bound::Included(prefix),
            end.as_deref()
                .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
        ));
        let mut found: Vec<NearPassage> = Vec::new();
        for (path, f) in range {
            if dims == 0 || !admit(path) {
                continue;
            }
            let best = f
                .codes
                .chunks_exact(dims)
                .zip(&f.scales)
                .zip(&f.spans)
                .map(|((codes, &scale), span)| {
                    (dot(&query, codes) as f32 * query_scale * scale, span)
                })
                .max_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((score, &(start_line, end_line))) = best {
                let score = f64::from(score);
                if score >= min_score {
                    found.push(NearPassage {
                        path: path.clone(),
                        version: f.version,
                        etag: f.etag.clone(),
                        start_line,
                        end_line,
                        score,
                    });
                }
            }
        }
        found.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.path.cmp(&b.path))
        });
        found.truncate(max);
        Ok(found)
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
        // MaxScore pruning (Turtle and Flood, 1995): a word in half the files or more
        // weighs almost nothing in BM25 (FTS5 gives it an IDF of 1e-6), yet matching it
        // makes FTS5 score nearly every file. When the other words fill the page with
        // scores above anything the weightless words could add, that page is the answer
        // (each score short of at most that bound); otherwise every word is ranked.
        if let (Some(max), true) = (max, words.len() > 1) {
            let (weightless, weighted) = self.split_weightless(words)?;
            if !weightless.is_empty() && !weighted.is_empty() {
                let ranked = self.ranked(&weighted, prefix, Some(max))?;
                let bound = MAX_WEIGHTLESS_SCORE * weightless.len() as f64;
                if ranked.len() == max && ranked.last().is_some_and(|r| r.score > bound) {
                    return Ok(ranked);
                }
            }
        }
        self.ranked(words, prefix, max)
    }

    fn keyword_text(&self, path: &str, words: &[String]) -> Result<Option<KeywordText>> {
        let Some((_, text)) = self.text(path)? else {
            return Ok(None);
        };
        let marked: Option<String> = self
            .db
            .prepare_cached(
                "SELECT highlight(words, 0, ?3, ?4) FROM words
                 WHERE words MATCH ?1 AND rowid = (SELECT id FROM files WHERE path = ?2)",
            )
            .map_err(db_err)?
            .query_row(
                params![any_word(words), path, OPEN.to_string(), CLOSE.to_string()],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        // A text holding the marks itself gets no ranges, never wrong ones.
        let ranges = match marked {
            Some(m) if !text.contains([OPEN, CLOSE]) => ranges_of(&m),
            _ => Vec::new(),
        };
        Ok(Some(KeywordText { text, ranges }))
    }

    fn substring_candidates(&self, needle: &str, prefix: &str) -> Result<Option<Vec<String>>> {
        // The trigram index answers for needles of three or more characters.
        let grams = trigrams(needle);
        if grams.is_empty() {
            return Ok(None);
        }
        let query = grams
            .iter()
            .map(|g| phrase(g))
            .collect::<Vec<_>>()
            .join(" AND ");
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
            .query_map(params![query, from, to], |r| r.get(0))
            .map_err(db_err)?;
        rows.collect::<rusqlite::Result<_>>()
            .map(Some)
            .map_err(db_err)
    }

    fn text(&self, path: &str) -> Result<Option<(IndexedFile, String)>> {
        self.db
            .prepare_cached(
                "SELECT f.version, f.etag, f.skipped, t.body
                 FROM files f JOIN texts t ON t.id = f.id WHERE f.path = ?1",
            )
            .map_err(db_err)?
            .query_row([path], |r| {
                Ok((
                    IndexedFile {
                        version: r.get::<_, i64>(0)? as u64,
                        etag: r.get(1)?,
                        skipped: r.get(2)?,
                    },
                    r.get(3)?,
                ))
            })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn file(version: u64) -> IndexedFile {
        IndexedFile {
            version,
            etag: format!("e{version}"),
            skipped: None,
        }
    }

    fn index_of(files: &[(&str, &str)]) -> SqliteIndex {
        let mut index = SqliteIndex::in_memory().unwrap();
        index.begin().unwrap();
        for (i, (path, text)) in files.iter().enumerate() {
            index
                .put(path, &file(i as u64 + 1), Some(text), &[])
                .unwrap();
        }
        index.commit().unwrap();
        index
    }

    /// A unit vector along `axis` tilted towards `other` by `t`.
    fn unit(axis: usize, other: usize, t: f32) -> Vec<f32> {
        let mut v = [0f32; 8];
        v[axis] = 1.0;
        v[other] += t;
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn passage(line: u32, vector: Vec<f32>) -> PassageVector {
        PassageVector {
            start_line: line,
            end_line: line + 1,
            vector,
        }
    }

    #[test]
    fn a_passage_scores_as_its_float_dot_product_and_no_sum_overflows() {
        for len in [1usize, 7, 384, 1024] {
            let query: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.37).sin() * 0.1).collect();
            let (scale, codes) = quantize(&query.iter().map(|x| x.cos()).collect::<Vec<_>>());
            let float: f32 = query
                .iter()
                .zip(&codes)
                .map(|(q, &c)| q * f32::from(c) * scale)
                .sum();
            let (query_scale, query_codes) = quantize_query(&query);
            let integer = dot(&query_codes, &codes) as f32 * query_scale * scale;
            assert!(
                (integer - float).abs() <= 1e-4 * float.abs().max(1.0),
                "{len}: {integer} against {float}"
            );
        }
        // The largest codes on both sides, at a model size far past this one's.
        let (_, extreme) = quantize_query(&vec![1.0; 4096]);
        assert_eq!(
            i64::from(dot(&extreme, &vec![127; 4096])),
            extreme.iter().map(|&q| i64::from(q) * 127).sum::<i64>()
        );
        assert_eq!(quantize_query(&[0.0; 4]), (0.0, vec![0; 4]));
    }

    #[test]
    fn nearest_ranks_each_file_by_its_best_passage_and_follows_every_change() {
        let mut index = SqliteIndex::in_memory().unwrap();
        index.begin().unwrap();
        let a = [passage(1, unit(1, 0, 0.0)), passage(5, unit(0, 1, 0.1))];
        index.put("d/a.md", &file(1), Some("a"), &a).unwrap();
        index
            .put(
                "d/b.md",
                &file(1),
                Some("b"),
                &[passage(1, unit(0, 1, 0.5))],
            )
            .unwrap();
        index
            .put(
                "e/c.md",
                &file(1),
                Some("c"),
                &[passage(1, unit(2, 1, 0.0))],
            )
            .unwrap();
        index.commit().unwrap();
        let query = unit(0, 1, 0.0);
        let all = |_: &str| true;
        let near = index.nearest(&query, "", 0.2, 10, &all).unwrap();
        let got: Vec<_> = near
            .iter()
            .map(|n| (n.path.as_str(), n.start_line))
            .collect();
        assert_eq!(got, [("d/a.md", 5), ("d/b.md", 1)], "c is under the bar");
        assert!((near[0].score - 0.995).abs() < 0.01, "{}", near[0].score);
        // Prefix, filter and max.
        assert!(index
            .nearest(&query, "e/", 0.2, 10, &all)
            .unwrap()
            .is_empty());
        let only_b = index
            .nearest(&query, "d/", 0.2, 10, &|p: &str| p.ends_with("b.md"))
            .unwrap();
        assert_eq!(only_b.len(), 1);
        assert_eq!(index.nearest(&query, "", 0.2, 1, &all).unwrap().len(), 1);
        // The stored (quantized) vectors give back what was put, closely.
        let (etag, stored) = index.passages("d/a.md").unwrap().unwrap();
        assert_eq!(etag, "e1");
        for (s, p) in stored.iter().zip(&a) {
            let err = s
                .vector
                .iter()
                .zip(&p.vector)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max);
            assert!(err < 0.01, "{err}");
        }
        // An overwrite and a remove change what ranks at once (the loaded vectors too).
        index
            .put(
                "d/a.md",
                &file(2),
                Some("a2"),
                &[passage(1, unit(3, 1, 0.0))],
            )
            .unwrap();
        index.remove("d/b.md").unwrap();
        assert!(index.nearest(&query, "", 0.2, 10, &all).unwrap().is_empty());
        // The same answers from a copy loaded from bytes (an index object on AWS).
        index
            .put(
                "d/b.md",
                &file(3),
                Some("b"),
                &[passage(7, unit(0, 1, 0.5))],
            )
            .unwrap();
        let mut copy = SqliteIndex::from_bytes(&index.to_bytes().unwrap()).unwrap();
        let from_copy = copy.nearest(&query, "", 0.2, 10, &all).unwrap();
        assert_eq!(from_copy, index.nearest(&query, "", 0.2, 10, &all).unwrap());
        assert_eq!(from_copy[0].start_line, 7);
        // A cleared index holds no passages.
        index.clear().unwrap();
        assert!(index
            .nearest(&query, "", -1.0, 10, &all)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_transaction_that_never_committed_reloads_the_vectors_from_the_database() {
        let mut index = SqliteIndex::in_memory().unwrap();
        let query = unit(0, 1, 0.0);
        let all = |_: &str| true;
        index
            .put("a.md", &file(1), Some("a"), &[passage(1, unit(0, 1, 0.0))])
            .unwrap();
        assert_eq!(index.nearest(&query, "", 0.2, 10, &all).unwrap().len(), 1);
        index.begin().unwrap();
        index.remove("a.md").unwrap();
        // Rolled back behind the index's back (as a failed catch-up leaves it).
        index.db.execute_batch("ROLLBACK").unwrap();
        index.begin().unwrap();
        index.commit().unwrap();
        assert_eq!(
            index.nearest(&query, "", 0.2, 10, &all).unwrap().len(),
            1,
            "a.md is still in the database"
        );
    }

    #[test]
    fn quantizing_keeps_a_cosine_within_a_thousandth() {
        let v: Vec<f32> = (0..384)
            .map(|i| ((i * 7919) % 200) as f32 / 1000.0 - 0.1)
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let v: Vec<f32> = v.iter().map(|x| x / n).collect();
        let (scale, codes) = quantize(&v);
        let (query_scale, query) = quantize_query(&v);
        let cosine = dot(&query, &codes) as f32 * query_scale * scale;
        assert!((cosine - 1.0).abs() < 1e-3, "{cosine}");
        assert_eq!(quantize(&[0.0, 0.0]).0, 0.0);
    }

    #[test]
    fn an_index_of_another_schema_version_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        {
            // The first version's layout: texts inside `files`, no user_version.
            let db = Connection::open(&path).unwrap();
            db.execute_batch(
                "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,
                    version INTEGER NOT NULL, etag TEXT NOT NULL, skipped TEXT, body TEXT);
                 INSERT INTO files (path, version, etag, body) VALUES ('a.md', 1, 'e', 'old');
                 CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
                 INSERT INTO meta VALUES ('cursor', '|7');",
            )
            .unwrap();
        }
        let mut index = SqliteIndex::open(&path).unwrap();
        assert_eq!(
            index.cursor().unwrap(),
            None,
            "no cursor: the next search rebuilds"
        );
        assert!(index.files("").unwrap().is_empty());
        index.put("b.md", &file(1), Some("new text"), &[]).unwrap();
        drop(index);
        let index = SqliteIndex::open(&path).unwrap();
        assert_eq!(
            index.files("").unwrap().len(),
            1,
            "the current version is kept"
        );
    }

    #[test]
    fn exact_candidates_hold_every_file_with_the_needle_and_forget_removed_ones() {
        let long = "a needle \"quoted\", longer than sixteen trigrams: ünïcödé ✓";
        let mut index = index_of(&[
            ("hit.md", &format!("before {long} after")),
            ("case.md", &long.to_uppercase()),
            ("near.md", "a needle \"quoted\", longer than sixteen"),
            ("other.md", "nothing here"),
        ]);
        let candidates = index.substring_candidates(long, "").unwrap().unwrap();
        assert!(candidates.contains(&"hit.md".to_owned()), "{candidates:?}");
        assert!(!candidates.contains(&"other.md".to_owned()));
        assert!(!candidates.contains(&"near.md".to_owned()));
        assert_eq!(index.substring_candidates("ab", "").unwrap(), None);
        index.remove("hit.md").unwrap();
        let candidates = index.substring_candidates(long, "").unwrap().unwrap();
        assert!(!candidates.contains(&"hit.md".to_owned()), "{candidates:?}");
    }

    #[test]
    fn keyword_ranks_the_same_with_and_without_a_prefix() {
        let index = index_of(&[
            ("d/a.md", "deploy deploy rollback"),
            ("d/b.md", "deploy"),
            ("d/c.md", "rollback"),
            ("d/d.md", "deploy"),
            ("d/e.md", "unrelated"),
        ]);
        let words = ["deploy".to_owned(), "rollback".to_owned()];
        let paths = |r: Vec<Ranked>| r.into_iter().map(|r| r.path).collect::<Vec<_>>();
        let whole = paths(index.keyword(&words, "", None).unwrap());
        assert_eq!(whole, paths(index.keyword(&words, "d/", None).unwrap()));
        assert_eq!(whole.len(), 4);
        for n in 1..4 {
            assert_eq!(
                paths(index.keyword(&words, "", Some(n)).unwrap()),
                whole[..n]
            );
            assert_eq!(
                paths(index.keyword(&words, "d/", Some(n)).unwrap()),
                whole[..n]
            );
        }
    }

    #[test]
    fn a_word_in_most_files_is_pruned_without_changing_the_page() {
        let mut files: Vec<(String, String)> = (0..12)
            .map(|i| (format!("f{i:02}.md"), format!("common text number {i}")))
            .collect();
        files[3].1 = "common rare rare".into();
        files[7].1 = "rare and common and more words".into();
        files[9].1 = "rare".into();
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (&p[..], &t[..])).collect();
        let index = index_of(&refs);
        let words = ["common".to_owned(), "rare".to_owned()];
        let (weightless, weighted) = index.split_weightless(&words).unwrap();
        assert_eq!(
            (weightless, weighted),
            (vec!["common".into()], vec!["rare".into()])
        );
        let full = index.ranked(&words, "", None).unwrap();
        for max in [1, 2, 3, 5, 12] {
            let page = index.keyword(&words, "", Some(max)).unwrap();
            assert_eq!(page.len(), max.min(full.len()));
            for (got, want) in page.iter().zip(&full) {
                assert_eq!(got.path, want.path, "page of {max}");
                assert!((got.score - want.score).abs() <= MAX_WEIGHTLESS_SCORE);
            }
        }
    }

    #[test]
    fn a_cleared_index_finds_nothing_and_indexes_again() {
        let mut index = index_of(&[("a.md", "apples and pears"), ("b.md", "more apples")]);
        index.set_cursor("|9").unwrap();
        index.begin().unwrap();
        index.clear().unwrap();
        index.commit().unwrap();
        let apples = ["apples".to_owned()];
        assert_eq!(index.cursor().unwrap(), None);
        assert!(index.files("").unwrap().is_empty());
        assert!(index.keyword(&apples, "", None).unwrap().is_empty());
        assert_eq!(
            index.substring_candidates("pears", "").unwrap(),
            Some(vec![])
        );
        index
            .put("c.md", &file(1), Some("apples again"), &[])
            .unwrap();
        let found = index.keyword(&apples, "", Some(5)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "c.md");
        assert_eq!(
            index.substring_candidates("les ag", "").unwrap(),
            Some(vec!["c.md".to_owned()])
        );
    }
}
