//! Contract cases for two-step uploads: `POST /v1/host/workspace/uploads`, the bytes to
//! the URL it answers (S3 presigned on AWS, the harness's own signed URL elsewhere), then
//! `PUT files/{path}` with `{"uploadId"}`.

use crate::harness::{file_uri, scope, Harness, Reply, KEY_A, KEY_EVIL, KEY_READ_ONLY, LIMITS};
use crate::protocol::SECRET_AWS_KEY_ID;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::Method;
use serde_json::{json, Value};
use workspace_core::model::sha256_hex;

const UPLOADS: &str = "/v1/host/workspace/uploads";

/// More than an inline PUT may carry, within the upload limit, with every byte value.
fn big_binary() -> Vec<u8> {
    let n = usize::try_from(LIMITS.max_file_bytes * 3).expect("small");
    (0..n).map(|i| (i % 256) as u8).rev().collect()
}

pub(crate) async fn start(
    h: &Harness,
    key: &str,
    path: &str,
    bytes: &[u8],
    content_type: &str,
) -> Reply {
    start_declared(
        h,
        key,
        path,
        bytes.len() as u64,
        &sha256_hex(bytes),
        content_type,
    )
    .await
}

async fn start_declared(
    h: &Harness,
    key: &str,
    path: &str,
    size: u64,
    sha256: &str,
    content_type: &str,
) -> Reply {
    h.call(Method::POST, UPLOADS, Some(key))
        .json(&json!({"path": path, "size": size, "sha256": sha256, "contentType": content_type}))
        .send()
        .await
}

/// Sends the bytes where the ticket says, as a client without credentials would.
async fn send_bytes(h: &Harness, ticket: &Value, bytes: &[u8]) -> Reply {
    assert_eq!(ticket["method"], "PUT", "{ticket}");
    let url = ticket["url"].as_str().expect("url");
    h.fetch(Method::PUT, url, &ticket["headers"], bytes.to_vec())
        .await
}

/// Fetches a large read's `download` URL, as a client without credentials would.
async fn downloaded(h: &Harness, read: &Value) -> Vec<u8> {
    assert!(
        read.get("content").is_none() && read.get("contentBase64").is_none(),
        "a read over maxFileBytes carries no content: {read}"
    );
    let d = &read["download"];
    assert_eq!(d["method"], "GET", "{read}");
    assert!(d["expiresAt"].is_string(), "{read}");
    let r = h
        .fetch(
            Method::GET,
            d["url"].as_str().expect("url"),
            &d["headers"],
            Vec::new(),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{r:?}");
    r.body.to_vec()
}

async fn commit(h: &Harness, key: &str, path: &str, upload_id: &Value) -> Reply {
    commit_with(h, key, path, upload_id, &[]).await
}

async fn commit_with(
    h: &Harness,
    key: &str,
    path: &str,
    upload_id: &Value,
    headers: &[(&str, &str)],
) -> Reply {
    let mut call = h
        .call(Method::PUT, &file_uri(path), Some(key))
        .json(&json!({ "uploadId": upload_id }));
    for (k, v) in headers {
        call = call.header(k, v);
    }
    call.send().await
}

/// What the staging area holds for an upload (declaration and bytes), read through the
/// adapter itself.
async fn staged_objects(h: &Harness, upload_id: &Value) -> usize {
    let id = upload_id.as_str().expect("uploadId");
    let prefix = format!("{}uploads/{id}/", scope("acme", "main").key_prefix());
    let mut n = 0;
    for name in ["declared", "bytes"] {
        let found = h
            .bodies
            .get_staged(&format!("{prefix}{name}"), u64::MAX)
            .await
            .expect("staging read");
        n += usize::from(found.is_some());
    }
    n
}

pub async fn uploads_commit_files_beyond_the_inline_limit(h: Harness) {
    let bytes = big_binary();
    // Too large to send inline...
    h.call(Method::PUT, &file_uri("big/data.bin"), Some(KEY_A))
        .json(&json!({"contentBase64": STANDARD.encode(&bytes)}))
        .send()
        .await
        .assert_error(413, "workspace_too_large");
    // ...so it goes in two steps.
    let r = start(
        &h,
        KEY_A,
        "big/data.bin",
        &bytes,
        "application/octet-stream",
    )
    .await;
    assert_eq!(
        r.status.as_u16(),
        201,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let ticket = r.json();
    for field in ["uploadId", "url", "expiresAt"] {
        assert!(ticket[field].is_string(), "{field} missing: {ticket}");
    }
    assert!(ticket["headers"].is_object(), "{ticket}");
    let sent = send_bytes(&h, &ticket, &bytes).await;
    assert!(sent.status.is_success(), "{sent:?}");
    // Uploaded is not committed: nothing is visible until the commit.
    h.get(KEY_A, "big/data.bin")
        .await
        .assert_error(404, "not_found");

    let done = commit(&h, KEY_A, "big/data.bin", &ticket["uploadId"]).await;
    let meta = done.assert_ok();
    assert_eq!(meta["version"], 1);
    assert_eq!(meta["size"], bytes.len());
    assert_eq!(meta["contentType"], "application/octet-stream");
    assert!(
        meta.get("content").is_none() && meta.get("contentBase64").is_none(),
        "the commit answers metadata only: {meta}"
    );
    assert_eq!(
        done.headers.get("etag").and_then(|v| v.to_str().ok()),
        meta["etag"].as_str()
    );
    // Over maxFileBytes a read answers where to fetch the bytes, not the bytes.
    let got = h.get(KEY_A, "big/data.bin").await.assert_ok();
    assert_eq!(got["etag"], meta["etag"]);
    assert_eq!(
        downloaded(&h, &got).await,
        bytes,
        "the committed bytes are the uploaded ones"
    );
    let listed = h.list(KEY_A, "prefix=big/").await.assert_ok();
    assert_eq!(listed["files"][0]["path"], "big/data.bin");

    // The upload is spent: its staging objects are gone and its id commits nothing more.
    assert_eq!(staged_objects(&h, &ticket["uploadId"]).await, 0);
    commit(&h, KEY_A, "big/data.bin", &ticket["uploadId"])
        .await
        .assert_error(404, "not_found");
    assert_eq!(h.get(KEY_A, "big/data.bin").await.assert_ok()["version"], 1);
}

pub async fn uploads_with_other_bytes_than_declared_are_400_and_commit_nothing(h: Harness) {
    h.put(KEY_A, "keep.md", "kept").await.assert_ok();
    let before = h.state(KEY_A).await;
    let declared = big_binary();
    let mut other = declared.clone();
    other[7] ^= 0xff;

    // Same size, other bytes: the SHA-256 does not match.
    let ticket = start(&h, KEY_A, "big.bin", &declared, "application/octet-stream")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, &other).await.status.is_success());
    let v = commit(&h, KEY_A, "big.bin", &ticket["uploadId"])
        .await
        .assert_error(400, "validation_error");
    assert!(
        v["message"].as_str().unwrap_or("").contains("SHA-256"),
        "{v}"
    );
    assert_eq!(h.state(KEY_A).await, before);
    h.get(KEY_A, "big.bin").await.assert_error(404, "not_found");
    // The wrong bytes were dropped; while its URL works the upload takes the right ones.
    assert_eq!(staged_objects(&h, &ticket["uploadId"]).await, 1);
    assert!(send_bytes(&h, &ticket, &declared).await.status.is_success());
    commit(&h, KEY_A, "big.bin", &ticket["uploadId"])
        .await
        .assert_ok();

    // Another size than declared: S3 and the local URL refuse the PUT itself (the length
    // is signed); a store that took it would still be refused at the commit.
    let before = h.state(KEY_A).await;
    let ticket = start(
        &h,
        KEY_A,
        "short.bin",
        &declared,
        "application/octet-stream",
    )
    .await
    .assert_ok();
    let sent = send_bytes(&h, &ticket, &declared[..declared.len() - 1]).await;
    let v = commit(&h, KEY_A, "short.bin", &ticket["uploadId"])
        .await
        .assert_error(400, "validation_error");
    let msg = v["message"].as_str().unwrap_or("");
    if sent.status.is_success() {
        assert!(msg.contains("declared size"), "{v}");
    } else {
        assert_eq!(sent.status.as_u16(), 403, "{sent:?}");
        assert!(msg.contains("no bytes were uploaded"), "{v}");
    }
    assert_eq!(h.state(KEY_A).await, before);
    h.get(KEY_A, "short.bin")
        .await
        .assert_error(404, "not_found");

    // Nothing uploaded at all.
    let ticket = start(
        &h,
        KEY_A,
        "never.bin",
        &declared,
        "application/octet-stream",
    )
    .await
    .assert_ok();
    commit(&h, KEY_A, "never.bin", &ticket["uploadId"])
        .await
        .assert_error(400, "validation_error");
    assert_eq!(h.state(KEY_A).await, before);
}

pub async fn expired_upload_urls_are_refused(h: Harness) {
    let bytes = big_binary();
    // An upload started 30 minutes ago: its URL (900 s) expired 15 minutes ago, its commit
    // window has not.
    h.clock.advance(-30 * 60 * 1000);
    let ticket = start(&h, KEY_A, "late.bin", &bytes, "application/octet-stream")
        .await
        .assert_ok();
    h.clock.advance(30 * 60 * 1000);
    let sent = send_bytes(&h, &ticket, &bytes).await;
    let done = commit(&h, KEY_A, "late.bin", &ticket["uploadId"]).await;
    if sent.status.is_success() {
        // A store that does not check the URL's expiry itself (the S3 emulator): the
        // commit sees the bytes arrived late.
        let v = done.assert_error(403, "forbidden");
        assert!(
            v["message"].as_str().unwrap_or("").contains("expired"),
            "{v}"
        );
    } else {
        let v = sent.assert_error(403, "forbidden");
        assert!(
            v["message"].as_str().unwrap_or("").contains("expired"),
            "{v}"
        );
        done.assert_error(400, "validation_error");
    }
    h.get(KEY_A, "late.bin")
        .await
        .assert_error(404, "not_found");

    // Bytes sent in time but committed after the commit window: refused, and gone.
    let ticket = start(&h, KEY_A, "slow.bin", &bytes, "application/octet-stream")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, &bytes).await.status.is_success());
    h.clock.advance(3 * 60 * 60 * 1000);
    let v = commit(&h, KEY_A, "slow.bin", &ticket["uploadId"])
        .await
        .assert_error(400, "validation_error");
    assert!(
        v["message"].as_str().unwrap_or("").contains("expired"),
        "{v}"
    );
    assert_eq!(staged_objects(&h, &ticket["uploadId"]).await, 0);
    h.get(KEY_A, "slow.bin")
        .await
        .assert_error(404, "not_found");
}

pub async fn upload_commits_follow_the_put_rules(h: Harness) {
    let bytes = big_binary();
    let v1 = h.put(KEY_A, "doc.bin", "first").await.assert_ok();
    let ticket = start(&h, KEY_A, "doc.bin", &bytes, "application/octet-stream")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, &bytes).await.status.is_success());
    let id = &ticket["uploadId"];
    // Preconditions are judged at the commit; a refused one keeps the upload for a retry.
    commit_with(&h, KEY_A, "doc.bin", id, &[("if-match", "\"stale\"")])
        .await
        .assert_error(409, "workspace_conflict");
    commit_with(&h, KEY_A, "doc.bin", id, &[("if-none-match", "*")])
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(
        h.get(KEY_A, "doc.bin").await.assert_ok()["content"],
        "first"
    );
    let etag = v1["etag"].as_str().expect("etag");
    let r = commit_with(
        &h,
        KEY_A,
        "doc.bin",
        id,
        &[("if-match", etag), ("idempotency-key", "up-1")],
    )
    .await;
    let v2 = r.assert_ok();
    assert_eq!(v2["version"], 2, "same lineage, next version");
    // A retry under the same key answers the same result though the upload is spent.
    let again = commit_with(
        &h,
        KEY_A,
        "doc.bin",
        id,
        &[("if-match", etag), ("idempotency-key", "up-1")],
    )
    .await
    .assert_ok();
    assert_eq!(again["etag"], v2["etag"]);
    assert_eq!(h.get(KEY_A, "doc.bin").await.assert_ok()["version"], 2);

    // The upload names its path; another path cannot take it.
    let ticket = start(&h, KEY_A, "a.bin", &bytes, "application/octet-stream")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, &bytes).await.status.is_success());
    commit(&h, KEY_A, "b.bin", &ticket["uploadId"])
        .await
        .assert_error(400, "validation_error");
    // Another tenant cannot commit it (to any path), nor learn it exists.
    commit(&h, KEY_EVIL, "a.bin", &ticket["uploadId"])
        .await
        .assert_error(404, "not_found");
    h.get(KEY_EVIL, "a.bin")
        .await
        .assert_error(404, "not_found");
    // The quota holds: with maxFiles live files, a new path is refused.
    for i in 0..LIMITS.max_files {
        h.put(KEY_A, &format!("fill-{i}.md"), "x").await;
    }
    commit(&h, KEY_A, "a.bin", &ticket["uploadId"])
        .await
        .assert_error(413, "workspace_too_large");
    h.delete(KEY_A, "fill-0.md").await;
    commit(&h, KEY_A, "a.bin", &ticket["uploadId"])
        .await
        .assert_ok();
}

pub async fn bad_upload_requests_are_refused_and_change_nothing(h: Harness) {
    h.put(KEY_A, "keep.md", "kept").await.assert_ok();
    let before = h.state(KEY_A).await;
    let sha = sha256_hex(b"x");
    let over = LIMITS.max_upload_bytes + 1;
    let v = start_declared(
        &h,
        KEY_A,
        "huge.bin",
        over,
        &sha,
        "application/octet-stream",
    )
    .await
    .assert_error(413, "workspace_too_large");
    assert_eq!(v["details"]["limit"], LIMITS.max_upload_bytes);
    for (path, sha) in [
        ("ok.bin", "abc"),
        ("ok.bin", &"z".repeat(64)),
        ("../x", &sha),
    ] {
        start_declared(&h, KEY_A, path, 1, sha, "application/octet-stream")
            .await
            .assert_error(400, "validation_error");
    }
    for body in [
        json!({"path": "a.bin", "size": 1}),
        json!({"path": "a.bin", "size": -1, "sha256": sha}),
        json!({"path": "a.bin", "size": 1, "sha256": sha, "tenant": "acme-evil"}),
    ] {
        let r = h
            .call(Method::POST, UPLOADS, Some(KEY_A))
            .json(&body)
            .send()
            .await;
        assert!(r.status.is_client_error(), "{body}: {r:?}");
    }
    start_declared(&h, KEY_READ_ONLY, "a.bin", 1, &sha, "text/plain")
        .await
        .assert_error(403, "forbidden");
    start_declared(&h, KEY_A, "a.bin", 1, &sha, "text/plain")
        .await
        .assert_ok();
    // An upload id with content, or one never issued.
    h.call(Method::PUT, &file_uri("a.bin"), Some(KEY_A))
        .json(&json!({"uploadId": "0123", "content": "x"}))
        .send()
        .await
        .assert_error(400, "validation_error");
    for id in ["0123456789abcdef0123456789abcdef", "../../keys", ""] {
        commit(&h, KEY_A, "a.bin", &json!(id))
            .await
            .assert_error(404, "not_found");
    }
    assert_eq!(h.state(KEY_A).await, before);
}

pub async fn uploaded_text_is_redacted_like_an_inline_put(h: Harness) {
    let text = format!("{}\nkey {SECRET_AWS_KEY_ID}\n", "line\n".repeat(500));
    let ticket = start(&h, KEY_A, "notes.md", text.as_bytes(), "text/markdown")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, text.as_bytes())
        .await
        .status
        .is_success());
    let meta = commit(&h, KEY_A, "notes.md", &ticket["uploadId"])
        .await
        .assert_ok();
    assert_eq!(meta["contentType"], "text/markdown");
    let raw = h.raw_body("acme", "main", "notes.md").await;
    assert!(!raw.contains(SECRET_AWS_KEY_ID), "stored in plain text");
    assert!(raw.contains("[REDACTED:"), "{raw}");
    assert_eq!(meta["size"], raw.len());
}

pub async fn large_files_read_through_download_urls_pinned_to_their_version(h: Harness) {
    let first = big_binary();
    let ticket = start(&h, KEY_A, "big.bin", &first, "application/octet-stream")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, &first).await.status.is_success());
    commit(&h, KEY_A, "big.bin", &ticket["uploadId"])
        .await
        .assert_ok();
    let snap = h
        .call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let snap = snap["snapshotId"].as_str().expect("snapshotId");
    let v1 = h.get(KEY_A, "big.bin").await.assert_ok();
    // The URL names this version: a later write does not change what it serves.
    let second: Vec<u8> = first.iter().map(|b| b ^ 0x55).collect();
    let ticket = start(&h, KEY_A, "big.bin", &second, "application/octet-stream")
        .await
        .assert_ok();
    assert!(send_bytes(&h, &ticket, &second).await.status.is_success());
    commit(&h, KEY_A, "big.bin", &ticket["uploadId"])
        .await
        .assert_ok();
    assert_eq!(downloaded(&h, &v1).await, first);
    let latest = h.get(KEY_A, "big.bin").await.assert_ok();
    assert_eq!(latest["version"], 2);
    assert_eq!(downloaded(&h, &latest).await, second);
    let old = h
        .call(
            Method::GET,
            &format!("{}?version=1", file_uri("big.bin")),
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(downloaded(&h, &old).await, first);
    let pinned = h
        .call(
            Method::GET,
            &format!("{}?snapshot={snap}", file_uri("big.bin")),
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(pinned["version"], 1);
    assert_eq!(downloaded(&h, &pinned).await, first);
    // A diff is answered inline: a clear 413, nothing changes.
    h.call(
        Method::GET,
        "/v1/host/workspace/diff/big.bin?from=1",
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(413, "workspace_too_large");
    assert_eq!(h.get(KEY_A, "big.bin").await.assert_ok()["version"], 2);
    // Undo works at any size: version 1 comes back as version 3 (metadata answered).
    let restored = h
        .call(
            Method::POST,
            "/v1/host/workspace/versions/big.bin",
            Some(KEY_A),
        )
        .json(&json!({"restore": 1}))
        .send()
        .await
        .assert_ok();
    assert_eq!(restored["version"], 3);
    assert!(restored.get("contentBase64").is_none(), "{restored}");
    let now = h.get(KEY_A, "big.bin").await.assert_ok();
    assert_eq!(now["etag"], restored["etag"]);
    assert_eq!(downloaded(&h, &now).await, first);
    // Another tenant reads nothing of it.
    h.get(KEY_EVIL, "big.bin")
        .await
        .assert_error(404, "not_found");
}
