//! Contract cases for search by meaning (`mode=semantic` and `hybrid`), with the real
//! embedding model: a write is found by what it is about by the very next search, an
//! overwrite or a delete takes its passages out, a Markdown section is the passage that
//! matches, snapshots are searched as they were, no passage of another workspace or of a
//! path outside a key's globs ever ranks, and a redacted secret is never embedded.

use crate::harness::{Harness, KEY_A, KEY_OTHER, KEY_SCOPED};
use crate::search::hit_paths;
use http::Method;
use serde_json::Value;
use workspace_core::secrets::SecretRecord;
use workspace_core::TenantId;

const BACKOFF: &str = "memory/billing/backoff.md";
const BACKOFF_TEXT: &str = "# Declined charges\n\nWhen a customer's card is declined, wait and charge it again later: first after one minute, then after five, then after thirty. Give up after the third attempt and email the account owner.\n";
/// Shares no word with [`BACKOFF_TEXT`] but what it is about.
const PARAPHRASE: &str = "the note about retrying payments";

/// Files about other things, so the target has to win on meaning.
const DISTRACTORS: &[(&str, &str)] = &[
    ("deploy/runbook.md", "# Deploying the web tier\n\nBuild the container image, push it to the registry, then roll the new version out one zone at a time. Watch the error dashboards for ten minutes before moving on.\n"),
    ("recipes/bread.md", "# Sourdough\n\nMix flour, water and starter; rest overnight; shape the loaf and bake it at 250 degrees for forty minutes.\n"),
    ("team/oncall.md", "# On-call rota\n\nAlice covers weekdays and Bob covers weekends. Page the secondary if the primary does not acknowledge within fifteen minutes.\n"),
    ("notes/garden.md", "Tomatoes need full sun and deep watering twice a week; pinch out the side shoots.\n"),
    ("src/cache.rs", "/// Evicts the least recently used entry when the cache is full.\nfn evict(&mut self) {\n    if let Some(oldest) = self.order.pop_front() {\n        self.map.remove(&oldest);\n    }\n}\n"),
];

async fn seed(h: &Harness) {
    for (path, text) in DISTRACTORS {
        h.put(KEY_A, path, text).await.assert_ok();
    }
}

async fn by_meaning(h: &Harness, key: &str, q: &str, mode: &str, more: &[(&str, &str)]) -> Value {
    let mut params = vec![("q", q), ("mode", mode)];
    params.extend_from_slice(more);
    h.found(key, &params).await
}

pub async fn a_write_is_found_by_meaning_by_the_very_next_search(h: Harness) {
    seed(&h).await;
    h.put(KEY_A, BACKOFF, BACKOFF_TEXT).await.assert_ok();
    for mode in ["semantic", "hybrid"] {
        let found = by_meaning(&h, KEY_A, PARAPHRASE, mode, &[]).await;
        assert_eq!(hit_paths(&found)[0], BACKOFF, "{mode}: {found}");
        let hit = &found["hits"][0];
        assert_eq!(hit["version"], 1);
        assert_eq!(hit["passage"]["startLine"], 1, "{hit}");
        assert!(
            hit["scores"]["semantic"].as_f64().unwrap()
                >= workspace_core::search::MIN_SEMANTIC_SCORE
        );
        if mode == "semantic" {
            assert!(
                hit["lines"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("Declined charges"),
                "the snippet is the passage: {hit}"
            );
        }
        assert_eq!(found["index"]["mode"], mode);
        assert!(found["index"]["model"]
            .as_str()
            .unwrap()
            .starts_with("all-minilm-l6-v2@"));
        assert_eq!(found["index"]["consistency"], "fresh");
    }
    // The hybrid hit names both rankings where both found it.
    let hybrid = by_meaning(&h, KEY_A, "declined card charge again", "hybrid", &[]).await;
    let scores = &hybrid["hits"][0]["scores"];
    assert_eq!(hybrid["hits"][0]["path"], BACKOFF);
    assert!(
        scores["keyword"].is_number()
            && scores["semantic"].is_number()
            && scores["fused"].is_number(),
        "{scores}"
    );

    // An overwrite about something else takes the old passages out at once.
    h.put(
        KEY_A,
        BACKOFF,
        "Lunch menu: pasta on Mondays and soup on Fridays.\n",
    )
    .await
    .assert_ok();
    let after = by_meaning(&h, KEY_A, PARAPHRASE, "semantic", &[]).await;
    assert!(
        after["hits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|hit| hit["path"] != BACKOFF || hit["version"] == 2),
        "{after}"
    );
    assert_ne!(
        hit_paths(&after).first().map(String::as_str),
        Some(BACKOFF),
        "{after}"
    );
    let lunch = by_meaning(&h, KEY_A, "what food is served for lunch", "semantic", &[]).await;
    assert_eq!(hit_paths(&lunch)[0], BACKOFF, "{lunch}");
    assert_eq!(lunch["hits"][0]["version"], 2);

    // A delete takes them out too.
    let deleted = h
        .call(
            Method::DELETE,
            &crate::harness::file_uri(BACKOFF),
            Some(KEY_A),
        )
        .send()
        .await;
    assert!(deleted.status.is_success(), "{}", deleted.status);
    for q in [PARAPHRASE, "what food is served for lunch"] {
        let gone = by_meaning(&h, KEY_A, q, "hybrid", &[]).await;
        assert!(!hit_paths(&gone).contains(&BACKOFF.to_owned()), "{gone}");
    }
}

/// A Markdown handbook: a title and three sections (vacation, lines 3-5; expense reports
/// with `expenses`, lines 6-8; security badges, lines 9-10).
fn handbook(expenses: &str) -> String {
    format!(
        "# Handbook\n\n## Vacation\nEveryone gets twenty-five days off a year; book them in the calendar a month ahead.\n\n## Expense reports\n{expenses}\n\n## Security badges\nWear your badge at all times inside the office and report a lost one to reception the same day.\n"
    )
}

pub async fn a_markdown_section_is_the_passage_that_matches(h: Harness) {
    seed(&h).await;
    let text = handbook("Keep every receipt. Submit travel costs such as taxis, trains and hotels within thirty days, and finance pays them back with the next salary.");
    h.put(KEY_A, "docs/handbook.md", &text).await.assert_ok();
    let found = by_meaning(
        &h,
        KEY_A,
        "how do I get reimbursed for a cab ride",
        "semantic",
        &[],
    )
    .await;
    let hit = &found["hits"][0];
    assert_eq!(hit["path"], "docs/handbook.md", "{found}");
    assert_eq!(
        hit["passage"]["startLine"], 6,
        "the Expense reports section: {hit}"
    );
    assert_eq!(hit["passage"]["endLine"], 8, "{hit}");
    assert_eq!(hit["lines"][0]["text"], "## Expense reports");
    // Paging and a path scope work as for keyword search.
    let page = by_meaning(
        &h,
        KEY_A,
        "how do I get reimbursed for a cab ride",
        "semantic",
        &[("prefix", "recipes/")],
    )
    .await;
    assert!(
        hit_paths(&page).iter().all(|p| p.starts_with("recipes/")),
        "{page}"
    );
    let glob = by_meaning(
        &h,
        KEY_A,
        "how do I get reimbursed for a cab ride",
        "hybrid",
        &[("glob", "**/*.rs")],
    )
    .await;
    assert!(
        hit_paths(&glob).iter().all(|p| p.ends_with(".rs")),
        "{glob}"
    );
    let one = by_meaning(&h, KEY_A, "instructions", "hybrid", &[("limit", "1")]).await;
    assert!(hit_paths(&one).len() <= 1);
}

/// An edit re-embeds only the passages it changed: the others keep their vectors, and the
/// file still ranks by every section, the new one included.
pub async fn an_edit_re_embeds_only_the_passages_it_changed(h: Harness) {
    let counted = h
        .embedded
        .clone()
        .expect("a semantic harness counts what it embeds");
    let first = handbook("Keep every receipt and hand them in at the end of the quarter.");
    h.put(KEY_A, "docs/handbook.md", &first).await.assert_ok();
    by_meaning(&h, KEY_A, "days off", "semantic", &[]).await;
    let embedded = counted.take();
    // The title and three sections, then the query.
    assert_eq!(embedded.len(), 5, "{embedded:#?}");

    let second = handbook("Submit taxi and train fares within thirty days; finance pays them back with the next salary.");
    h.put(KEY_A, "docs/handbook.md", &second).await.assert_ok();
    let found = by_meaning(
        &h,
        KEY_A,
        "how do I get reimbursed for a cab ride",
        "semantic",
        &[],
    )
    .await;
    let embedded = counted.take();
    assert_eq!(
        embedded.len(),
        2,
        "the changed section and the query: {embedded:#?}"
    );
    assert!(
        embedded[0].contains("taxi and train fares"),
        "{embedded:#?}"
    );
    let hit = &found["hits"][0];
    assert_eq!(hit["path"], "docs/handbook.md", "{found}");
    assert_eq!(hit["passage"]["startLine"], 6, "{hit}");
    // The kept sections still rank as before.
    let kept = by_meaning(&h, KEY_A, "lost my office badge", "semantic", &[]).await;
    assert_eq!(kept["hits"][0]["path"], "docs/handbook.md", "{kept}");
    assert_eq!(kept["hits"][0]["passage"]["startLine"], 9, "{kept}");
    let days = by_meaning(&h, KEY_A, "how much vacation do we get", "semantic", &[]).await;
    assert_eq!(days["hits"][0]["passage"]["startLine"], 3, "{days}");
    // Lines moved: the same section text at other lines is still found at its new lines.
    let moved = format!("# Preface\n\nRead this first.\n\n{second}");
    h.put(KEY_A, "docs/handbook.md", &moved).await.assert_ok();
    let found = by_meaning(&h, KEY_A, "lost my office badge", "semantic", &[]).await;
    assert_eq!(found["hits"][0]["passage"]["startLine"], 13, "{found}");
}

pub async fn a_snapshot_is_searched_by_meaning_as_it_was(h: Harness) {
    seed(&h).await;
    h.put(KEY_A, BACKOFF, BACKOFF_TEXT).await.assert_ok();
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
    h.put(
        KEY_A,
        BACKOFF,
        "Lunch menu: pasta on Mondays and soup on Fridays.\n",
    )
    .await
    .assert_ok();
    h.put(
        KEY_A,
        "notes/new.md",
        "A brand new note about retrying failed payment charges.\n",
    )
    .await
    .assert_ok();
    for mode in ["semantic", "hybrid"] {
        let then = by_meaning(&h, KEY_A, PARAPHRASE, mode, &[("snapshot", &id)]).await;
        assert_eq!(hit_paths(&then)[0], BACKOFF, "{mode}: {then}");
        assert_eq!(then["hits"][0]["version"], 1);
        assert!(
            !hit_paths(&then).contains(&"notes/new.md".to_owned()),
            "written after: {then}"
        );
        let now = by_meaning(&h, KEY_A, PARAPHRASE, mode, &[]).await;
        assert_eq!(hit_paths(&now)[0], "notes/new.md", "{mode}: {now}");
    }
}

pub async fn no_passage_of_another_workspace_or_a_hidden_path_ever_ranks(h: Harness) {
    seed(&h).await;
    let about_payments = "When a card payment fails, try charging it again with growing pauses.\n";
    h.put(KEY_OTHER, "memory/billing/retry.md", about_payments)
        .await
        .assert_ok();
    h.put(KEY_A, "secret/payments.md", about_payments)
        .await
        .assert_ok();
    h.put(
        KEY_A,
        "memory/mine.md",
        "Payments that fail are charged again later.\n",
    )
    .await
    .assert_ok();
    for mode in ["semantic", "hybrid"] {
        let main = by_meaning(&h, KEY_A, PARAPHRASE, mode, &[]).await;
        let paths = hit_paths(&main);
        assert!(
            paths.contains(&"secret/payments.md".to_owned()),
            "{mode}: {main}"
        );
        assert!(
            !main.to_string().contains("memory/billing/retry.md"),
            "{mode}: {main}"
        );
        let other = by_meaning(&h, KEY_OTHER, PARAPHRASE, mode, &[]).await;
        assert_eq!(
            hit_paths(&other),
            ["memory/billing/retry.md"],
            "{mode}: {other}"
        );
        // A path-scoped key: nothing outside its globs ranks, nor is counted.
        let scoped = by_meaning(&h, KEY_SCOPED, PARAPHRASE, mode, &[]).await;
        assert!(
            hit_paths(&scoped).contains(&"memory/mine.md".to_owned()),
            "{mode}: {scoped}"
        );
        assert!(
            !scoped.to_string().contains("secret/payments.md"),
            "{mode}: {scoped}"
        );
        assert!(
            !scoped.to_string().contains("deploy/runbook.md"),
            "{mode}: {scoped}"
        );
    }
}

pub async fn a_redacted_secret_is_never_embedded(h: Harness) {
    seed(&h).await;
    let query = "purple elephants dancing at night in a garden";
    // Not a secret: found by meaning, so the query does find such a text.
    h.put(
        KEY_A,
        "notes/control.md",
        "pink elephants dance at midnight in the rose garden\n",
    )
    .await
    .assert_ok();
    let control = by_meaning(&h, KEY_A, query, "semantic", &[]).await;
    assert_eq!(hit_paths(&control)[0], "notes/control.md", "{control}");
    let deleted = h
        .call(
            Method::DELETE,
            &crate::harness::file_uri("notes/control.md"),
            Some(KEY_A),
        )
        .send()
        .await;
    assert!(deleted.status.is_success(), "{}", deleted.status);

    let value = "purple elephants dance at midnight in the violet garden";
    let acme = TenantId::parse("acme").unwrap();
    let record = SecretRecord::new(&acme, "diary-phrase", value, 0).unwrap();
    h.secrets.put_secret(record).await.unwrap();
    let put = h
        .put(KEY_A, "notes/diary.md", &format!("{value}\n"))
        .await
        .assert_ok();
    assert_eq!(put["content"], "[REDACTED:diary-phrase]\n");
    for mode in ["semantic", "hybrid"] {
        let found = by_meaning(&h, KEY_A, query, mode, &[]).await;
        assert!(
            !hit_paths(&found).contains(&"notes/diary.md".to_owned()),
            "{mode}: {found}"
        );
        assert!(!found.to_string().contains("elephant"), "{mode}: {found}");
    }
}
