//! Contract cases for the protocol around the files: identity, the envelope, discovery,
//! path encodings, and the bad-input list of DESIGN.md (each a 400 that changes nothing).

use crate::harness::{file_uri, Harness, KEY_A, KEY_READ_ONLY, LIMITS};
use http::Method;
use serde_json::{json, Value};

pub async fn requests_without_a_known_key_are_401(h: Harness) {
    h.put(KEY_A, "a.md", "x").await.assert_ok();
    for key in [None, Some("not-a-key-0123456789"), Some("")] {
        for (method, uri) in [
            (Method::GET, "/v1/host/workspace/files".to_owned()),
            (Method::GET, file_uri("a.md")),
            (Method::PUT, file_uri("a.md")),
            (Method::DELETE, file_uri("a.md")),
        ] {
            let r = h
                .call(method, &uri, key)
                .json(&json!({"content": "overwritten"}))
                .send()
                .await;
            r.assert_error(401, "unauthenticated");
            assert_eq!(r.headers["www-authenticate"], "Bearer");
        }
    }
    for scheme in ["Basic a2V5", "Bearer", "bearer  ", KEY_A] {
        h.call(Method::GET, "/v1/host/workspace/files", None)
            .header("authorization", scheme)
            .send()
            .await
            .assert_error(401, "unauthenticated");
    }
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["content"], "x");
}

pub async fn discovery_advertises_families_at_root_and_under_capabilities(h: Harness) {
    for uri in ["/.well-known/openwop", "/v1/host/capabilities"] {
        let doc = h.call(Method::GET, uri, None).send().await.assert_ok();
        for fam in ["workspace", "blobStorage", "cache"] {
            assert!(doc[fam].is_object(), "{fam} at root: {doc}");
            assert_eq!(
                doc[fam], doc["capabilities"][fam],
                "{fam} same under capabilities"
            );
        }
        let ws = &doc["workspace"];
        assert_eq!(ws["supported"], true);
        assert_eq!(ws["versioned"], true);
        assert_eq!(ws["maxFileBytes"], LIMITS.max_file_bytes);
        assert_eq!(ws["maxFiles"], LIMITS.max_files);
        assert_eq!(ws["maxVersions"], LIMITS.max_versions);
        assert_eq!(ws["maxUploadBytes"], LIMITS.max_upload_bytes);
        for (fam, keys) in [
            (
                "workspace",
                &["maxFileBytes", "maxFiles", "maxVersions", "maxUploadBytes"][..],
            ),
            ("blobStorage", &["maxObjectBytes", "maxPresignSeconds"][..]),
            ("cache", &["maxValueBytes", "maxTtlSeconds"][..]),
        ] {
            for k in keys {
                assert!(
                    doc[fam][k].as_u64().is_some_and(|n| n >= 1),
                    "{fam}.{k}: {doc}"
                );
            }
        }
        check_mcp_family(&doc);
    }
    let health = h
        .call(Method::GET, "/health", None)
        .send()
        .await
        .assert_ok();
    assert_eq!(health["status"], "ok");
}

/// The `mcp` family as the openwop suite reads it: `serverUrls` (each the absolute or
/// root-relative URL of `/mcp`), `profiles` (`mcp-<revision>` for each protocol revision
/// spoken), and `serverMount` (RFC 0020: publishing workflows as tools) well-formed and
/// not claimed, as this host has no workflows.
pub fn check_mcp_family(doc: &Value) {
    let mcp = &doc["mcp"];
    assert_eq!(
        mcp, &doc["capabilities"]["mcp"],
        "mcp same under capabilities"
    );
    assert_eq!(mcp["supported"], true, "{mcp}");
    let urls = mcp["serverUrls"].as_array().expect("mcp.serverUrls");
    assert!(!urls.is_empty(), "{mcp}");
    for u in urls {
        let u = u.as_str().expect("a serverUrls entry is a string");
        let absolute = u.starts_with("http://") || u.starts_with("https://");
        assert!(
            (absolute || u.starts_with('/')) && u.ends_with("/mcp"),
            "serverUrls entry {u}"
        );
    }
    let versions: Vec<String> = mcp["protocolVersions"]
        .as_array()
        .expect("mcp.protocolVersions")
        .iter()
        .map(|v| format!("mcp-{}", v.as_str().expect("a version")))
        .collect();
    let mut profiles: Vec<String> = mcp["profiles"]
        .as_array()
        .expect("mcp.profiles")
        .iter()
        .map(|p| p.as_str().expect("a profile").to_owned())
        .collect();
    assert_eq!(profiles.first().map(String::as_str), Some("mcp-2025-11-25"));
    profiles.sort();
    let mut spoken = versions;
    spoken.sort();
    assert_eq!(profiles, spoken, "one profile per protocol revision spoken");
    assert_eq!(mcp["serverMount"], json!({ "supported": false }), "{mcp}");
}

pub async fn unknown_routes_and_methods_get_the_envelope(h: Harness) {
    h.call(Method::GET, "/v1/nope", Some(KEY_A))
        .send()
        .await
        .assert_error(404, "not_found");
    let r = h
        .call(Method::POST, &file_uri("a.md"), Some(KEY_A))
        .send()
        .await;
    r.assert_error(405, "method_not_allowed");
    assert!(r.headers["allow"].to_str().unwrap().contains("PUT"));
}

pub async fn encoded_and_raw_slashes_name_the_same_file(h: Harness) {
    h.call(
        Method::PUT,
        "/v1/host/workspace/files/behavior%2FCRUD.md",
        Some(KEY_A),
    )
    .json(&json!({"content": "encoded"}))
    .send()
    .await
    .assert_ok();
    let raw = h.get(KEY_A, "behavior/CRUD.md").await.assert_ok();
    assert_eq!(
        (raw["path"].as_str(), raw["content"].as_str()),
        (Some("behavior/CRUD.md"), Some("encoded"))
    );
    let v2 = h.put(KEY_A, "behavior/CRUD.md", "raw").await.assert_ok();
    assert_eq!(v2["version"], 2);
    let enc = h
        .call(
            Method::GET,
            "/v1/host/workspace/files/behavior%2fCRUD.md",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(enc["content"], "raw");
    let list = h.list(KEY_A, "").await.assert_ok();
    assert_eq!(list["files"].as_array().unwrap().len(), 1);
}

/// Every path of the hostile corpus ([`crate::for_each_hostile_path!`]).
pub fn bad_uri_paths() -> Vec<String> {
    macro_rules! collect {
        ($($name:ident: $path:expr,)*) => { vec![$($path.to_string()),*] };
    }
    crate::for_each_hostile_path!(collect)
}

pub async fn bad_paths_are_400_and_change_nothing(h: Harness) {
    h.put(KEY_A, "a/b", "keep").await.assert_ok();
    h.put(KEY_A, "x", "keep").await.assert_ok();
    let longest = "a".repeat(256);
    h.put(KEY_A, &longest, "at the limit").await.assert_ok();
    let before = h.state(KEY_A).await;
    for p in bad_uri_paths() {
        let uri = format!("/v1/host/workspace/files/{p}");
        for method in [Method::PUT, Method::GET, Method::DELETE] {
            let r = h
                .call(method.clone(), &uri, Some(KEY_A))
                .json(&json!({"content": "overwritten"}))
                .send()
                .await;
            assert_eq!(
                r.status,
                400,
                "{method} {uri:?} gave {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            r.assert_error(400, "validation_error");
        }
    }
    // An empty path names no file and, as behind API Gateway, matches no route.
    for method in [Method::PUT, Method::GET, Method::DELETE] {
        h.call(method, "/v1/host/workspace/files/", Some(KEY_A))
            .json(&json!({"content": "overwritten"}))
            .send()
            .await
            .assert_error(404, "not_found");
    }
    assert_eq!(h.state(KEY_A).await, before);
}

pub async fn bad_bodies_and_headers_are_400_and_change_nothing(h: Harness) {
    h.put(KEY_A, "f.md", "keep").await.assert_ok();
    let before = h.state(KEY_A).await;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let bodies: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"{".to_vec(),
        b"not json".to_vec(),
        b"[]".to_vec(),
        b"null".to_vec(),
        b"{}".to_vec(),
        br#"{"content": 5}"#.to_vec(),
        br#"{"content": null}"#.to_vec(),
        br#"{"content": "x", "contentType": 7}"#.to_vec(),
        br#"{"content": "x", "contentType": "no-slash"}"#.to_vec(),
        br#"{"content": "x", "contentType": "text/plain\u0000"}"#.to_vec(),
        b"{\"content\": \"\xff\xfe\"}".to_vec(),
        b"\xff\xfe\xfd".to_vec(),
        br#"{"content": "\ud800"}"#.to_vec(),
        deep.into_bytes(),
        format!(
            r#"{{"content": {{"a": {}1{}}}}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        )
        .into_bytes(),
    ];
    for b in bodies {
        let r = h
            .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
            .header("content-type", "application/json")
            .body(b.clone())
            .send()
            .await;
        assert_eq!(
            r.status,
            400,
            "body {:?}",
            String::from_utf8_lossy(&b[..b.len().min(60)])
        );
        r.assert_error(400, "validation_error");
    }
    let long = "x".repeat(256);
    let at_limit = "y".repeat(255);
    let headers: Vec<(&str, Vec<u8>)> = vec![
        ("if-match", long.clone().into_bytes()),
        ("idempotency-key", long.into_bytes()),
        ("idempotency-key", "caf\u{e9}".as_bytes().to_vec()),
        ("if-match", b"\"1-\xff\"".to_vec()),
        ("if-none-match", b"\"1-abc\"".to_vec()),
    ];
    for (name, value) in headers {
        let r = h
            .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
            .header(name, &value)
            .json(&json!({"content": "overwritten"}))
            .send()
            .await;
        r.assert_error(400, "validation_error");
    }
    // If-Match is a list (RFC 9110): two lines mean the same as one comma-joined line, the
    // form API Gateway hands a function. Neither tag is current here: 409.
    for lines in [&["\"a\"", "\"b\""][..], &["\"a\", \"b\""]] {
        let mut call = h.call(Method::PUT, &file_uri("f.md"), Some(KEY_A));
        for line in lines {
            call = call.header("if-match", line);
        }
        call.json(&json!({"content": "overwritten"}))
            .send()
            .await
            .assert_error(409, "workspace_conflict");
    }
    // A single-valued header sent twice, or joined by a gateway, is refused.
    for lines in [&["k-1", "k-2"][..], &["k-1, k-2"]] {
        let mut call = h.call(Method::PUT, &file_uri("f.md"), Some(KEY_A));
        for line in lines {
            call = call.header("idempotency-key", line);
        }
        call.json(&json!({"content": "overwritten"}))
            .send()
            .await
            .assert_error(400, "validation_error");
    }
    assert_eq!(h.state(KEY_A).await, before);
    // At the limit is fine (and here simply does not match).
    h.call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
        .header("if-match", &at_limit)
        .json(&json!({"content": "overwritten"}))
        .send()
        .await
        .assert_error(409, "workspace_conflict");
    let ok = h
        .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
        .header("idempotency-key", &at_limit)
        .json(&json!({"content": "new", "unknownField": true}))
        .send()
        .await
        .assert_ok();
    assert_eq!(ok["version"], 2);
    // Any listed tag that is current wins, on one line or on several.
    let current = ok["etag"].as_str().expect("etag").to_owned();
    let stale = format!("\"{}\"", "z".repeat(8));
    let next = h
        .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
        .header("if-match", &stale)
        .header("if-match", &current)
        .json(&json!({"content": "third"}))
        .send()
        .await
        .assert_ok();
    assert_eq!(next["version"], 3);
    let joined = format!("{stale}, {}", next["etag"].as_str().expect("etag"));
    let fourth = h
        .call(Method::PUT, &file_uri("f.md"), Some(KEY_A))
        .header("if-match", &joined)
        .json(&json!({"content": "fourth"}))
        .send()
        .await
        .assert_ok();
    assert_eq!(fourth["version"], 4);
}

pub async fn error_envelope_is_flat_everywhere(h: Harness) {
    // One of each code this issue defines, checked for shape by `assert_error`.
    let cases: Vec<(u16, &str, Value)> = vec![
        (
            400,
            "validation_error",
            h.get(KEY_A, "a//b")
                .await
                .assert_error(400, "validation_error"),
        ),
        (
            401,
            "unauthenticated",
            h.call(Method::GET, "/v1/host/workspace/files", None)
                .send()
                .await
                .assert_error(401, "unauthenticated"),
        ),
        (
            404,
            "not_found",
            h.get(KEY_A, "missing").await.assert_error(404, "not_found"),
        ),
        (
            413,
            "workspace_too_large",
            h.put(
                KEY_A,
                "big",
                &"a".repeat(LIMITS.max_file_bytes as usize + 1),
            )
            .await
            .assert_error(413, "workspace_too_large"),
        ),
    ];
    for (_, code, v) in cases {
        assert!(
            v["error"].is_string() && v["message"].is_string(),
            "{code}: {v}"
        );
        assert!(
            v.get("code").is_none() && !v["error"].is_object(),
            "flat envelope: {v}"
        );
    }
}

/// Secrets used by the redaction case (well-known example values, not real credentials).
pub const SECRET_AWS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
pub const SECRET_GITHUB: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

pub async fn secrets_are_redacted_before_storage(h: Harness) {
    let text = format!("creds: {SECRET_AWS_KEY_ID}\ngh: {SECRET_GITHUB}\nkeep this line");
    let put = h.put(KEY_A, "notes/creds.md", &text).await.assert_ok();
    let stored = put["content"].as_str().unwrap().to_owned();
    assert_eq!(
        stored,
        "creds: [REDACTED:aws-access-key-id]\ngh: [REDACTED:github-token]\nkeep this line"
    );
    assert_eq!(
        h.get(KEY_A, "notes/creds.md").await.assert_ok()["content"],
        stored.as_str()
    );
    let v1 = h
        .call(
            Method::GET,
            "/v1/host/workspace/files/notes/creds.md?version=1",
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    assert_eq!(v1["content"], stored.as_str());
    assert_eq!(
        put["size"],
        stored.len(),
        "size and etag describe the stored text"
    );
    // The adapter's own storage, read directly: no plaintext there either.
    let raw = h.raw_body("acme", "main", "notes/creds.md").await;
    assert!(
        !raw.contains(SECRET_AWS_KEY_ID) && !raw.contains(SECRET_GITHUB),
        "{raw}"
    );
    assert_eq!(raw, stored);
}

pub async fn read_only_credentials_read_but_never_write(h: Harness) {
    h.put(KEY_A, "shared.md", "by the writer").await.assert_ok();
    let before = h.state(KEY_A).await;
    assert_eq!(
        h.get(KEY_READ_ONLY, "shared.md").await.assert_ok()["content"],
        "by the writer"
    );
    h.list(KEY_READ_ONLY, "").await.assert_ok();
    let e = h
        .put(KEY_READ_ONLY, "shared.md", "overwrite")
        .await
        .assert_error(403, "forbidden");
    assert!(
        e["message"].as_str().unwrap().contains("workspace:write"),
        "{e}"
    );
    h.put(KEY_READ_ONLY, "new.md", "create")
        .await
        .assert_error(403, "forbidden");
    h.delete(KEY_READ_ONLY, "shared.md")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(h.state(KEY_A).await, before);
}
