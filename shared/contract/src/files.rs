//! Contract cases for the file endpoints: versions, preconditions, lineage, listing, quotas,
//! retention, idempotency, isolation and concurrency.

use crate::harness::{file_uri, Harness, KEY_A, KEY_EVIL, KEY_OTHER, LIMITS};
use http::Method;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use workspace_core::service::IDEMPOTENCY_TTL_MS;

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

    let get = h.get(KEY_A, "notes/today.md").await;
    let g = get.assert_ok();
    assert_eq!(g, v);
    assert_eq!(get.headers["etag"].to_str().unwrap(), etag);

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
    let list = h
        .call(Method::GET, "/v1/host/workspace/files", Some(KEY_A))
        .send()
        .await
        .assert_ok();
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

    let pre = h
        .call(
            Method::GET,
            "/v1/host/workspace/files?prefix=a/",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(paths(&pre), ["a/1.md", "a/2.md"]);
    let pre = h
        .call(
            Method::GET,
            "/v1/host/workspace/files?prefix=a%2F",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(paths(&pre), ["a/1.md", "a/2.md"]);
    let pre = h
        .call(
            Method::GET,
            "/v1/host/workspace/files?prefix=a",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
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

pub async fn max_file_bytes_is_enforced_in_utf8_bytes(h: Harness) {
    let limit = LIMITS.max_file_bytes as usize;
    h.put(KEY_A, "exact.txt", &"a".repeat(limit))
        .await
        .assert_ok();
    let before = h.state(KEY_A).await;
    let e = h
        .put(KEY_A, "over.txt", &"a".repeat(limit + 1))
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(e["details"]["limit"], LIMITS.max_file_bytes);
    // 342 three-byte characters = 1026 bytes, though only 342 characters.
    h.put(KEY_A, "exact.txt", &"€".repeat(342))
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
    // A body far over what any JSON for an allowed file needs is refused unparsed.
    h.call(Method::PUT, &file_uri("huge.txt"), Some(KEY_A))
        .body(vec![b' '; h.app.max_request_bytes() + 1])
        .send()
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
}

pub async fn max_files_counts_live_files(h: Harness) {
    for i in 0..LIMITS.max_files {
        h.put(KEY_A, &format!("f{i}"), "x").await.assert_ok();
    }
    let before = h.state(KEY_A).await;
    h.put(KEY_A, "one-too-many", "x")
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
    // Overwriting an existing file is not a new file.
    h.put(KEY_A, "f0", "y").await.assert_ok();
    // Another workspace has its own count.
    h.put(KEY_OTHER, "elsewhere", "x").await.assert_ok();
    // A delete frees a slot.
    assert_eq!(h.delete(KEY_A, "f1").await.status, 204);
    h.put(KEY_A, "one-too-many", "x").await.assert_ok();
}

pub async fn retention_keeps_the_last_max_versions(h: Harness) {
    for i in 1..=5 {
        h.put(KEY_A, "r.md", &format!("v{i}")).await.assert_ok();
    }
    let keep_from = 5 - LIMITS.max_versions + 1;
    for n in 1..=5u64 {
        let r = h
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files/r.md?version={n}"),
                Some(KEY_A),
            )
            .send()
            .await;
        if n >= keep_from {
            assert_eq!(r.assert_ok()["content"], format!("v{n}"));
        } else {
            r.assert_error(404, "not_found");
        }
    }
}

pub async fn idempotency_key_replays_the_first_result(h: Harness) {
    let send = |content: &'static str, key: &'static str, who: &'static str| {
        h.call(Method::PUT, &file_uri("idem.md"), Some(who))
            .header("idempotency-key", key)
            .json(&json!({ "content": content }))
            .send()
    };
    let first = send("hello", "k-1", KEY_A).await.assert_ok();
    let again = send("hello", "k-1", KEY_A).await.assert_ok();
    assert_eq!(first, again, "a retry returns the first result");
    let now = h.get(KEY_A, "idem.md").await.assert_ok();
    assert_eq!(now["version"], 1, "a retry makes no second version");

    // The same key for a different request is refused and changes nothing.
    send("other", "k-1", KEY_A)
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(h.get(KEY_A, "idem.md").await.assert_ok()["version"], 1);

    // A new key is a new write; keys are scoped to the tenant·workspace.
    assert_eq!(send("hello", "k-2", KEY_A).await.assert_ok()["version"], 2);
    assert_eq!(
        send("hello", "k-1", KEY_OTHER).await.assert_ok()["version"],
        1
    );
    assert_eq!(
        send("hello", "k-1", KEY_EVIL).await.assert_ok()["version"],
        1
    );
    assert_eq!(h.get(KEY_A, "idem.md").await.assert_ok()["version"], 2);
}

pub async fn idempotency_keys_expire_after_a_day(h: Harness) {
    let send = || {
        h.call(Method::PUT, &file_uri("daily.md"), Some(KEY_A))
            .header("idempotency-key", "daily")
            .json(&json!({ "content": "same" }))
            .send()
    };
    assert_eq!(send().await.assert_ok()["version"], 1);
    h.clock.advance(IDEMPOTENCY_TTL_MS - 1000);
    assert_eq!(
        send().await.assert_ok()["version"],
        1,
        "still remembered within the day"
    );
    h.clock.advance(2000);
    assert_eq!(
        send().await.assert_ok()["version"],
        2,
        "an expired key is a new request"
    );
    assert_eq!(
        send().await.assert_ok()["version"],
        2,
        "and is remembered again"
    );
}

pub async fn concurrent_idempotent_retries_make_one_version(h: Harness) {
    let app = h.app.clone();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let req = http::Request::builder()
                    .method(Method::PUT)
                    .uri(file_uri("race.md"))
                    .header("authorization", format!("Bearer {KEY_A}"))
                    .header("idempotency-key", "same-key")
                    .body(bytes::Bytes::from(json!({"content": "once"}).to_string()))
                    .unwrap();
                let resp = app.handle(req, workspace_http::PathForm::Encoded).await;
                (resp.status().as_u16(), resp.into_body())
            })
        })
        .collect();
    let mut bodies = HashSet::new();
    for t in tasks {
        let (status, body) = t.await.expect("task");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        bodies.insert(body);
    }
    assert_eq!(bodies.len(), 1, "every retry gets the same result");
    assert_eq!(h.get(KEY_A, "race.md").await.assert_ok()["version"], 1);
}

/// WCT-1 on every endpoint: a sibling tenant whose name extends ours (`acme-evil`) and a
/// second workspace of our own tenant (`acme/other`) try everything against `acme/main`.
pub async fn isolation_holds_on_every_endpoint(h: Harness) {
    let v1 = h.put(KEY_A, "secret.md", "ACME-SECRET-1").await.assert_ok();
    h.put(KEY_A, "secret.md", "ACME-SECRET-2").await.assert_ok();
    h.put(KEY_A, "dir/x.md", "ACME-SECRET-3").await.assert_ok();
    h.call(Method::PUT, &file_uri("idem.md"), Some(KEY_A))
        .header("idempotency-key", "shared-key")
        .json(&json!({"content": "ACME-SECRET-4"}))
        .send()
        .await
        .assert_ok();
    let before = h.state(KEY_A).await;
    let etag = v1["etag"].as_str().unwrap().to_owned();

    for outsider in [KEY_EVIL, KEY_OTHER] {
        let mut replies = Vec::new();
        for uri in [
            file_uri("secret.md"),
            format!("{}?version=1", file_uri("secret.md")),
            format!("{}?version=2", file_uri("secret.md")),
            file_uri("dir/x.md"),
        ] {
            let r = h.call(Method::GET, &uri, Some(outsider)).send().await;
            r.assert_error(404, "not_found");
            replies.push(r);
        }
        for query in ["", "?prefix=dir/", "?prefix=secret", "?prefix=d&limit=1"] {
            let r = h
                .call(
                    Method::GET,
                    &format!("/v1/host/workspace/files{query}"),
                    Some(outsider),
                )
                .send()
                .await;
            assert_eq!(r.assert_ok()["files"], json!([]), "{query}");
            replies.push(r);
        }
        let r = h.delete(outsider, "secret.md").await;
        r.assert_error(404, "not_found");
        replies.push(r);
        // Our etag means nothing there: the file does not exist in that scope.
        let r = h
            .call(Method::PUT, &file_uri("secret.md"), Some(outsider))
            .header("if-match", &etag)
            .json(&json!({"content": "overwrite"}))
            .send()
            .await;
        assert_eq!(
            r.assert_error(409, "workspace_conflict")["details"]["currentVersion"],
            0
        );
        replies.push(r);
        let r = h
            .call(Method::DELETE, &file_uri("dir/x.md"), Some(outsider))
            .header("if-match", &etag)
            .send()
            .await;
        r.assert_error(404, "not_found");
        replies.push(r);
        // Our idempotency key replays nothing of ours there.
        let r = h
            .call(Method::PUT, &file_uri("idem.md"), Some(outsider))
            .header("idempotency-key", "shared-key")
            .json(&json!({"content": "theirs"}))
            .send()
            .await;
        let v = r.assert_ok();
        assert_eq!(
            (v["version"].as_u64(), v["content"].as_str()),
            (Some(1), Some("theirs"))
        );
        replies.push(r);
        for r in &replies {
            let body = String::from_utf8_lossy(&r.body);
            assert!(!body.contains("ACME-SECRET"), "leaked: {body}");
            assert!(!body.contains(&etag), "leaked our etag: {body}");
        }
    }
    assert_eq!(h.state(KEY_A).await, before, "nothing of acme/main changed");
}

pub async fn concurrent_if_match_writes_have_one_winner(h: Harness) {
    let v = h.put(KEY_A, "hot.md", "base").await.assert_ok();
    let etag = v["etag"].as_str().unwrap().to_owned();
    let app = h.app.clone();
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let app = app.clone();
            let etag = etag.clone();
            tokio::spawn(async move {
                let req = http::Request::builder()
                    .method(Method::PUT)
                    .uri(file_uri("hot.md"))
                    .header("authorization", format!("Bearer {KEY_A}"))
                    .header("if-match", etag)
                    .body(bytes::Bytes::from(
                        json!({ "content": format!("writer {i}") }).to_string(),
                    ))
                    .unwrap();
                app.handle(req, workspace_http::PathForm::Encoded)
                    .await
                    .status()
                    .as_u16()
            })
        })
        .collect();
    let mut ok = 0;
    let mut conflicts = 0;
    for t in tasks {
        match t.await.expect("task") {
            200 => ok += 1,
            409 => conflicts += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!((ok, conflicts), (1, 31));
    assert_eq!(h.get(KEY_A, "hot.md").await.assert_ok()["version"], 2);
}

pub async fn unconditional_concurrent_writes_all_land(h: Harness) {
    let h = Arc::new(h);
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let h = h.clone();
            tokio::spawn(async move {
                h.put(KEY_A, "busy.md", &format!("w{i}"))
                    .await
                    .status
                    .as_u16()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.expect("task"), 200);
    }
    assert_eq!(h.get(KEY_A, "busy.md").await.assert_ok()["version"], 16);
}
