//! RFC 0019 through the Lambda handler: binary bodies survive API Gateway's base64 in both
//! directions, and each new function serves only its rows.

use lambda_http::Body;
use serde_json::Value;
use workspace_lambda::handle;

mod common;

fn event(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("event file")).expect("event JSON")
}

fn app(function: &str, dir: &std::path::Path) -> workspace_http::App {
    common::app(function, dir)
}

async fn call(app: &workspace_http::App, ev: &Value) -> lambda_http::Response<Body> {
    let req = lambda_http::request::from_str(&ev.to_string()).expect("API Gateway v2 event");
    handle(app, req).await.expect("handler")
}

#[tokio::test]
async fn every_byte_value_survives_the_lambda_path_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let blob = app("blob", dir.path());
    let all: Vec<u8> = (0..=255u8).collect();
    let resp = call(&blob, &event("put-blob.json")).await;
    assert_eq!(resp.status(), 200);
    let v: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
    assert_eq!(v["sizeBytes"], 256, "{v}");
    let resp = call(&blob, &event("get-blob.json")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers().get("content-type").unwrap(),
        "application/octet-stream"
    );
    // Not UTF-8, so it leaves as Binary: lambda_http base64-encodes it and sets
    // isBase64Encoded, and API Gateway hands the client the original bytes.
    match resp.body() {
        Body::Binary(b) => assert_eq!(b.as_slice(), all.as_slice()),
        other => panic!("expected a binary body, got {other:?}"),
    }
    // Bytes that happen to be UTF-8 leave as text, unchanged.
    let mut ev = event("put-blob.json");
    ev["body"] = Value::from("aGVsbG8gd29ybGQ="); // "hello world"
    assert_eq!(call(&blob, &ev).await.status(), 200);
    let resp = call(&blob, &event("get-blob.json")).await;
    assert_eq!(resp.body().as_ref(), b"hello world");
}

#[tokio::test]
async fn the_cache_function_serves_the_cache_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let cache = app("cache", dir.path());
    let resp = call(&cache, &event("put-cache.json")).await;
    assert_eq!(resp.status(), 200);
    let v: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    // Blob rows belong to fn-blob, file rows to theirs.
    assert_eq!(call(&cache, &event("put-blob.json")).await.status(), 404);
    assert_eq!(call(&cache, &event("get-file.json")).await.status(), 404);
    drop(cache); // the embedded file admits one opener
    let blob = app("blob", dir.path());
    assert_eq!(call(&blob, &event("put-cache.json")).await.status(), 404);
}
