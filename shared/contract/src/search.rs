//! Contract cases for search: ranking and stemming, exact and regex modes, filters and
//! paging, snapshots, skipped files, redaction, isolation, and freshness under concurrent
//! writers (checked against a model of when each version was current).

use crate::harness::{
    file_uri, scope, Harness, Reply, KEY_A, KEY_EVIL, KEY_OTHER, KEY_SCOPED, LIMITS,
    SEARCH_MAX_FILE_BYTES, SEARCH_MAX_SCAN_BYTES,
};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::Method;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use workspace_core::ports::{FromCommittedState, RandomIds};
use workspace_core::search::{ChangeFeed, FeedPage, Mode};
use workspace_core::service::{SearchRequest, SearchWiring};
use workspace_core::{Identity, Scope, WorkspaceService};

const SEARCH: &str = "/v1/host/workspace/search";

/// `q` and the other query parameters, encoded.
pub fn search_uri(params: &[(&str, &str)]) -> String {
    let query: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    format!("{SEARCH}?{query}")
}

impl Harness {
    pub async fn search(&self, key: &str, params: &[(&str, &str)]) -> Reply {
        self.call(Method::GET, &search_uri(params), Some(key))
            .send()
            .await
    }

    /// A successful search's answer.
    pub async fn found(&self, key: &str, params: &[(&str, &str)]) -> Value {
        self.search(key, params).await.assert_ok()
    }
}

/// The paths of an answer's hits, in order.
pub fn hit_paths(answer: &Value) -> Vec<String> {
    answer["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| h["path"].as_str().expect("path").to_owned())
        .collect()
}

/// Each matched range of each line of `hit`, as the text it covers.
fn matched_texts(hit: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for line in hit["lines"].as_array().expect("lines") {
        let text = line["text"].as_str().expect("text");
        for r in line["ranges"].as_array().expect("ranges") {
            let (s, e) = (
                r[0].as_u64().unwrap() as usize,
                r[1].as_u64().unwrap() as usize,
            );
            out.push(text[s..e].to_owned());
        }
    }
    out
}

fn assert_refused(r: &Reply, status: u16, needle: &str) {
    assert_eq!(
        r.status.as_u16(),
        status,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let body = r.json();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(needle),
        "the message says what is wrong ({needle}): {body}"
    );
}

pub async fn keyword_search_ranks_stems_and_shows_matching_lines(h: Harness) {
    h.put(
        KEY_A,
        "notes/rare.md",
        "alpha alpha alpha common\nsecond line",
    )
    .await
    .assert_ok();
    h.put(KEY_A, "notes/plain.md", "common common common common")
        .await
        .assert_ok();
    h.put(KEY_A, "notes/both.md", "a common word\nand one alpha")
        .await
        .assert_ok();
    h.put(
        KEY_A,
        "deploy.md",
        "The deploy script deploys the stack.\nDeploying twice is safe.",
    )
    .await
    .assert_ok();

    // More matches of the rarer word rank first; a file with only the common word last.
    let a = h.found(KEY_A, &[("q", "alpha common")]).await;
    assert_eq!(
        hit_paths(&a),
        ["notes/rare.md", "notes/both.md", "notes/plain.md"],
        "{a}"
    );
    let scores: Vec<f64> = a["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    assert_eq!(a["index"]["mode"], "keyword");
    assert_eq!(a["index"]["total"], 4);
    assert_eq!(a["index"]["indexed"], 4);
    assert_eq!(a["index"]["consistency"], "fresh");
    // The hit names the version it matched, readable as it is.
    let rare = &a["hits"][0];
    let live = h.get(KEY_A, "notes/rare.md").await.assert_ok();
    assert_eq!(rare["version"], live["version"]);
    assert_eq!(rare["etag"], live["etag"]);
    assert_eq!(rare["lines"][0]["line"], 1);
    assert_eq!(matched_texts(rare), ["alpha", "alpha", "alpha", "common"]);

    // Stemming: any form of the word finds every form, and the lines show each.
    let d = h.found(KEY_A, &[("q", "deploying")]).await;
    assert_eq!(hit_paths(&d), ["deploy.md"]);
    let lines = d["hits"][0]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(
        matched_texts(&d["hits"][0]),
        ["deploy", "deploys", "Deploying"]
    );

    // Nothing found is an empty list, not an error; a query without words is a 400.
    assert!(hit_paths(&h.found(KEY_A, &[("q", "zebra")]).await).is_empty());
    assert_refused(&h.search(KEY_A, &[("q", "+-*")]).await, 400, "mode=exact");
    assert_refused(&h.search(KEY_A, &[]).await, 400, "q is required");
    assert_refused(
        &h.search(KEY_A, &[("q", "x"), ("mode", "fuzzy")]).await,
        400,
        "mode must be",
    );
    assert_refused(
        &h.search(KEY_A, &[("q", &"x".repeat(1025))]).await,
        400,
        "1024",
    );
}

pub async fn exact_and_regex_modes_match_literally_and_stay_bounded(h: Harness) {
    h.put(
        KEY_A,
        "code.rs",
        "let x = f(a, b);\nlet y = f(a,b);\nf(a, b); f(a, b);",
    )
    .await
    .assert_ok();
    h.put(
        KEY_A,
        "greeting.md",
        "Grüße, Welt: naïve café\nversion v1.2 and V3.45",
    )
    .await
    .assert_ok();

    let e = h
        .found(KEY_A, &[("q", "f(a, b);"), ("mode", "exact")])
        .await;
    assert_eq!(hit_paths(&e), ["code.rs"]);
    assert_eq!(e["hits"][0]["score"], 3.0, "three occurrences: {e}");
    assert_eq!(matched_texts(&e["hits"][0]), ["f(a, b);"; 3]);
    assert_eq!(e["hits"][0]["lines"][1]["line"], 3);

    // Case-sensitive unless asked; non-ASCII ranges are byte ranges into the line.
    let cased = h.found(KEY_A, &[("q", "grüße"), ("mode", "exact")]).await;
    assert!(hit_paths(&cased).is_empty(), "{cased}");
    let folded = h
        .found(
            KEY_A,
            &[("q", "grüße"), ("mode", "exact"), ("ignoreCase", "true")],
        )
        .await;
    assert_eq!(matched_texts(&folded["hits"][0]), ["Grüße"]);
    // Shorter than the trigram index's three characters: found by a scan.
    let short = h.found(KEY_A, &[("q", "é"), ("mode", "exact")]).await;
    assert_eq!(hit_paths(&short), ["greeting.md"]);
    assert_eq!(matched_texts(&short["hits"][0]), ["é"]);

    let r = h
        .found(
            KEY_A,
            &[
                ("q", r"v\d+\.\d+"),
                ("mode", "regex"),
                ("ignoreCase", "true"),
            ],
        )
        .await;
    assert_eq!(matched_texts(&r["hits"][0]), ["v1.2", "V3.45"]);
    assert_refused(
        &h.search(KEY_A, &[("q", "(unclosed"), ("mode", "regex")])
            .await,
        400,
        "not a valid regular expression",
    );
    // A scan past the bound stops with an error naming it; a prefix narrows it.
    for (p, n) in [("scan/a.md", 0), ("scan/b.md", 1), ("scan/c.md", 2)] {
        h.put(KEY_A, p, &format!("{n} {}", "filler text ".repeat(45)))
            .await
            .assert_ok();
    }
    let over = h
        .search(KEY_A, &[("q", r"\d filler"), ("mode", "regex")])
        .await;
    assert_refused(
        &over,
        400,
        &format!("limits: {SEARCH_MAX_SCAN_BYTES} bytes"),
    );
    let narrowed = h
        .found(
            KEY_A,
            &[
                ("q", r"\d filler"),
                ("mode", "regex"),
                ("glob", "scan/a.md"),
            ],
        )
        .await;
    assert_eq!(hit_paths(&narrowed), ["scan/a.md"]);
    // A pattern whose program is over the bound is refused before it runs.
    assert_refused(
        &h.search(KEY_A, &[("q", r"(\w{1000}){1000}"), ("mode", "regex")])
            .await,
        400,
        "not a valid regular expression",
    );
}

pub async fn search_filters_pages_and_reads_snapshots(h: Harness) {
    for (path, text) in [
        ("docs/a.md", "shared word"),
        ("docs/b.txt", "shared word"),
        ("docs/deep/c.md", "shared word"),
        ("other/d.md", "shared word"),
    ] {
        h.put(KEY_A, path, text).await.assert_ok();
    }
    let prefixed = h
        .found(KEY_A, &[("q", "shared"), ("prefix", "docs/")])
        .await;
    assert_eq!(
        hit_paths(&prefixed),
        ["docs/a.md", "docs/b.txt", "docs/deep/c.md"]
    );
    assert_eq!(prefixed["index"]["total"], 3, "counts cover the prefix");
    let globbed = h
        .found(KEY_A, &[("q", "shared"), ("glob", "**/*.md")])
        .await;
    assert_eq!(
        hit_paths(&globbed),
        ["docs/a.md", "docs/deep/c.md", "other/d.md"]
    );
    let one_level = h
        .found(KEY_A, &[("q", "shared"), ("glob", "docs/*.md")])
        .await;
    assert_eq!(hit_paths(&one_level), ["docs/a.md"]);
    assert_refused(
        &h.search(KEY_A, &[("q", "shared"), ("glob", "docs/[")])
            .await,
        400,
        "not a valid glob",
    );

    // Pages: equal scores in path order, each hit once, the token bound to its query.
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = vec![("q", "shared"), ("limit", "1")];
        if let Some(t) = &token {
            params.push(("nextToken", t.as_str()));
        }
        let page = h.found(KEY_A, &params).await;
        seen.extend(hit_paths(&page));
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["docs/a.md", "docs/b.txt", "docs/deep/c.md", "other/d.md"]
    );
    let first = h.found(KEY_A, &[("q", "shared"), ("limit", "1")]).await;
    let t = first["nextToken"].as_str().unwrap();
    assert_refused(
        &h.search(KEY_A, &[("q", "word"), ("limit", "1"), ("nextToken", t)])
            .await,
        400,
        "",
    );
    assert_refused(
        &h.search(KEY_A, &[("q", "shared"), ("limit", "101")]).await,
        400,
        "limit",
    );

    // A snapshot is searched exactly as it was.
    h.put(KEY_A, "notes/v.md", "first draft mentions apples")
        .await
        .assert_ok();
    let snap = h
        .call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let id = snap["id"]
        .as_str()
        .or(snap["snapshotId"].as_str())
        .expect("snapshot id")
        .to_owned();
    h.put(KEY_A, "notes/v.md", "second draft mentions pears")
        .await
        .assert_ok();
    assert!(hit_paths(&h.found(KEY_A, &[("q", "apples")]).await).is_empty());
    let then = h.found(KEY_A, &[("q", "apples"), ("snapshot", &id)]).await;
    assert_eq!(hit_paths(&then), ["notes/v.md"]);
    assert_eq!(then["hits"][0]["version"], 1);
    assert!(hit_paths(&h.found(KEY_A, &[("q", "pears"), ("snapshot", &id)]).await).is_empty());
    assert_refused(
        &h.search(KEY_A, &[("q", "apples"), ("snapshot", "nosuchsnapshot")])
            .await,
        404,
        "",
    );
}

pub async fn skipped_files_are_reported_and_secrets_are_never_found(h: Harness) {
    let binary = h
        .call(Method::PUT, &file_uri("img/logo.png"), Some(KEY_A))
        .json(
            &json!({ "contentBase64": STANDARD.encode([0x89u8, b'P', b'N', b'G', 0, 0xff, 0xfe]) }),
        )
        .send()
        .await;
    binary.assert_ok();
    let big = "word ".repeat(SEARCH_MAX_FILE_BYTES as usize / 5 + 10);
    h.put(KEY_A, "big.txt", &big).await.assert_ok();
    h.put(KEY_A, "small.txt", "word").await.assert_ok();
    let secret = crate::protocol::SECRET_AWS_KEY_ID;
    h.put(KEY_A, "env.md", &format!("the key is {secret} here"))
        .await
        .assert_ok();

    let a = h.found(KEY_A, &[("q", "word")]).await;
    assert_eq!(hit_paths(&a), ["small.txt"]);
    assert_eq!(a["index"]["total"], 4);
    assert_eq!(a["index"]["indexed"], 2);
    let skipped: HashMap<String, String> = a["index"]["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_owned(),
                s["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(skipped["img/logo.png"].starts_with("binary"), "{skipped:?}");
    assert!(skipped["big.txt"].starts_with("too large"), "{skipped:?}");

    // The secret was redacted before it was stored: no mode finds it, the marker is found.
    for mode in ["keyword", "exact", "regex"] {
        let found = h.found(KEY_A, &[("q", secret), ("mode", mode)]).await;
        assert!(hit_paths(&found).is_empty(), "{mode}: {found}");
    }
    let marker = h
        .found(KEY_A, &[("q", "[REDACTED"), ("mode", "exact")])
        .await;
    assert_eq!(hit_paths(&marker), ["env.md"]);
}

pub async fn search_never_reaches_another_workspace_or_a_key_s_hidden_paths(h: Harness) {
    h.put(KEY_A, "memory/mine.md", "needle in main")
        .await
        .assert_ok();
    h.put(KEY_A, "secret/hidden.md", "needle hidden")
        .await
        .assert_ok();
    h.put(KEY_A, "docs/readable.md", "needle readable")
        .await
        .assert_ok();
    h.put(KEY_EVIL, "memory/evil.md", "needle in another tenant")
        .await
        .assert_ok();
    h.put(KEY_OTHER, "memory/other.md", "needle in another workspace")
        .await
        .assert_ok();

    let main = h.found(KEY_A, &[("q", "needle"), ("mode", "exact")]).await;
    assert_eq!(
        hit_paths(&main),
        ["docs/readable.md", "memory/mine.md", "secret/hidden.md"]
    );
    assert_eq!(
        hit_paths(&h.found(KEY_EVIL, &[("q", "needle")]).await),
        ["memory/evil.md"]
    );
    assert_eq!(
        hit_paths(&h.found(KEY_OTHER, &[("q", "needle")]).await),
        ["memory/other.md"]
    );
    // A path-scoped key finds only what it may read, and counts only that.
    for mode in ["keyword", "exact", "regex"] {
        let scoped = h
            .found(KEY_SCOPED, &[("q", "needle"), ("mode", mode)])
            .await;
        let mut paths = hit_paths(&scoped);
        paths.sort();
        assert_eq!(paths, ["docs/readable.md", "memory/mine.md"], "{mode}");
        assert_eq!(scoped["index"]["total"], 2, "{scoped}");
        assert!(!scoped.to_string().contains("secret/hidden.md"));
    }
    // No credential, no search.
    let anonymous = h
        .call(Method::GET, &search_uri(&[("q", "needle")]), None)
        .send()
        .await;
    assert_eq!(anonymous.status.as_u16(), 401);
    // Naming another tenant's workspace is refused like every other route.
    let foreign = h
        .call(Method::GET, &search_uri(&[("q", "needle")]), Some(KEY_A))
        .header("x-workspace-id", "other")
        .send()
        .await;
    assert!(foreign.status.is_client_error(), "{}", foreign.status);
    assert!(!String::from_utf8_lossy(&foreign.body).contains("memory/other.md"));
}

pub async fn search_sees_every_acknowledged_write_delete_and_restore(h: Harness) {
    let v1 = h.put(KEY_A, "plan.md", "buy apples").await.assert_ok();
    let a = h.found(KEY_A, &[("q", "apples")]).await;
    assert_eq!(a["hits"][0]["etag"], v1["etag"]);
    let v2 = h.put(KEY_A, "plan.md", "buy pears").await.assert_ok();
    assert!(hit_paths(&h.found(KEY_A, &[("q", "apples")]).await).is_empty());
    let p = h.found(KEY_A, &[("q", "pears")]).await;
    assert_eq!(p["hits"][0]["version"], v2["version"]);
    assert_eq!(p["hits"][0]["etag"], v2["etag"]);
    h.delete(KEY_A, "plan.md").await;
    assert!(hit_paths(&h.found(KEY_A, &[("q", "pears")]).await).is_empty());
    assert_eq!(h.found(KEY_A, &[("q", "pears")]).await["index"]["total"], 0);
    // A new lineage, then a restore of its first version: the restored text is current.
    h.put(KEY_A, "plan.md", "buy plums").await.assert_ok();
    h.put(KEY_A, "plan.md", "buy figs").await.assert_ok();
    let restored = h.restore(KEY_A, "plan.md", 1, None).await.assert_ok();
    let plums = h.found(KEY_A, &[("q", "plums")]).await;
    assert_eq!(plums["hits"][0]["version"], restored["version"]);
    assert!(hit_paths(&h.found(KEY_A, &[("q", "figs")]).await).is_empty());
    // Eventual consistency answers from the index as it is and says how far behind.
    let ev = h
        .found(KEY_A, &[("q", "plums"), ("consistency", "eventual")])
        .await;
    assert_eq!(ev["index"]["consistency"], "eventual");
    assert!(ev["index"]["pending"].is_u64());
    assert_refused(
        &h.search(KEY_A, &[("q", "plums"), ("consistency", "strong")])
            .await,
        400,
        "consistency",
    );
}

/// What a path held, and when: version `v`'s write was sent at `sent` and acknowledged at
/// `acked` (so it became current somewhere in between), with or without the word.
#[derive(Clone, Debug)]
struct Written {
    version: u64,
    has_word: bool,
    deleted: bool,
    sent: Instant,
    acked: Instant,
}

pub async fn searches_racing_writers_see_every_acknowledged_write(h: Harness) {
    const WRITERS: usize = 4;
    const ROUNDS: usize = 12;
    let h = Arc::new(h);
    // The index exists before the race, so the race's changes reach it as changes.
    assert!(hit_paths(&h.found(KEY_A, &[("q", "beacon")]).await).is_empty());
    let history: Arc<std::sync::Mutex<HashMap<String, Vec<Written>>>> = Default::default();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (h, history) = (h.clone(), history.clone());
            tokio::spawn(async move {
                let path = format!("race/w{w}.md");
                for round in 0..ROUNDS {
                    let has_word = (round + w) % 3 != 0;
                    let delete = round % 5 == 4;
                    let sent = Instant::now();
                    let (version, deleted) = if delete {
                        let r = h.delete(KEY_A, &path).await;
                        assert!(r.status.is_success() || r.status.as_u16() == 404);
                        (0, true)
                    } else {
                        let text = if has_word {
                            format!("round {round} carries the beacon")
                        } else {
                            format!("round {round} carries nothing")
                        };
                        let v = h.put(KEY_A, &path, &text).await.assert_ok();
                        (v["version"].as_u64().unwrap(), false)
                    };
                    history
                        .lock()
                        .unwrap()
                        .entry(path.clone())
                        .or_default()
                        .push(Written {
                            version,
                            has_word: has_word && !deleted,
                            deleted,
                            sent,
                            acked: Instant::now(),
                        });
                }
            })
        })
        .collect();
    let searchers: Vec<_> = (0..2)
        .map(|_| {
            let h = h.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for _ in 0..15 {
                    let start = Instant::now();
                    let answer = h.found(KEY_A, &[("q", "beacon"), ("limit", "100")]).await;
                    seen.push((start, Instant::now(), answer));
                }
                seen
            })
        })
        .collect();
    for w in writers {
        w.await.expect("writer");
    }
    let mut searches = Vec::new();
    for s in searchers {
        searches.extend(s.await.expect("searcher"));
    }
    // One more search after every write is acknowledged.
    let start = Instant::now();
    let last = h.found(KEY_A, &[("q", "beacon"), ("limit", "100")]).await;
    searches.push((start, Instant::now(), last));

    let history = history.lock().unwrap().clone();
    for (start, end, answer) in &searches {
        let hits: HashMap<String, u64> = answer["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["path"].as_str().unwrap().to_owned(),
                    h["version"].as_u64().unwrap(),
                )
            })
            .collect();
        for (path, writes) in &history {
            // Could write i have been current at some instant of the search? It was sent
            // before the search ended, and the next write was not acknowledged before it
            // began.
            let possible = |i: usize| {
                writes[i].sent <= *end && writes.get(i + 1).is_none_or(|n| n.acked >= *start)
            };
            match hits.get(path) {
                Some(&version) => {
                    let ok = (0..writes.len()).any(|i| {
                        possible(i)
                            && !writes[i].deleted
                            && writes[i].version == version
                            && writes[i].has_word
                    });
                    assert!(ok, "{path}@{version} was never current with the word during the search: {writes:?}");
                }
                None => {
                    // The write current for the whole search (acknowledged before it began,
                    // the next one not sent before it ended) must be found if it has the word.
                    let settled = (0..writes.len()).find(|&i| {
                        writes[i].acked <= *start
                            && writes.get(i + 1).is_none_or(|n| n.sent >= *end)
                    });
                    if let Some(i) = settled {
                        assert!(
                            !writes[i].has_word,
                            "{path} v{} with the word was current for the whole search but not found",
                            writes[i].version
                        );
                    }
                }
            }
        }
    }
}

/// A change feed the case keeps itself: the path of each acknowledged write, in order; a
/// position is how many it holds, and it is read one path per page (an outbox read in
/// pages, so a backlog takes many).
#[derive(Default)]
struct Journal(std::sync::Mutex<Vec<String>>);

impl Journal {
    fn push(&self, path: &str) {
        self.0.lock().unwrap().push(path.to_owned());
    }
}

#[async_trait::async_trait]
impl ChangeFeed for Journal {
    async fn position(&self, _: &Scope) -> workspace_core::Result<String> {
        Ok(self.0.lock().unwrap().len().to_string())
    }

    async fn since(
        &self,
        _: &Scope,
        cursor: &str,
        _limit: usize,
    ) -> workspace_core::Result<Option<FeedPage>> {
        let after: usize = cursor.parse().expect("a journal position");
        let paths = self.0.lock().unwrap();
        let end = (after + 1).min(paths.len());
        Ok(Some(FeedPage {
            paths: paths[after..end].iter().cloned().collect(),
            cursor: end.to_string(),
            more: end < paths.len(),
        }))
    }
}

/// A search service over the harness's stores with its own wiring: its own indexes, which
/// the harness's commits never bring up to date (only its searches do), its feed and bounds.
fn search_service(
    h: &Harness,
    feed: Arc<dyn ChangeFeed>,
    max_regex_millis: u64,
    max_catch_up_paths: usize,
) -> WorkspaceService {
    WorkspaceService::new(
        h.meta.clone(),
        h.bodies.clone(),
        Arc::new(FromCommittedState),
        h.clock.clone(),
        Arc::new(RandomIds),
        LIMITS,
    )
    .with_search(SearchWiring {
        indexes: Arc::new(workspace_search::LocalIndexes::in_memory()),
        feed,
        max_file_bytes: SEARCH_MAX_FILE_BYTES,
        max_scan_bytes: SEARCH_MAX_SCAN_BYTES,
        max_regex_millis,
        max_catch_up_paths,
    })
}

/// [`KEY_A`]'s caller.
fn alice() -> Identity {
    Identity::read_write(scope("acme", "main"), "alice")
}

fn request(q: &str, mode: Mode) -> SearchRequest {
    SearchRequest {
        q: q.to_owned(),
        mode,
        ..SearchRequest::default()
    }
}

/// The paths of a page's hits, in order.
fn page_paths(page: &workspace_core::service::SearchPage) -> Vec<String> {
    page.hits.iter().map(|h| h.path.clone()).collect()
}

pub async fn search_after_a_backlog_over_the_catch_up_bound_misses_nothing(h: Harness) {
    const BOUND: usize = 2;
    let journal = Arc::new(Journal::default());
    let search = search_service(&h, journal.clone(), 2_000, BOUND);
    let who = alice();
    // The index exists (built from the store), so what follows reaches it as changes.
    h.put(KEY_A, "a.md", "shared alpha").await.assert_ok();
    journal.push("a.md");
    let first = search.search(&who, &request("shared", Mode::Keyword)).await;
    assert_eq!(page_paths(&first.expect("search")), ["a.md"]);
    // A backlog of four paths, one a page, over a bound of two.
    for (path, word) in [
        ("b.md", "bravo"),
        ("c.md", "charlie"),
        ("d.md", "delta"),
        ("e.md", "echo"),
    ] {
        h.put(KEY_A, path, &format!("shared {word}"))
            .await
            .assert_ok();
        journal.push(path);
    }
    let all = search
        .search(&who, &request("shared", Mode::Keyword))
        .await
        .expect("search");
    let mut paths = page_paths(&all);
    paths.sort();
    assert_eq!(
        paths,
        ["a.md", "b.md", "c.md", "d.md", "e.md"],
        "every acknowledged write is found after a backlog over the bound"
    );
    assert_eq!(all.index.total, 5);
    assert_eq!(all.index.consistency, "fresh");
    // The last write of the backlog, by itself, with the version the store holds.
    let echo = search
        .search(&who, &request("echo", Mode::Keyword))
        .await
        .expect("search");
    assert_eq!(page_paths(&echo), ["e.md"]);
    let live = h.get(KEY_A, "e.md").await.assert_ok();
    assert_eq!(echo.hits[0].etag, live["etag"].as_str().unwrap());
    // A backlog within the bound is applied path by path, deletes included.
    h.delete(KEY_A, "b.md").await;
    journal.push("b.md");
    let after_delete = search
        .search(&who, &request("bravo", Mode::Keyword))
        .await
        .expect("search");
    assert!(page_paths(&after_delete).is_empty());
    assert_eq!(after_delete.index.pending, 1, "one path applied");
    assert_eq!(after_delete.index.total, 4);
}

pub async fn a_regex_search_past_its_time_bound_stops_with_a_clear_error(h: Harness) {
    for (p, n) in [("t/a.md", 1), ("t/b.md", 2)] {
        h.put(KEY_A, p, &format!("version v{n}.0 here"))
            .await
            .assert_ok();
    }
    let feed = Arc::new(workspace_core::search::ChangeLogFeed {
        meta: h.meta.clone(),
        clock: h.clock.clone(),
    });
    // No time at all: the bound is passed by the time the first file is read.
    let search = search_service(&h, feed, 0, workspace_core::search::MAX_CATCH_UP_PATHS);
    let who = alice();
    let err = search
        .search(&who, &request(r"v\d+\.\d+", Mode::Regex))
        .await
        .expect_err("past the time bound");
    assert!(
        matches!(err, workspace_core::WorkspaceError::Validation(_)),
        "a 400: {err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("0 ms for a regex") && message.contains("narrow it with prefix="),
        "the message names the bound and what to do: {message}"
    );
    // The time bound is the regex mode's only: an exact search over the same files answers.
    let exact = search
        .search(&who, &request("v1.0", Mode::Exact))
        .await
        .expect("an exact search has no time bound");
    assert_eq!(page_paths(&exact), ["t/a.md"]);
    // Through the router, with the usual bound, the same regex answers.
    let r = h
        .found(KEY_A, &[("q", r"v\d+\.\d+"), ("mode", "regex")])
        .await;
    assert_eq!(hit_paths(&r), ["t/a.md", "t/b.md"]);
}
