//! Contract cases for version history, restore and diff.

use crate::harness::{Harness, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY, LIMITS};
use http::Method;
use serde_json::{json, Value};

pub fn versions_uri(path: &str) -> String {
    format!("/v1/host/workspace/versions/{path}")
}

impl Harness {
    /// `GET /v1/host/workspace/versions/{path}[?query]`.
    pub async fn history(&self, key: &str, path: &str, query: &str) -> crate::harness::Reply {
        let uri = match query {
            "" => versions_uri(path),
            q => format!("{}?{q}", versions_uri(path)),
        };
        self.call(Method::GET, &uri, Some(key)).send().await
    }

    /// `POST /v1/host/workspace/versions/{path}` with `{"restore": n}`.
    pub async fn restore(
        &self,
        key: &str,
        path: &str,
        n: u64,
        if_match: Option<&str>,
    ) -> crate::harness::Reply {
        let mut c = self
            .call(Method::POST, &versions_uri(path), Some(key))
            .json(&json!({ "restore": n }));
        if let Some(e) = if_match {
            c = c.header("if-match", e);
        }
        c.send().await
    }

    /// `GET /v1/host/workspace/files/{path}?version=n`.
    pub async fn get_version(&self, key: &str, path: &str, n: u64) -> crate::harness::Reply {
        self.call(
            Method::GET,
            &format!("/v1/host/workspace/files/{path}?version={n}"),
            Some(key),
        )
        .send()
        .await
    }

    pub async fn diff(&self, key: &str, path: &str, query: &str) -> crate::harness::Reply {
        self.call(
            Method::GET,
            &format!("/v1/host/workspace/diff/{path}?{query}"),
            Some(key),
        )
        .send()
        .await
    }
}

fn versions_of(v: &Value) -> Vec<u64> {
    v["versions"]
        .as_array()
        .expect("versions array")
        .iter()
        .map(|r| r["version"].as_u64().expect("version"))
        .collect()
}

pub async fn history_lists_exactly_the_retained_versions(h: Harness) {
    let mut etags = vec![String::new()];
    for i in 1..=5 {
        let v = h.put(KEY_A, "h.md", &format!("v{i}")).await.assert_ok();
        etags.push(v["etag"].as_str().unwrap().to_owned());
    }
    let all = h.history(KEY_A, "h.md", "").await.assert_ok();
    let kept: Vec<u64> = (1..=5u64)
        .rev()
        .take(LIMITS.max_versions as usize)
        .collect();
    assert_eq!(
        versions_of(&all),
        kept,
        "newest first, the last maxVersions"
    );
    for row in all["versions"].as_array().unwrap() {
        let n = row["version"].as_u64().unwrap();
        assert_eq!(row["etag"], etags[n as usize]);
        assert_eq!(row["size"], 2);
        assert_eq!(row["deleted"], false);
        assert_eq!(row["principal"], "alice");
        assert!(row["updatedAt"].as_str().unwrap().ends_with('Z'));
        assert!(
            row.get("content").is_none(),
            "history rows carry no content"
        );
    }
    // Every listed version reads; every other is 404.
    for n in 1..=5u64 {
        let r = h.get_version(KEY_A, "h.md", n).await;
        if kept.contains(&n) {
            assert_eq!(r.assert_ok()["content"], format!("v{n}"));
        } else {
            r.assert_error(404, "not_found");
        }
    }
    // Paging: opaque token, no overlap, nothing missed.
    let p1 = h.history(KEY_A, "h.md", "limit=2").await.assert_ok();
    assert_eq!(versions_of(&p1), kept[..2]);
    let token = p1["nextToken"].as_str().expect("nextToken").to_owned();
    let p2 = h
        .history(KEY_A, "h.md", &format!("limit=2&nextToken={token}"))
        .await
        .assert_ok();
    assert_eq!(versions_of(&p2), kept[2..]);
    assert!(p2.get("nextToken").is_none());
    // The token is signed for this path's history: another path's, or an altered one, is 400.
    h.put(KEY_A, "other.md", "o").await.assert_ok();
    for (path, t) in [("other.md", token.clone()), ("h.md", format!("{token}A"))] {
        h.history(KEY_A, path, &format!("limit=2&nextToken={t}"))
            .await
            .assert_error(400, "validation_error");
    }
    // A delete is a tombstone entry at the top.
    assert_eq!(h.delete(KEY_A, "h.md").await.status, 204);
    let after = h.history(KEY_A, "h.md", "").await.assert_ok();
    assert_eq!(after["versions"][0]["version"], 6);
    assert_eq!(after["versions"][0]["deleted"], true);
    assert_eq!(after["versions"].as_array().unwrap().len(), kept.len());
    // Unknown paths, other scopes and bad parameters.
    h.history(KEY_A, "never.md", "")
        .await
        .assert_error(404, "not_found");
    for outsider in [KEY_EVIL, KEY_OTHER] {
        h.history(outsider, "h.md", "")
            .await
            .assert_error(404, "not_found");
    }
    for bad in ["limit=0", "limit=101", "limit=x", "nextToken=bogus"] {
        h.history(KEY_A, "h.md", bad)
            .await
            .assert_error(400, "validation_error");
    }
    h.history(KEY_A, "a/../h.md", "")
        .await
        .assert_error(400, "validation_error");
}

pub async fn restore_writes_old_content_as_a_new_version(h: Harness) {
    h.put(KEY_A, "r.md", "alpha").await.assert_ok();
    let v2 = h.put(KEY_A, "r.md", "beta").await.assert_ok();
    let stale = h.put(KEY_A, "r.md", "gamma").await.assert_ok();
    let v3_etag = stale["etag"].as_str().unwrap().to_owned();

    let restored = h.restore(KEY_A, "r.md", 1, None).await.assert_ok();
    assert_eq!(restored["version"], 4);
    assert_eq!(restored["content"], "alpha");
    let latest = h.get(KEY_A, "r.md").await.assert_ok();
    assert_eq!(latest, restored);
    assert_ne!(restored["etag"], v2["etag"]);

    // If-Match is judged against the current version, as for a PUT.
    let before = h.state(KEY_A).await;
    let e = h
        .restore(KEY_A, "r.md", 2, Some(&v3_etag))
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 4);
    assert_eq!(h.state(KEY_A).await, before);
    let ok = h
        .restore(KEY_A, "r.md", 2, restored["etag"].as_str())
        .await
        .assert_ok();
    assert_eq!(
        (ok["version"].as_u64(), ok["content"].as_str()),
        (Some(5), Some("beta"))
    );

    // Pruned or never-written versions, other scopes, bad bodies, read-only keys.
    let before = h.state(KEY_A).await;
    h.restore(KEY_A, "r.md", 1, None)
        .await
        .assert_error(404, "not_found");
    h.restore(KEY_A, "r.md", 99, None)
        .await
        .assert_error(404, "not_found");
    h.restore(KEY_A, "nope.md", 1, None)
        .await
        .assert_error(404, "not_found");
    h.restore(KEY_EVIL, "r.md", 4, None)
        .await
        .assert_error(404, "not_found");
    h.restore(KEY_READ_ONLY, "r.md", 4, None)
        .await
        .assert_error(403, "forbidden");
    for bad in [
        json!({}),
        json!({"restore": 0}),
        json!({"restore": "1"}),
        json!([1]),
    ] {
        h.call(Method::POST, &versions_uri("r.md"), Some(KEY_A))
            .json(&bad)
            .send()
            .await
            .assert_error(400, "validation_error");
    }
    assert_eq!(
        h.state(KEY_A).await,
        before,
        "refused restores change nothing"
    );

    // Undo a delete: the deleted lineage's versions restore into a new lineage.
    assert_eq!(h.delete(KEY_A, "r.md").await.status, 204);
    let back = h.restore(KEY_A, "r.md", 5, None).await.assert_ok();
    assert_eq!(
        (back["version"].as_u64(), back["content"].as_str()),
        (Some(1), Some("beta"))
    );
}

pub async fn diff_shows_added_changed_and_deleted_lines(h: Harness) {
    h.put(KEY_A, "d.txt", "a\nb\nc\n").await.assert_ok();
    h.put(KEY_A, "d.txt", "a\nB\nc\nd\n").await.assert_ok();
    h.put(KEY_A, "d.txt", "a\nc\n").await.assert_ok();

    let changed = h.diff(KEY_A, "d.txt", "from=1&to=2").await.assert_ok();
    assert_eq!(
        (changed["from"].as_u64(), changed["to"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(changed["binary"], false);
    let text = changed["diff"].as_str().unwrap();
    assert!(
        text.starts_with("--- a/d.txt@1\n+++ b/d.txt@2\n@@"),
        "{text}"
    );
    assert!(
        text.contains("\n-b\n") && text.contains("\n+B\n"),
        "changed line: {text}"
    );
    assert!(text.contains("\n+d\n"), "added line: {text}");
    assert!(text.contains("\n a\n"), "context line: {text}");

    // `to` defaults to the latest version.
    let deleted = h.diff(KEY_A, "d.txt", "from=2").await.assert_ok();
    assert_eq!(deleted["to"], 3);
    let text = deleted["diff"].as_str().unwrap();
    assert!(
        text.contains("\n-B\n") && text.contains("\n-d\n"),
        "deleted lines: {text}"
    );
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with('+') && !l.starts_with("+++")),
        "nothing added: {text}"
    );

    let same = h.diff(KEY_A, "d.txt", "from=3&to=3").await.assert_ok();
    assert_eq!(same["diff"], "");

    h.diff(KEY_A, "d.txt", "to=2")
        .await
        .assert_error(400, "validation_error");
    h.diff(KEY_A, "d.txt", "from=x")
        .await
        .assert_error(400, "validation_error");
    h.diff(KEY_A, "d.txt", "from=1&to=9")
        .await
        .assert_error(404, "not_found");
    h.diff(KEY_EVIL, "d.txt", "from=1&to=2")
        .await
        .assert_error(404, "not_found");
}

/// The hostile-path corpus on the history, restore and diff routes: 400, nothing changed.
pub async fn hostile_paths_on_history_restore_and_diff_are_400(h: Harness) {
    h.put(KEY_A, "x", "keep").await.assert_ok();
    h.put(KEY_A, "a/b", "keep").await.assert_ok();
    let before = h.state(KEY_A).await;
    for p in crate::protocol::bad_uri_paths() {
        for (method, uri) in [
            (Method::GET, versions_uri(&p)),
            (Method::POST, versions_uri(&p)),
            (Method::GET, format!("/v1/host/workspace/diff/{p}?from=1")),
        ] {
            let r = h
                .call(method.clone(), &uri, Some(KEY_A))
                .json(&json!({ "restore": 1 }))
                .send()
                .await;
            assert_eq!(
                r.status,
                400,
                "{method} {uri:?}: {}",
                String::from_utf8_lossy(&r.body)
            );
            r.assert_error(400, "validation_error");
        }
    }
    assert_eq!(h.state(KEY_A).await, before);
}
