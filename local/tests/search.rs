//! Search on the local server: the index beside the embedded store follows every commit
//! through the store's outbox, survives restarts, catches up on changes it missed, is
//! rebuilt when corrupt or removed, and `workspace-local reindex` rebuilds it.

mod common;

use common::Server;
use reqwest::Client;
use serde_json::Value;
use std::path::Path;

async fn search(c: &Client, s: &Server, key: &str, q: &str) -> Value {
    let r = c
        .get(s.url(&format!("/v1/host/workspace/search?q={q}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn paths(answer: &Value) -> Vec<String> {
    let mut p: Vec<String> = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| format!("{}@{}", h["path"].as_str().unwrap(), h["version"]))
        .collect();
    p.sort();
    p
}

async fn put(c: &Client, s: &Server, key: &str, path: &str, text: &str) {
    let r = common::put_content(
        c,
        s.url(&format!("/v1/host/workspace/files/{path}")),
        key,
        text,
    )
    .await;
    assert!(r.status().is_success());
}

fn index_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("search"))
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_index_follows_commits_across_restarts_and_rebuilds() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new();
    let mut s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    put(&c, &s, &key, "a.md", "apples in a").await;
    assert_eq!(paths(&search(&c, &s, &key, "apples").await), ["a.md@1"]);
    let files = index_files(dir.path());
    assert_eq!(
        files.len(),
        1,
        "one index file per workspace, beside the store"
    );
    s.terminate();

    // An index that missed changes (an old copy) catches up from the outbox.
    let stale = dir.path().join("stale.sqlite");
    std::fs::copy(&files[0], &stale).unwrap();
    let mut s = Server::start(dir.path(), &[]).await;
    put(&c, &s, &key, "b.md", "apples in b").await;
    put(&c, &s, &key, "a.md", "pears now").await;
    s.terminate();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", files[0].display()));
    }
    std::fs::copy(&stale, &files[0]).unwrap();
    let mut s = Server::start(dir.path(), &[]).await;
    assert_eq!(paths(&search(&c, &s, &key, "apples").await), ["b.md@1"]);
    assert_eq!(paths(&search(&c, &s, &key, "pears").await), ["a.md@2"]);
    s.terminate();

    // A corrupt index is rebuilt from the store.
    std::fs::write(&files[0], b"this is not a database").unwrap();
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", files[0].display()));
    }
    let mut s = Server::start(dir.path(), &[]).await;
    assert_eq!(paths(&search(&c, &s, &key, "apples").await), ["b.md@1"]);
    s.terminate();

    // `reindex` rebuilds one workspace now, or removes every index.
    let (status, out, err) = common::run_args(
        dir.path(),
        &[],
        &["reindex", "--tenant", "local", "--workspace", "default"],
    );
    assert!(status.success(), "{err}");
    assert_eq!(out.trim(), "reindexed local/default: 2 files");
    let (status, out, err) = common::run_args(dir.path(), &[], &["reindex"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("removed every search index"), "{out}");
    assert!(index_files(dir.path()).is_empty());
    let s = Server::start(dir.path(), &[]).await;
    assert_eq!(paths(&search(&c, &s, &key, "apples").await), ["b.md@1"]);
}

/// Writes answer before their index catches up, and the index catches up right after
/// without any search asking: an eventual search (which applies nothing itself) comes to
/// see every write with nothing pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_catches_up_after_writes_answer_without_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new();
    let s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    for i in 0..20 {
        put(
            &c,
            &s,
            &key,
            &format!("notes/{i}.md"),
            &format!("quinces number {i}"),
        )
        .await;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let answer = loop {
        let r: Value = c
            .get(s.url("/v1/host/workspace/search?q=quinces&consistency=eventual&limit=100"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let done = r["index"]["pending"] == 0 && r["hits"].as_array().unwrap().len() == 20;
        if done || std::time::Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(answer["index"]["consistency"], "eventual");
    assert_eq!(answer["index"]["pending"], 0, "{answer}");
    assert_eq!(answer["hits"].as_array().unwrap().len(), 20, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_workspace_deletes_its_index() {
    const KEY: &str = "local-tenant-wide-key-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let env = [(
        "WORKSPACE_API_KEYS",
        "local-tenant-wide-key-0123456789=local",
    )];
    let c = Client::new();
    let s = Server::start(dir.path(), &env).await;
    let created: Value = c
        .post(s.url("/workspaces"))
        .bearer_auth(KEY)
        .json(&serde_json::json!({ "workspaceScope": "local", "localPath": "/home/me/proj" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["workspaceId"]
        .as_str()
        .expect("workspaceId")
        .to_owned();
    let r = c
        .put(s.url("/v1/host/workspace/files/secret-plan.md"))
        .bearer_auth(KEY)
        .header("x-workspace-id", &id)
        .json(&serde_json::json!({ "content": "the launch codes" }))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let every_file = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir.path().join("search"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    let holds_text = || {
        every_file()
            .iter()
            .any(|f| std::fs::read(f).is_ok_and(|b| b.windows(6).any(|w| w == b"launch")))
    };
    // The index catches up just after the write answers.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !holds_text() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        holds_text(),
        "the index holds the text (in the database or its write-ahead log)"
    );
    let files = index_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let r = c
        .delete(s.url(&format!("/workspaces/{id}")))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert!(
        every_file().is_empty(),
        "the index, its log and the text they held went with the workspace: {:?}",
        every_file()
    );
}

/// The discovery document.
async fn discovery(c: &Client, s: &Server) -> Value {
    let r = c.get(s.url("/.well-known/openwop")).send().await.unwrap();
    r.json().await.unwrap()
}

/// A search in `mode` for `q` (already URL-encoded): its status and JSON answer.
async fn by_meaning(c: &Client, s: &Server, key: &str, q: &str, mode: &str) -> (u16, Value) {
    let r = c
        .get(s.url(&format!("/v1/host/workspace/search?q={q}&mode={mode}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// Search by meaning on the local server. Without the model the server starts, keyword
/// search works, discovery says semantic search is off and why, and `semantic` and
/// `hybrid` answer 503 saying how to install it; with `WORKSPACE_MODEL_DIR` naming the
/// installed model (tests/run.sh installs it), the very next search after a write finds it
/// by meaning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_by_meaning_is_off_without_the_model_and_on_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new();
    let text = "When a customer's card is declined, wait and charge it again later.";
    let key;
    {
        let s = Server::start(dir.path(), &[]).await;
        key = s.generated_key();
        put(&c, &s, &key, "memory/billing/backoff.md", text).await;
        let found = search(&c, &s, &key, "declined").await;
        assert_eq!(paths(&found), ["memory/billing/backoff.md@1"]);
        let discovery = discovery(&c, &s).await;
        let semantic = &discovery["search"]["semantic"];
        assert_eq!(semantic["supported"], false, "{discovery}");
        assert!(
            semantic["reason"]
                .as_str()
                .unwrap()
                .contains("models install"),
            "{semantic}"
        );
        assert_eq!(
            discovery["search"]["modes"],
            serde_json::json!(["keyword", "exact", "regex"])
        );
        for mode in ["semantic", "hybrid"] {
            let (status, body) = by_meaning(&c, &s, &key, "retrying+payments", mode).await;
            assert_eq!(status, 503, "{mode}");
            assert_eq!(body["error"], "unavailable");
            let message = body["message"].as_str().unwrap();
            assert!(
                message.contains("workspace-local models install"),
                "{message}"
            );
            assert!(message.contains("mode=keyword works"), "{message}");
        }
    }
    let model = std::env::var("WORKSPACE_MODEL_DIR")
        .expect("WORKSPACE_MODEL_DIR names the installed model (tests/run.sh installs it)");
    // The same data: the index made without the model is embedded on the first search.
    let s = Server::start(dir.path(), &[("WORKSPACE_MODEL_DIR", &model)]).await;
    let discovery = discovery(&c, &s).await;
    assert_eq!(
        discovery["search"]["semantic"]["supported"], true,
        "{discovery}"
    );
    put(
        &c,
        &s,
        &key,
        "recipes/bread.md",
        "Mix flour, water and starter, then bake the loaf.",
    )
    .await;
    for mode in ["semantic", "hybrid"] {
        let (status, found) =
            by_meaning(&c, &s, &key, "the+note+about+retrying+payments", mode).await;
        assert_eq!(status, 200, "{mode}");
        assert_eq!(
            found["hits"][0]["path"], "memory/billing/backoff.md",
            "{found}"
        );
        assert!(
            found["hits"][0]["passage"]["startLine"].is_number(),
            "{found}"
        );
    }
}
