//! Contract cases for concurrent writers: one winner per precondition, no lost update.

use crate::harness::{file_uri, Harness, KEY_A};
use http::Method;
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

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
