//! Contract cases for the change log: every committed change, newest first, paged,
//! filtered by time, principal and prefix, scoped like everything else.

use crate::harness::{Harness, KEY_A, KEY_EVIL, KEY_TENANT};
use http::Method;
use serde_json::{json, Value};

const CHANGES: &str = "/v1/host/workspace/changes";

impl Harness {
    pub async fn changes(&self, key: &str, query: &str) -> Value {
        self.call(Method::GET, &format!("{CHANGES}?{query}"), Some(key))
            .send()
            .await
            .assert_ok()
    }
}

fn rows(page: &Value) -> Vec<(String, u64, String)> {
    page["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_owned(),
                c["version"].as_u64().unwrap(),
                c["operation"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn now_text(h: &Harness) -> String {
    use workspace_core::ports::Clock;
    workspace_core::model::format_time(h.clock.now_ms())
}

pub async fn the_change_log_lists_every_commit_newest_first(h: Harness) {
    let a1 = h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.clock.advance(10);
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    h.clock.advance(10);
    let middle = now_text(&h);
    assert_eq!(h.delete(KEY_A, "a.md").await.status, 204);
    h.clock.advance(10);
    // Another principal of the same workspace (a tenant-wide key naming it).
    h.call(
        Method::PUT,
        "/v1/host/workspace/files/docs/c.md",
        Some(KEY_TENANT),
    )
    .header("x-workspace-id", "main")
    .json(&json!({"content": "c1"}))
    .send()
    .await
    .assert_ok();

    let all = h.changes(KEY_A, "").await;
    assert_eq!(
        rows(&all),
        [
            ("docs/c.md".into(), 1, "put".into()),
            ("a.md".into(), 2, "delete".into()),
            ("b.md".into(), 1, "put".into()),
            ("a.md".into(), 1, "put".into()),
        ]
    );
    let first = &all["changes"][3];
    assert_eq!(first["etag"], a1["etag"]);
    assert!(first["time"].as_str().unwrap().ends_with('Z'));
    assert!(first["principal"].as_str().is_some_and(|p| !p.is_empty()));
    let mine = first["principal"].as_str().unwrap().to_owned();
    let theirs = all["changes"][0]["principal"].as_str().unwrap().to_owned();
    assert_ne!(mine, theirs);

    // Pages of two.
    let p1 = h.changes(KEY_A, "limit=2").await;
    assert_eq!(rows(&p1), rows(&all)[..2]);
    let token = p1["nextToken"].as_str().expect("nextToken");
    let p2 = h
        .changes(KEY_A, &format!("limit=2&nextToken={token}"))
        .await;
    assert_eq!(rows(&p2), rows(&all)[2..]);
    // The end: no token, or (where the store cannot tell yet) one to an empty page.
    if let Some(t) = p2["nextToken"].as_str() {
        let p3 = h.changes(KEY_A, &format!("limit=2&nextToken={t}")).await;
        assert!(rows(&p3).is_empty(), "{p3}");
    }

    // Filters.
    assert_eq!(
        rows(&h.changes(KEY_A, "prefix=docs/").await),
        rows(&all)[..1]
    );
    assert_eq!(
        rows(&h.changes(KEY_A, &format!("principal={mine}")).await),
        rows(&all)[1..]
    );
    let since = h.changes(KEY_A, &format!("since={middle}")).await;
    assert_eq!(rows(&since), rows(&all)[..2]);
    let until = h.changes(KEY_A, &format!("until={middle}")).await;
    assert_eq!(rows(&until), rows(&all)[2..]);
    // A filtered page continues with the same filters (the token is bound to them).
    let f1 = h.changes(KEY_A, &format!("principal={mine}&limit=1")).await;
    let ft = f1["nextToken"].as_str().expect("nextToken");
    let f2 = h
        .changes(KEY_A, &format!("principal={mine}&limit=1&nextToken={ft}"))
        .await;
    assert_eq!(rows(&f2), rows(&all)[2..3]);
    h.call(
        Method::GET,
        &format!("{CHANGES}?nextToken={ft}"),
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(400, "validation_error");

    // Scoped: another tenant's log is its own (empty).
    assert_eq!(h.changes(KEY_EVIL, "").await["changes"], json!([]));
    for bad in [
        "since=yesterday",
        "limit=0",
        "limit=101",
        "prefix=../x",
        "nextToken=forged",
    ] {
        h.call(Method::GET, &format!("{CHANGES}?{bad}"), Some(KEY_A))
            .send()
            .await
            .assert_error(400, "validation_error");
    }
}
