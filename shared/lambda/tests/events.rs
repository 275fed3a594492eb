//! The Lambda handler called directly with the recorded API Gateway events in `events/`.

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

async fn call(app: &workspace_http::App, ev: &Value) -> (u16, Value) {
    let req = lambda_http::request::from_str(&ev.to_string()).expect("API Gateway v2 event");
    let resp = handle(app, req).await.expect("handler");
    let status = resp.status().as_u16();
    let body = resp.body().as_ref().to_vec();
    let json = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).expect("JSON body")
    };
    (status, json)
}

#[tokio::test]
async fn recorded_events_round_trip_through_each_function() {
    let dir = tempfile::tempdir().unwrap();
    // Each function opens the same directory in turn (the embedded file admits one opener).
    let (s, v) = call(&app("put", dir.path()), &event("put-file.json")).await;
    assert_eq!(
        (s, v["version"].as_u64(), v["content"].as_str()),
        (200, Some(1), Some("hello")),
        "{v}"
    );
    let (s, v) = call(&app("get", dir.path()), &event("get-file.json")).await;
    assert_eq!((s, v["content"].as_str()), (200, Some("hello")), "{v}");
    let (s, v) = call(&app("list", dir.path()), &event("list-files.json")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["files"][0]["path"], "notes/today.md");
    let (s, _) = call(&app("delete", dir.path()), &event("delete-file.json")).await;
    assert_eq!(s, 204);
}

#[tokio::test]
async fn identity_comes_only_from_the_authorizer() {
    let dir = tempfile::tempdir().unwrap();
    let put = app("put", dir.path());
    let mut ev = event("put-file.json");
    ev["requestContext"]["authorizer"] = Value::Null;
    let (s, v) = call(&put, &ev).await;
    assert_eq!(
        (s, v["error"].as_str()),
        (401, Some("unauthenticated")),
        "{v}"
    );

    let mut ev = event("put-file.json");
    ev["requestContext"]["authorizer"]["jwt"]["claims"]
        .as_object_mut()
        .unwrap()
        .remove("tenant_id");
    ev["headers"]["x-tenant-id"] = Value::from("acme");
    let (s, _) = call(&put, &ev).await;
    assert_eq!(s, 401, "a header never stands in for a missing claim");

    let mut ev = event("put-file.json");
    ev["requestContext"]["authorizer"]["jwt"]["claims"]["tenant_id"] = Value::from("acme/../evil");
    let (s, _) = call(&put, &ev).await;
    assert_eq!(s, 401);
}

#[tokio::test]
async fn routes_on_raw_path_not_the_normalised_uri() {
    let dir = tempfile::tempdir().unwrap();
    let put = app("put", dir.path());
    let mut ev = event("put-file.json");
    ev["rawPath"] = Value::from("/v1/host/workspace/files/a/../notes/today.md");
    let (s, v) = call(&put, &ev).await;
    assert_eq!(
        (s, v["error"].as_str()),
        (400, Some("validation_error")),
        "{v}"
    );
}

#[tokio::test]
async fn a_function_serves_only_its_own_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (s, v) = call(&app("list", dir.path()), &event("put-file.json")).await;
    assert_eq!((s, v["error"].as_str()), (404, Some("not_found")), "{v}");
    let get = app("get", dir.path());
    let (s, v) = call(&get, &event("health.json")).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")));
}

#[tokio::test]
async fn scopes_in_the_token_decide_reads_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut ev = event("put-file.json");
    ev["requestContext"]["authorizer"]["jwt"]["claims"]["scope"] = Value::from("workspace:read");
    let (s, v) = call(&app("put", dir.path()), &ev).await;
    assert_eq!((s, v["error"].as_str()), (403, Some("forbidden")), "{v}");

    let mut ev = event("get-file.json");
    ev["requestContext"]["authorizer"]["jwt"]["claims"]
        .as_object_mut()
        .unwrap()
        .remove("scope");
    let (s, _) = call(&app("get", dir.path()), &ev).await;
    assert_eq!(s, 403, "no scope grants nothing");

    // Scopes the authorizer validated count as well.
    let mut ev = event("put-file.json");
    ev["requestContext"]["authorizer"]["jwt"]["claims"]
        .as_object_mut()
        .unwrap()
        .remove("scope");
    ev["requestContext"]["authorizer"]["jwt"]["scopes"] = serde_json::json!(["workspace:write"]);
    let (s, v) = call(&app("put", dir.path()), &ev).await;
    assert_eq!(s, 200, "{v}");
}

/// What API Gateway hands the `$default` route's function for `method path` (no authorizer).
fn unmatched(method: &str, path: &str) -> Value {
    let mut ev = event("health.json");
    ev["routeKey"] = Value::from("$default");
    ev["requestContext"]["routeKey"] = Value::from("$default");
    ev["rawPath"] = Value::from(path);
    ev["requestContext"]["http"]["path"] = Value::from(path);
    ev["requestContext"]["http"]["method"] = Value::from(method);
    ev
}

#[tokio::test]
async fn requests_no_route_matches_get_the_envelope_from_the_default_routes_function() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(workspace_http::routes::UNMATCHED_FUNCTION, dir.path());
    for method in ["PUT", "PATCH"] {
        let req = lambda_http::request::from_str(&unmatched(method, "/mcp").to_string()).unwrap();
        let resp = handle(&app, req).await.unwrap();
        assert_eq!(resp.status().as_u16(), 405, "{method} /mcp");
        assert_eq!(
            resp.headers()["allow"],
            "POST, GET, DELETE",
            "{method} /mcp"
        );
        let v: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
        assert_eq!(v["error"], "method_not_allowed", "{v}");
    }
    let (s, v) = call(&app, &unmatched("DELETE", "/v1/host/workspace/snapshots")).await;
    assert_eq!(
        (s, v["error"].as_str()),
        (405, Some("method_not_allowed")),
        "{v}"
    );
    for path in ["/v1/nope", "/", "/v1/host/workspace"] {
        let (s, v) = call(&app, &unmatched("GET", path)).await;
        assert_eq!(
            (s, v["error"].as_str()),
            (404, Some("not_found")),
            "{path}: {v}"
        );
    }
}
