//! Contract cases for small bodies kept inline with their commit
//! (`workspace_core::blob::inline`; the harness keeps bodies of at most
//! [`INLINE_BODY_BYTES`] inline): the threshold's edges, writes whose `If-Match` names the
//! head (planned without reading it), erasing an inline version, and what the build before
//! inline bodies stored.

use crate::harness::{file_uri, scope, Harness, INLINE_BODY_BYTES, KEY_A, KEY_ADMIN};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::Method;
use serde_json::{json, Value};
use workspace_core::model::{make_etag, sha256_hex, Head, VersionRecord};
use workspace_core::ports::{Clock, Commit, CommitOutcome, Expect};
use workspace_core::FilePath;

/// Whether the live version of `path` is kept inline (read through the store itself).
async fn head_is_inline(h: &Harness, path: &str) -> bool {
    let head = h
        .meta
        .head(&scope("acme", "main"), &FilePath::parse(path).unwrap())
        .await
        .expect("head read")
        .expect("a head");
    head.body.expect("a live body").is_inline()
}

async fn put_b64(h: &Harness, path: &str, bytes: &[u8]) -> Value {
    h.call(Method::PUT, &file_uri(path), Some(KEY_A))
        .json(&json!({"contentBase64": STANDARD.encode(bytes),
                      "contentType": "application/octet-stream"}))
        .send()
        .await
        .assert_ok()
}

fn bytes_of(v: &Value) -> Vec<u8> {
    match v.get("content") {
        Some(Value::String(s)) => s.clone().into_bytes(),
        _ => STANDARD
            .decode(v["contentBase64"].as_str().expect("contentBase64"))
            .expect("base64"),
    }
}

async fn put_if_match(h: &Harness, path: &str, content: &str, etag: &str) -> crate::harness::Reply {
    h.call(Method::PUT, &file_uri(path), Some(KEY_A))
        .header("if-match", etag)
        .json(&json!({ "content": content }))
        .send()
        .await
}

pub async fn bodies_at_the_threshold_are_inline_and_one_byte_over_are_not(h: Harness) {
    let limit = INLINE_BODY_BYTES as usize;
    let longest_path = format!("d/{}", "p".repeat(254));
    let mut binary: Vec<u8> = (0..limit as u8)
        .map(|b| b.wrapping_mul(37) ^ 0x80)
        .collect();
    binary[0] = 0xff;
    let text_at = "a".repeat(limit);
    let text_over = "b".repeat(limit + 1);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("at.md", text_at.clone().into_bytes(), true),
        ("over.md", text_over.clone().into_bytes(), false),
        ("empty.md", Vec::new(), true),
        ("bytes.bin", binary.clone(), true),
        (&longest_path, text_at.clone().into_bytes(), true),
    ];
    for (path, bytes, inline) in &cases {
        let put = put_b64(&h, path, bytes).await;
        assert_eq!(bytes_of(&put), *bytes, "{path}");
        assert_eq!(head_is_inline(&h, path).await, *inline, "{path}");
        let got = h.get(KEY_A, path).await.assert_ok();
        assert_eq!(bytes_of(&got), *bytes, "{path}");
        assert_eq!(got["size"], bytes.len(), "{path}");
        assert_eq!(got["etag"], put["etag"], "{path}");
        // A second version, then the first read by number, from its version item.
        put_b64(&h, path, b"next").await;
        let v1 = h.get_version(KEY_A, path, 1).await.assert_ok();
        assert_eq!(bytes_of(&v1), *bytes, "{path} v1");
        // (The harness holds five files at most.)
        assert_eq!(h.delete(KEY_A, path).await.status, 204, "{path}");
    }
    // Crossing the threshold both ways: each version reads as it was written.
    let steps = ["small", text_over.as_str(), "small again", text_at.as_str()];
    for (i, text) in steps.iter().enumerate() {
        h.put(KEY_A, "cross.md", text).await.assert_ok();
        assert_eq!(
            head_is_inline(&h, "cross.md").await,
            text.len() <= limit,
            "step {i}"
        );
    }
    for (i, text) in steps.iter().enumerate().skip(1) {
        let v = h
            .get_version(KEY_A, "cross.md", i as u64 + 1)
            .await
            .assert_ok();
        assert_eq!(v["content"], *text, "version {}", i + 1);
    }
    // A snapshot and a restore read inline and stored bodies alike.
    let snap = h.snapshot(KEY_A).await.assert_ok();
    let id = snap["snapshotId"].as_str().unwrap();
    assert_eq!(
        h.get_in(KEY_A, id, "cross.md").await.assert_ok()["content"],
        text_at
    );
    let restored = h.restore(KEY_A, "cross.md", 2, None).await.assert_ok();
    assert_eq!(restored["content"], text_over);
}

pub async fn if_match_naming_the_head_writes_and_a_stale_one_changes_nothing(h: Harness) {
    let v1 = h.put(KEY_A, "n.md", "one").await.assert_ok();
    let e1 = v1["etag"].as_str().unwrap().to_owned();
    let v2 = put_if_match(&h, "n.md", "two", &e1).await.assert_ok();
    assert_eq!(v2["version"], 2);
    let e2 = v2["etag"].as_str().unwrap().to_owned();
    // Stale: refused, nothing written.
    let before = h.state(KEY_A).await;
    put_if_match(&h, "n.md", "late", &e1)
        .await
        .assert_error(409, "workspace_conflict");
    // An etag of the right form naming the live seq and lineage with another digest.
    let forged = {
        let (version, seq, lineage) = workspace_core::model::parse_etag(&e2).unwrap();
        make_etag(lineage, version, seq, &sha256_hex(b"not the content"))
    };
    assert_ne!(forged, e2);
    put_if_match(&h, "n.md", "forged", &forged)
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(h.state(KEY_A).await, before);
    // After a delete and a re-create, the old lineage's etags name nothing.
    assert_eq!(h.delete(KEY_A, "n.md").await.status, 204);
    let r1 = h.put(KEY_A, "n.md", "reborn").await.assert_ok();
    assert_eq!(r1["version"], 1);
    put_if_match(&h, "n.md", "x", &e2)
        .await
        .assert_error(409, "workspace_conflict");
    // While a snapshot reads the file, a named write still lands, and the snapshot keeps
    // the version it read.
    let snap = h.snapshot(KEY_A).await.assert_ok();
    let id = snap["snapshotId"].as_str().unwrap().to_owned();
    let r2 = put_if_match(&h, "n.md", "after", r1["etag"].as_str().unwrap())
        .await
        .assert_ok();
    assert_eq!(r2["version"], 2);
    assert_eq!(
        h.get_in(KEY_A, &id, "n.md").await.assert_ok()["content"],
        "reborn"
    );
    // If-None-Match: * on a deleted path creates it; on a live one it is refused.
    assert_eq!(h.delete(KEY_A, "n.md").await.status, 204);
    for (expected, status) in [("again", 200u16), ("no", 409)] {
        let r = h
            .call(Method::PUT, &file_uri("n.md"), Some(KEY_A))
            .header("if-none-match", "*")
            .json(&json!({ "content": expected }))
            .send()
            .await;
        assert_eq!(r.status.as_u16(), status, "{:?}", r.body);
    }
    assert_eq!(h.get(KEY_A, "n.md").await.assert_ok()["content"], "again");
}

pub async fn erasing_an_inline_version_leaves_its_body_in_no_item(h: Harness) {
    let secret = "inline leak 7f3a";
    assert!(secret.len() as u64 <= INLINE_BODY_BYTES);
    h.put(KEY_A, "leak.md", secret).await.assert_ok();
    assert!(head_is_inline(&h, "leak.md").await);
    h.put(KEY_A, "leak.md", "clean").await.assert_ok();
    h.put(KEY_A, "leak.md", "clean again").await.assert_ok();
    assert_eq!(
        h.erase(KEY_ADMIN, "leak.md", 1, "").await.status.as_u16(),
        204
    );
    h.get_version(KEY_A, "leak.md", 1)
        .await
        .assert_error(410, "gone");
    let main = scope("acme", "main");
    let path = FilePath::parse("leak.md").unwrap();
    let versions = h
        .meta
        .list_versions(&main, &path, None, 100)
        .await
        .expect("versions");
    let v1 = versions.iter().find(|v| v.version == 1).expect("v1 item");
    assert!(v1.erased.is_some() && v1.body.is_none(), "{v1:?}");
    for v in &versions {
        if let Some(body) = &v.body {
            let bytes = crate::body_bytes(&*h.bodies, body)
                .await
                .unwrap_or_default();
            assert!(!String::from_utf8_lossy(&bytes).contains(secret), "{v:?}");
        }
    }
    let head = h
        .meta
        .head(&main, &path)
        .await
        .expect("head")
        .expect("head");
    let live = crate::body_bytes(&*h.bodies, head.body.as_ref().unwrap())
        .await
        .unwrap();
    assert_eq!(live, b"clean again");
}

pub async fn what_the_build_before_inline_bodies_stored_reads_and_writes_on(h: Harness) {
    // Written the old way: the body in the body store, the head and version item naming
    // it, an etag of the previous form (no seq, no lineage).
    let main = scope("acme", "main");
    let path = FilePath::parse("old.md").unwrap();
    let key = workspace_core::service::sweep::body_key(&main, &path);
    let body = h
        .bodies
        .put(&key, b"written before".to_vec(), "text/markdown")
        .await
        .expect("body");
    assert!(!body.is_inline());
    let sha = sha256_hex(b"written before");
    let old_etag = format!("\"1-{}\"", &sha[..20]);
    let head = Head {
        path: path.to_string(),
        lineage: "0123456789abcdef0123456789abcdef".into(),
        version: 1,
        seq: 1,
        etag: old_etag.clone(),
        size: 14,
        content_type: "text/markdown".into(),
        updated_at: h.clock.now_ms(),
        deleted: false,
        body: Some(body),
        sha256: sha,
        pins: Vec::new(),
        pin_rev: 0,
        principal: "root".into(),
        point: 0,
    };
    let commit = Commit {
        scope: main.clone(),
        path: path.clone(),
        expect: Expect::Absent,
        version: VersionRecord::of_head(&head, None),
        head,
        live_delta: 1,
        max_files: u64::MAX,
        idempotency: None,
        idempotency_valid_after: 0,
        retain_from_seq: 1,
        released: Vec::new(),
        secrets_epoch: None,
        points_rev: 0,
    };
    assert!(matches!(
        h.meta.commit(commit).await.expect("commit"),
        CommitOutcome::Committed { .. }
    ));

    // The upgraded build reads it, and its old etag still guards a write (read first).
    let got = h.get(KEY_A, "old.md").await.assert_ok();
    assert_eq!(got["content"], "written before");
    assert_eq!(got["etag"], old_etag.as_str());
    let v2 = put_if_match(&h, "old.md", "written after", &old_etag)
        .await
        .assert_ok();
    assert_eq!(v2["version"], 2);
    assert!(head_is_inline(&h, "old.md").await);
    put_if_match(&h, "old.md", "stale", &old_etag)
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(
        h.get_version(KEY_A, "old.md", 1).await.assert_ok()["content"],
        "written before"
    );
    let v3 = put_if_match(&h, "old.md", "and on", v2["etag"].as_str().unwrap())
        .await
        .assert_ok();
    assert_eq!(v3["version"], 3);
    assert_eq!(
        h.get(KEY_A, "old.md").await.assert_ok()["content"],
        "and on"
    );
}
