//! Property-based fuzzing of the path parser and the HTTP request parser: random bytes and
//! structured mutations of hostile pieces, thousands of cases per run. Nothing panics, no
//! input yields a 5xx, and every accepted path satisfies the path invariants.

use bytes::Bytes;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};
use workspace_contract::harness::{Backend, Harness, KEY_A};
use workspace_core::FilePath;
use workspace_http::PathForm;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

/// The invariants of DESIGN.md's path rule.
fn assert_valid_path(p: &str) {
    assert!(!p.is_empty() && p.len() <= 256, "{p:?}");
    assert!(p.starts_with(|c: char| c.is_ascii_alphanumeric()), "{p:?}");
    assert!(
        p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c)),
        "{p:?}"
    );
    assert!(!p.ends_with('/'), "{p:?}");
    for seg in p.split('/') {
        assert!(!seg.is_empty() && seg != "." && seg != "..", "{p:?}");
    }
}

/// Pieces that make paths interesting: separators, dots, encodings, look-alikes.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/".to_owned()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("%2F".to_owned()),
        Just("%2e".to_owned()),
        Just("%00".to_owned()),
        Just("%c0%ae".to_owned()),
        Just("%ef%bc%8f".to_owned()),
        Just("%5C".to_owned()),
        Just("%25".to_owned()),
        Just("%".to_owned()),
        Just("\\".to_owned()),
        "[a-zA-Z0-9_-]{1,8}",
        "\\PC{1,3}",
        any::<u8>().prop_map(|b| format!("%{b:02x}")),
    ]
}

fn structured_path() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn path_parser_never_panics_and_accepts_only_valid_paths(s in "\\PC{0,300}") {
        if let Ok(p) = FilePath::parse(&s) {
            assert_valid_path(p.as_str());
            prop_assert_eq!(p.as_str(), s.as_str());
        }
    }

    #[test]
    fn decoding_then_parsing_never_panics(s in structured_path()) {
        // What the app does with a request path: decode once, then parse.
        let decoded = percent_encoding::percent_decode_str(&s).decode_utf8_lossy();
        if let Ok(p) = FilePath::parse(&decoded) {
            assert_valid_path(p.as_str());
        }
    }

    #[test]
    fn random_bytes_as_a_decoded_path_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let s = String::from_utf8_lossy(&bytes);
        if let Ok(p) = FilePath::parse(&s) {
            assert_valid_path(p.as_str());
        }
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Runtime::new().expect("runtime"))
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        runtime().block_on(async {
            // With the RFC 0019 ports too, so blob, cache and signed-URL paths are fuzzed.
            let h = Harness::with_capabilities(
                Backend {
                    meta: Arc::new(MemoryMeta::default()),
                    bodies: Arc::new(MemoryBodies::default()),
                    secrets: Arc::new(MemorySecrets::default()),
                    guard: Box::new(()),
                },
                workspace_contract::Capabilities {
                    cache: Arc::new(workspace_store_memory::MemoryCache::default()),
                    blobs: Arc::new(workspace_store_memory::MemoryBlobs::default()),
                },
            )
            .await;
            h.put(KEY_A, "a/b.md", "x").await.assert_ok();
            h
        })
    })
}

fn method() -> impl Strategy<Value = http::Method> {
    prop_oneof![
        Just(http::Method::GET),
        Just(http::Method::PUT),
        Just(http::Method::DELETE),
        Just(http::Method::POST),
        Just(http::Method::HEAD),
        Just(http::Method::PATCH),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        "\\PC{0,100}".prop_map(|c| serde_json::json!({ "content": c }).to_string().into_bytes()),
        ("\\PC{0,20}", "\\PC{0,40}").prop_map(|(c, t)| {
            serde_json::json!({ "content": c, "contentType": t })
                .to_string()
                .into_bytes()
        }),
        Just(b"{\"content\":".to_vec()),
    ]
}

fn header_value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![0x20u8..0x7f, 0x80u8..=0xff, Just(b'\t')],
        0..300,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn the_http_layer_answers_every_request_with_a_non_5xx_envelope(
        method in method(),
        base in prop_oneof![
            Just("/v1/host/workspace/files/"),
            Just("/v1/host/workspace/files"),
            Just("/.well-known/openwop"),
            Just("/v1/host/"),
            Just("/v1/host/blob/default/"),
            Just("/v1/host/blob/"),
            Just("/v1/host/cache/"),
            Just("/v1/signed/blob/acme/main/default/"),
        ],
        path in structured_path(),
        query in prop::option::of("[a-zA-Z=&%0-9._/-]{0,40}"),
        if_match in prop::option::of(header_value()),
        idempotency in prop::option::of(header_value()),
        if_none_match in prop::option::of(header_value()),
        body in body(),
        encoded in any::<bool>(),
    ) {
        let mut uri = format!("{base}{path}");
        if let Some(q) = &query {
            uri.push('?');
            uri.push_str(q);
        }
        // Only URIs the http crate accepts reach a server at all.
        let Ok(uri) = uri.parse::<http::Uri>() else { return Ok(()) };
        let mut b = http::Request::builder().method(method).uri(uri.clone())
            .header("authorization", format!("Bearer {KEY_A}"));
        for (name, value) in [("if-match", &if_match), ("idempotency-key", &idempotency), ("if-none-match", &if_none_match)] {
            if let Some(v) = value {
                if let Ok(hv) = http::HeaderValue::from_bytes(v) {
                    b = b.header(name, hv);
                }
            }
        }
        let req = b.body(Bytes::from(body)).expect("request");
        let form = if encoded {
            PathForm::Encoded
        } else {
            PathForm::Decoded(percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy().into_owned())
        };
        let resp = runtime().block_on(harness().app.handle(req, form));
        let status = resp.status().as_u16();
        prop_assert!(status < 500, "{} for {uri}", status);
        if status >= 400 {
            let v: serde_json::Value = serde_json::from_slice(resp.body()).expect("error body is JSON");
            prop_assert!(v["error"].is_string() && v["message"].is_string());
        }
    }
}
