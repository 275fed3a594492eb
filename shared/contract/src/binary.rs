//! Contract cases for binary content: `contentBase64` in, `contentBase64` out.

use crate::harness::{file_uri, Harness, KEY_A, LIMITS};
use crate::protocol::SECRET_AWS_KEY_ID;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::Method;
use serde_json::{json, Value};

async fn put_b64(h: &Harness, path: &str, bytes: &[u8]) -> crate::harness::Reply {
    h.call(Method::PUT, &file_uri(path), Some(KEY_A))
        .json(&json!({
            "contentBase64": STANDARD.encode(bytes),
            "contentType": "application/octet-stream",
        }))
        .send()
        .await
}

fn bytes_of(v: &Value) -> Vec<u8> {
    assert!(
        v.get("content").is_none(),
        "binary files carry no content: {v}"
    );
    STANDARD
        .decode(v["contentBase64"].as_str().expect("contentBase64"))
        .expect("valid base64")
}

pub async fn binary_bodies_round_trip_every_byte_value(h: Harness) {
    // Every byte value, in both orders, so each appears after each other kind of byte.
    let mut body: Vec<u8> = (0..=255u8).collect();
    body.extend((0..=255u8).rev());
    let put = put_b64(&h, "blob.bin", &body).await.assert_ok();
    assert_eq!(bytes_of(&put), body);
    assert_eq!(put["size"], 512);
    assert_eq!(put["contentType"], "application/octet-stream");
    let got = h.get(KEY_A, "blob.bin").await.assert_ok();
    assert_eq!(bytes_of(&got), body);
    assert_eq!(got["etag"], put["etag"]);

    // Past versions, snapshots and restores keep the bytes too.
    put_b64(&h, "blob.bin", &[0xff, 0x00, 0xfe])
        .await
        .assert_ok();
    let v1 = h.get_version(KEY_A, "blob.bin", 1).await.assert_ok();
    assert_eq!(bytes_of(&v1), body);
    let snap = h.snapshot(KEY_A).await.assert_ok();
    let id = snap["snapshotId"].as_str().unwrap();
    assert_eq!(
        bytes_of(&h.get_in(KEY_A, id, "blob.bin").await.assert_ok()),
        [0xff, 0x00, 0xfe]
    );
    let restored = h.restore(KEY_A, "blob.bin", 1, None).await.assert_ok();
    assert_eq!(bytes_of(&restored), body);
    let d = h.diff(KEY_A, "blob.bin", "from=1&to=2").await.assert_ok();
    assert_eq!(d["binary"], true);
    assert!(d["diff"].as_str().unwrap().contains("Binary files"));

    // UTF-8 sent as base64 is text: redacted like any text, and read back as `content`.
    let text = format!("key {SECRET_AWS_KEY_ID}");
    let t = put_b64(&h, "text.txt", text.as_bytes()).await.assert_ok();
    let content = t["content"].as_str().expect("UTF-8 reads back as content");
    assert!(!content.contains(SECRET_AWS_KEY_ID), "{content}");
    assert!(t.get("contentBase64").is_none());

    // Bad bodies are 400 and change nothing; the limit counts decoded bytes.
    let before = h.state(KEY_A).await;
    for bad in [
        json!({"contentBase64": "not base64!"}),
        json!({"contentBase64": "AA"}),
        json!({"content": "x", "contentBase64": "AA=="}),
        json!({"contentType": "text/plain"}),
        json!({"contentBase64": 5}),
    ] {
        h.call(Method::PUT, &file_uri("blob.bin"), Some(KEY_A))
            .json(&bad)
            .send()
            .await
            .assert_error(400, "validation_error");
    }
    let limit = LIMITS.max_file_bytes as usize;
    put_b64(&h, "big.bin", &vec![0xff; limit + 1])
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
    put_b64(&h, "big.bin", &vec![0xff; limit]).await.assert_ok();
}
