//! Atomic multi-path commits (`POST /v1/host/workspace/commits`) on every backend: puts,
//! deletes and moves that apply together or not at all, each under its precondition, with
//! the put path's rules (versions, redaction, idempotency, scopes, isolation). Every crash
//! point of a commit is in the fault suite (`faults.rs`, `Op::Commit`).

use crate::harness::*;
use http::Method;
use serde_json::{json, Value};

const COMMITS: &str = "/v1/host/workspace/commits";

async fn commit(h: &Harness, key: &str, ops: Value) -> Reply {
    h.call(Method::POST, COMMITS, Some(key))
        .json(&json!({ "operations": ops }))
        .send()
        .await
}

async fn content(h: &Harness, path: &str) -> Option<String> {
    let r = h.get(KEY_A, path).await;
    match r.status.as_u16() {
        404 => None,
        200 => r.json()["content"].as_str().map(str::to_owned),
        other => panic!("reading {path}: {other}"),
    }
}

async fn changes(h: &Harness) -> usize {
    h.call(Method::GET, "/v1/host/workspace/changes", Some(KEY_A))
        .send()
        .await
        .assert_ok()["changes"]
        .as_array()
        .map_or(0, Vec::len)
}

pub async fn commits_apply_all_or_nothing_under_the_put_rules(h: Harness) {
    let a1 = h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    let etag_a1 = a1["etag"].as_str().unwrap().to_owned();

    // Three paths in one commit: each applied, each a version of its own.
    let done = commit(
        &h,
        KEY_A,
        json!([
            {"op": "put", "path": "a.md", "content": "a2", "ifMatch": etag_a1},
            {"op": "delete", "path": "b.md"},
            {"op": "put", "path": "c.md", "content": "c1", "ifNoneMatch": "*"},
        ]),
    )
    .await
    .assert_ok();
    assert_eq!(done["replayed"], false, "{done}");
    assert_eq!(done["results"][0]["version"], 2, "{done}");
    assert_eq!(done["results"][1]["version"], 2, "{done}");
    assert_eq!(done["results"][2]["version"], 1, "{done}");
    assert_eq!(content(&h, "a.md").await.as_deref(), Some("a2"));
    assert_eq!(content(&h, "b.md").await, None);
    assert_eq!(content(&h, "c.md").await.as_deref(), Some("c1"));

    // A move: `from` is deleted with its history readable, `to` starts as a new version.
    let moved = commit(
        &h,
        KEY_A,
        json!([{"op": "move", "from": "c.md", "to": "d.md"}]),
    )
    .await
    .assert_ok();
    assert_eq!(moved["results"][0]["to"]["version"], 1, "{moved}");
    assert_eq!(content(&h, "c.md").await, None);
    assert_eq!(content(&h, "d.md").await.as_deref(), Some("c1"));
    let history = h
        .call(Method::GET, "/v1/host/workspace/versions/c.md", Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let versions: Vec<u64> = history["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|v| v["version"].as_u64())
        .collect();
    assert!(
        versions.contains(&1) && versions.contains(&2),
        "the moved file's history stays listed (its write and its tombstone): {history}"
    );

    // One failed precondition: nothing of the commit applies, the change log is unchanged.
    let logged = changes(&h).await;
    let e = commit(
        &h,
        KEY_A,
        json!([
            {"op": "put", "path": "a.md", "content": "lost"},
            {"op": "delete", "path": "d.md"},
            {"op": "put", "path": "e.md", "content": "x", "ifMatch": "\"no-such-etag\""},
        ]),
    )
    .await
    .assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 0, "{e}");
    assert!(e["message"].as_str().unwrap().contains("e.md"), "{e}");
    assert_eq!(content(&h, "a.md").await.as_deref(), Some("a2"));
    assert_eq!(content(&h, "d.md").await.as_deref(), Some("c1"));
    assert_eq!(content(&h, "e.md").await, None);
    assert_eq!(changes(&h).await, logged, "a refused commit logs nothing");
    // A stale ifMatch names the current version; a move onto an existing path with
    // ifNoneMatch is refused; a delete of nothing is refused.
    let e = commit(
        &h,
        KEY_A,
        json!([{"op": "put", "path": "a.md", "content": "x", "ifMatch": etag_a1}]),
    )
    .await
    .assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 2, "{e}");
    commit(
        &h,
        KEY_A,
        json!([{"op": "move", "from": "d.md", "to": "a.md", "ifNoneMatch": "*"}]),
    )
    .await
    .assert_error(409, "workspace_conflict");
    commit(&h, KEY_A, json!([{"op": "delete", "path": "never.md"}]))
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(changes(&h).await, logged);

    // Idempotency: a retry answers again and applies nothing; another request under the
    // same key is refused.
    let keyed = |ops: Value| {
        h.call(Method::POST, COMMITS, Some(KEY_A))
            .header("idempotency-key", "commit-once")
            .json(&json!({ "operations": ops }))
    };
    let first = keyed(json!([{"op": "put", "path": "f.md", "content": "f"}]))
        .send()
        .await
        .assert_ok();
    assert_eq!(first["replayed"], false);
    let again = keyed(json!([{"op": "put", "path": "f.md", "content": "f"}]))
        .send()
        .await
        .assert_ok();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(again["results"][0]["version"], 1, "{again}");
    keyed(json!([{"op": "put", "path": "f.md", "content": "other"}]))
        .send()
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(content(&h, "f.md").await.as_deref(), Some("f"));

    // Bounds and bad requests: refused whole, nothing applied.
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"op": "delete", "path": format!("x{i}.md")}))
        .collect();
    let e = commit(&h, KEY_A, Value::Array(many))
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(e["details"]["limit"], 20, "{e}");
    commit(
        &h,
        KEY_A,
        json!([
            {"op": "put", "path": "g.md", "content": "1"},
            {"op": "delete", "path": "g.md"},
        ]),
    )
    .await
    .assert_error(400, "validation_error");
    for bad in [
        json!([]),
        json!([{"op": "chmod", "path": "a.md"}]),
        json!([{"op": "put", "path": "../a.md", "content": "x"}]),
    ] {
        commit(&h, KEY_A, bad.clone())
            .await
            .assert_error(400, "validation_error");
    }
    assert_eq!(content(&h, "g.md").await, None);

    // WSR-1: a commit's content is redacted like a put's.
    commit(
        &h,
        KEY_A,
        json!([{"op": "put", "path": "keys.env", "content": "aws=AKIAIOSFODNN7EXAMPLE\n"}]),
    )
    .await
    .assert_ok();
    let stored = content(&h, "keys.env").await.unwrap();
    assert!(!stored.contains("AKIAIOSFODNN7EXAMPLE"), "{stored}");
}

pub async fn commits_stay_in_their_workspace_and_their_key_s_paths(h: Harness) {
    h.put(KEY_A, "a.md", "mine").await.assert_ok();
    // Another tenant's commit lands in its own workspace only.
    commit(
        &h,
        KEY_EVIL,
        json!([{"op": "put", "path": "a.md", "content": "evil"}]),
    )
    .await
    .assert_ok();
    commit(&h, KEY_EVIL, json!([{"op": "delete", "path": "a.md"}]))
        .await
        .assert_ok();
    assert_eq!(content(&h, "a.md").await.as_deref(), Some("mine"));
    // A read-only key commits nothing.
    commit(&h, KEY_READ_ONLY, json!([{"op": "delete", "path": "a.md"}]))
        .await
        .assert_error(403, "forbidden");
    // A path-scoped key: one path outside its globs refuses the whole commit.
    commit(
        &h,
        KEY_SCOPED,
        json!([
            {"op": "put", "path": "notes/ok.md", "content": "in scope"},
            {"op": "put", "path": "outside.md", "content": "out of scope"},
        ]),
    )
    .await
    .assert_error(403, "forbidden");
    assert_eq!(content(&h, "notes/ok.md").await, None);
    commit(
        &h,
        KEY_SCOPED,
        json!([{"op": "move", "from": "a.md", "to": "notes/stolen.md"}]),
    )
    .await
    .assert_error(403, "forbidden");
    assert_eq!(content(&h, "a.md").await.as_deref(), Some("mine"));
    commit(
        &h,
        KEY_SCOPED,
        json!([{"op": "put", "path": "notes/ok.md", "content": "in scope"}]),
    )
    .await
    .assert_ok();
    assert_eq!(
        content(&h, "notes/ok.md").await.as_deref(),
        Some("in scope")
    );
}
