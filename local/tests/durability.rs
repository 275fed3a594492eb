//! Durability: every write the server acknowledged survives SIGKILL.

mod common;

use common::Server;
use reqwest::Client;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    let c = Client::new();
    // path -> (version, content) of every acknowledged write
    let acked: Arc<Mutex<BTreeMap<(String, u64), String>>> = Arc::default();

    for i in 0..40 {
        let path = format!("notes/{:02}.md", i % 20);
        let content = format!("content {i}");
        let r = common::put_content(
            &c,
            format!("{}/v1/host/workspace/files/{path}", s.base),
            &key,
            &content,
        )
        .await;
        assert!(r.status().is_success());
        let v: Value = r.json().await.unwrap();
        acked
            .lock()
            .unwrap()
            .insert((path, v["version"].as_u64().unwrap()), content);
    }
    let deleted = "notes/00.md";
    let r = c
        .delete(format!("{}/v1/host/workspace/files/{deleted}", s.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);

    // Writers still running when the process is killed: whatever they got acknowledged
    // must be there afterwards too.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (c, base, key, acked) = (c.clone(), s.base.clone(), key.clone(), acked.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let path = format!("inflight/{w}-{i}.md");
                    let content = format!("w{w} i{i}");
                    let Ok(r) = c
                        .put(format!("{base}/v1/host/workspace/files/{path}"))
                        .bearer_auth(&key)
                        .json(&json!({"content": content}))
                        .send()
                        .await
                    else {
                        break;
                    };
                    let Ok(v) = r.json::<Value>().await else {
                        break;
                    };
                    if let Some(version) = v["version"].as_u64() {
                        acked.lock().unwrap().insert((path, version), content);
                    }
                }
            })
        })
        .collect();
    // Kill only once the in-flight writers have had some writes acknowledged (however
    // slow the machine), so the test always covers writes racing the kill.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while acked
        .lock()
        .unwrap()
        .keys()
        .filter(|(p, _)| p.starts_with("inflight/"))
        .count()
        < 8
    {
        assert!(
            std::time::Instant::now() < deadline,
            "in-flight writes never acknowledged"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    s.kill9();
    for w in writers {
        let _ = w.await;
    }
    drop(s);

    let s = Server::start(dir.path(), &[]).await;
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.keys().any(|(p, _)| p.starts_with("inflight/")),
        "some in-flight writes were acknowledged"
    );
    for ((path, version), content) in &acked {
        if path == deleted {
            continue;
        }
        let v: Value = common::get_with(
            &c,
            format!(
                "{}/v1/host/workspace/files/{path}?version={version}",
                s.base
            ),
            &key,
        )
        .await
        .json()
        .await
        .unwrap();
        assert_eq!(
            v["content"].as_str(),
            Some(content.as_str()),
            "{path} v{version}: {v}"
        );
    }
    let r = common::get_with(
        &c,
        format!("{}/v1/host/workspace/files/{deleted}", s.base),
        &key,
    )
    .await;
    assert_eq!(r.status(), 404, "the acknowledged delete survived too");

    // Nothing unacknowledged is half there: every in-flight file the restarted server
    // lists (acknowledged or not) reads back whole, with exactly what its writer sent, at
    // version 1, and the change log names exactly those files.
    let listed = inflight_paths(&c, &s.base, &key, "files").await;
    let acked_inflight = acked
        .keys()
        .filter(|(p, _)| p.starts_with("inflight/"))
        .count();
    assert!(listed.len() >= acked_inflight, "{listed:?}");
    for path in &listed {
        let (w, i) = path
            .strip_prefix("inflight/")
            .and_then(|p| p.strip_suffix(".md"))
            .and_then(|p| p.split_once('-'))
            .expect("an in-flight path");
        let r = common::get_with(
            &c,
            format!("{}/v1/host/workspace/files/{path}", s.base),
            &key,
        )
        .await;
        assert_eq!(r.status(), 200, "{path} is listed but cannot be read");
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["content"].as_str(),
            Some(format!("w{w} i{i}").as_str()),
            "{path}: {v}"
        );
        assert_eq!(v["version"].as_u64(), Some(1), "{path}: {v}");
    }
    let logged: std::collections::BTreeSet<String> = inflight_paths(&c, &s.base, &key, "changes")
        .await
        .into_iter()
        .collect();
    let listed: std::collections::BTreeSet<String> = listed.into_iter().collect();
    assert_eq!(
        logged, listed,
        "the change log names exactly the files that are there"
    );
}

/// The `path` of every entry under `inflight/` of a paged listing (`files` or `changes`),
/// all pages.
async fn inflight_paths(c: &Client, base: &str, key: &str, listing: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let token = next
            .as_deref()
            .map_or(String::new(), |t| format!("&nextToken={t}"));
        let page: Value = common::get_with(
            c,
            format!("{base}/v1/host/workspace/{listing}?prefix=inflight/&limit=100{token}"),
            key,
        )
        .await
        .json()
        .await
        .unwrap();
        for entry in page[listing].as_array().expect("a page") {
            paths.push(entry["path"].as_str().unwrap().to_owned());
        }
        next = page["nextToken"].as_str().map(str::to_owned);
        if next.is_none() {
            return paths;
        }
    }
}
