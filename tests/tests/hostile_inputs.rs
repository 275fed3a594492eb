//! One named test per hostile input: each is refused with 400 `validation_error` on every
//! method and changes nothing. Paths come from the shared corpus
//! (`workspace_contract::for_each_hostile_path!`); the contract suite runs the same corpus
//! against every backend.

use http::Method;
use serde_json::json;
use std::sync::Arc;
use workspace_contract::harness::{Backend, Harness, KEY_A};
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

fn memory() -> Backend {
    Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    }
}

async fn harness() -> Harness {
    let h = Harness::new(memory()).await;
    for p in ["a/b", "x", "b", "abs"] {
        h.put(KEY_A, p, "original").await.assert_ok();
    }
    h
}

async fn assert_path_refused(path: &str) {
    let h = harness().await;
    let before = h.state(KEY_A).await;
    let uri = format!("/v1/host/workspace/files/{path}");
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let r = h
            .call(method.clone(), &uri, Some(KEY_A))
            .json(&json!({"content": "overwritten"}))
            .send()
            .await;
        r.assert_error(400, "validation_error");
    }
    assert_eq!(
        h.state(KEY_A).await,
        before,
        "{path:?} changed stored state"
    );
}

macro_rules! named_path_tests {
    ($($name:ident: $path:expr,)*) => {
        mod path {
            $(
                #[tokio::test]
                async fn $name() {
                    super::assert_path_refused(&$path.to_string()).await;
                }
            )*
        }
    };
}

workspace_contract::for_each_hostile_path!(named_path_tests);

/// Hostile values outside the path: headers, queries, bodies.
async fn assert_put_refused(headers: &[(&str, Vec<u8>)], body: Vec<u8>) {
    let h = harness().await;
    let before = h.state(KEY_A).await;
    let mut call = h
        .call(Method::PUT, "/v1/host/workspace/files/x", Some(KEY_A))
        .body(body);
    for (k, v) in headers {
        call = call.header(k, v);
    }
    call.send().await.assert_error(400, "validation_error");
    assert_eq!(h.state(KEY_A).await, before);
}

fn ok_body() -> Vec<u8> {
    br#"{"content": "overwritten"}"#.to_vec()
}

macro_rules! named_value_tests {
    ($($name:ident: $headers:expr, $body:expr;)*) => {
        mod value {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    assert_put_refused(&$headers, $body).await;
                }
            )*
        }
    };
}

named_value_tests! {
    if_match_over_255: [("if-match", vec![b'x'; 256])], ok_body();
    idempotency_key_over_255: [("idempotency-key", vec![b'k'; 256])], ok_body();
    idempotency_key_non_ascii: [("idempotency-key", "cl\u{e9}".as_bytes().to_vec())], ok_body();
    idempotency_key_control_byte: [("idempotency-key", b"a\tb".to_vec())], ok_body();
    if_none_match_not_star: [("if-none-match", b"\"1-x\"".to_vec())], ok_body();
    body_not_json: [], b"content=hello".to_vec();
    body_not_utf8: [], b"{\"content\": \"\xc3\x28\"}".to_vec();
    body_empty: [], Vec::new();
    body_array: [], b"[]".to_vec();
    body_content_number: [], br#"{"content": 1}"#.to_vec();
    body_lone_surrogate: [], br#"{"content": "\udc00"}"#.to_vec();
    body_deeply_nested: [], format!("{}{}", "[".repeat(20_000), "]".repeat(20_000)).into_bytes();
    body_content_type_with_nul: [], br#"{"content": "x", "contentType": "text/plain\u0000"}"#.to_vec();
    body_content_type_too_long: [], format!(r#"{{"content": "x", "contentType": "text/{}"}}"#, "a".repeat(300)).into_bytes();
    body_trailing_garbage: [], br#"{"content": "x"} trailing"#.to_vec();
}

macro_rules! named_query_tests {
    ($($name:ident: $query:expr;)*) => {
        mod query {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let h = harness().await;
                    h.call(Method::GET, &format!("/v1/host/workspace/files?{}", $query), Some(KEY_A))
                        .send()
                        .await
                        .assert_error(400, "validation_error");
                }
            )*
        }
    };
}

named_query_tests! {
    prefix_dotdot: "prefix=../";
    prefix_encoded_dotdot: "prefix=a%2F..%2F";
    prefix_glob_dotdot: "prefix=**/../";
    prefix_absolute: "prefix=/etc";
    prefix_nul: "prefix=a%00";
    limit_zero: "limit=0";
    limit_negative: "limit=-1";
    limit_huge: "limit=99999999999999999999";
    next_token_forged: "nextToken=Li4vZXRj";
    repeated_parameter: "prefix=a&prefix=b";
}

/// Only this process's own upload URLs take bodies as large as an upload: every other
/// path (the routes, the upload-start route included) is held to the inline limit, so an
/// unauthenticated flood is refused before it is buffered whole.
#[tokio::test]
async fn only_upload_urls_take_upload_sized_bodies() {
    let h = Harness::with_limits(
        memory(),
        workspace_core::Limits {
            max_file_bytes: 16,
            max_files: 5,
            max_versions: 3,
            max_upload_bytes: 10_000_000,
        },
    )
    .await;
    let inline = h.app.max_request_bytes();
    assert!(inline < 1_000_000, "{inline}");
    assert_eq!(
        h.app
            .max_request_bytes_for("/v1/signed/upload/acme/main/0123abcd"),
        10_000_001
    );
    for path in [
        "/v1/host/workspace/uploads",
        "/v1/host/workspace/files/a.bin",
        "/v1/signed/body/t/acme/w/main/files/a.bin",
        "/mcp",
    ] {
        assert_eq!(h.app.max_request_bytes_for(path), inline, "{path}");
    }
}
