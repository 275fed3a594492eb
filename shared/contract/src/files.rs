//! Contract cases for the file endpoints: reads, versions, preconditions, lineage, listing.

use crate::harness::{file_uri, Harness, KEY_A, KEY_ADMIN, KEY_OTHER};
use base64::Engine;
use http::Method;
use serde_json::{json, Value};
use std::collections::HashSet;

pub async fn put_then_get_returns_the_stored_file(h: Harness) {
    let put = h.put(KEY_A, "notes/today.md", "hello").await;
    let v = put.assert_ok();
    assert_eq!(v["path"], "notes/today.md");
    assert_eq!(v["content"], "hello");
    assert_eq!(v["version"], 1);
    assert_eq!(v["contentType"], "text/markdown");
    assert_eq!(v["size"], 5);
    let etag = v["etag"].as_str().expect("etag");
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "etag is quoted: {etag}"
    );
    assert_eq!(put.headers["etag"].to_str().unwrap(), etag);
    assert!(v["updatedAt"].as_str().unwrap().ends_with('Z'));
    // The content's SHA-256, so a client can check or compare it without reading it.
    assert_eq!(
        v["sha256"],
        workspace_core::model::sha256_hex(b"hello"),
        "{v}"
    );
    let row = &h.list(KEY_A, "").await.assert_ok()["files"][0];
    assert_eq!(row["sha256"], v["sha256"], "{row}");
    // Who wrote the live version, on the answer, the read and each list row.
    assert_eq!(v["principal"], "alice", "{v}");
    assert_eq!(row["principal"], "alice", "{row}");

    let get = h.get(KEY_A, "notes/today.md").await;
    let g = get.assert_ok();
    assert_eq!(g, v);
    assert_eq!(get.headers["etag"].to_str().unwrap(), etag);

    // Another principal's write of the same file is listed as theirs.
    h.put(KEY_ADMIN, "notes/other.md", "by root")
        .await
        .assert_ok();
    let list = h.list(KEY_A, "").await.assert_ok();
    let by: Vec<_> = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap(),
                r["principal"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [("notes/other.md", "root"), ("notes/today.md", "alice")]
    );
    assert_eq!(h.delete(KEY_ADMIN, "notes/other.md").await.status, 204);

    let typed = h
        .call(Method::PUT, &file_uri("data.bin"), Some(KEY_A))
        .json(&json!({"content": "x", "contentType": "application/x-thing"}))
        .send()
        .await
        .assert_ok();
    assert_eq!(typed["contentType"], "application/x-thing");
}

pub async fn each_write_adds_one_and_past_versions_stay_readable(h: Harness) {
    for (i, text) in ["one", "two", "three"].iter().enumerate() {
        let v = h.put(KEY_A, "a.txt", text).await.assert_ok();
        assert_eq!(v["version"], i as u64 + 1);
    }
    let v1 = h
        .call(
            Method::GET,
            "/v1/host/workspace/files/a.txt?version=1",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(
        (v1["content"].as_str(), v1["version"].as_u64()),
        (Some("one"), Some(1))
    );
    let latest = h.get(KEY_A, "a.txt").await.assert_ok();
    assert_eq!(latest["content"], "three");
    h.call(
        Method::GET,
        "/v1/host/workspace/files/a.txt?version=4",
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(404, "not_found");
    for bad in ["abc", "0", "-1", "1.5", ""] {
        h.call(
            Method::GET,
            &format!("/v1/host/workspace/files/a.txt?version={bad}"),
            Some(KEY_A),
        )
        .send()
        .await
        .assert_error(400, "validation_error");
    }
    h.get(KEY_A, "missing.txt")
        .await
        .assert_error(404, "not_found");
}

pub async fn if_match_and_if_none_match_guard_writes(h: Harness) {
    let v1 = h.put(KEY_A, "f.md", "v1").await.assert_ok();
    let etag1 = v1["etag"].as_str().unwrap().to_owned();
    let v2 = h
        .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
        .header("if-match", &etag1)
        .json(&json!({"content": "v2"}))
        .send()
        .await
        .assert_ok();
    assert_eq!(v2["version"], 2);

    // Stale etag: 409 with the current version, and nothing written.
    let stale = h
        .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
        .header("if-match", &etag1)
        .json(&json!({"content": "lost"}))
        .send()
        .await;
    let e = stale.assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 2);
    assert_eq!(h.get(KEY_A, "f.md").await.assert_ok()["content"], "v2");

    // If-Match on a file that does not exist: currentVersion 0.
    let e = h
        .call(Method::PUT, &file_uri("nope.md"), Some(KEY_A))
        .header("if-match", &etag1)
        .json(&json!({"content": "x"}))
        .send()
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 0);
    h.get(KEY_A, "nope.md").await.assert_error(404, "not_found");

    // If-None-Match: * creates only.
    h.call(Method::PUT, &file_uri("new.md"), Some(KEY_A))
        .header("if-none-match", "*")
        .json(&json!({"content": "first"}))
        .send()
        .await
        .assert_ok();
    let e = h
        .call(Method::PUT, &file_uri("new.md"), Some(KEY_A))
        .header("if-none-match", "*")
        .json(&json!({"content": "second"}))
        .send()
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 1);
    h.call(Method::PUT, &file_uri("new.md"), Some(KEY_A))
        .header("if-none-match", "\"1-abc\"")
        .json(&json!({"content": "third"}))
        .send()
        .await
        .assert_error(400, "validation_error");
    assert_eq!(h.get(KEY_A, "new.md").await.assert_ok()["content"], "first");
}

pub async fn delete_tombstones_and_honours_if_match(h: Harness) {
    let v1 = h.put(KEY_A, "d.md", "x").await.assert_ok();
    h.put(KEY_A, "d.md", "y").await.assert_ok();
    let e = h
        .call(Method::DELETE, &file_uri("d.md"), Some(KEY_A))
        .header("if-match", v1["etag"].as_str().unwrap())
        .send()
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(e["details"]["currentVersion"], 2);
    assert_eq!(h.get(KEY_A, "d.md").await.assert_ok()["content"], "y");

    let del = h.delete(KEY_A, "d.md").await;
    assert_eq!(del.status, 204, "{:?}", del.body);
    assert!(del.body.is_empty());
    h.get(KEY_A, "d.md").await.assert_error(404, "not_found");
    h.call(
        Method::GET,
        "/v1/host/workspace/files/d.md?version=1",
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(404, "not_found");
    h.delete(KEY_A, "d.md").await.assert_error(404, "not_found");
    h.delete(KEY_A, "never.md")
        .await
        .assert_error(404, "not_found");
}

pub async fn recreating_after_delete_starts_a_new_lineage(h: Harness) {
    let mut old_etags = HashSet::new();
    for text in ["same", "same2"] {
        let v = h.put(KEY_A, "life.md", text).await.assert_ok();
        old_etags.insert(v["etag"].as_str().unwrap().to_owned());
    }
    assert_eq!(h.delete(KEY_A, "life.md").await.status, 204);
    let again = h.put(KEY_A, "life.md", "same").await.assert_ok();
    assert_eq!(again["version"], 1, "a re-created path starts at version 1");
    let new_etag = again["etag"].as_str().unwrap().to_owned();
    assert!(
        !old_etags.contains(&new_etag),
        "etag reused across lineages"
    );
    for stale in &old_etags {
        let e = h
            .call(Method::PUT, &file_uri("life.md"), Some(KEY_A))
            .header("if-match", stale)
            .json(&json!({"content": "via stale etag"}))
            .send()
            .await
            .assert_error(409, "workspace_conflict");
        assert_eq!(e["details"]["currentVersion"], 1);
        h.call(Method::DELETE, &file_uri("life.md"), Some(KEY_A))
            .header("if-match", stale)
            .send()
            .await
            .assert_error(409, "workspace_conflict");
    }
    let now = h.get(KEY_A, "life.md").await.assert_ok();
    assert_eq!(
        (now["version"].as_u64(), now["etag"].as_str()),
        (Some(1), Some(new_etag.as_str()))
    );
    // Version 2 of the old lineage is not version 2 of the new one.
    h.call(
        Method::GET,
        "/v1/host/workspace/files/life.md?version=2",
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(404, "not_found");
}

fn paths(list: &Value) -> Vec<String> {
    list["files"]
        .as_array()
        .expect("files array")
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect()
}

pub async fn list_is_sorted_content_free_and_pages(h: Harness) {
    for p in ["b.md", "a/2.md", "a/1.md", "ab.md", "gone.md"] {
        h.put(KEY_A, p, "x").await.assert_ok();
    }
    assert_eq!(h.delete(KEY_A, "gone.md").await.status, 204);
    let list = h.list(KEY_A, "").await.assert_ok();
    assert_eq!(paths(&list), ["a/1.md", "a/2.md", "ab.md", "b.md"]);
    assert!(list.get("nextToken").is_none());
    for row in list["files"].as_array().unwrap() {
        let obj = row.as_object().unwrap();
        assert!(
            !obj.contains_key("content"),
            "list rows carry no content key: {row}"
        );
        for k in [
            "path",
            "contentType",
            "version",
            "etag",
            "size",
            "updatedAt",
        ] {
            assert!(obj.contains_key(k), "list row lacks {k}: {row}");
        }
    }

    let pre = h.list(KEY_A, "prefix=a/").await.assert_ok();
    assert_eq!(paths(&pre), ["a/1.md", "a/2.md"]);
    let pre = h.list(KEY_A, "prefix=a%2F").await.assert_ok();
    assert_eq!(paths(&pre), ["a/1.md", "a/2.md"]);
    let pre = h.list(KEY_A, "prefix=a").await.assert_ok();
    assert_eq!(paths(&pre), ["a/1.md", "a/2.md", "ab.md"]);

    // Page through two at a time.
    let mut seen = Vec::new();
    let mut uri = "/v1/host/workspace/files?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let page = h
            .call(Method::GET, &uri, Some(KEY_A))
            .send()
            .await
            .assert_ok();
        pages += 1;
        let got = paths(&page);
        assert!(got.len() <= 2);
        seen.extend(got);
        match page["nextToken"].as_str() {
            Some(t) => uri = format!("/v1/host/workspace/files?limit=2&nextToken={t}"),
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(seen, ["a/1.md", "a/2.md", "ab.md", "b.md"]);
    assert_eq!(pages, 2);

    // A paging token is signed and bound to its listing: altered, unsigned, or issued for
    // another prefix or another workspace, it is refused.
    let first = h
        .call(Method::GET, "/v1/host/workspace/files?limit=1", Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let token = first["nextToken"].as_str().expect("a next page").to_owned();
    let unsigned = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("after:a/1.md");
    let altered = format!("{}A", token);
    for (key, query) in [
        (KEY_A, format!("limit=1&nextToken={unsigned}")),
        (KEY_A, format!("limit=1&nextToken={altered}")),
        (KEY_A, format!("limit=1&prefix=a/&nextToken={token}")),
        (KEY_OTHER, format!("limit=1&nextToken={token}")),
    ] {
        h.call(
            Method::GET,
            &format!("/v1/host/workspace/files?{query}"),
            Some(key),
        )
        .send()
        .await
        .assert_error(400, "validation_error");
    }

    for bad in [
        "limit=0",
        "limit=x",
        "limit=1001",
        "nextToken=forged",
        "prefix=../",
        "prefix=a//",
        "limit=1&limit=2",
    ] {
        h.call(
            Method::GET,
            &format!("/v1/host/workspace/files?{bad}"),
            Some(KEY_A),
        )
        .send()
        .await
        .assert_error(400, "validation_error");
    }
}
