//! The openwop conformance test seams (issue 18): absent unless
//! `OPENWOP_TEST_SEAM_ENABLED=true`, and with it on, the owner in the body is the only
//! owner a call reaches: files, blobs and cache entries never cross owners, presigned URLs
//! and cache entries end at their TTL on the wall clock.

mod common;

use common::Server;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const KEY: &str = "seam-tenant-a-key-000001";
const WORKSPACE_OP: &str = "/v1/host/sample/workspace/op";
const SURFACE: &str = "/v1/host/sample/test/surface";
const OWNED_RUN: &str = "/v1/host/sample/identity/owned-run";
const CROSS_WORKSPACE_READ: &str = "/v1/host/sample/identity/cross-workspace-read";

fn env(gate: Option<&'static str>) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![("WORKSPACE_API_KEYS", "seam-tenant-a-key-000001=acme/main")];
    if let Some(v) = gate {
        env.push(("OPENWOP_TEST_SEAM_ENABLED", v));
    }
    env
}

async fn post(c: &Client, s: &Server, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
    let r = c
        .post(s.url(path))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn get(c: &Client, s: &Server, path: &str, key: &str) -> (StatusCode, Value) {
    let r = c.get(s.url(path)).bearer_auth(key).send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn op(c: &Client, s: &Server, body: Value) -> (StatusCode, Value) {
    post(c, s, WORKSPACE_OP, KEY, body).await
}

async fn surface(
    c: &Client,
    s: &Server,
    tenant: &str,
    surface: &str,
    op: &str,
    args: Value,
) -> (StatusCode, Value) {
    let body = json!({ "tenantId": tenant, "surface": surface, "op": op, "args": args });
    post(c, s, SURFACE, KEY, body).await
}

#[tokio::test]
async fn the_seams_are_unknown_routes_unless_the_gate_is_exactly_true() {
    let c = Client::new();
    for gate in [None, Some("false"), Some("1"), Some("TRUE"), Some("yes")] {
        let dir = tempfile::tempdir().unwrap();
        let s = Server::start(dir.path(), &env(gate)).await;
        for (path, body) in [
            (
                WORKSPACE_OP,
                json!({"tenant": "t-a", "workspace": "w", "op": "list"}),
            ),
            (
                SURFACE,
                json!({"tenantId": "t-a", "surface": "cache", "op": "get", "args": {"key": "k"}}),
            ),
        ] {
            let (status, answer) = post(&c, &s, path, KEY, body).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "gate {gate:?}, {path}");
            // Exactly what an unknown route answers.
            let (_, unknown) = post(&c, &s, "/v1/host/sample/nothing", KEY, json!({})).await;
            assert_eq!(answer["error"], unknown["error"], "gate {gate:?}");
            assert_eq!(answer["error"], "not_found");
        }
        // The identity seams too: exactly an unknown route, and no run started.
        let (_, unknown) = get(&c, &s, "/v1/host/sample/identity/nothing", KEY).await;
        let (status, answer) = get(&c, &s, OWNED_RUN, KEY).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "gate {gate:?}, {OWNED_RUN}");
        assert_eq!(answer["error"], unknown["error"], "gate {gate:?}");
        let (status, answer) = post(&c, &s, CROSS_WORKSPACE_READ, KEY, json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "gate {gate:?}");
        assert_eq!(answer["error"], "not_found");
        let (_, runs) = get(&c, &s, "/v1/runs", KEY).await;
        assert_eq!(runs["runs"], json!([]), "gate {gate:?}");
        // Nothing was written through a closed seam.
        let (_, w) = op(&c, &s, json!({"tenant": "acme", "workspace": "main", "op": "put", "path": "x.md", "content": "x"})).await;
        assert_ne!(w["version"], 1);
        let listed: Value = c
            .get(s.url("/v1/host/workspace/files"))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed["files"], json!([]), "gate {gate:?}");
    }
}

#[tokio::test]
async fn the_workspace_seam_answers_as_the_files_routes_and_never_crosses_owners() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, _) = common::create_key(
        dir.path(),
        &["--tenant", "acme", "--workspace", "main", "--read-only"],
    );
    let s = Server::start(dir.path(), &env(Some("true"))).await;
    let c = Client::new();
    let a = |op_: &str| json!({"tenant": "wct1-tenant-a", "workspace": "ws-a", "op": op_, "path": "WCT1-SECRET.md"});

    let mut put = a("put");
    put["content"] = json!("A-only secret body");
    let (status, v1) = op(&c, &s, put.clone()).await;
    assert_eq!(status, StatusCode::OK, "{v1}");
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["content"], "A-only secret body");
    // A put without ifMatch on an existing file is an ordinary new version.
    put["content"] = json!("A-only secret body, v2");
    let (status, v2) = op(&c, &s, put.clone()).await;
    assert_eq!((status, v2["version"].clone()), (StatusCode::OK, json!(2)));
    // A stale ifMatch is the files route's 409, with the current version.
    put["ifMatch"] = v1["etag"].clone();
    let (status, stale) = op(&c, &s, put.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(stale["error"], "workspace_conflict");
    assert_eq!(stale["details"]["currentVersion"], 2);
    // Over maxFileBytes (1 MiB by default): the route's 413.
    let mut big = a("put");
    big["content"] = json!("x".repeat(1024 * 1024 + 1));
    let (status, too_large) = op(&c, &s, big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(too_large["error"], "workspace_too_large");
    // An old version, by number.
    let mut old = a("get");
    old["version"] = json!(1);
    let (status, got) = op(&c, &s, old).await;
    assert_eq!(
        (status, got["content"].clone()),
        (StatusCode::OK, json!("A-only secret body"))
    );

    // Another workspace of the same tenant, and another tenant with the same workspace name:
    // 404 on get, nothing on list, and never the content.
    for (tenant, workspace) in [("wct1-tenant-a", "ws-b"), ("wct1-tenant-b", "ws-a")] {
        let mut other = a("get");
        other["tenant"] = json!(tenant);
        other["workspace"] = json!(workspace);
        let (status, answer) = op(&c, &s, other.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{tenant}/{workspace}");
        assert_eq!(answer["error"], "not_found");
        assert!(!answer.to_string().contains("A-only"), "{answer}");
        other["op"] = json!("list");
        let (status, listed) = op(&c, &s, other.clone()).await;
        assert_eq!(
            (status, listed["files"].clone()),
            (StatusCode::OK, json!([]))
        );
        other["op"] = json!("delete");
        let (status, _) = op(&c, &s, other).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    // The owner still reads it, lists it (metadata only), and deletes it: 204, then 404.
    let (_, listed) = op(
        &c,
        &s,
        json!({"tenant": "wct1-tenant-a", "workspace": "ws-a", "op": "list", "prefix": "WCT1"}),
    )
    .await;
    assert_eq!(listed["files"].as_array().unwrap().len(), 1);
    assert!(listed["files"][0].get("content").is_none());
    let (status, got) = op(&c, &s, a("get")).await;
    assert_eq!(
        (status, got["content"].clone()),
        (StatusCode::OK, json!("A-only secret body, v2"))
    );
    let r = c
        .post(s.url(WORKSPACE_OP))
        .bearer_auth(KEY)
        .json(&a("delete"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (status, _) = op(&c, &s, a("get")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The seam still needs a key, and a read-only key cannot write through it.
    let r = c
        .post(s.url(WORKSPACE_OP))
        .json(&a("list"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let (status, _) = post(&c, &s, WORKSPACE_OP, &reader, put).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post(&c, &s, WORKSPACE_OP, &reader, a("list")).await;
    assert_eq!(status, StatusCode::OK);
    // The key's own workspace never saw any of it.
    let own: Value = c
        .get(s.url("/v1/host/workspace/files"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(own["files"], json!([]));
    // A malformed call is a 400 envelope.
    let (status, bad) = op(
        &c,
        &s,
        json!({"tenant": "t", "workspace": "w", "op": "rename"}),
    )
    .await;
    assert_eq!(
        (status, bad["error"].clone()),
        (StatusCode::BAD_REQUEST, json!("validation_error"))
    );
}

#[tokio::test]
async fn blobs_and_cache_through_the_surface_seam_stay_with_their_tenant_and_expire() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &env(Some("true"))).await;
    let c = Client::new();

    // A probe of a missing blob is a 200 miss, never a 404, whatever key S3 would accept
    // (the suite probes `__probe__`); the blob route answers the same miss 404.
    for key in ["probe-missing", "__probe__", ".hidden", "-x", "a b?#"] {
        let (status, probe) = surface(&c, &s, "tenant-a", "blob", "get", json!({"key": key})).await;
        assert_eq!(
            (status, probe),
            (StatusCode::OK, json!({"found": false})),
            "{key}"
        );
    }
    let miss = c
        .get(s.url("/v1/host/blob/default/__probe__"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(miss.status(), StatusCode::NOT_FOUND);
    let miss: Value = miss.json().await.unwrap();
    assert_eq!(miss["error"], "blob_object_not_found");
    // `__probe__` is an ordinary key: stored and read back through the seam.
    let (status, _) = surface(
        &c,
        &s,
        "tenant-a",
        "blob",
        "put",
        json!({"key": "__probe__", "contentBase64": base64_encode(b"p"), "contentType": "text/plain"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, got) = surface(
        &c,
        &s,
        "tenant-a",
        "blob",
        "get",
        json!({"key": "__probe__"}),
    )
    .await;
    assert_eq!(got["found"], true, "{got}");
    // A key no blob can have is a 400 that says why (not a miss, not a 404).
    for key in ["../x", "a/./b", "", "a\u{1}b"] {
        let (status, bad) = surface(&c, &s, "tenant-a", "blob", "get", json!({"key": key})).await;
        assert_eq!(
            (status, bad["error"].clone()),
            (StatusCode::BAD_REQUEST, json!("validation_error")),
            "{key:?}"
        );
    }
    let bytes = b"presigned-payload";
    let b64 = base64_encode(bytes);
    let (status, put) = surface(
        &c,
        &s,
        "tenant-a",
        "blob",
        "put",
        json!({"key": "k1", "contentBase64": b64, "contentType": "text/plain"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{put}");
    let (_, got) = surface(&c, &s, "tenant-a", "blob", "get", json!({"key": "k1"})).await;
    assert_eq!(
        (got["found"].clone(), got["contentBase64"].clone()),
        (json!(true), json!(b64))
    );
    // Another tenant at the same bucket and key: a miss.
    let (status, other) = surface(&c, &s, "tenant-b", "blob", "get", json!({"key": "k1"})).await;
    assert_eq!((status, other), (StatusCode::OK, json!({"found": false})));

    // A presigned URL answers a plain GET (an extra Authorization header does not break it)
    // inside its TTL, and 403 after.
    let (status, signed) = surface(
        &c,
        &s,
        "tenant-a",
        "blob",
        "presign",
        json!({"key": "k1", "expiresInSeconds": 2}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{signed}");
    assert_eq!(signed["expiresInSeconds"], 2);
    assert!(signed["expiresAtMs"].as_i64().unwrap() > 0);
    let url = signed["url"].as_str().unwrap().to_owned();
    let within = c
        .get(&url)
        .bearer_auth("some-unrelated-bearer")
        .send()
        .await
        .unwrap();
    assert_eq!(within.status(), StatusCode::OK);
    assert_eq!(within.bytes().await.unwrap().as_ref(), bytes);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let after = c.get(&url).send().await.unwrap();
    assert_eq!(after.status(), StatusCode::FORBIDDEN);

    // Cache: a hit for its tenant with the time it has left, a miss for another tenant,
    // and gone after its TTL.
    let (status, _) = surface(
        &c,
        &s,
        "tenant-a",
        "cache",
        "put",
        json!({"key": "c1", "value": "from-A", "ttlSeconds": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, hit) = surface(&c, &s, "tenant-a", "cache", "get", json!({"key": "c1"})).await;
    assert_eq!(
        (
            hit["found"].clone(),
            hit["hit"].clone(),
            hit["value"].clone()
        ),
        (json!(true), json!(true), json!("from-A"))
    );
    let left = hit["ttlRemainingMs"].as_i64().unwrap();
    assert!((0..=1000).contains(&left), "{left}");
    let (_, miss) = surface(&c, &s, "tenant-b", "cache", "get", json!({"key": "c1"})).await;
    assert_eq!(miss, json!({"found": false, "hit": false}));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, expired) = surface(&c, &s, "tenant-a", "cache", "get", json!({"key": "c1"})).await;
    assert_eq!(
        (status, expired),
        (StatusCode::OK, json!({"found": false, "hit": false}))
    );
    // Delete, and surfaces this host does not have.
    surface(
        &c,
        &s,
        "tenant-a",
        "cache",
        "put",
        json!({"key": "c2", "value": 1, "ttlSeconds": 60}),
    )
    .await;
    let (status, _) = surface(&c, &s, "tenant-a", "cache", "delete", json!({"key": "c2"})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, gone) = surface(&c, &s, "tenant-a", "cache", "get", json!({"key": "c2"})).await;
    assert_eq!(gone["found"], false);
    let (status, _) = surface(&c, &s, "tenant-a", "kv", "get", json!({"key": "c2"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `cross-workspace-isolation` scenario's seams (RFC 0048): a run the caller owns
/// carries `owner` with a non-empty tenant, as `GET /v1/runs/{runId}` answers it, and a
/// read of another workspace's run fails closed with a 4xx `run_forbidden` (not 404, which
/// the scenario takes for an unwired seam) carrying nothing of the run.
#[tokio::test]
async fn the_identity_seams_show_run_ownership_and_cross_workspace_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, _) = common::create_key(
        dir.path(),
        &["--tenant", "acme", "--workspace", "main", "--read-only"],
    );
    let s = Server::start(dir.path(), &env(Some("true"))).await;
    let c = Client::new();

    let (status, owned) = get(&c, &s, OWNED_RUN, KEY).await;
    assert_eq!(status, StatusCode::OK, "{owned}");
    let owner = &owned["owner"];
    assert_eq!(owner["tenant"], "acme", "{owned}");
    assert_eq!(owner["workspace"], "main", "{owned}");
    assert!(
        owner["principal"].as_str().is_some_and(|p| !p.is_empty()),
        "{owned}"
    );
    let id = owned["runId"].as_str().expect("runId").to_owned();
    assert!(id.starts_with("run_"), "{id}");
    assert!(owned["workspace"].is_array(), "a run snapshot: {owned}");
    // The same run, through the runs route, with the same owner.
    let (status, via_route) = get(&c, &s, &format!("/v1/runs/{id}"), KEY).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(via_route["owner"], *owner);

    let (status, refused) = post(&c, &s, CROSS_WORKSPACE_READ, KEY, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["error"], "run_forbidden", "{refused}");
    assert_eq!(
        refused.as_object().map(|o| o.len()),
        Some(2),
        "only error and message: {refused}"
    );
    assert!(
        !refused.to_string().contains("openwop-identity-seam"),
        "{refused}"
    );
    // Runs of the other workspace never show in the caller's: only the one it owns.
    let (_, runs) = get(&c, &s, "/v1/runs", KEY).await;
    let listed: Vec<&Value> = runs["runs"].as_array().unwrap().iter().collect();
    assert_eq!(listed.len(), 1, "{runs}");
    assert_eq!(listed[0]["runId"], id.as_str());

    // Bad bodies are 400 and start nothing; a credential is needed, and one that may write.
    for body in ["not json", "[]", "\"{}\""] {
        let r = c
            .post(s.url(CROSS_WORKSPACE_READ))
            .bearer_auth(KEY)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "validation_error");
    }
    let r = c.get(s.url(OWNED_RUN)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .post(s.url(CROSS_WORKSPACE_READ))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let (status, _) = get(&c, &s, OWNED_RUN, &reader).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post(&c, &s, CROSS_WORKSPACE_READ, &reader, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, runs) = get(&c, &s, "/v1/runs", KEY).await;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
}
