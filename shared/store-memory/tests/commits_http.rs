//! `POST /v1/host/workspace/commits` through the real router on the in-memory stores: a
//! commit applies every operation or none, within its limits and the key's paths.

use http::Method;
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_contract::harness::{Harness, KEY_A, KEY_SCOPED};
use workspace_contract::Backend;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

const COMMITS: &str = "/v1/host/workspace/commits";

async fn harness() -> Harness {
    Harness::new(Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    })
    .await
}

async fn commit(h: &Harness, key: &str, body: &Value) -> workspace_contract::harness::Reply {
    h.call(Method::POST, COMMITS, Some(key))
        .json(body)
        .send()
        .await
}

#[tokio::test]
async fn put_delete_and_move_apply_together() {
    let h = harness().await;
    h.put(KEY_A, "old.md", "gone").await.assert_ok();
    let draft = h.put(KEY_A, "draft.md", "plan").await.assert_ok();
    let answer = commit(
        &h,
        KEY_A,
        &json!({ "message": "file the plan", "operations": [
            { "op": "put", "path": "new.md", "content": "fresh", "ifNoneMatch": "*" },
            { "op": "delete", "path": "old.md" },
            { "op": "move", "from": "draft.md", "to": "notes/plan.md", "ifMatch": draft["etag"] },
        ] }),
    )
    .await
    .assert_ok();
    assert_eq!(answer["replayed"], false, "{answer}");
    let r = &answer["results"];
    assert_eq!(r[0]["op"], "put");
    assert_eq!(r[0]["path"], "new.md");
    assert_eq!(r[0]["version"], 1);
    assert!(
        r[0]["etag"].is_string() && r[0].get("content").is_none(),
        "{r}"
    );
    assert_eq!(
        r[1],
        json!({ "op": "delete", "path": "old.md", "version": 2 })
    );
    assert_eq!(r[2]["op"], "move");
    assert_eq!(r[2]["from"], "draft.md");
    assert_eq!(r[2]["fromVersion"], 2);
    assert_eq!(r[2]["to"]["path"], "notes/plan.md");
    assert_eq!(r[2]["to"]["version"], 1);

    assert_eq!(h.get(KEY_A, "new.md").await.assert_ok()["content"], "fresh");
    h.get(KEY_A, "old.md").await.assert_error(404, "not_found");
    h.get(KEY_A, "draft.md")
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.get(KEY_A, "notes/plan.md").await.assert_ok()["content"],
        "plan"
    );
    // The moved file's history stays under its old path: its version, then the deletion.
    let history = h
        .call(
            Method::GET,
            "/v1/host/workspace/versions/draft.md",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    let versions: Vec<u64> = history["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_u64())
        .collect();
    assert_eq!(versions, vec![2, 1], "{history}");
}

#[tokio::test]
async fn a_failed_precondition_applies_nothing() {
    let h = harness().await;
    h.put(KEY_A, "a.md", "A").await.assert_ok();
    h.put(KEY_A, "b.md", "B").await.assert_ok();
    let before = h.state(KEY_A).await;
    let refused = commit(
        &h,
        KEY_A,
        &json!({ "operations": [
            { "op": "put", "path": "a.md", "content": "A2" },
            { "op": "move", "from": "b.md", "to": "c.md" },
            { "op": "put", "path": "d.md", "content": "D" },
            { "op": "delete", "path": "a-missing.md" },
        ] }),
    )
    .await
    .assert_error(409, "workspace_conflict");
    assert_eq!(refused["details"]["currentVersion"], 0, "{refused}");
    let stale = commit(
        &h,
        KEY_A,
        &json!({ "operations": [
            { "op": "put", "path": "d.md", "content": "D" },
            { "op": "put", "path": "b.md", "content": "B2", "ifMatch": "\"not-the-etag\"" },
        ] }),
    )
    .await
    .assert_error(409, "workspace_conflict");
    assert_eq!(stale["details"]["currentVersion"], 1, "{stale}");
    assert_eq!(h.state(KEY_A).await, before);
    for path in ["c.md", "d.md"] {
        h.get(KEY_A, path).await.assert_error(404, "not_found");
    }
}

#[tokio::test]
async fn limits_keys_and_bad_bodies_are_refused() {
    let h = harness().await;
    let ops: Vec<Value> = (0..21)
        .map(|i| json!({ "op": "put", "path": format!("f{i}.md"), "content": "x" }))
        .collect();
    let too_many = commit(&h, KEY_A, &json!({ "operations": ops }))
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(too_many["details"]["limit"], 20);

    // KEY_SCOPED writes memory/** but not docs/**.
    let outside = json!({ "operations": [
        { "op": "put", "path": "memory/a.md", "content": "in" },
        { "op": "put", "path": "docs/b.md", "content": "out" },
    ] });
    commit(&h, KEY_SCOPED, &outside)
        .await
        .assert_error(403, "forbidden");
    h.get(KEY_A, "memory/a.md")
        .await
        .assert_error(404, "not_found");
    let inside = json!({ "operations": [{ "op": "put", "path": "memory/a.md", "content": "in" }] });
    commit(&h, KEY_SCOPED, &inside).await.assert_ok();

    for bad in [
        "{not json",
        r#"{"operations": [{"op": "copy", "path": "a.md"}]}"#,
        r#"{"operations": [{"op": "delete", "path": "a.md", "if_match": "x"}]}"#,
        r#"{"operations": [{"op": "put", "path": "a.md", "content": "x", "contentBase64": "eA=="}]}"#,
        r#"{"operations": [{"op": "delete", "path": "../a.md"}]}"#,
        r#"{"operations": []}"#,
    ] {
        let e = h
            .call(Method::POST, COMMITS, Some(KEY_A))
            .header("content-type", "application/json")
            .body(bad)
            .send()
            .await
            .assert_error(400, "validation_error");
        assert!(e["message"].is_string(), "{bad}: {e}");
    }
}

#[tokio::test]
async fn a_retry_with_the_same_key_is_replayed() {
    let h = harness().await;
    h.put(KEY_A, "gone.md", "x").await.assert_ok();
    let body = json!({ "operations": [
        { "op": "put", "path": "a.md", "content": "A" },
        { "op": "delete", "path": "gone.md" },
    ] });
    let send = || {
        h.call(Method::POST, COMMITS, Some(KEY_A))
            .header("idempotency-key", "commit-1")
            .json(&body)
            .send()
    };
    let first = send().await.assert_ok();
    assert_eq!(first["replayed"], false);
    let after = h.state(KEY_A).await;
    let again = send().await.assert_ok();
    assert_eq!(again["replayed"], true, "{again}");
    assert_eq!(
        again["results"][0]["version"],
        first["results"][0]["version"]
    );
    assert_eq!(again["results"][0]["etag"], first["results"][0]["etag"]);
    assert_eq!(h.state(KEY_A).await, after);
    let versions = h
        .call(Method::GET, "/v1/host/workspace/versions/a.md", Some(KEY_A))
        .send()
        .await
        .assert_ok();
    assert_eq!(versions["versions"].as_array().map(Vec::len), Some(1));
}
