//! Search over a workspace's files: ranked keyword search (words, stemming, BM25), exact
//! substring search and bounded regular expressions, answered from a per-workspace text
//! index that is brought up to date before every answer (`catch_up` in
//! `service::search`), so a search sees every acknowledged write.
//!
//! The parts:
//! - [`TextIndex`]: one workspace's index (the engine, `workspace-search`, is SQLite FTS5);
//!   it records, for each live file, the version and etag it indexed, or why it skipped it.
//! - [`SearchIndexes`]: where the indexes live (beside the embedded store, in memory).
//! - [`ChangeFeed`]: what changed in a workspace since a position, so catching up reads only
//!   the paths that changed (the embedded store's outbox; the change log on DynamoDB).
//! - [`lines`]: the matching lines of a hit and the byte ranges that matched.

mod embed;
mod feed;
pub mod lines;
pub mod passages;

pub use embed::Embedder;

pub use feed::{ChangeFeed, ChangeLogFeed, FeedPage, OutboxFeed, CHANGE_LOG_OVERLAP_MS};

use crate::error::Result;
use crate::scope::Scope;
use async_trait::async_trait;
use serde::Serialize;
use std::sync::Arc;

/// Hits in one page of a search, by default and at most.
pub const DEFAULT_SEARCH_LIMIT: usize = 20;
pub const MAX_SEARCH_LIMIT: usize = 100;
/// Longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// Most words a keyword query may hold.
pub const MAX_QUERY_WORDS: usize = 32;
/// Largest file whose text is indexed; a larger one is listed as skipped.
pub const MAX_INDEXED_FILE_BYTES: u64 = 1 << 20;
/// Bytes of text one search may scan (a regex, or an exact needle too short for the
/// trigram index): past it the search stops with a clear error.
pub const MAX_SCAN_BYTES: u64 = 64 << 20;
/// How long a regex search may run before it stops with a clear error.
pub const MAX_REGEX_MILLIS: u64 = 2_000;
/// Largest compiled regex program (the `regex` crate's size limit).
pub const MAX_REGEX_PROGRAM_BYTES: usize = 1 << 20;
/// Matching lines shown per hit, and the longest line shown (longer lines are cut).
pub const MAX_LINES_PER_HIT: usize = 5;
pub const MAX_LINE_CHARS: usize = 400;
/// Skipped files named in one answer (the count is always complete).
pub const MAX_SKIPPED_LISTED: usize = 100;
/// Changed paths one catch-up takes from the feed (a head read each) before it rebuilds the
/// index from the store instead; either way the search then sees every acknowledged write.
pub const MAX_CATCH_UP_PATHS: usize = 20_000;

/// How the query is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Words, stemmed, ranked by BM25 (any word may match; files with more of the rarer
    /// words rank first).
    #[default]
    Keyword,
    /// The literal substring, any characters.
    Exact,
    /// A regular expression (the `regex` crate's syntax), bounded in bytes and time.
    Regex,
    /// By meaning: passages ranked by the cosine similarity of their embedding to the
    /// query's (needs the embedding model).
    Semantic,
    /// Keyword and semantic ranks fused (reciprocal rank fusion; needs the model).
    Hybrid,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "keyword" => Some(Mode::Keyword),
            "exact" => Some(Mode::Exact),
            "regex" => Some(Mode::Regex),
            "semantic" => Some(Mode::Semantic),
            "hybrid" => Some(Mode::Hybrid),
            _ => None,
        }
    }

    /// Every mode's name, as `parse` reads them.
    pub const NAMES: [&'static str; 5] = ["keyword", "exact", "regex", "semantic", "hybrid"];

    /// Whether the mode needs the embedding model.
    pub fn by_meaning(self) -> bool {
        matches!(self, Mode::Semantic | Mode::Hybrid)
    }
}

/// Lowest cosine similarity a passage needs to be a semantic hit: below it a passage is
/// about something else (all-MiniLM-L6-v2 puts unrelated English texts at about -0.1 to
/// 0.15), so a query about nothing in the workspace finds nothing rather than the least
/// unrelated file.
pub const MIN_SEMANTIC_SCORE: f64 = 0.2;
/// Candidates each ranking hands reciprocal rank fusion at least.
pub const FUSION_DEPTH: usize = 50;
/// Weighted reciprocal rank fusion (after Cormack, Clarke and Büttcher, 2009): a file's
/// fused score is `1 / (k + semantic rank) + KEYWORD_WEIGHT / (k + keyword rank)`. Chosen
/// on bench/semantic's 257 judged queries: with the textbook k = 60 and equal weights, a
/// description's weak keyword matches (its common words) outvote the semantic ranking and
/// paraphrase recall@5 falls from 0.37 to 0.11; k = 10 with keyword at 0.3 keeps 0.35 of it
/// and lifts exact identifiers from 0.94 (keyword) to 0.98, and k from 5 to 10 with weights
/// 0.2 to 0.3 all score within 0.02 of that (docs/search.md has the table).
pub const FUSION_K: f64 = 10.0;
pub const KEYWORD_WEIGHT: f64 = 0.3;
/// Passages a snapshot's search embeds at most (files unchanged since the snapshot reuse
/// the live index's vectors).
pub const MAX_SNAPSHOT_EMBEDDED_PASSAGES: usize = 512;

/// What the index holds for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    pub version: u64,
    pub etag: String,
    /// Why its text is not indexed (binary, too large), if it is not.
    pub skipped: Option<String>,
}

/// A file the index holds no text of, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// One file a keyword query matched, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub path: String,
    pub version: u64,
    pub etag: String,
    /// Higher is better (BM25, sign flipped).
    pub score: f64,
}

/// One passage of a file and its embedding, as the index stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageVector {
    pub start_line: u32,
    pub end_line: u32,
    /// Unit length, [`Embedder::dims`] long.
    pub vector: Vec<f32>,
}

/// A passage a query's embedding is near: the file at the version indexed, the passage's
/// lines, and the cosine similarity (as the stored, quantized vector gives it).
#[derive(Debug, Clone, PartialEq)]
pub struct NearPassage {
    pub path: String,
    pub version: u64,
    pub etag: String,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f64,
}

/// A keyword hit's text, and where in it the query's words matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordText {
    pub text: String,
    pub ranges: Vec<(usize, usize)>,
}

/// One workspace's text index. Calls are synchronous and fast (an embedded database);
/// the service holds the index's lock for a whole catch-up and query.
pub trait TextIndex: Send {
    /// The feed position the index is current to (`None`: never built).
    fn cursor(&self) -> Result<Option<String>>;
    fn set_cursor(&mut self, cursor: &str) -> Result<()>;
    /// What the index holds for `path`.
    fn file(&self, path: &str) -> Result<Option<IndexedFile>>;
    /// Records `path` at `file`, with its text unless it is skipped, and the embeddings of
    /// its passages (none when no model is loaded).
    fn put(
        &mut self,
        path: &str,
        file: &IndexedFile,
        text: Option<&str>,
        passages: &[PassageVector],
    ) -> Result<()>;
    /// The embedding model the stored passages were made by (`None`: none are stored).
    fn model(&self) -> Result<Option<String>>;
    fn set_model(&mut self, model: Option<&str>) -> Result<()>;
    /// The stored passages of `path` (vectors as stored, after quantization) and the etag
    /// they were made from.
    fn passages(&mut self, path: &str) -> Result<Option<(String, Vec<PassageVector>)>>;
    /// Each file's best passage under `prefix` by cosine similarity to `query` (unit
    /// length), those at `min_score` or above that `admit` lets through, best first; at
    /// most `max` files.
    fn nearest(
        &mut self,
        query: &[f32],
        prefix: &str,
        min_score: f64,
        max: usize,
        admit: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<NearPassage>>;
    fn remove(&mut self, path: &str) -> Result<()>;
    /// Forgets every file and the cursor.
    fn clear(&mut self) -> Result<()>;
    /// Groups the following changes into one write (`commit` ends it).
    fn begin(&mut self) -> Result<()>;
    fn commit(&mut self) -> Result<()>;
    /// Every file under `prefix`, in path order, with whether its text is indexed.
    fn files(&self, prefix: &str) -> Result<Vec<(String, IndexedFile)>>;
    /// Under `prefix`: how many files have their text indexed, how many files there are,
    /// and the first `max_skipped` skipped ones (in path order).
    fn counts(&self, prefix: &str, max_skipped: usize) -> Result<(u64, u64, Vec<Skipped>)>;
    /// Files under `prefix` matching any of `words` (stemmed), best first; the best `max`
    /// only, when given.
    fn keyword(&self, words: &[String], prefix: &str, max: Option<usize>) -> Result<Vec<Ranked>>;
    /// `path`'s indexed text and the byte ranges in it where `words` matched (as
    /// `keyword` matched them).
    fn keyword_text(&self, path: &str, words: &[String]) -> Result<Option<KeywordText>>;
    /// Files under `prefix` whose text may contain `needle` (ignoring case), from the
    /// trigram index; `None` when the needle is too short for it (then every file is a
    /// candidate).
    fn substring_candidates(&self, needle: &str, prefix: &str) -> Result<Option<Vec<String>>>;
    /// The indexed text of `path`.
    fn text(&self, path: &str) -> Result<Option<(IndexedFile, String)>>;
    /// The whole index as one byte string (to store it as an object).
    fn to_bytes(&mut self) -> Result<Vec<u8>>;
}

/// A shared, locked index.
pub type IndexHandle = Arc<tokio::sync::Mutex<Box<dyn TextIndex>>>;

/// Where workspaces' indexes live.
#[async_trait]
pub trait SearchIndexes: Send + Sync {
    /// The scope's index (created empty when it has none).
    async fn open(&self, scope: &Scope) -> Result<IndexHandle>;
    /// Makes the index `open` gave durable where processes share it (on AWS: the index
    /// object, written only if it is still the one `open` read). `Ok(false)`: another
    /// writer stored one first; nothing was written. Indexes kept where they are used (the
    /// local server's) are durable already.
    async fn save(&self, _scope: &Scope, _index: &IndexHandle) -> Result<bool> {
        Ok(true)
    }
    /// A throwaway index in memory (a snapshot's search).
    fn scratch(&self) -> Result<Box<dyn TextIndex>>;
    /// Forgets the scope's index (it is rebuilt when next needed).
    async fn forget(&self, scope: &Scope) -> Result<()>;
}

/// Why a file's text is not indexed, from its size (against `max` bytes) and bytes.
pub fn skip_reason(size: u64, max: u64, bytes: Option<&[u8]>) -> Option<String> {
    if size > max {
        return Some(format!(
            "too large: {size} bytes, over the {max} bytes indexed per file"
        ));
    }
    match bytes {
        Some(b) if b.contains(&0) || std::str::from_utf8(b).is_err() => {
            Some("binary: not UTF-8 text".to_owned())
        }
        _ => None,
    }
}

/// What [`IndexObjects::load`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded {
    /// No index is stored for the scope.
    Missing,
    /// The stored index is still the one tagged `known`.
    Unchanged,
    /// The stored index, and the tag to store over it with.
    Fresh { bytes: Vec<u8>, tag: String },
}

/// Where a workspace's index is kept between processes, as one object (on AWS, in the
/// bodies bucket under the workspace's own prefix, so the same IAM isolation and the same
/// erasure cover it).
#[async_trait]
pub trait IndexObjects: Send + Sync {
    /// The stored index, unless it is still the one tagged `known`.
    async fn load(&self, scope: &Scope, known: Option<&str>) -> Result<Loaded>;
    /// Stores `bytes` if the stored index is still the one tagged `expected` (`None`: if
    /// there is none). The new tag, or `None` when another writer stored one first.
    async fn store(
        &self,
        scope: &Scope,
        bytes: Vec<u8>,
        expected: Option<&str>,
    ) -> Result<Option<String>>;
}
