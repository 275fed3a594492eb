//! `search`: ranked keyword, exact and regex search over the workspace's live files (or a
//! snapshot's), from the workspace's text index (`crate::search`).
//!
//! Freshness: before it answers, a search brings the index up to date with the change
//! feed (the paths changed since the index's cursor: each is read as it is now and indexed
//! again, or removed), all under the index's lock. Every change acknowledged before the
//! search began is in the feed, so the answer reflects it; each hit names the version the
//! index read, which was current at some instant during the search. Commits also catch the
//! index up right after they land (`refresh_index`: before they answer, or, on the local
//! server, just after, through [`IndexRefresher`]), so a search usually finds little to
//! apply. `consistency=eventual` skips the catch-up and reports how many changed paths
//! the index has not applied yet.
//!
//! Search by meaning (`semantic`, `hybrid`) reads the same index: the catch-up that indexes
//! a file's text also cuts it into passages (`crate::search::passages`) and stores their
//! embeddings, so the freshness above holds for it unchanged. Without the embedding model
//! those modes answer 503 and say how to install it; the others work as before.

use super::*;
use crate::search::lines::{matching_lines, LineMatch};
use crate::search::passages::passages;
use crate::search::{
    skip_reason, ChangeFeed, Embedder, IndexedFile, Mode, NearPassage, PassageVector,
    SearchIndexes, Skipped, TextIndex, DEFAULT_SEARCH_LIMIT, FUSION_DEPTH, FUSION_K,
    KEYWORD_WEIGHT, MAX_LINES_PER_HIT, MAX_LINE_CHARS, MAX_QUERY_BYTES, MAX_QUERY_WORDS,
    MAX_REGEX_PROGRAM_BYTES, MAX_SEARCH_LIMIT, MAX_SKIPPED_LISTED, MAX_SNAPSHOT_EMBEDDED_PASSAGES,
    MIN_SEMANTIC_SCORE,
};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Where this deployment keeps its indexes, and where it learns what changed.
#[derive(Clone)]
pub struct SearchWiring {
    pub indexes: Arc<dyn SearchIndexes>,
    pub feed: Arc<dyn ChangeFeed>,
    /// Largest file whose text is indexed (normally
    /// [`crate::search::MAX_INDEXED_FILE_BYTES`]).
    pub max_file_bytes: u64,
    /// Bytes of text one search may scan (normally [`crate::search::MAX_SCAN_BYTES`]).
    pub max_scan_bytes: u64,
    /// Milliseconds a regex search may scan for (normally
    /// [`crate::search::MAX_REGEX_MILLIS`]).
    pub max_regex_millis: u64,
    /// Changed paths one catch-up takes from the feed before it rebuilds the index from the
    /// store instead (normally [`crate::search::MAX_CATCH_UP_PATHS`]).
    pub max_catch_up_paths: usize,
}

/// Search by meaning on this deployment: the embedding model, or why there is none.
#[derive(Clone)]
pub enum Semantic {
    On(Arc<dyn Embedder>),
    /// Why it is off, and how to turn it on (said to every client that asks for it).
    Off(String),
}

impl Default for Semantic {
    fn default() -> Self {
        Semantic::Off("this deployment loads no embedding model".into())
    }
}

impl Semantic {
    /// The loaded model's id.
    pub fn model(&self) -> Option<&str> {
        match self {
            Semantic::On(e) => Some(e.model_id()),
            Semantic::Off(_) => None,
        }
    }
}

/// Files whose bodies one step of indexing reads before it embeds their passages together
/// (the text of at most this many files is held at once).
const INDEX_BATCH_FILES: usize = 32;

/// Embeds `texts` on a blocking thread (a model run is CPU work of milliseconds to seconds,
/// which must not stall the async runtime's other requests).
async fn embed(embedder: &Arc<dyn Embedder>, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let embedder = Arc::clone(embedder);
    let count = texts.len();
    let vectors = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder.embed(&refs)
    })
    .await
    .map_err(|e| WorkspaceError::internal(format!("the embedding task failed: {e}")))??;
    if vectors.len() != count {
        return Err(WorkspaceError::internal(format!(
            "the model embedded {} of {count} texts",
            vectors.len()
        )));
    }
    Ok(vectors)
}

/// One file to bring into the index: gone, or its entry and text.
enum Change {
    Remove(String),
    Put {
        path: String,
        entry: IndexedFile,
        text: Option<String>,
        /// Vectors already made (a snapshot's file unchanged since the live index read it).
        reuse: Option<Vec<PassageVector>>,
    },
}

/// Scopes queued for an index refresh at most (each is a few bytes; duplicates are merged
/// when the refresher takes them).
const INDEX_REFRESH_QUEUE: usize = 1024;

/// Applies queued commits to their scopes' indexes, one scope at a time
/// ([`WorkspaceService::with_index_refresh_after_answer`]).
pub struct IndexRefresher {
    scopes: tokio::sync::mpsc::Receiver<Scope>,
}

impl IndexRefresher {
    /// Runs until the service is gone. Takes every scope queued so far at once, so a scope
    /// written many times meanwhile is caught up once.
    pub async fn run(mut self, service: std::sync::Weak<WorkspaceService>) {
        while let Some(first) = self.scopes.recv().await {
            let mut scopes = std::collections::BTreeSet::from([first]);
            while let Ok(scope) = self.scopes.try_recv() {
                scopes.insert(scope);
            }
            let Some(service) = service.upgrade() else {
                return;
            };
            for scope in &scopes {
                service.refresh_index(scope).await;
            }
        }
    }
}

/// One search, as the HTTP layer and the MCP tool hand it over.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub q: String,
    pub mode: Mode,
    pub ignore_case: bool,
    pub prefix: PathPrefix,
    /// A glob over the whole path (`*` within a segment, `**` across).
    pub glob: Option<String>,
    pub limit: Option<usize>,
    /// Hits already returned by earlier pages.
    pub offset: usize,
    /// Search exactly this snapshot's state.
    pub snapshot: Option<String>,
    /// Skip the catch-up (answer from the index as it is).
    pub eventual: bool,
}

/// One file that matched, at the exact version the index read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub path: String,
    pub version: u64,
    pub etag: String,
    /// What ranked it: BM25 (keyword), match count (exact, regex), cosine similarity
    /// (semantic), the fused score (hybrid).
    pub score: f64,
    pub lines: Vec<LineMatch>,
    /// The passage that matched by meaning (semantic, hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passage: Option<PassageSpan>,
    /// Each ranking's own score (semantic, hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
}

/// A passage's lines, from 1, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PassageSpan {
    pub start_line: u32,
    pub end_line: u32,
}

/// The component scores of a hit by meaning: BM25 when the words matched, the cosine
/// similarity when a passage did, and (hybrid) the fused score and each rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused: Option<f64>,
}

/// How complete the answer is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexReport {
    pub mode: Mode,
    /// Files under the prefix whose text is indexed.
    pub indexed: u64,
    /// Files under the prefix (indexed or skipped).
    pub total: u64,
    /// Files whose text is not searched, and why (at most [`MAX_SKIPPED_LISTED`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// Changed paths the index had not applied when the search began: applied by this
    /// search (`fresh`), or left out of it (`eventual`).
    pub pending: u64,
    pub consistency: &'static str,
    /// The embedding model the answer's passages were made by (semantic, hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    pub hits: Vec<SearchHit>,
    pub index: IndexReport,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

/// A validated request, ready to run against an index.
struct Plan {
    mode: Mode,
    /// Keyword mode: the query's words.
    words: Vec<String>,
    /// Exact and regex modes: the matcher.
    matcher: Option<regex::Regex>,
    /// Exact mode: the literal.
    needle: String,
    /// Semantic and hybrid modes: the query's embedding.
    query_vector: Vec<f32>,
    prefix: String,
    glob: Option<crate::globs::Globs>,
    limit: usize,
    offset: usize,
    /// Bytes of text the search may scan.
    max_scan: u64,
    /// Milliseconds a regex search may scan for.
    max_regex_millis: u64,
}

fn bad(msg: impl Into<String>) -> WorkspaceError {
    WorkspaceError::validation(msg)
}

/// The words of a keyword query: runs of letters and digits.
fn words_of(q: &str) -> Vec<String> {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl Plan {
    fn new(req: &SearchRequest, wiring: &SearchWiring) -> Result<Plan> {
        if req.q.is_empty() {
            return Err(bad("q is required: the text to search for"));
        }
        if req.q.len() > MAX_QUERY_BYTES {
            return Err(bad(format!("q is over {MAX_QUERY_BYTES} bytes")));
        }
        if req.q.contains('\0') {
            return Err(bad("q must not contain NUL (no indexed text holds one)"));
        }
        let limit = crate::limits::page_limit(req.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)?;
        let glob = req
            .glob
            .as_deref()
            .map(|g| {
                crate::globs::Globs::new([g], crate::globs::GlobSyntax::PATHS).map_err(|e| {
                    bad(format!(
                        "glob '{}' is not a valid glob: {}",
                        g.escape_debug(),
                        e.reason
                    ))
                })
            })
            .transpose()?;
        let mut plan = Plan {
            mode: req.mode,
            words: Vec::new(),
            matcher: None,
            needle: String::new(),
            query_vector: Vec::new(),
            prefix: req.prefix.as_str().to_owned(),
            glob,
            limit,
            offset: req.offset,
            max_scan: wiring.max_scan_bytes,
            max_regex_millis: wiring.max_regex_millis,
        };
        match req.mode {
            Mode::Keyword => {
                plan.words = words_of(&req.q);
                if plan.words.is_empty() {
                    return Err(bad(
                        "q has no words to search for (letters or digits); use mode=exact for punctuation",
                    ));
                }
                if plan.words.len() > MAX_QUERY_WORDS {
                    return Err(bad(format!("q has over {MAX_QUERY_WORDS} words")));
                }
            }
            Mode::Semantic | Mode::Hybrid => {
                if req.q.trim().is_empty() {
                    return Err(bad(
                        "q has nothing to search for: describe what you look for",
                    ));
                }
                plan.words = words_of(&req.q);
                plan.words.truncate(MAX_QUERY_WORDS);
            }
            Mode::Exact => {
                plan.needle = req.q.clone();
                plan.matcher = Some(compile(&regex::escape(&req.q), req.ignore_case)?);
            }
            Mode::Regex => plan.matcher = Some(compile(&req.q, req.ignore_case)?),
        }
        Ok(plan)
    }

    fn admits(&self, who: &Identity, path: &str) -> bool {
        who.paths.can_read(path) && self.glob.as_ref().is_none_or(|g| g.is_match(path))
    }
}

/// The feed position an index cursor (`<generation>|<position>`) holds, if it was made for
/// `generation` (else the index must be rebuilt).
fn position_in(cursor: Option<String>, generation: &str) -> Option<String> {
    let cursor = cursor?;
    let (g, p) = cursor.split_once('|')?;
    (g == generation).then(|| p.to_owned())
}

fn compile(pattern: &str, ignore_case: bool) -> Result<regex::Regex> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .size_limit(MAX_REGEX_PROGRAM_BYTES)
        .build()
        .map_err(|e| bad(format!("q is not a valid regular expression: {e}")))
}

impl WorkspaceService {
    /// Indexes each workspace's files and answers `search` (without it, `search` is 501).
    pub fn with_search(mut self, wiring: impl Into<Option<SearchWiring>>) -> Self {
        self.search = wiring.into();
        self
    }

    /// Search by meaning with this model, or off for this reason.
    pub fn with_semantic(mut self, semantic: Semantic) -> Self {
        self.semantic = semantic;
        self
    }

    pub fn semantic(&self) -> &Semantic {
        &self.semantic
    }

    /// The model, or the 503 a search by meaning answers without one.
    fn embedder(&self, mode: Mode) -> Result<&Arc<dyn Embedder>> {
        match &self.semantic {
            Semantic::On(e) => Ok(e),
            Semantic::Off(why) => Err(WorkspaceError::Unavailable(format!(
                "mode={} searches by meaning and needs the embedding model, which this server does not have: {why}. mode=keyword works without it",
                serde_json::to_value(mode).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
            ))),
        }
    }

    fn search_wiring(&self) -> Result<&SearchWiring> {
        self.search.as_ref().ok_or_else(|| {
            WorkspaceError::NotProvided("search is not configured on this deployment".into())
        })
    }

    /// One page of hits for `req`, best first.
    pub async fn search(&self, who: &Identity, req: &SearchRequest) -> Result<SearchPage> {
        let wiring = self.search_wiring()?;
        let mut plan = Plan::new(req, wiring)?;
        if req.mode.by_meaning() {
            let embedder = self.embedder(req.mode)?;
            plan.query_vector = embed(embedder, vec![req.q.clone()])
                .await?
                .pop()
                .unwrap_or_default();
        }
        if let Some(id) = &req.snapshot {
            let snapshot = self.get_snapshot(who, id).await?;
            let mut index = wiring.indexes.scratch()?;
            let mut changes = Vec::new();
            // A snapshot's throwaway index holds at most the scan limit of text.
            let mut budget = wiring.max_scan_bytes;
            for file in snapshot.files.iter().filter(|f| !f.erased) {
                let over_budget = file.size > budget;
                let bytes = if file.size > wiring.max_file_bytes || over_budget {
                    None
                } else {
                    budget -= file.size;
                    Some(self.snapshot_bytes(&who.scope, id, file).await?)
                };
                let skipped = skip_reason(file.size, wiring.max_file_bytes, bytes.as_deref())
                    .or_else(|| {
                        over_budget.then(|| {
                            format!(
                                "over the {} bytes a snapshot search indexes",
                                wiring.max_scan_bytes
                            )
                        })
                    });
                let text = bytes
                    .as_deref()
                    .filter(|_| skipped.is_none())
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .map(str::to_owned);
                let entry = IndexedFile {
                    version: file.version,
                    etag: file.etag.clone(),
                    skipped,
                };
                changes.push(Change::Put {
                    path: file.path.clone(),
                    entry,
                    text,
                    reuse: None,
                });
            }
            if req.mode.by_meaning() {
                self.reuse_live_vectors(&who.scope, &mut changes).await?;
            }
            index.begin()?;
            self.apply_changes(
                &mut *index,
                changes,
                req.mode
                    .by_meaning()
                    .then_some(MAX_SNAPSHOT_EMBEDDED_PASSAGES),
            )
            .await?;
            index.commit()?;
            // Exact already: a snapshot never changes.
            return self.run(&plan, who, &mut *index, 0, "fresh");
        }
        let handle = wiring.indexes.open(&who.scope).await?;
        let mut index = handle.lock().await;
        let (pending, consistency) = if req.eventual {
            let cursor = index.cursor()?;
            (
                self.unapplied(&who.scope, cursor, &*wiring.feed).await?,
                "eventual",
            )
        } else {
            let applied = self
                .catch_up(&who.scope, &mut **index, &*wiring.feed)
                .await?;
            crate::metrics::add(crate::metrics::Counter::SearchCatchUp, applied);
            (applied, "fresh")
        };
        self.verified(&plan, who, &mut **index, pending, consistency)
            .await
    }

    /// Runs `plan`, then checks each hit against its head: a hit whose file changed or went
    /// since the index read it (a write racing the search, or an index that missed an
    /// erasure) is indexed again and the query runs again, so no hit ever names a version
    /// that is not the file's current one at the check.
    async fn verified(
        &self,
        plan: &Plan,
        who: &Identity,
        index: &mut dyn TextIndex,
        pending: u64,
        consistency: &'static str,
    ) -> Result<SearchPage> {
        const ROUNDS: usize = 3;
        let mut round = 0;
        loop {
            round += 1;
            let mut page = self.run(plan, who, index, pending, consistency)?;
            let mut stale = Vec::new();
            for hit in &page.hits {
                let path = FilePath::parse(&hit.path)?;
                let head = self.meta.head(&who.scope, &path).await?;
                if live(&head).is_none_or(|h| h.etag != hit.etag) {
                    stale.push((hit.path.clone(), head));
                }
            }
            // Past the last round (a file rewritten faster than it can be searched), a
            // stale hit is left out rather than answered.
            if stale.is_empty() || round == ROUNDS {
                page.hits
                    .retain(|h| !stale.iter().any(|(p, _)| *p == h.path));
                return Ok(page);
            }
            let mut changes = Vec::new();
            for (path, head) in &stale {
                changes.extend(self.change_of(&mut *index, path, live(head)).await?);
            }
            index.begin()?;
            self.apply_changes(index, changes, None).await?;
            index.commit()?;
        }
    }

    /// Catches indexes up after commits have answered instead of before: each commit queues
    /// its scope for the returned [`IndexRefresher`], which the caller runs. A search still
    /// applies whatever is pending first, so it stays fresh; a commit no longer waits for
    /// the index, and a burst of commits is indexed in one transaction.
    pub fn with_index_refresh_after_answer(mut self) -> (Self, IndexRefresher) {
        let (queue, scopes) = tokio::sync::mpsc::channel(INDEX_REFRESH_QUEUE);
        self.index_refresh_queue = Some(queue);
        (self, IndexRefresher { scopes })
    }

    /// After a commit: its scope's index catches up now, or is queued to.
    pub(super) async fn index_after_commit(&self, scope: &Scope) {
        match &self.index_refresh_queue {
            // A full queue drops the request: the next search (or queued refresh) of the
            // scope applies the commit anyway.
            Some(queue) => drop(queue.try_send(scope.clone())),
            None => self.refresh_index(scope).await,
        }
    }

    /// Brings the scope's index up to date now, so searches rarely have anything to apply.
    /// A failure only logs; the next search catches up.
    pub(super) async fn refresh_index(&self, scope: &Scope) {
        let Some(wiring) = &self.search else {
            return;
        };
        let result = async {
            let handle = wiring.indexes.open(scope).await?;
            let mut index = handle.lock().await;
            self.catch_up(scope, &mut **index, &*wiring.feed).await?;
            // An index of nothing is not kept: the workspace may be gone (a refresh
            // queued before it was deleted must not leave an index behind it).
            if index.counts("", 0)?.1 == 0 {
                drop(index);
                wiring.indexes.forget(scope).await?;
            }
            Ok::<_, WorkspaceError>(())
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "search index not updated after a commit; the next search catches up");
        }
    }

    /// Brings the scope's shared index up to date and stores it (the indexer function,
    /// on each `workspace.updated`): order-free and idempotent, since it applies what the
    /// change feed holds, not the event; a redelivered or late event finds nothing to apply
    /// and stores nothing. A store that lost the race to another writer starts again from
    /// theirs. Returns how many paths it applied.
    pub async fn update_index(&self, scope: &Scope) -> Result<u64> {
        const ATTEMPTS: usize = 8;
        let wiring = self.search_wiring()?;
        for _ in 0..ATTEMPTS {
            let handle = wiring.indexes.open(scope).await?;
            let mut index = handle.lock().await;
            let before = index.cursor()?;
            let applied = self.catch_up(scope, &mut **index, &*wiring.feed).await?;
            let moved = index.cursor()? != before;
            // An empty index is not stored (a late event of an erased workspace must not
            // leave an object behind it).
            let empty = index.counts("", 0)?.1 == 0;
            drop(index);
            if (!moved && applied == 0) || empty {
                return Ok(applied);
            }
            if wiring.indexes.save(scope, &handle).await? {
                return Ok(applied);
            }
        }
        Err(WorkspaceError::internal(format!(
            "the index of {} kept being stored by another writer; the event is retried",
            scope.key_prefix()
        )))
    }

    /// Rebuilds the scope's index from the store (`workspace-local reindex`).
    pub async fn reindex(&self, scope: &Scope) -> Result<u64> {
        let wiring = self.search_wiring()?;
        wiring.indexes.forget(scope).await?;
        let handle = wiring.indexes.open(scope).await?;
        let mut index = handle.lock().await;
        self.catch_up(scope, &mut **index, &*wiring.feed).await?;
        Ok(index.files("")?.len() as u64)
    }

    /// What a fork's index depends on beyond its own changes: its base (a rebase or merge
    /// moves it, changing inherited files without a change of the fork's own).
    async fn index_generation(&self, scope: &Scope) -> Result<String> {
        if scope.workspace.fork_parent().is_none() {
            return Ok(String::new());
        }
        Ok(self
            .forks
            .fork_record(scope)
            .await?
            .map(|(_, r)| r.base_snapshot)
            .unwrap_or_default())
    }

    /// Applies every change the feed has after the index's cursor, or rebuilds the index
    /// from the store when it has none, the feed no longer reaches back, a fork's base
    /// moved, or the backlog is over the wiring's `max_catch_up_paths`. Either way the
    /// index then holds every change acknowledged before the call. Returns how many paths
    /// it applied (after a rebuild: how many live files it indexed).
    async fn catch_up(
        &self,
        scope: &Scope,
        index: &mut dyn TextIndex,
        feed: &dyn ChangeFeed,
    ) -> Result<u64> {
        let generation = self.index_generation(scope).await?;
        let bound = self.search_wiring()?.max_catch_up_paths;
        let stored_model = index.model()?;
        match self.semantic.model() {
            // Passages of another model (or none, written while the model was off) are
            // not comparable with this one's queries: embed everything again.
            Some(model) if stored_model.as_deref() != Some(model) => {
                return self.rebuild_index(scope, index, feed, &generation).await;
            }
            // Without the model, files indexed from now on have no passages: the stored
            // ones are no longer complete, and a model loaded later embeds everything.
            None if stored_model.is_some() => index.set_model(None)?,
            _ => {}
        }
        let mut applied = 0u64;
        // Paths taken from the feed so far (each costs a head read).
        let mut taken = 0usize;
        loop {
            let position = match position_in(index.cursor()?, &generation) {
                Some(p) => p,
                None => return self.rebuild_index(scope, index, feed, &generation).await,
            };
            let Some(page) = feed.since(scope, &position, 1000).await? else {
                return self.rebuild_index(scope, index, feed, &generation).await;
            };
            taken += page.paths.len();
            if taken > bound {
                // Too far behind to apply path by path. The pages applied so far stay
                // committed; the rebuild indexes every live file as the store holds it now.
                return self.rebuild_index(scope, index, feed, &generation).await;
            }
            index.begin()?;
            let paths: Vec<&String> = page.paths.iter().collect();
            for batch in paths.chunks(INDEX_BATCH_FILES) {
                let mut changes = Vec::new();
                for path in batch {
                    let Ok(p) = FilePath::parse(path) else {
                        continue;
                    };
                    let head = self.meta.head(scope, &p).await?;
                    changes.extend(
                        self.change_of(&mut *index, path, head.as_ref().filter(|h| h.is_live()))
                            .await?,
                    );
                }
                applied += self.apply_changes(index, changes, None).await?;
            }
            index.set_cursor(&format!("{generation}|{}", page.cursor))?;
            index.commit()?;
            if !page.more {
                return Ok(applied);
            }
        }
    }

    /// Indexes every live file again. The feed's position is read first: changes after it
    /// are applied again by the next catch-up (applying a path twice is harmless).
    async fn rebuild_index(
        &self,
        scope: &Scope,
        index: &mut dyn TextIndex,
        feed: &dyn ChangeFeed,
        generation: &str,
    ) -> Result<u64> {
        let position = feed.position(scope).await?;
        index.begin()?;
        index.clear()?;
        index.set_model(self.semantic.model())?;
        let heads = self.all_live(scope).await?;
        for batch in heads.chunks(INDEX_BATCH_FILES) {
            let mut changes = Vec::new();
            for h in batch {
                changes.extend(self.change_of(&mut *index, &h.path, Some(h)).await?);
            }
            self.apply_changes(index, changes, None).await?;
        }
        index.set_cursor(&format!("{generation}|{position}"))?;
        index.commit()?;
        Ok(heads.len() as u64)
    }

    /// What the index must do so it holds `path` as `head` says (live, or gone when
    /// `None`), reading the body; `None` when it holds it so already.
    async fn change_of(
        &self,
        index: &mut dyn TextIndex,
        path: &str,
        head: Option<&Head>,
    ) -> Result<Option<Change>> {
        let Some(h) = head else {
            return Ok(index
                .file(path)?
                .is_some()
                .then(|| Change::Remove(path.to_owned())));
        };
        if index.file(path)?.is_some_and(|f| f.etag == h.etag) {
            return Ok(None);
        }
        let max = self.search_wiring()?.max_file_bytes;
        let bytes = match (&h.body, h.size > max) {
            (Some(body), false) => self.bodies.get(body).await?,
            _ => None,
        };
        let skipped = skip_reason(h.size, max, bytes.as_deref());
        let text = bytes
            .filter(|_| skipped.is_none())
            .and_then(|b| String::from_utf8(b).ok());
        Ok(Some(Change::Put {
            path: path.to_owned(),
            entry: IndexedFile {
                version: h.version,
                etag: h.etag.clone(),
                skipped,
            },
            text,
            reuse: None,
        }))
    }

    /// Applies `changes` to the index, embedding the passages of every text among them in
    /// one run of the model (when it is loaded); at most `max_passages` are embedded when
    /// given (the files past it are indexed without passages). A passage whose text the
    /// index already embedded for the same path keeps that vector ([`kept_vectors`]), so an
    /// edit re-embeds only the passages it touched. How many it applied.
    async fn apply_changes(
        &self,
        index: &mut dyn TextIndex,
        changes: Vec<Change>,
        max_passages: Option<usize>,
    ) -> Result<u64> {
        // Per change, its passages, each with the vector it keeps (None: to embed).
        type Cut = Vec<(crate::search::passages::Passage, Option<Vec<f32>>)>;
        let mut cuts: Vec<Cut> = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        if let Semantic::On(_) = &self.semantic {
            for change in &changes {
                let cut = match change {
                    Change::Put {
                        path,
                        text: Some(text),
                        reuse: None,
                        ..
                    } => {
                        let mut cut = passages(path, text);
                        let room =
                            max_passages.map_or(usize::MAX, |m| m.saturating_sub(texts.len()));
                        cut.truncate(room);
                        let mut kept = kept_vectors(index, path)?;
                        cut.into_iter()
                            .map(|p| {
                                let vector = kept.remove(&p.text);
                                if vector.is_none() {
                                    texts.push(p.text.clone());
                                }
                                (p, vector)
                            })
                            .collect()
                    }
                    _ => Vec::new(),
                };
                cuts.push(cut);
            }
        }
        let mut vectors = match &self.semantic {
            Semantic::On(e) if !texts.is_empty() => embed(e, texts).await?.into_iter(),
            _ => Vec::new().into_iter(),
        };
        let mut applied = 0u64;
        for (i, change) in changes.into_iter().enumerate() {
            applied += 1;
            match change {
                Change::Remove(path) => index.remove(&path)?,
                Change::Put {
                    path,
                    entry,
                    text,
                    reuse,
                } => {
                    let embedded: Vec<PassageVector> = match reuse {
                        Some(v) => v,
                        None => cuts
                            .get_mut(i)
                            .map(|cut| {
                                cut.drain(..)
                                    .filter_map(|(p, kept)| {
                                        let vector = kept.or_else(|| vectors.next())?;
                                        Some(PassageVector {
                                            start_line: p.start_line,
                                            end_line: p.end_line,
                                            vector,
                                        })
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    };
                    index.put(&path, &entry, text.as_deref(), &embedded)?;
                }
            }
        }
        Ok(applied)
    }

    /// A snapshot's files unchanged since the live index embedded them take its vectors
    /// instead of being embedded again.
    async fn reuse_live_vectors(&self, scope: &Scope, changes: &mut [Change]) -> Result<()> {
        let wiring = self.search_wiring()?;
        let handle = wiring.indexes.open(scope).await?;
        let mut live = handle.lock().await;
        if live.model()?.as_deref() != self.semantic.model() {
            return Ok(());
        }
        for change in changes.iter_mut() {
            if let Change::Put {
                path, entry, reuse, ..
            } = change
            {
                if let Some((etag, vectors)) = live.passages(path)? {
                    if etag == entry.etag {
                        *reuse = Some(vectors);
                    }
                }
            }
        }
        Ok(())
    }

    /// How many changed paths the index has not applied (for `consistency=eventual`).
    async fn unapplied(
        &self,
        scope: &Scope,
        cursor: Option<String>,
        feed: &dyn ChangeFeed,
    ) -> Result<u64> {
        let generation = self.index_generation(scope).await?;
        let Some(position) = position_in(cursor, &generation) else {
            return self.meta.live_count(scope).await;
        };
        let bound = self.search_wiring()?.max_catch_up_paths;
        Ok(match feed.since(scope, &position, bound).await? {
            Some(page) => page.paths.len() as u64,
            None => self.meta.live_count(scope).await?,
        })
    }

    /// Runs `plan` against `index`: ranks, pages, and cuts each hit's lines.
    fn run(
        &self,
        plan: &Plan,
        who: &Identity,
        index: &mut dyn TextIndex,
        pending: u64,
        consistency: &'static str,
    ) -> Result<SearchPage> {
        // Without a glob or a path-scoped caller, SQL counts and ranks alone; otherwise every
        // file under the prefix is looked at and filtered here.
        let filtered = plan.glob.is_some() || !who.paths.is_whole();
        let mut report = IndexReport {
            mode: plan.mode,
            indexed: 0,
            total: 0,
            skipped: Vec::new(),
            pending,
            consistency,
            model: plan
                .mode
                .by_meaning()
                .then(|| self.semantic.model().map(str::to_owned))
                .flatten(),
        };
        let files = if filtered {
            let files = index.files(&plan.prefix)?;
            for (path, f) in files.iter().filter(|(p, _)| plan.admits(who, p)) {
                report.total += 1;
                match &f.skipped {
                    None => report.indexed += 1,
                    Some(reason) if report.skipped.len() < MAX_SKIPPED_LISTED => {
                        report.skipped.push(Skipped {
                            path: path.clone(),
                            reason: reason.clone(),
                        })
                    }
                    Some(_) => {}
                }
            }
            Some(files)
        } else {
            (report.indexed, report.total, report.skipped) =
                index.counts(&plan.prefix, MAX_SKIPPED_LISTED)?;
            None
        };
        let (hits, more) = match plan.mode {
            Mode::Keyword => self.keyword_hits(plan, who, index, filtered)?,
            Mode::Semantic => semantic_hits(plan, who, index)?,
            Mode::Hybrid => hybrid_hits(plan, who, index, filtered)?,
            Mode::Exact | Mode::Regex => {
                let candidates = match plan.mode {
                    Mode::Exact => index.substring_candidates(&plan.needle, &plan.prefix)?,
                    _ => None,
                };
                let candidates = match candidates {
                    Some(c) => c,
                    None => files
                        .map_or_else(|| index.files(&plan.prefix), Ok)?
                        .into_iter()
                        .filter(|(_, f)| f.skipped.is_none())
                        .map(|(p, _)| p)
                        .collect(),
                };
                scan_hits(plan, who, index, &candidates)?
            }
        };
        Ok(SearchPage {
            hits,
            index: report,
            next_offset: more.then_some(plan.offset + plan.limit),
        })
    }

    fn keyword_hits(
        &self,
        plan: &Plan,
        who: &Identity,
        index: &dyn TextIndex,
        filtered: bool,
    ) -> Result<(Vec<SearchHit>, bool)> {
        // One more than the page tells whether another follows.
        let max = (!filtered).then_some(plan.offset + plan.limit + 1);
        let ranked: Vec<_> = index
            .keyword(&plan.words, &plan.prefix, max)?
            .into_iter()
            .filter(|r| plan.admits(who, &r.path))
            .collect();
        let more = ranked.len() > plan.offset + plan.limit;
        let mut hits = Vec::new();
        for r in ranked.into_iter().skip(plan.offset).take(plan.limit) {
            let lines = index
                .keyword_text(&r.path, &plan.words)?
                .map(|k| matching_lines(&k.text, &k.ranges))
                .unwrap_or_default();
            hits.push(SearchHit {
                lines,
                path: r.path,
                version: r.version,
                etag: r.etag,
                score: r.score,
                passage: None,
                scores: None,
            });
        }
        Ok((hits, more))
    }
}

/// The lines of a passage a hit shows: its first [`MAX_LINES_PER_HIT`], each cut at
/// [`MAX_LINE_CHARS`] characters, with no ranges (a match by meaning has no matched words).
fn passage_lines(
    index: &dyn TextIndex,
    path: &str,
    start: u32,
    end: u32,
) -> Result<Vec<LineMatch>> {
    let Some((_, text)) = index.text(path)? else {
        return Ok(Vec::new());
    };
    Ok(text
        .lines()
        .enumerate()
        .skip(start.saturating_sub(1) as usize)
        .take((end.saturating_sub(start) as usize + 1).min(MAX_LINES_PER_HIT))
        .map(|(i, line)| LineMatch {
            line: i + 1,
            text: line.chars().take(MAX_LINE_CHARS).collect(),
            ranges: Vec::new(),
        })
        .collect())
}

fn span(n: &NearPassage) -> PassageSpan {
    PassageSpan {
        start_line: n.start_line,
        end_line: n.end_line,
    }
}

/// The vectors the index holds for `path`'s passages, by the text the model read: the
/// passages of the text it indexed, cut again (the same cut gives the same passages),
/// paired with its vectors when both are whole. Empty when it holds none of the path, or
/// fewer vectors than passages (a snapshot's index that stopped embedding at its cap).
fn kept_vectors(
    index: &mut dyn TextIndex,
    path: &str,
) -> Result<std::collections::HashMap<String, Vec<f32>>> {
    let Some((_, old_text)) = index.text(path)? else {
        return Ok(Default::default());
    };
    let Some((_, old_vectors)) = index.passages(path)? else {
        return Ok(Default::default());
    };
    let old_cut = passages(path, &old_text);
    let whole = old_cut.len() == old_vectors.len()
        && old_cut
            .iter()
            .zip(&old_vectors)
            .all(|(p, v)| (p.start_line, p.end_line) == (v.start_line, v.end_line));
    if !whole {
        return Ok(Default::default());
    }
    Ok(old_cut
        .into_iter()
        .zip(old_vectors)
        .map(|(p, v)| (p.text, v.vector))
        .collect())
}

/// Semantic mode: each file's best passage, by cosine similarity.
fn semantic_hits(
    plan: &Plan,
    who: &Identity,
    index: &mut dyn TextIndex,
) -> Result<(Vec<SearchHit>, bool)> {
    let near = index.nearest(
        &plan.query_vector,
        &plan.prefix,
        MIN_SEMANTIC_SCORE,
        plan.offset + plan.limit + 1,
        &|p| plan.admits(who, p),
    )?;
    let more = near.len() > plan.offset + plan.limit;
    let mut hits = Vec::new();
    for n in near.into_iter().skip(plan.offset).take(plan.limit) {
        hits.push(SearchHit {
            lines: passage_lines(&*index, &n.path, n.start_line, n.end_line)?,
            passage: Some(span(&n)),
            scores: Some(Scores {
                keyword: None,
                keyword_rank: None,
                semantic: Some(n.score),
                semantic_rank: None,
                fused: None,
            }),
            score: n.score,
            path: n.path,
            version: n.version,
            etag: n.etag,
        });
    }
    Ok((hits, more))
}

/// A file in both rankings of a hybrid search: its keyword rank and hit, its semantic rank
/// and best passage (ranks from 1).
type Fused = (
    Option<(usize, crate::search::Ranked)>,
    Option<(usize, NearPassage)>,
);

/// Hybrid mode: the keyword ranking (BM25 over whole files) and the semantic one (each
/// file's best passage) fused by weighted reciprocal rank fusion ([`FUSION_K`],
/// [`KEYWORD_WEIGHT`]), which needs no calibration between BM25's unbounded scores and
/// cosines (bench/semantic measures it against both).
fn hybrid_hits(
    plan: &Plan,
    who: &Identity,
    index: &mut dyn TextIndex,
    filtered: bool,
) -> Result<(Vec<SearchHit>, bool)> {
    let depth = (plan.offset + plan.limit + 1).max(FUSION_DEPTH);
    let keyword: Vec<_> = if plan.words.is_empty() {
        Vec::new()
    } else {
        index
            .keyword(&plan.words, &plan.prefix, (!filtered).then_some(depth))?
            .into_iter()
            .filter(|r| plan.admits(who, &r.path))
            .take(depth)
            .collect()
    };
    let near = index.nearest(
        &plan.query_vector,
        &plan.prefix,
        MIN_SEMANTIC_SCORE,
        depth,
        &|p| plan.admits(who, p),
    )?;
    let mut fused: std::collections::HashMap<String, Fused> = std::collections::HashMap::new();
    for (i, r) in keyword.into_iter().enumerate() {
        let path = r.path.clone();
        fused.entry(path).or_default().0 = Some((i + 1, r));
    }
    for (i, n) in near.into_iter().enumerate() {
        let path = n.path.clone();
        fused.entry(path).or_default().1 = Some((i + 1, n));
    }
    let rrf = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (FUSION_K + r as f64));
    let mut ranked: Vec<(f64, String, _)> = fused
        .into_iter()
        .map(|(path, (k, s))| {
            let score =
                KEYWORD_WEIGHT * rrf(k.as_ref().map(|k| k.0)) + rrf(s.as_ref().map(|s| s.0));
            (score, path, (k, s))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let more = ranked.len() > plan.offset + plan.limit;
    let mut hits = Vec::new();
    for (score, path, (k, s)) in ranked.into_iter().skip(plan.offset).take(plan.limit) {
        let (version, etag) = match (&k, &s) {
            (Some((_, r)), _) => (r.version, r.etag.clone()),
            (None, Some((_, n))) => (n.version, n.etag.clone()),
            (None, None) => continue,
        };
        let lines = match (&k, &s) {
            (Some(_), _) => index
                .keyword_text(&path, &plan.words)?
                .map(|t| matching_lines(&t.text, &t.ranges))
                .unwrap_or_default(),
            (None, Some((_, n))) => passage_lines(&*index, &path, n.start_line, n.end_line)?,
            (None, None) => Vec::new(),
        };
        hits.push(SearchHit {
            lines,
            passage: s.as_ref().map(|(_, n)| span(n)),
            scores: Some(Scores {
                keyword: k.as_ref().map(|(_, r)| r.score),
                keyword_rank: k.as_ref().map(|(rank, _)| *rank),
                semantic: s.as_ref().map(|(_, n)| n.score),
                semantic_rank: s.as_ref().map(|(rank, _)| *rank),
                fused: Some(score),
            }),
            score,
            path,
            version,
            etag,
        });
    }
    Ok((hits, more))
}

/// Exact and regex modes: reads each candidate's text and counts its matches (ranked by
/// count, then path), within the plan's scan limit and (regex) its time limit, both checked
/// before each file is matched.
fn scan_hits(
    plan: &Plan,
    who: &Identity,
    index: &dyn TextIndex,
    candidates: &[String],
) -> Result<(Vec<SearchHit>, bool)> {
    let Some(matcher) = &plan.matcher else {
        return Ok((Vec::new(), false));
    };
    let started = Instant::now();
    let deadline = Duration::from_millis(plan.max_regex_millis);
    let mut scanned = 0u64;
    let mut found: Vec<(usize, SearchHit)> = Vec::new();
    for path in candidates.iter().filter(|p| plan.admits(who, p)) {
        let Some((file, text)) = index.text(path)? else {
            continue;
        };
        scanned += text.len() as u64;
        if scanned > plan.max_scan || (plan.mode == Mode::Regex && started.elapsed() > deadline) {
            return Err(bad(format!(
                "the search stopped after scanning {scanned} bytes in {} ms (limits: {} bytes, {} ms for a regex); narrow it with prefix= or glob=, or use mode=keyword",
                started.elapsed().as_millis(),
                plan.max_scan,
                plan.max_regex_millis
            )));
        }
        let ranges: Vec<(usize, usize)> = matcher
            .find_iter(&text)
            .filter(|m| !m.is_empty())
            .map(|m| (m.start(), m.end()))
            .collect();
        if ranges.is_empty() {
            continue;
        }
        found.push((
            ranges.len(),
            SearchHit {
                path: path.clone(),
                version: file.version,
                etag: file.etag,
                score: ranges.len() as f64,
                lines: matching_lines(&text, &ranges),
                passage: None,
                scores: None,
            },
        ));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
    let more = found.len() > plan.offset + plan.limit;
    let hits = found
        .into_iter()
        .skip(plan.offset)
        .take(plan.limit)
        .map(|(_, h)| h)
        .collect();
    Ok((hits, more))
}

#[cfg(test)]
mod tests {
    use super::words_of;

    #[test]
    fn keyword_queries_are_words() {
        assert_eq!(
            words_of("Deploy: the  stack's config!"),
            ["deploy", "the", "stack", "s", "config"]
        );
        assert!(words_of("+-*/").is_empty());
    }
}
