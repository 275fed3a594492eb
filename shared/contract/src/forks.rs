//! Contract cases for forks: read-through to the base, private writes and deletions,
//! listing across both sides, the three-way diff, every merge strategy and resolution,
//! dry runs, idempotent retries, isolation, discard and expiry.

use crate::harness::{
    file_uri, Harness, Reply, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY, KEY_SCOPED, KEY_TENANT,
};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const FORKS: &str = "/v1/host/workspace/forks";

impl Harness {
    pub async fn create_fork(&self, key: &str, body: Value) -> Reply {
        self.call(Method::POST, FORKS, Some(key))
            .json(&body)
            .send()
            .await
    }

    /// A fork of the caller's workspace (201), by its workspace id.
    pub async fn new_fork(&self, key: &str) -> String {
        let r = self.create_fork(key, json!({})).await;
        assert_eq!(
            r.status.as_u16(),
            201,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        r.json()["workspaceId"]
            .as_str()
            .expect("workspaceId")
            .to_owned()
    }

    /// How many live forks the caller's workspace lists.
    pub async fn fork_count(&self, key: &str) -> usize {
        let list = self
            .call(Method::GET, FORKS, Some(key))
            .send()
            .await
            .assert_ok();
        list["forks"].as_array().map_or(0, Vec::len)
    }

    /// A request to `uri` acting on `fork`.
    pub async fn in_fork(&self, method: Method, uri: &str, key: &str, fork: &str) -> Reply {
        self.call(method, uri, Some(key))
            .header("x-workspace-id", fork)
            .send()
            .await
    }

    pub async fn fork_put(&self, key: &str, fork: &str, path: &str, content: &str) -> Reply {
        self.call(Method::PUT, &file_uri(path), Some(key))
            .header("x-workspace-id", fork)
            .json(&json!({ "content": content }))
            .send()
            .await
    }

    pub async fn fork_get(&self, key: &str, fork: &str, path: &str) -> Reply {
        self.in_fork(Method::GET, &file_uri(path), key, fork).await
    }

    pub async fn merge(&self, key: &str, fork: &str, body: Value) -> Reply {
        self.call(Method::POST, &format!("{FORKS}/{fork}/merge"), Some(key))
            .json(&body)
            .send()
            .await
    }

    pub async fn fork_diff(&self, key: &str, fork: &str, query: &str) -> Reply {
        self.call(
            Method::GET,
            &format!("{FORKS}/{fork}/diff{query}"),
            Some(key),
        )
        .send()
        .await
    }

    /// Every file of a listing (following `nextToken`, `limit` per page), as
    /// (path, version).
    async fn listed(&self, key: &str, fork: Option<&str>, limit: usize) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut uri = format!("/v1/host/workspace/files?limit={limit}");
            if let Some(t) = &token {
                uri.push_str(&format!("&nextToken={t}"));
            }
            let mut call = self.call(Method::GET, &uri, Some(key));
            if let Some(f) = fork {
                call = call.header("x-workspace-id", f);
            }
            let page = call.send().await.assert_ok();
            for f in page["files"].as_array().expect("files") {
                out.push((
                    f["path"].as_str().expect("path").to_owned(),
                    f["version"].as_u64().expect("version"),
                ));
            }
            match page["nextToken"].as_str() {
                Some(t) => token = Some(t.to_owned()),
                None => return out,
            }
        }
    }

    /// Path → content of every live file of the workspace (or fork).
    async fn contents(&self, key: &str, fork: Option<&str>) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (path, _) in self.listed(key, fork, 100).await {
            let r = match fork {
                Some(f) => self.fork_get(key, f, &path).await,
                None => self.get(key, &path).await,
            };
            let v = r.assert_ok();
            let content = v["content"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| v["contentBase64"].as_str().map(|b| format!("base64:{b}")))
                .expect("content");
            out.insert(path, content);
        }
        out
    }
}

fn paths(v: &[(String, u64)]) -> Vec<&str> {
    v.iter().map(|(p, _)| p.as_str()).collect()
}

pub async fn forks_read_through_and_write_only_to_themselves(h: Harness) {
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    h.put(KEY_A, "dir/c.md", "c1").await.assert_ok();
    let created = h
        .create_fork(KEY_A, json!({"label": "sub-agent 1", "ttlSeconds": 3600}))
        .await;
    assert_eq!(created.status.as_u16(), 201);
    let f = created.json();
    let fork = f["workspaceId"].as_str().expect("workspaceId").to_owned();
    assert_eq!(f["forkId"], f["workspaceId"]);
    assert_eq!(f["parentWorkspaceId"], "main");
    assert_eq!(f["label"], "sub-agent 1");
    assert!(fork.starts_with("main~"), "{fork}");
    assert!(f["base"]["snapshotId"].is_string() && f["expiresAt"].is_string());

    // The fork reads its parent as of the base, version and etag included.
    let a = h.fork_get(KEY_A, &fork, "a.md").await.assert_ok();
    let parent_a = h.get(KEY_A, "a.md").await.assert_ok();
    assert_eq!(
        (a["content"].clone(), a["etag"].clone()),
        (json!("a1"), parent_a["etag"].clone())
    );
    // A later change of the parent is not seen in the fork.
    h.put(KEY_A, "a.md", "a2").await.assert_ok();
    assert_eq!(
        h.fork_get(KEY_A, &fork, "a.md").await.assert_ok()["content"],
        "a1"
    );

    // Writes stay in the fork, and continue the inherited file's numbering.
    let b2 = h.fork_put(KEY_A, &fork, "b.md", "b2").await.assert_ok();
    assert_eq!(b2["version"], 2);
    assert_eq!(h.get(KEY_A, "b.md").await.assert_ok()["content"], "b1");
    let b1 = h
        .in_fork(
            Method::GET,
            &format!("{}?version=1", file_uri("b.md")),
            KEY_A,
            &fork,
        )
        .await
        .assert_ok();
    assert_eq!(b1["content"], "b1");
    let history = h
        .in_fork(
            Method::GET,
            "/v1/host/workspace/versions/b.md",
            KEY_A,
            &fork,
        )
        .await
        .assert_ok();
    let versions: Vec<u64> = history["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v["version"].as_u64().expect("version"))
        .collect();
    assert_eq!(versions, vec![2, 1]);
    // If-Match against an inherited file's etag works like any other.
    let stale = h
        .call(Method::PUT, &file_uri("a.md"), Some(KEY_A))
        .header("x-workspace-id", &fork)
        .header("if-match", "\"not-the-etag\"")
        .json(&json!({"content": "x"}))
        .send()
        .await;
    stale.assert_error(409, "workspace_conflict");

    // A deletion hides the parent's file in the fork only.
    let gone = h
        .in_fork(Method::DELETE, &file_uri("dir/c.md"), KEY_A, &fork)
        .await;
    assert_eq!(gone.status.as_u16(), 204);
    h.fork_get(KEY_A, &fork, "dir/c.md")
        .await
        .assert_error(404, "not_found");
    assert_eq!(h.get(KEY_A, "dir/c.md").await.assert_ok()["content"], "c1");
    h.fork_put(KEY_A, &fork, "new.md", "n1").await.assert_ok();
    h.get(KEY_A, "new.md").await.assert_error(404, "not_found");

    // Listings merge both sides in path order, a page at a time.
    for limit in [1, 2, 100] {
        let listed = h.listed(KEY_A, Some(&fork), limit).await;
        assert_eq!(
            listed,
            vec![
                ("a.md".to_owned(), 1),
                ("b.md".to_owned(), 2),
                ("new.md".to_owned(), 1)
            ],
            "limit {limit}"
        );
    }
    assert_eq!(
        paths(&h.listed(KEY_A, None, 2).await),
        vec!["a.md", "b.md", "dir/c.md"]
    );

    // The parent lists its fork, and counts what changed on each side.
    let list = h
        .call(Method::GET, FORKS, Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let forks = list["forks"].as_array().expect("forks");
    assert_eq!(forks.len(), 1);
    assert_eq!(forks[0]["forkId"], json!(fork));
    assert_eq!(forks[0]["label"], "sub-agent 1");
    let one = h
        .call(Method::GET, &format!("{FORKS}/{fork}"), Some(KEY_A))
        .send()
        .await
        .assert_ok();
    assert_eq!(
        one["changedPaths"],
        json!({"fork": 3, "parent": 1, "conflicts": 0})
    );
}

/// Base, fork and parent set up so that every state a path can be in occurs once, over two
/// workspaces (the harness holds at most five files in each): `main` (through `KEY_A`)
/// gets the states of text files, `other` (through `KEY_OTHER`) the rest.
async fn every_state(h: &Harness, key: &str) -> String {
    let main = key == KEY_A;
    let base: &[(&str, &str)] = if main {
        &[
            ("fork.md", "f0"),
            ("parent.md", "p0"),
            ("both.md", "b0\n"),
            ("del.md", "d0"),
            ("both-del.md", "x"),
        ]
    } else {
        &[
            ("same.md", "s"),
            ("text.md", "l1\nl2\nl3\nl4\n"),
            ("same-bytes.md", "z0"),
            ("mod-del.md", "m0"),
        ]
    };
    for (p, c) in base {
        h.put(key, p, c).await.assert_ok();
    }
    let put_bin = |fork: Option<String>, bytes: &'static [u8]| {
        let mut call = h
            .call(Method::PUT, &file_uri("bin.dat"), Some(key))
            .json(&json!({ "contentBase64": STANDARD.encode(bytes) }));
        if let Some(f) = fork {
            call = call.header("x-workspace-id", f);
        }
        call.send()
    };
    if !main {
        put_bin(None, &[0xff, 0, 1]).await.assert_ok();
    }
    let fork = h.new_fork(key).await;
    let (fork_writes, fork_deletes): (&[(&str, &str)], &[&str]) = if main {
        (
            &[
                ("fork.md", "f1"),
                ("both.md", "fork\n"),
                ("added.md", "new"),
            ],
            &["del.md", "both-del.md"],
        )
    } else {
        (
            &[
                ("text.md", "L1\nl2\nl3\nl4\n"),
                ("same-bytes.md", "z1"),
                ("mod-del.md", "m1"),
            ],
            &[],
        )
    };
    for p in fork_deletes {
        let r = h.in_fork(Method::DELETE, &file_uri(p), key, &fork).await;
        assert_eq!(r.status.as_u16(), 204);
    }
    for (p, c) in fork_writes {
        h.fork_put(key, &fork, p, c).await.assert_ok();
    }
    let (parent_writes, parent_deletes): (&[(&str, &str)], &[&str]) = if main {
        (
            &[("parent.md", "p1"), ("both.md", "parent\n")],
            &["both-del.md"],
        )
    } else {
        (
            &[("text.md", "l1\nl2\nl3\nL4\n"), ("same-bytes.md", "z1")],
            &["mod-del.md"],
        )
    };
    if !main {
        put_bin(Some(fork.clone()), &[0xff, 0, 2]).await.assert_ok();
        put_bin(None, &[0xff, 0, 3]).await.assert_ok();
    }
    for (p, c) in parent_writes {
        h.put(key, p, c).await.assert_ok();
    }
    for p in parent_deletes {
        assert_eq!(h.delete(key, p).await.status.as_u16(), 204);
    }
    fork
}

fn diff_rows(changes: &Value) -> Vec<(String, String, String, bool)> {
    changes
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["path"].as_str().expect("path").to_owned(),
                c["fork"].as_str().expect("fork").to_owned(),
                c["parent"].as_str().expect("parent").to_owned(),
                c["conflict"].as_bool().expect("conflict"),
            )
        })
        .collect()
}

fn row(p: &str, f: &str, q: &str, c: bool) -> (String, String, String, bool) {
    (p.to_owned(), f.to_owned(), q.to_owned(), c)
}

pub async fn fork_diffs_tell_every_state_apart(h: Harness) {
    let fork = every_state(&h, KEY_A).await;
    let d = h.fork_diff(KEY_A, &fork, "").await.assert_ok();
    assert_eq!(d["forkId"], json!(fork));
    let expected = vec![
        row("added.md", "added", "unchanged", false),
        row("both-del.md", "deleted", "deleted", false),
        row("both.md", "modified", "modified", true),
        row("del.md", "deleted", "unchanged", false),
        row("fork.md", "modified", "unchanged", false),
        row("parent.md", "unchanged", "modified", false),
    ];
    assert_eq!(diff_rows(&d["changes"]), expected);
    let fork_md = &d["changes"][4];
    assert_eq!(
        (
            fork_md["baseVersion"].clone(),
            fork_md["forkVersion"].clone(),
            fork_md["parentVersion"].clone()
        ),
        (json!(1), json!(2), json!(1))
    );
    assert!(d["changes"][0].get("baseVersion").is_none());
    // Paged, the same rows in the same order.
    let mut rows = Vec::new();
    let mut query = "?limit=4".to_owned();
    loop {
        let page = h.fork_diff(KEY_A, &fork, &query).await.assert_ok();
        rows.extend(diff_rows(&page["changes"]));
        match page["nextToken"].as_str() {
            Some(t) => query = format!("?limit=4&nextToken={t}"),
            None => break,
        }
    }
    assert_eq!(rows, expected);
    // A prefix narrows it.
    let only = h.fork_diff(KEY_A, &fork, "?prefix=both").await.assert_ok();
    assert_eq!(diff_rows(&only["changes"]).len(), 2);

    let other = every_state(&h, KEY_OTHER).await;
    let d = h.fork_diff(KEY_OTHER, &other, "").await.assert_ok();
    assert_eq!(
        diff_rows(&d["changes"]),
        vec![
            row("bin.dat", "modified", "modified", true),
            row("mod-del.md", "modified", "deleted", true),
            // The same bytes written on both sides: no conflict.
            row("same-bytes.md", "modified", "modified", false),
            row("text.md", "modified", "modified", true),
        ]
    );
}

fn conflict_paths(v: &Value) -> Vec<String> {
    v["details"]["conflicts"]
        .as_array()
        .expect("conflicts")
        .iter()
        .map(|c| c["path"].as_str().expect("path").to_owned())
        .collect()
}

fn ops(report: &Value) -> Vec<(String, String)> {
    report["applied"]
        .as_array()
        .expect("applied")
        .iter()
        .map(|a| {
            (
                a["path"].as_str().expect("path").to_owned(),
                a["operation"].as_str().expect("operation").to_owned(),
            )
        })
        .collect()
}

fn op(p: &str, o: &str) -> (String, String) {
    (p.to_owned(), o.to_owned())
}

fn files(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

pub async fn merges_apply_only_what_strategies_and_resolutions_allow(h: Harness) {
    let fork = every_state(&h, KEY_A).await;
    let other = every_state(&h, KEY_OTHER).await;
    let main_before = h.contents(KEY_A, None).await;
    let other_before = h.contents(KEY_OTHER, None).await;

    // The default strategy fails on any conflict, reports each, and applies nothing.
    let v = h
        .merge(KEY_A, &fork, json!({}))
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(conflict_paths(&v), vec!["both.md"]);
    let c = &v["details"]["conflicts"][0];
    let marked = c["merged"].as_str().expect("merged text");
    assert!(
        marked.contains("<<<<<<< parent\nparent\n=======\nfork\n>>>>>>> fork"),
        "{marked}"
    );
    assert_eq!(c["binary"], false);
    assert!(c["base"]["etag"].is_string() && c["fork"]["etag"].is_string());
    let v = h
        .merge(KEY_OTHER, &other, json!({}))
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(conflict_paths(&v), vec!["bin.dat", "mod-del.md", "text.md"]);
    let conflicts = &v["details"]["conflicts"];
    assert_eq!(conflicts[0]["binary"], true);
    assert!(conflicts[0].get("merged").is_none());
    assert_eq!(conflicts[1]["parent"]["deleted"], true);
    assert_eq!(conflicts[1]["fork"]["deleted"], false);
    assert_eq!(conflicts[2]["merged"], "L1\nl2\nl3\nL4\n");
    assert_eq!(h.contents(KEY_A, None).await, main_before);
    assert_eq!(h.contents(KEY_OTHER, None).await, other_before);

    // three-way merges the text that merges cleanly; binary and modify/delete stay.
    let v = h
        .merge(
            KEY_OTHER,
            &other,
            json!({"strategy": "three-way", "dryRun": true}),
        )
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(conflict_paths(&v), vec!["bin.dat", "mod-del.md"]);

    // Resolutions settle the rest; a dry run reports and changes nothing.
    let body = json!({
        "strategy": "three-way",
        "resolutions": { "bin.dat": "fork", "mod-del.md": "parent" },
    });
    let mut dry = body.clone();
    dry["dryRun"] = json!(true);
    let planned = h.merge(KEY_OTHER, &other, dry).await.assert_ok();
    assert_eq!(planned["dryRun"], true);
    let expected = vec![op("bin.dat", "put"), op("text.md", "put")];
    assert_eq!(ops(&planned), expected);
    assert_eq!(h.contents(KEY_OTHER, None).await, other_before);
    let merged = h.merge(KEY_OTHER, &other, body).await.assert_ok();
    assert_eq!(
        (merged["dryRun"].clone(), ops(&merged)),
        (json!(false), expected)
    );
    assert!(merged["applied"][0]["version"].is_u64() && merged["applied"][0]["etag"].is_string());
    let other_after = files(&[
        ("bin.dat", "base64:/wAC"),
        ("same-bytes.md", "z1"),
        ("same.md", "s"),
        ("text.md", "L1\nl2\nl3\nL4\n"),
    ]);
    assert_eq!(h.contents(KEY_OTHER, None).await, other_after);
    // The fork now holds the merged state (mod-del.md: the parent's deletion won).
    assert_eq!(h.contents(KEY_OTHER, Some(&other)).await, other_after);

    // Content resolutions, edited by a person or a program.
    let deleted = h.get(KEY_A, "del.md").await.assert_ok();
    let body = json!({ "resolutions": { "both.md": { "content": "resolved\n" } } });
    let merged = h.merge(KEY_A, &fork, body).await.assert_ok();
    // A delete names the version it ended (the parent's head it deleted), and no etag.
    let line = &merged["applied"][2];
    assert_eq!(line["operation"], "delete", "{merged}");
    assert_eq!(line["version"], deleted["version"], "{merged}");
    assert!(line.get("etag").is_none(), "{merged}");
    assert_eq!(
        ops(&merged),
        vec![
            op("added.md", "put"),
            op("both.md", "put"),
            op("del.md", "delete"),
            op("fork.md", "put")
        ]
    );
    let main_after = files(&[
        ("added.md", "new"),
        ("both.md", "resolved\n"),
        ("fork.md", "f1"),
        ("parent.md", "p1"),
    ]);
    assert_eq!(h.contents(KEY_A, None).await, main_after);
    assert_eq!(h.contents(KEY_A, Some(&fork)).await, main_after);
    let after = h.fork_diff(KEY_A, &fork, "").await.assert_ok();
    assert_eq!(after["changes"], json!([]));
    assert_eq!(after["base"]["snapshotId"], merged["base"]["snapshotId"]);

    // A second merge carries only what changed since.
    h.fork_put(KEY_A, &fork, "later.md", "l").await.assert_ok();
    let second = h.merge(KEY_A, &fork, json!({})).await.assert_ok();
    assert_eq!(ops(&second), vec![op("later.md", "put")]);

    // parent-wins and fork-wins, on a fresh conflict.
    h.fork_put(KEY_A, &fork, "fork.md", "fork side")
        .await
        .assert_ok();
    h.put(KEY_A, "fork.md", "parent side").await.assert_ok();
    let kept = h
        .merge(KEY_A, &fork, json!({"strategy": "parent-wins"}))
        .await
        .assert_ok();
    assert_eq!(kept["applied"], json!([]));
    assert_eq!(
        h.get(KEY_A, "fork.md").await.assert_ok()["content"],
        "parent side"
    );
    assert_eq!(
        h.fork_get(KEY_A, &fork, "fork.md").await.assert_ok()["content"],
        "parent side"
    );
    h.fork_put(KEY_A, &fork, "fork.md", "fork again")
        .await
        .assert_ok();
    h.put(KEY_A, "fork.md", "parent again").await.assert_ok();
    h.merge(
        KEY_A,
        &fork,
        json!({"strategy": "fork-wins", "discardFork": true}),
    )
    .await
    .assert_ok();
    assert_eq!(
        h.get(KEY_A, "fork.md").await.assert_ok()["content"],
        "fork again"
    );
    // discardFork: the fork is gone with the merge.
    h.fork_get(KEY_A, &fork, "fork.md")
        .await
        .assert_error(404, "not_found");
}

pub async fn merges_retry_by_idempotency_key_and_refuse_bad_requests(h: Harness) {
    h.put(KEY_A, "a.md", "a0").await.assert_ok();
    let fork = h.new_fork(KEY_A).await;
    h.fork_put(KEY_A, &fork, "a.md", "a1").await.assert_ok();
    let send = |body: Value| {
        h.call(Method::POST, &format!("{FORKS}/{fork}/merge"), Some(KEY_A))
            .header("idempotency-key", "merge-1")
            .json(&body)
            .send()
    };
    let first = send(json!({})).await.assert_ok();
    let again = send(json!({})).await.assert_ok();
    assert_eq!(first, again);
    // One new version in the parent, not two.
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["version"], 2);
    send(json!({"strategy": "fork-wins"}))
        .await
        .assert_error(409, "workspace_conflict");

    // Bad requests change nothing.
    for body in [
        json!({"strategy": "bogus"}),
        json!({"resolutions": {"a.md": "neither"}}),
        json!({"resolutions": {"a.md": {"contentBase64": "!!"}}}),
        json!({"unknown": true}),
        json!({"resolutions": {"untouched.md": "fork"}}),
    ] {
        h.fork_put(KEY_A, &fork, "a.md", "a2").await.assert_ok();
        h.merge(KEY_A, &fork, body.clone())
            .await
            .assert_error(400, "validation_error");
        assert_eq!(
            h.get(KEY_A, "a.md").await.assert_ok()["content"],
            "a1",
            "{body}"
        );
    }
    for body in [
        json!({"ttlSeconds": 0}),
        json!({"from": "bad id!"}),
        json!({"label": ""}),
        json!({"other": 1}),
    ] {
        h.create_fork(KEY_A, body.clone())
            .await
            .assert_error(400, "validation_error");
    }
    // A fork is not forked again.
    h.call(Method::POST, FORKS, Some(KEY_A))
        .header("x-workspace-id", &fork)
        .json(&json!({}))
        .send()
        .await
        .assert_error(400, "validation_error");
    assert_eq!(h.fork_count(KEY_A).await, 1);
}

pub async fn forks_stay_in_their_workspace_and_go_when_discarded_or_expired(h: Harness) {
    h.put(KEY_A, "a.md", "a0").await.assert_ok();
    let fork = h.new_fork(KEY_A).await;
    h.fork_put(KEY_A, &fork, "mine.md", "m").await.assert_ok();

    // Another tenant naming the same id finds nothing; another workspace's key is refused.
    h.fork_get(KEY_EVIL, &fork, "a.md")
        .await
        .assert_error(404, "not_found");
    h.fork_put(KEY_EVIL, &fork, "x.md", "x")
        .await
        .assert_error(404, "not_found");
    h.fork_get(KEY_OTHER, &fork, "a.md")
        .await
        .assert_error(403, "forbidden");
    for (method, uri) in [
        (Method::GET, format!("{FORKS}/{fork}")),
        (Method::GET, format!("{FORKS}/{fork}/diff")),
        (Method::DELETE, format!("{FORKS}/{fork}")),
        (Method::POST, format!("{FORKS}/{fork}/merge")),
    ] {
        for key in [KEY_EVIL, KEY_OTHER] {
            h.call(method.clone(), &uri, Some(key))
                .send()
                .await
                .assert_error(404, "not_found");
        }
    }
    // A tenant-wide key reaches it by name.
    assert_eq!(
        h.fork_get(KEY_TENANT, &fork, "mine.md").await.assert_ok()["content"],
        "m"
    );
    // A read-only key reads it, and changes nothing.
    assert_eq!(
        h.fork_get(KEY_READ_ONLY, &fork, "a.md").await.assert_ok()["content"],
        "a0"
    );
    h.fork_put(KEY_READ_ONLY, &fork, "x.md", "x")
        .await
        .assert_error(403, "forbidden");
    h.merge(KEY_READ_ONLY, &fork, json!({}))
        .await
        .assert_error(403, "forbidden");
    h.call(
        Method::DELETE,
        &format!("{FORKS}/{fork}"),
        Some(KEY_READ_ONLY),
    )
    .send()
    .await
    .assert_error(403, "forbidden");
    h.create_fork(KEY_READ_ONLY, json!({}))
        .await
        .assert_error(403, "forbidden");
    // A key limited to paths cannot fork (a fork is the whole workspace).
    h.create_fork(KEY_SCOPED, json!({}))
        .await
        .assert_error(403, "forbidden");

    // Discarding: gone at once on every route, the parent untouched.
    let discarded = h
        .call(Method::DELETE, &format!("{FORKS}/{fork}"), Some(KEY_A))
        .send()
        .await;
    assert_eq!(discarded.status.as_u16(), 204);
    h.fork_get(KEY_A, &fork, "mine.md")
        .await
        .assert_error(404, "not_found");
    h.fork_put(KEY_A, &fork, "again.md", "x")
        .await
        .assert_error(404, "not_found");
    h.call(Method::GET, &format!("{FORKS}/{fork}"), Some(KEY_A))
        .send()
        .await
        .assert_error(404, "not_found");
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["content"], "a0");
    assert_eq!(h.fork_count(KEY_A).await, 0);

    // Expiry: a fork ends at expiresAt on every route and leaves the listing.
    let short = h
        .create_fork(KEY_A, json!({"ttlSeconds": 60}))
        .await
        .assert_ok();
    let short = short["workspaceId"].as_str().expect("id").to_owned();
    assert_eq!(
        h.fork_get(KEY_A, &short, "a.md").await.assert_ok()["content"],
        "a0"
    );
    h.clock.advance(61_000);
    h.fork_get(KEY_A, &short, "a.md")
        .await
        .assert_error(404, "not_found");
    assert_eq!(h.fork_count(KEY_A).await, 0);
}

/// The fork tools on `/mcp`: the same forks, diffs and merges, in text an agent acts on.
pub async fn fork_tools_fork_compare_merge_and_discard(h: Harness) {
    use crate::mcp::tool;
    h.put(KEY_A, "notes.md", "one\ntwo\nthree\n")
        .await
        .assert_ok();
    let (text, err) = tool(&h, KEY_A, "fork_workspace", json!({"label": "helper"})).await;
    assert!(!err, "{text}");
    let fork = text
        .split_whitespace()
        .nth(2)
        .expect("Created fork <id> ...")
        .to_owned();
    assert!(fork.starts_with("main~"), "{text}");
    // The sub-agent works in the fork; the workspace changes the same file elsewhere.
    h.fork_put(KEY_A, &fork, "notes.md", "one\ntwo\nTHREE\n")
        .await
        .assert_ok();
    h.put(KEY_A, "notes.md", "ONE\ntwo\nthree\n")
        .await
        .assert_ok();
    h.fork_put(KEY_A, &fork, "plan.md", "p").await.assert_ok();
    let (text, err) = tool(&h, KEY_A, "fork_diff", json!({"fork_id": fork})).await;
    assert!(!err, "{text}");
    assert!(
        text.contains("! notes.md: fork modified, workspace modified"),
        "{text}"
    );
    assert!(
        text.contains("- plan.md: fork added, workspace unchanged"),
        "{text}"
    );

    // Without a strategy the conflict is reported with its merged text, nothing applied.
    let (text, err) = tool(
        &h,
        KEY_A,
        "merge_fork",
        json!({"fork_id": fork, "apply": true}),
    )
    .await;
    assert!(
        err && text.starts_with("Error: 1 path(s) changed on both sides"),
        "{text}"
    );
    assert!(text.contains("ONE\ntwo\nTHREE\n"), "{text}");
    h.get(KEY_A, "plan.md").await.assert_error(404, "not_found");
    // A dry run by default; then the merge.
    let args = json!({"fork_id": fork, "strategy": "three-way"});
    let (text, err) = tool(&h, KEY_A, "merge_fork", args.clone()).await;
    assert!(!err && text.starts_with("Dry run"), "{text}");
    h.get(KEY_A, "plan.md").await.assert_error(404, "not_found");
    let mut apply = args;
    apply["apply"] = json!(true);
    let (text, err) = tool(&h, KEY_A, "merge_fork", apply).await;
    assert!(!err && text.contains("applied 2 change(s)"), "{text}");
    assert_eq!(
        h.get(KEY_A, "notes.md").await.assert_ok()["content"],
        "ONE\ntwo\nTHREE\n"
    );
    assert_eq!(h.get(KEY_A, "plan.md").await.assert_ok()["content"], "p");

    // A read-only key compares but never merges or discards.
    let (_, err) = tool(&h, KEY_READ_ONLY, "fork_diff", json!({"fork_id": fork})).await;
    assert!(!err);
    for name in ["merge_fork", "discard_fork"] {
        let (text, err) = tool(
            &h,
            KEY_READ_ONLY,
            name,
            json!({"fork_id": fork, "apply": true}),
        )
        .await;
        assert!(err && text.contains("Access denied"), "{name}: {text}");
    }
    // Another tenant's key finds no such fork.
    let (text, err) = tool(&h, KEY_EVIL, "discard_fork", json!({"fork_id": fork})).await;
    assert!(err && text.contains("no fork"), "{text}");
    let (text, err) = tool(&h, KEY_A, "discard_fork", json!({"fork_id": fork})).await;
    assert!(!err, "{text}");
    h.fork_get(KEY_A, &fork, "plan.md")
        .await
        .assert_error(404, "not_found");
}

pub async fn rebases_bring_the_parents_changes_into_the_fork(h: Harness) {
    h.put(KEY_A, "a.md", "a0").await.assert_ok();
    h.put(KEY_A, "b.md", "b0\n").await.assert_ok();
    h.put(KEY_A, "c.md", "c0").await.assert_ok();
    let fork = h.new_fork(KEY_A).await;
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "parent\n").await.assert_ok();
    assert_eq!(h.delete(KEY_A, "c.md").await.status.as_u16(), 204);
    h.fork_put(KEY_A, &fork, "b.md", "fork\n").await.assert_ok();
    h.fork_put(KEY_A, &fork, "n.md", "n").await.assert_ok();
    let rebase = |body: Value| {
        h.call(Method::POST, &format!("{FORKS}/{fork}/rebase"), Some(KEY_A))
            .json(&body)
            .send()
    };

    // A conflict fails the rebase by default, and nothing moves.
    let v = rebase(json!({}))
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(conflict_paths(&v), vec!["b.md"]);
    assert_eq!(
        h.fork_get(KEY_A, &fork, "a.md").await.assert_ok()["content"],
        "a0"
    );
    rebase(json!({"discardFork": true}))
        .await
        .assert_error(400, "validation_error");

    // fork-wins keeps the fork's side; what the fork never wrote comes with the new base.
    let dry = rebase(json!({"strategy": "fork-wins", "dryRun": true}))
        .await
        .assert_ok();
    assert_eq!(dry["applied"], json!([]));
    assert_eq!(
        h.fork_get(KEY_A, &fork, "a.md").await.assert_ok()["content"],
        "a0"
    );
    rebase(json!({"strategy": "fork-wins"})).await.assert_ok();
    assert_eq!(
        h.contents(KEY_A, Some(&fork)).await,
        files(&[("a.md", "a1"), ("b.md", "fork\n"), ("n.md", "n")])
    );
    assert_eq!(
        h.contents(KEY_A, None).await,
        files(&[("a.md", "a1"), ("b.md", "parent\n")])
    );
    let d = h.fork_diff(KEY_A, &fork, "").await.assert_ok();
    assert_eq!(
        diff_rows(&d["changes"]),
        vec![
            row("b.md", "modified", "unchanged", false),
            row("n.md", "added", "unchanged", false),
        ]
    );

    // parent-wins takes the parent's side into the fork.
    h.put(KEY_A, "b.md", "parent 2\n").await.assert_ok();
    let r = rebase(json!({"strategy": "parent-wins"})).await.assert_ok();
    assert_eq!(ops(&r), vec![op("b.md", "put")]);
    assert_eq!(
        h.fork_get(KEY_A, &fork, "b.md").await.assert_ok()["content"],
        "parent 2\n"
    );
    assert_eq!(
        h.get(KEY_A, "b.md").await.assert_ok()["content"],
        "parent 2\n"
    );
}

/// Every change the workspace's change log holds, oldest first, as (path, version,
/// principal).
async fn change_log(h: &Harness, key: &str) -> Vec<(String, u64, String)> {
    let mut out = Vec::new();
    let mut uri = "/v1/host/workspace/changes?limit=100".to_owned();
    loop {
        let page = h
            .call(Method::GET, &uri, Some(key))
            .send()
            .await
            .assert_ok();
        for c in page["changes"].as_array().expect("changes") {
            out.push((
                c["path"].as_str().expect("path").to_owned(),
                c["version"].as_u64().expect("version"),
                c["principal"].as_str().expect("principal").to_owned(),
            ));
        }
        match page["nextToken"].as_str() {
            Some(t) => uri = format!("/v1/host/workspace/changes?limit=100&nextToken={t}"),
            None => break,
        }
    }
    out.reverse();
    out
}

/// Parent writers race merges of the same paths: a merge applies a path only over the
/// version it compared (here the base: with the default strategy any parent change it sees
/// is a conflict), so an acknowledged parent write is never replaced by a merge; a merge
/// that loses a race says so, and the merge retried after the writers stop carries the
/// rest, each change once.
pub async fn parent_writes_racing_a_merge_are_never_overwritten(h: Harness) {
    const PATHS: [&str; 4] = ["r/a.md", "r/b.md", "r/c.md", "r/d.md"];
    for p in PATHS {
        h.put(KEY_A, p, "base").await.assert_ok();
    }
    let fork = h.new_fork(KEY_A).await;
    for p in PATHS {
        h.fork_put(KEY_A, &fork, p, "fork").await.assert_ok();
    }
    let writer = async {
        let mut acknowledged = Vec::new();
        for round in 0..3 {
            // The writer (tenant-admin) changes the paths one by one while merges run.
            for p in PATHS.iter().rev() {
                let r = h
                    .call(Method::PUT, &file_uri(p), Some(KEY_TENANT))
                    .header("x-workspace-id", "main")
                    .json(&json!({ "content": format!("writer {round}") }))
                    .send()
                    .await;
                acknowledged.push((p.to_string(), r.assert_ok()["version"].as_u64().expect("v")));
                tokio::task::yield_now().await;
            }
        }
        acknowledged
    };
    let merger = async {
        let mut answers = Vec::new();
        for _ in 0..6 {
            let r = h.merge(KEY_A, &fork, json!({})).await;
            answers.push(r.status.as_u16());
            tokio::task::yield_now().await;
        }
        answers
    };
    let (acknowledged, answers) = tokio::join!(writer, merger);
    assert!(
        answers.iter().all(|s| *s == 200 || *s == 409),
        "{answers:?}"
    );

    let log = change_log(&h, KEY_A).await;
    // Every acknowledged write is in the log, by its writer.
    for (p, v) in &acknowledged {
        assert!(
            log.contains(&(p.clone(), *v, "tenant-admin".to_owned())),
            "{p} v{v} lost: {log:?}"
        );
    }
    // A merge's write (alice, after the seed's version 1) only ever follows the base.
    for (p, v, who) in &log {
        if who == "alice" && *v > 1 {
            assert_eq!(*v, 2, "{p}: a merge wrote over a parent write: {log:?}");
        }
    }
    // Now without writers: the fork's side wins what is left, each path changed once.
    let r = h
        .merge(KEY_A, &fork, json!({"strategy": "fork-wins"}))
        .await
        .assert_ok();
    let applied = ops(&r);
    let before = log.len();
    let log = change_log(&h, KEY_A).await;
    assert_eq!(log.len(), before + applied.len());
    for p in PATHS {
        assert_eq!(h.get(KEY_A, p).await.assert_ok()["content"], "fork", "{p}");
    }
}

/// A fork of a snapshot starts from what the snapshot holds, whatever changed since, and its
/// diff shows the parent's changes since then.
pub async fn a_fork_of_a_snapshot_starts_from_it(h: Harness) {
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    let snap = h
        .call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
        .send()
        .await
        .assert_ok()["snapshotId"]
        .as_str()
        .expect("snapshotId")
        .to_owned();
    h.put(KEY_A, "a.md", "a2").await.assert_ok();
    assert_eq!(h.delete(KEY_A, "b.md").await.status.as_u16(), 204);
    h.put(KEY_A, "c.md", "c1").await.assert_ok();
    let created = h.create_fork(KEY_A, json!({"from": snap})).await;
    assert_eq!(
        created.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let fork = created.json()["workspaceId"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(
        h.contents(KEY_A, Some(&fork)).await,
        files(&[("a.md", "a1"), ("b.md", "b1")])
    );
    let d = h.fork_diff(KEY_A, &fork, "").await.assert_ok();
    assert_eq!(
        diff_rows(&d["changes"]),
        vec![
            row("a.md", "unchanged", "modified", false),
            row("b.md", "unchanged", "deleted", false),
            row("c.md", "unchanged", "added", false),
        ]
    );
    // The parent's retention goes on (max 3 versions); the fork's base keeps a1 readable.
    for v in ["a3", "a4", "a5"] {
        h.put(KEY_A, "a.md", v).await.assert_ok();
    }
    let del = h
        .call(
            Method::DELETE,
            &format!("/v1/host/workspace/snapshots/{snap}"),
            Some(KEY_A),
        )
        .send()
        .await;
    assert_eq!(del.status.as_u16(), 204);
    h.put(KEY_A, "a.md", "a6").await.assert_ok();
    assert_eq!(
        h.fork_get(KEY_A, &fork, "a.md").await.assert_ok()["content"],
        "a1"
    );
    // The fork's change merges back over the parent's own only as the strategy says.
    h.fork_put(KEY_A, &fork, "a.md", "fork").await.assert_ok();
    h.merge(KEY_A, &fork, json!({}))
        .await
        .assert_error(409, "workspace_conflict");
    h.merge(KEY_A, &fork, json!({"strategy": "fork-wins"}))
        .await
        .assert_ok();
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["content"], "fork");
    // Unknown snapshots are 404, and nothing is forked.
    h.create_fork(KEY_A, json!({"from": "s0000000000000-unknown"}))
        .await
        .assert_error(404, "not_found");
    assert_eq!(h.fork_count(KEY_A).await, 1);
}

/// The ordinary routes work on a fork named in `X-Workspace-Id`: history and restore of an
/// inherited file, a diff, a snapshot and reads through it, a two-step upload, MCP tools,
/// WSR-1 redaction and the file quota (which counts the inherited files); the parent sees
/// none of it.
pub async fn every_route_works_in_a_fork(h: Harness) {
    use crate::protocol::SECRET_AWS_KEY_ID;
    use workspace_core::model::sha256_hex;
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    let fork = h.new_fork(KEY_A).await;
    let send = |method: Method, uri: &str, body: Option<Value>| {
        let mut call = h
            .call(method, uri, Some(KEY_A))
            .header("x-workspace-id", &fork);
        if let Some(b) = body {
            call = call.json(&b);
        }
        call.send()
    };

    // Search sees inherited files and then the fork's own writes; the parent's index is
    // untouched by them.
    h.put(KEY_A, "inherited.md", "parent words only")
        .await
        .assert_ok();
    let fork2 = h.new_fork(KEY_A).await;
    let search = |ws: Option<&str>, q: &str| {
        let mut c = h.call(
            Method::GET,
            &crate::search::search_uri(&[("q", q)]),
            Some(KEY_A),
        );
        if let Some(ws) = ws {
            c = c.header("x-workspace-id", ws);
        }
        c.send()
    };
    let inherited = search(Some(&fork2), "parent").await.assert_ok();
    assert_eq!(crate::search::hit_paths(&inherited), ["inherited.md"]);
    h.fork_put(KEY_A, &fork2, "inherited.md", "fork words now")
        .await
        .assert_ok();
    let own = search(Some(&fork2), "fork").await.assert_ok();
    assert_eq!(own["hits"][0]["version"], 2, "{own}");
    assert!(crate::search::hit_paths(&search(Some(&fork2), "parent").await.assert_ok()).is_empty());
    let parent = search(None, "parent").await.assert_ok();
    assert_eq!(parent["hits"][0]["version"], 1, "{parent}");
    assert!(crate::search::hit_paths(&search(None, "fork").await.assert_ok()).is_empty());
    h.call(Method::DELETE, &format!("{FORKS}/{fork2}"), Some(KEY_A))
        .send()
        .await;
    h.delete(KEY_A, "inherited.md").await;

    // History, restore and diff of an inherited file.
    h.fork_put(KEY_A, &fork, "a.md", "a2").await.assert_ok();
    let restored = send(
        Method::POST,
        "/v1/host/workspace/versions/a.md",
        Some(json!({"restore": 1})),
    )
    .await
    .assert_ok();
    assert_eq!(restored["version"], 3);
    assert_eq!(
        h.fork_get(KEY_A, &fork, "a.md").await.assert_ok()["content"],
        "a1"
    );
    let diff = send(
        Method::GET,
        "/v1/host/workspace/diff/a.md?from=1&to=2",
        None,
    )
    .await
    .assert_ok();
    assert!(
        diff["diff"].as_str().unwrap_or("").contains("+a2"),
        "{diff}"
    );

    // A snapshot of the fork, read through after the fork changes.
    let snap = send(Method::POST, "/v1/host/workspace/snapshots", None)
        .await
        .assert_ok()["snapshotId"]
        .as_str()
        .expect("id")
        .to_owned();
    h.fork_put(KEY_A, &fork, "a.md", "a4").await.assert_ok();
    let then = send(
        Method::GET,
        &format!("{}?snapshot={snap}", file_uri("a.md")),
        None,
    )
    .await
    .assert_ok();
    assert_eq!(then["content"], "a1");

    // A two-step upload into the fork.
    let bytes = vec![7u8; 3000];
    let ticket = send(
        Method::POST,
        "/v1/host/workspace/uploads",
        Some(
            json!({"path": "big.bin", "size": bytes.len(), "sha256": sha256_hex(&bytes),
                    "contentType": "application/octet-stream"}),
        ),
    )
    .await;
    assert_eq!(
        ticket.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&ticket.body)
    );
    let ticket = ticket.json();
    let sent = h
        .fetch(
            Method::PUT,
            ticket["url"].as_str().expect("url"),
            &ticket["headers"],
            bytes.clone(),
        )
        .await;
    assert!(sent.status.is_success(), "{sent:?}");
    send(
        Method::PUT,
        &file_uri("big.bin"),
        Some(json!({"uploadId": ticket["uploadId"]})),
    )
    .await
    .assert_ok();

    // MCP tools act on the fork the request names.
    let mcp = send(
        Method::POST,
        "/mcp",
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "write_file", "arguments": {"path": "via-mcp.md", "content": format!("key {SECRET_AWS_KEY_ID}")}}})),
    )
    .await
    .assert_ok();
    assert_eq!(mcp["result"]["isError"], false, "{mcp}");
    // Redacted like any write.
    let stored = h.fork_get(KEY_A, &fork, "via-mcp.md").await.assert_ok();
    let text = stored["content"].as_str().expect("text");
    assert!(
        !text.contains(SECRET_AWS_KEY_ID) && text.contains("[REDACTED:"),
        "{text}"
    );

    // The quota counts the inherited file: a.md, big.bin, via-mcp.md, then two more fill
    // maxFiles = 5.
    h.fork_put(KEY_A, &fork, "four.md", "4").await.assert_ok();
    h.fork_put(KEY_A, &fork, "five.md", "5").await.assert_ok();
    h.fork_put(KEY_A, &fork, "six.md", "6")
        .await
        .assert_error(413, "workspace_too_large");

    // The parent saw none of it.
    assert_eq!(h.contents(KEY_A, None).await, files(&[("a.md", "a1")]));
}

/// Readers never see part of a merge (the stores that apply a merge in one commit: memory,
/// redb): a reader listing the parent over and over while a merge of many paths (puts,
/// a delete, new files) runs sees every path as before the merge or every path as after.
pub async fn readers_never_see_part_of_a_merge(h: Harness) {
    const FILES: usize = 30;
    let roomy = crate::harness::Harness::with_limits(
        crate::harness::Backend {
            meta: h.meta.clone(),
            bodies: h.bodies.clone(),
            secrets: h.secrets.clone(),
            guard: Box::new(()),
        },
        workspace_core::Limits {
            max_files: 1000,
            ..crate::harness::LIMITS
        },
    )
    .await;
    let h = roomy;
    for i in 0..FILES {
        h.put(KEY_A, &format!("m/{i:02}.md"), "base")
            .await
            .assert_ok();
    }
    let fork = h.new_fork(KEY_A).await;
    for i in 0..FILES - 1 {
        h.fork_put(KEY_A, &fork, &format!("m/{i:02}.md"), &format!("fork {i}"))
            .await
            .assert_ok();
    }
    let last = format!("m/{:02}.md", FILES - 1);
    assert_eq!(
        h.in_fork(Method::DELETE, &file_uri(&last), KEY_A, &fork)
            .await
            .status
            .as_u16(),
        204
    );
    for name in ["m/new-a.md", "m/new-b.md"] {
        h.fork_put(KEY_A, &fork, name, "new").await.assert_ok();
    }
    let h = std::sync::Arc::new(h);
    let before = listing(&h).await;
    let mut after: BTreeMap<String, u64> = (0..FILES - 1)
        .map(|i| (format!("m/{i:02}.md"), 2))
        .collect();
    after.insert("m/new-a.md".to_owned(), 1);
    after.insert("m/new-b.md".to_owned(), 1);

    // Readers on other threads, listing until the merge has answered.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (h, done, before, after) = (h.clone(), done.clone(), before.clone(), after.clone());
            tokio::spawn(async move {
                let mut seen = (0, 0);
                loop {
                    let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                    let now = listing(&h).await;
                    if now == before {
                        seen.0 += 1;
                    } else if now == after {
                        seen.1 += 1;
                    } else {
                        panic!("a reader saw part of a merge: {now:?}");
                    }
                    if finished {
                        return seen;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let merged = h.merge(KEY_A, &fork, json!({})).await;
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let applied = merged.assert_ok()["applied"].as_array().map_or(0, Vec::len);
    assert_eq!(applied, FILES + 2);
    let mut seen = (0, 0);
    for r in readers {
        let (b, a) = r.await.expect("reader");
        seen = (seen.0 + b, seen.1 + a);
    }
    assert_eq!(listing(&h).await, after);
    assert!(
        seen.1 > 0,
        "the readers never read after the merge: {seen:?}"
    );
}

/// The parent's files under `m/` as one listing reads them: path → version.
async fn listing(h: &Harness) -> BTreeMap<String, u64> {
    let page = h
        .call(
            Method::GET,
            "/v1/host/workspace/files?prefix=m/&limit=1000",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    page["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().expect("path").to_owned(),
                f["version"].as_u64().expect("version"),
            )
        })
        .collect()
}

/// What a fork holds of its own in the raw stores (not through the service): its heads,
/// version items, change log, records, snapshots and the bodies its versions name, and its
/// base snapshot in the parent.
struct OwnData {
    scope: workspace_core::Scope,
    base: String,
    versions: Vec<(String, u64)>,
    bodies: Vec<workspace_core::model::BodyRef>,
}

impl Harness {
    async fn own_data(&self, fork: &str, base: &str) -> OwnData {
        let scope = crate::harness::scope("acme", fork);
        let heads = self
            .meta
            .list_heads(&scope, &Default::default(), None, 1000)
            .await
            .expect("heads");
        let (mut versions, mut bodies) = (Vec::new(), Vec::new());
        for h in &heads {
            let path = workspace_core::FilePath::parse(&h.path).expect("path");
            for v in self
                .meta
                .list_versions(&scope, &path, None, 1000)
                .await
                .expect("versions")
            {
                versions.push((h.path.clone(), v.seq));
                bodies.extend(v.body);
            }
        }
        OwnData {
            scope,
            base: base.to_owned(),
            versions,
            bodies,
        }
    }

    /// Asserts nothing of `d` is left in the raw stores.
    async fn assert_swept(&self, d: &OwnData) {
        let (meta, scope) = (&self.meta, &d.scope);
        let heads = meta
            .list_heads(scope, &Default::default(), None, 1000)
            .await
            .expect("heads");
        assert!(heads.is_empty(), "{scope}: heads left: {heads:?}");
        for (path, seq) in &d.versions {
            let p = workspace_core::FilePath::parse(path).expect("path");
            assert!(
                meta.version(scope, &p, *seq)
                    .await
                    .expect("version")
                    .is_none(),
                "{scope}: version {seq} of {path} left"
            );
        }
        // An inline body went with its item (checked above).
        for body in d.bodies.iter().filter(|b| !b.is_inline()) {
            assert!(
                self.bodies.get(body).await.expect("body read").is_none(),
                "{scope}: body {body:?} left"
            );
        }
        let changes = meta
            .list_changes(
                scope,
                &workspace_core::changes::ChangeQuery {
                    limit: 100,
                    ..Default::default()
                },
            )
            .await
            .expect("changes");
        assert!(changes.changes.is_empty(), "{scope}: change log left");
        assert!(
            meta.record(scope, "fork", "fork")
                .await
                .expect("record")
                .is_none(),
            "{scope}: fork record left"
        );
        let snaps = meta
            .list_snapshots(scope, "", None, 100)
            .await
            .expect("snapshots");
        assert!(snaps.is_empty(), "{scope}: snapshots left: {snaps:?}");
        assert_eq!(meta.live_count(scope).await.expect("count"), 0);
        let parent = crate::harness::scope("acme", "main");
        assert!(
            meta.snapshot(&parent, &d.base)
                .await
                .expect("base")
                .is_none(),
            "{scope}: its base {} is left in the parent",
            d.base
        );
    }
}

/// An expired fork's own data is swept, not only its pins: its heads, versions, change
/// log, fork record, snapshots and bodies leave the raw stores, and so does its base
/// snapshot in the parent, when a route of the parent names it, when a listing of the
/// parent's forks finds it expired, or when the sweeper runs (`workspace_core::forks::sweep`, what the AWS sweeper calls per
/// workspace). The parent is untouched.
pub async fn an_expired_fork_s_own_data_is_swept(h: Harness) {
    use workspace_core::ports::Clock;
    h.put(KEY_A, "a.md", "a0").await.assert_ok();
    h.put(KEY_A, "b.md", "b0").await.assert_ok();
    let parent_before = h.contents(KEY_A, None).await;
    let parent_state = h.state(KEY_A).await;
    let mut forks = Vec::new();
    for ttl in [60, 120, 60] {
        let f = h
            .create_fork(KEY_A, json!({ "ttlSeconds": ttl }))
            .await
            .assert_ok();
        let id = f["workspaceId"].as_str().expect("id").to_owned();
        let base = f["base"]["snapshotId"].as_str().expect("base").to_owned();
        // Its own versions: an inherited file replaced twice, a new file, a deletion, and
        // a checkpoint of its own.
        for content in ["fork a1", "fork a2"] {
            h.fork_put(KEY_A, &id, "a.md", content).await.assert_ok();
        }
        h.fork_put(KEY_A, &id, "new.md", "new").await.assert_ok();
        assert_eq!(
            h.in_fork(Method::DELETE, &file_uri("b.md"), KEY_A, &id)
                .await
                .status
                .as_u16(),
            204
        );
        h.call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
            .header("x-workspace-id", &id)
            .json(&json!({}))
            .send()
            .await
            .assert_ok();
        let own = h.own_data(&id, &base).await;
        assert!(
            own.versions.len() >= 4 && own.bodies.len() >= 3,
            "{:?}",
            own.versions
        );
        assert!(h
            .meta
            .snapshot(&crate::harness::scope("acme", "main"), &base)
            .await
            .expect("base")
            .is_some());
        forks.push((id, own));
    }
    let (first, second, third) = (&forks[0], &forks[1], &forks[2]);

    // The first and third expire. A route of the parent naming the third sweeps it.
    h.clock.advance(61_000);
    h.call(Method::GET, &format!("{FORKS}/{}", third.0), Some(KEY_A))
        .send()
        .await
        .assert_error(404, "not_found");
    h.assert_swept(&third.1).await;
    // A listing of the parent's forks sweeps the first; the second stays.
    h.fork_get(KEY_A, &first.0, "a.md")
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.own_data(&first.0, &first.1.base).await.versions,
        first.1.versions,
        "not swept before a sweep runs"
    );
    assert_eq!(h.fork_count(KEY_A).await, 1);
    h.assert_swept(&first.1).await;
    assert_eq!(
        h.fork_get(KEY_A, &second.0, "a.md").await.assert_ok()["content"],
        "fork a2"
    );
    assert_eq!(
        h.own_data(&second.0, &second.1.base).await.versions,
        second.1.versions
    );

    // The second expires, and nothing lists the forks: the sweeper finds it.
    h.clock.advance(60_000);
    let eraser = workspace_core::forks::sweep::StoreEraser {
        meta: h.meta.clone(),
        bodies: h.bodies.clone(),
        staging: h.bodies.clone(),
    };
    let parent = crate::harness::scope("acme", "main");
    let swept = workspace_core::forks::sweep::sweep_expired_forks(
        h.meta.as_ref(),
        &eraser,
        &parent,
        h.clock.now_ms(),
    )
    .await
    .expect("sweep");
    assert_eq!(swept, 1);
    h.assert_swept(&second.1).await;
    // A second run finds nothing more.
    let again = workspace_core::forks::sweep::sweep_expired_forks(
        h.meta.as_ref(),
        &eraser,
        &parent,
        h.clock.now_ms(),
    )
    .await
    .expect("sweep");
    assert_eq!(again, 0);
    assert_eq!(h.fork_count(KEY_A).await, 0);

    // The parent is untouched: the same files, versions and bytes, read through the API
    // and from the raw stores.
    assert_eq!(h.contents(KEY_A, None).await, parent_before);
    assert_eq!(h.state(KEY_A).await, parent_state);
    assert_eq!(h.raw_body("acme", "main", "a.md").await, "a0");
    assert_eq!(h.raw_body("acme", "main", "b.md").await, "b0");
}
