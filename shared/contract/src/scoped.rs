//! Contract cases for path-scoped keys: a key limited to some paths of its workspace reads
//! and writes only those, and no answer of any route (files, listings, history, diff, change
//! log, snapshots, rollback, runs, uploads, MCP tools, the memory tool) shows a path or a byte
//! outside them, whatever path a request names, however it is spelled. A refusal depends on
//! the path alone, never on whether a file is there.
//!
//! [`KEY_SCOPED`] (acme/main) may write `memory/**`, `notes/*.md` and
//! `memories/agent-1/**`, and read `docs/**` too. The seeded `secret/s.md` is outside.

use crate::harness::{file_uri, Harness, Reply, KEY_A, KEY_SCOPED};
use http::Method;
use serde_json::{json, Value};

/// The file no scoped answer may show, and its content.
pub const HIDDEN: &str = "secret/s.md";
pub const HIDDEN_CONTENT: &str = "C-SECRET-HIDDEN";
/// A second hidden file, inside the memory tool's directory.
const HIDDEN_MEMORY: &str = "memories/agent-2/plan.md";
const HIDDEN_MEMORY_CONTENT: &str = "C-SECRET-PLAN";

/// Seeds acme/main through the whole-workspace key: three files the scoped key reaches
/// and one it does not.
async fn seed(h: &Harness) {
    for (path, content) in [
        ("memory/a.md", "C-MEMORY-A"),
        ("notes/n.md", "C-NOTES"),
        ("docs/d.md", "C-DOCS"),
        (HIDDEN, HIDDEN_CONTENT),
    ] {
        h.put(KEY_A, path, content).await.assert_ok();
    }
}

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// Fails if `r` shows anything of the hidden files (their content ever; their paths
/// unless the request named them itself: a refusal may repeat what it was asked).
fn assert_shows_nothing_hidden(r: &Reply, asked: &str) {
    let body = text(r);
    for content in [HIDDEN_CONTENT, HIDDEN_MEMORY_CONTENT] {
        assert!(!body.contains(content), "{asked} → {body}");
    }
    for path in [HIDDEN, HIDDEN_MEMORY] {
        assert!(
            asked.contains(path) || !body.contains(path),
            "{asked} → {body}"
        );
    }
}

fn paths_of(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap_or_else(|| panic!("rows: {rows}"))
        .iter()
        .map(|f| f["path"].as_str().expect("path").to_owned())
        .collect()
}

/// Every page of the scoped key's file listing, one file per page.
async fn list_all(h: &Harness, key: &str, query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let q = match &token {
            Some(t) => format!("limit=1&{query}&nextToken={t}"),
            None => format!("limit=1&{query}"),
        };
        let r = h.list(key, &q).await;
        assert_shows_nothing_hidden(&r, &q);
        let page = r.assert_ok();
        out.extend(paths_of(&page["files"]));
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => return out,
        }
    }
}

async fn send(h: &Harness, method: Method, uri: &str, body: Option<Value>) -> Reply {
    let call = h.call(method, uri, Some(KEY_SCOPED));
    let r = match body {
        Some(b) => call.json(&b).send().await,
        None => call.send().await,
    };
    assert_shows_nothing_hidden(&r, uri);
    r
}

pub async fn scoped_keys_read_and_write_only_their_paths(h: Harness) {
    seed(&h).await;
    for (path, content) in [("memory/a.md", "C-MEMORY-A"), ("docs/d.md", "C-DOCS")] {
        assert_eq!(
            h.get(KEY_SCOPED, path).await.assert_ok()["content"],
            content
        );
    }
    // Outside: 403, the same answer whether or not a file is there.
    let there = h.get(KEY_SCOPED, HIDDEN).await;
    let absent = h.get(KEY_SCOPED, "secret/absent.md").await;
    assert_shows_nothing_hidden(&there, HIDDEN);
    let there = there.assert_error(403, "forbidden");
    let absent = absent.assert_error(403, "forbidden");
    assert_eq!(
        there["message"].as_str().unwrap().replace(HIDDEN, "P"),
        absent["message"]
            .as_str()
            .unwrap()
            .replace("secret/absent.md", "P")
    );
    for query in ["?version=1", "?snapshot=nope"] {
        send(
            &h,
            Method::GET,
            &format!("{}{query}", file_uri(HIDDEN)),
            None,
        )
        .await
        .assert_error(403, "forbidden");
    }

    // Writes: only under the allow globs (`*` stops at a '/'); read-only paths are 403.
    h.put(KEY_SCOPED, "memory/new.md", "W1").await.assert_ok();
    h.put(KEY_SCOPED, "notes/n.md", "W2").await.assert_ok();
    for path in [
        "notes/deep/x.md",
        "docs/d.md",
        HIDDEN,
        "memory2/x.md",
        "memoryx",
        "notes/n.txt",
    ] {
        let r = h.put(KEY_SCOPED, path, "EVIL").await;
        assert_shows_nothing_hidden(&r, path);
        r.assert_error(403, "forbidden");
    }
    for path in ["docs/d.md", HIDDEN] {
        h.delete(KEY_SCOPED, path)
            .await
            .assert_error(403, "forbidden");
    }
    // Nothing outside changed.
    let whole = h.list(KEY_A, "").await.assert_ok();
    assert_eq!(
        paths_of(&whole["files"]),
        [
            "docs/d.md",
            "memory/a.md",
            "memory/new.md",
            "notes/n.md",
            HIDDEN
        ]
    );
    let hidden = h.get(KEY_A, HIDDEN).await.assert_ok();
    assert_eq!(
        (hidden["content"].clone(), hidden["version"].clone()),
        (json!(HIDDEN_CONTENT), json!(1))
    );
    assert_eq!(h.get(KEY_A, "docs/d.md").await.assert_ok()["version"], 1);

    // Listings show only what the key may read, page by page, under any prefix.
    assert_eq!(
        list_all(&h, KEY_SCOPED, "").await,
        ["docs/d.md", "memory/a.md", "memory/new.md", "notes/n.md"]
    );
    assert!(list_all(&h, KEY_SCOPED, "prefix=secret/").await.is_empty());
    assert!(list_all(&h, KEY_SCOPED, "prefix=s").await.is_empty());

    // History, diff, restore, erase: by the same rules.
    send(
        &h,
        Method::GET,
        "/v1/host/workspace/versions/memory/a.md",
        None,
    )
    .await
    .assert_ok();
    send(
        &h,
        Method::GET,
        "/v1/host/workspace/versions/docs/d.md",
        None,
    )
    .await
    .assert_ok();
    h.put(KEY_A, HIDDEN, "C-SECRET-HIDDEN v2").await.assert_ok();
    for (method, uri, body) in [
        (
            Method::GET,
            format!("/v1/host/workspace/versions/{HIDDEN}"),
            None,
        ),
        (
            Method::GET,
            format!("/v1/host/workspace/diff/{HIDDEN}?from=1"),
            None,
        ),
        (
            Method::POST,
            format!("/v1/host/workspace/versions/{HIDDEN}"),
            Some(json!({"restore": 1})),
        ),
        (
            Method::POST,
            "/v1/host/workspace/versions/docs/d.md".to_owned(),
            Some(json!({"restore": 1})),
        ),
        (
            Method::DELETE,
            format!("/v1/host/workspace/versions/{HIDDEN}/1"),
            None,
        ),
    ] {
        send(&h, method, &uri, body)
            .await
            .assert_error(403, "forbidden");
    }
    let v1 = h
        .call(
            Method::GET,
            &format!("{}?version=1", file_uri(HIDDEN)),
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(v1["content"], HIDDEN_CONTENT, "the refused erase kept it");

    // Uploads: a URL only for a path the key may write.
    let r = crate::uploads::start(&h, KEY_SCOPED, "secret/big.bin", b"xyz", "text/plain").await;
    r.assert_error(403, "forbidden");
    let r = crate::uploads::start(&h, KEY_SCOPED, "memory/big.bin", b"xyz", "text/plain").await;
    r.assert_ok();
}

pub async fn scoped_keys_see_only_their_paths_in_changes_snapshots_and_runs(h: Harness) {
    seed(&h).await;
    // The change log: only entries of readable paths, on every page.
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let q = match &token {
            Some(t) => format!("limit=1&nextToken={t}"),
            None => "limit=1".to_owned(),
        };
        let r = send(
            &h,
            Method::GET,
            &format!("/v1/host/workspace/changes?{q}"),
            None,
        )
        .await;
        let page = r.assert_ok();
        seen.extend(paths_of(&page["changes"]));
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["docs/d.md", "memory/a.md", "notes/n.md"]);
    let under = h.changes(KEY_SCOPED, "prefix=secret/").await;
    assert_eq!(under["changes"], json!([]));

    // A whole-workspace snapshot, read by the scoped key: only its paths.
    let s0 = h
        .checkpoint(KEY_A, json!({"label": "all"}))
        .await
        .assert_ok();
    let s0 = s0["snapshotId"].as_str().unwrap().to_owned();
    let got = send(
        &h,
        Method::GET,
        &format!("/v1/host/workspace/snapshots/{s0}"),
        None,
    )
    .await;
    assert_eq!(
        paths_of(&got.assert_ok()["files"]),
        ["docs/d.md", "memory/a.md", "notes/n.md"]
    );
    assert_eq!(
        list_all(&h, KEY_SCOPED, &format!("snapshot={s0}")).await,
        ["docs/d.md", "memory/a.md", "notes/n.md"]
    );
    send(
        &h,
        Method::GET,
        &format!("{}?snapshot={s0}", file_uri(HIDDEN)),
        None,
    )
    .await
    .assert_error(403, "forbidden");

    // Rolling it back with the scoped key touches only paths it may write.
    for path in ["memory/a.md", "docs/d.md", HIDDEN] {
        h.put(KEY_A, path, "changed").await.assert_ok();
    }
    let report = send(
        &h,
        Method::POST,
        &format!("/v1/host/workspace/snapshots/{s0}/restore"),
        Some(json!({})),
    )
    .await
    .assert_ok();
    assert_eq!(report["restored"], json!(["memory/a.md"]), "{report}");
    assert_eq!(report["deleted"], json!([]), "{report}");
    assert_eq!(
        h.get(KEY_A, "memory/a.md").await.assert_ok()["content"],
        "C-MEMORY-A"
    );
    for path in ["docs/d.md", HIDDEN] {
        assert_eq!(h.get(KEY_A, path).await.assert_ok()["content"], "changed");
    }
    // A rollback report is never replayed to another scope under the same key.
    let replayed = h
        .rollback_once(KEY_A, &s0, "rollback-1", json!({}))
        .await
        .assert_ok();
    assert!(text_of(&replayed).contains(HIDDEN), "{replayed}");
    let r = h
        .rollback_once(KEY_SCOPED, &s0, "rollback-1", json!({}))
        .await;
    assert_shows_nothing_hidden(&r, "replay");
    r.assert_error(409, "workspace_conflict");

    // A scoped snapshot holds only the key's paths, says which globs, and a rollback to
    // it (by anyone) leaves every other path alone.
    let s1 = send(
        &h,
        Method::POST,
        "/v1/host/workspace/snapshots",
        Some(json!({"label": "mine"})),
    )
    .await
    .assert_ok();
    assert_eq!(
        paths_of(&s1["files"]),
        ["docs/d.md", "memory/a.md", "notes/n.md"]
    );
    assert_eq!(
        s1["paths"],
        json!(["docs/**", "memories/agent-1/**", "memory/**", "notes/*.md"])
    );
    let s1 = s1["snapshotId"].as_str().unwrap().to_owned();
    h.put(KEY_A, "secret/t.md", "new outside").await.assert_ok();
    h.put(KEY_A, "memory/a.md", "changed again")
        .await
        .assert_ok();
    let report = h.rollback(KEY_A, &s1, json!({})).await.assert_ok();
    assert_eq!(report["restored"], json!(["memory/a.md"]), "{report}");
    assert_eq!(report["deleted"], json!([]), "{report}");
    h.get(KEY_A, "secret/t.md").await.assert_ok();

    // Deleting: only snapshots taken through the key's own globs.
    send(
        &h,
        Method::DELETE,
        &format!("/v1/host/workspace/snapshots/{s0}"),
        None,
    )
    .await
    .assert_error(403, "forbidden");
    let r = send(
        &h,
        Method::DELETE,
        &format!("/v1/host/workspace/snapshots/{s1}"),
        None,
    )
    .await;
    assert_eq!(r.status.as_u16(), 204, "{}", text(&r));

    // Runs: the scoped key's run holds its paths; another's run shows it only its paths.
    let mine = h.start_run(KEY_SCOPED, "wf-scoped").await;
    assert_shows_nothing_hidden(&mine, "run");
    let mine = mine.assert_ok()["runId"].as_str().unwrap().to_owned();
    let theirs = h.start_run(KEY_A, "wf-all").await.assert_ok()["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text_of(&h.get_run(KEY_A, &theirs).await.assert_ok()).contains("secret/"));
    for id in [&mine, &theirs] {
        let r = h.get_run(KEY_SCOPED, id).await;
        assert_shows_nothing_hidden(&r, id);
        assert!(!text(&r).contains("secret/"), "{}", text(&r));
        assert!(text(&r).contains("memory/a.md"), "{}", text(&r));
    }
    let r = h.get_run(KEY_A, &mine).await;
    assert!(!text(&r).contains("secret/"), "{}", text(&r));
}

fn text_of(v: &Value) -> String {
    v.to_string()
}

/// Spellings of a path outside the scope dressed as one inside: dot segments, encoded
/// separators and dots, backslashes, glob metacharacters, case. None reaches a byte
/// outside (400, 403 or 404), and none writes anything.
const HOSTILE: &[&str] = &[
    HIDDEN,
    "secret/absent.md",
    "memory/../secret/s.md",
    "memory/%2e%2e/secret/s.md",
    "memory/%2E%2E%2Fsecret%2Fs.md",
    "memory%2F..%2Fsecret%2Fs.md",
    "memory/./../secret/s.md",
    "memory/a.md/../../secret/s.md",
    "memory//../secret/s.md",
    "memory/%2e%2e%2f%2e%2e%2fsecret/s.md",
    "memory%5C..%5Csecret%5Cs.md",
    "memory/..%5Csecret%5Cs.md",
    "%6Demory/../secret/s.md",
    "docs/../memory/../secret/s.md",
    "notes/../secret/s.md",
    "./secret/s.md",
    "memory/%00/../secret/s.md",
    "secret/s.md%00memory/a.md",
    "memory/*",
    "memory/**",
    "memory/%2A%2A/s.md",
    "memory/%5Bs%5Decret",
    "memory/%7Ba,secret%7D/s.md",
    "memory/%3F.md",
    "secret/*",
    "%2A%2A/s.md",
    "MEMORY/a.md",
    "Secret/s.md",
    "memory/a.md%20/../../secret/s.md",
];

pub async fn hostile_paths_never_escape_a_key_scope(h: Harness) {
    seed(&h).await;
    let before = h.list(KEY_A, "").await.assert_ok();
    for tail in HOSTILE {
        let calls = [
            (
                Method::GET,
                format!("/v1/host/workspace/files/{tail}"),
                None,
            ),
            (
                Method::PUT,
                format!("/v1/host/workspace/files/{tail}"),
                Some(json!({"content": "EVIL"})),
            ),
            (
                Method::DELETE,
                format!("/v1/host/workspace/files/{tail}"),
                None,
            ),
            (
                Method::GET,
                format!("/v1/host/workspace/versions/{tail}"),
                None,
            ),
            (
                Method::GET,
                format!("/v1/host/workspace/diff/{tail}?from=1"),
                None,
            ),
            (
                Method::GET,
                format!("/v1/host/workspace/files?prefix={tail}"),
                None,
            ),
        ];
        for (method, uri, body) in calls {
            let listing = uri.contains("files?prefix=");
            let r = send(&h, method.clone(), &uri, body).await;
            let status = r.status.as_u16();
            if listing && status == 200 {
                // A prefix that parses lists only what the key may read.
                for p in paths_of(&r.json()["files"]) {
                    assert!(!p.starts_with("secret/"), "{uri} → {p}");
                }
                continue;
            }
            assert!(
                [400, 403, 404].contains(&status),
                "{method} {uri} → {status} {}",
                text(&r)
            );
        }
        // The same spellings through the MCP tools and the memory tool. The tools resolve
        // `.` and `..` lexically, as a file system would, so a spelling may land on a path
        // inside the scope (`memory/x/../secret/s.md` is `memory/secret/s.md`); it must
        // never reach one outside (checked below, on what the workspace holds).
        let decoded = percent_encoding::percent_decode_str(tail)
            .decode_utf8_lossy()
            .into_owned();
        for (name, args) in [
            ("read_file", json!({"path": decoded})),
            ("write_file", json!({"path": decoded, "content": "EVIL"})),
            ("get_file_info", json!({"path": decoded})),
        ] {
            let (out, _) = crate::mcp::tool(&h, KEY_SCOPED, name, args).await;
            assert!(!out.contains(HIDDEN_CONTENT), "{name} {decoded:?} → {out}");
        }
        let asked = format!("/memories/agent-1/../../{decoded}");
        let r = h
            .call(Method::POST, "/v1/host/workspace/memory", Some(KEY_SCOPED))
            .json(&json!({"command": "view", "path": asked}))
            .send()
            .await;
        assert_shows_nothing_hidden(&r, &asked);
    }
    // Nothing was written outside the scope, and the hidden file is as it was.
    let scope = crate::harness::scoped_paths();
    let before = paths_of(&before["files"]);
    for path in paths_of(&h.list(KEY_A, "").await.assert_ok()["files"]) {
        assert!(
            before.contains(&path) || scope.can_write(&path),
            "{path} was written"
        );
    }
    assert_eq!(h.get(KEY_A, HIDDEN).await.assert_ok()["version"], 1);
}

pub async fn scoped_keys_use_tools_and_memory_only_within_their_paths(h: Harness) {
    for (path, content) in [
        ("memory/a.md", "C-MEMORY-A"),
        (HIDDEN, HIDDEN_CONTENT),
        (HIDDEN_MEMORY, HIDDEN_MEMORY_CONTENT),
    ] {
        h.put(KEY_A, path, content).await.assert_ok();
    }
    let tool = |name: &'static str, args: Value| {
        let h = &h;
        async move {
            let (out, is_error) = crate::mcp::tool(h, KEY_SCOPED, name, args.clone()).await;
            for hidden in [HIDDEN_CONTENT, HIDDEN_MEMORY_CONTENT, "secret", "agent-2"] {
                let named = args.to_string().contains(hidden);
                assert!(named || !out.contains(hidden), "{name} {args} → {out}");
            }
            (out, is_error)
        }
    };
    let (out, err) = tool("list_directory", json!({"path": "/workspace"})).await;
    // A directory holding only files the key cannot see does not show either.
    assert!(
        !err && out.contains("[DIR] memory") && !out.contains("memories"),
        "{out}"
    );
    // A search over every file's content finds the key's files and nothing else.
    let (out, err) = tool("grep", json!({"pattern": "C-"})).await;
    assert!(!err && out.contains("C-MEMORY-A"), "{out}");
    let (out, _) = tool(
        "search_files",
        json!({"path": "/workspace", "pattern": "**/*.md"}),
    )
    .await;
    assert!(out.contains("memory/a.md"), "{out}");
    let (_, err) = tool("read_file", json!({"path": HIDDEN})).await;
    assert!(err);
    let (_, err) = tool(
        "write_file",
        json!({"path": "secret/x.md", "content": "EVIL"}),
    )
    .await;
    assert!(err);
    let (_, err) = tool(
        "move_file",
        json!({"source": "memory/a.md", "destination": "secret/a.md"}),
    )
    .await;
    assert!(err);
    h.get(KEY_A, "memory/a.md").await.assert_ok();
    h.get(KEY_A, "secret/x.md")
        .await
        .assert_error(404, "not_found");
    h.get(KEY_A, "secret/a.md")
        .await
        .assert_error(404, "not_found");

    // The memory tool: the key's own memory directory works; another agent's is unseen.
    let (out, err) = h
        .memory(
            KEY_SCOPED,
            json!({"command": "create", "path": "/memories/agent-1/notes.md", "file_text": "mine"}),
        )
        .await;
    assert!(!err, "{out}");
    let view = h
        .call(Method::POST, "/v1/host/workspace/memory", Some(KEY_SCOPED))
        .json(&json!({"command": "view", "path": "/memories"}))
        .send()
        .await;
    assert_shows_nothing_hidden(&view, "view /memories");
    assert!(!text(&view).contains("agent-2"), "{}", text(&view));
    assert!(text(&view).contains("notes.md"), "{}", text(&view));
    for input in [
        json!({"command": "view", "path": format!("/{HIDDEN_MEMORY}")}),
        json!({"command": "create", "path": "/memories/agent-2/x.md", "file_text": "EVIL"}),
        json!({"command": "rename", "old_path": "/memories/agent-1/notes.md", "new_path": "/memories/agent-2/notes.md"}),
        json!({"command": "delete", "path": "/memories/agent-2"}),
    ] {
        let r = h
            .call(Method::POST, "/v1/host/workspace/memory", Some(KEY_SCOPED))
            .json(&input)
            .send()
            .await;
        assert_shows_nothing_hidden(&r, &input.to_string());
        let refused = r.status.as_u16() == 403 || r.json()["isError"] == true;
        assert!(refused, "{input} → {}", text(&r));
    }
    assert_eq!(
        h.get(KEY_A, HIDDEN_MEMORY).await.assert_ok()["content"],
        HIDDEN_MEMORY_CONTENT
    );
    h.get(KEY_A, "memories/agent-1/notes.md").await.assert_ok();
}

/// Routes over other namespaces than the workspace's paths refuse a path-scoped key.
pub async fn routes_without_paths_refuse_scoped_keys(h: Harness) {
    let uris = [
        (
            Method::PUT,
            "/v1/host/cache/k1",
            Some(json!({"value": "v", "ttlSeconds": 60})),
        ),
        (Method::GET, "/v1/host/cache/k1", None),
        (Method::GET, "/v1/host/blob/default", None),
        (Method::GET, "/v1/host/blob/default/a.bin", None),
        (
            Method::POST,
            "/v1/host/blob/default/presign",
            Some(json!({"key": "a.bin", "method": "GET"})),
        ),
        (Method::GET, "/workspaces", None),
        (Method::POST, "/workspaces", Some(json!({}))),
    ];
    for (method, uri, body) in uris {
        let call = h.call(method.clone(), uri, Some(KEY_SCOPED));
        let r = match body {
            Some(b) => call.json(&b).send().await,
            None => call.send().await,
        };
        r.assert_error(403, "forbidden");
    }
    // The same routes answer a whole-workspace key (so the 403 is the scope's).
    let r = h
        .call(Method::GET, "/v1/host/blob/default", Some(KEY_A))
        .send()
        .await;
    r.assert_ok();
}
