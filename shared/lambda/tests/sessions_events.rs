//! The recorded `/workspaces` events through the `workspaces` function's handler (over the
//! embedded store), from a user-level token that carries no workspace claim, and the
//! purge handler's dry run.

use serde_json::Value;
use std::sync::Arc;
use workspace_core::ports::{RandomIds, SystemClock};
use workspace_core::sessions::token::TokenKey;
use workspace_core::sessions::{SessionLimits, SessionService};
use workspace_lambda::handle;
use workspace_lambda::purge::purge_handler;

mod common;
use workspace_store_embedded::EmbeddedStore;

const SAMPLE_ID: &str = "ws-0123456789abcdef0123456789abcdef";

fn event(name: &str, id: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("event file");
    serde_json::from_str(&text.replace(SAMPLE_ID, id)).expect("event JSON")
}

async fn call(app: &workspace_http::App, ev: &Value) -> (u16, Value) {
    let req = lambda_http::request::from_str(&ev.to_string()).expect("API Gateway v2 event");
    let resp = handle(app, req).await.expect("handler");
    let status = resp.status().as_u16();
    let body = resp.body().as_ref().to_vec();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// `file`'s request sent with the identity of `events/workspaces-create.json` (a user token
/// with no workspace claim) as user `sub`, naming `workspace` in `X-Workspace-Id`.
fn as_user(file: &str, sub: &str, workspace: &str) -> Value {
    let mut ev = event(file, workspace);
    let mut auth =
        event("workspaces-create.json", workspace)["requestContext"]["authorizer"].clone();
    auth["jwt"]["claims"]["sub"] = Value::from(sub);
    ev["requestContext"]["authorizer"] = auth;
    ev["headers"]["x-workspace-id"] = Value::from(workspace);
    ev
}

#[tokio::test]
async fn a_token_without_a_workspace_claim_reaches_its_users_registered_workspaces() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::app_of(&["workspaces", "get", "list", "put"], dir.path());
    let (s, ws) = call(&app, &event("workspaces-create.json", SAMPLE_ID)).await;
    assert_eq!(s, 201, "{ws}");
    let id = ws["workspaceId"].as_str().unwrap().to_owned();
    let claims =
        &event("workspaces-create.json", &id)["requestContext"]["authorizer"]["jwt"]["claims"];
    assert!(claims.get("workspace_id").is_none(), "{claims}");

    let (s, v) = call(&app, &as_user("put-file.json", "user-1", &id)).await;
    assert_eq!((s, &v["version"]), (200, &Value::from(1)), "{v}");
    let (s, v) = call(&app, &as_user("get-file.json", "user-1", &id)).await;
    assert_eq!((s, &v["content"]), (200, &Value::from("hello")), "{v}");
    let (s, v) = call(&app, &as_user("list-files.json", "user-1", &id)).await;
    assert_eq!(
        (s, v["files"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{v}"
    );

    // Another user of the tenant: the registry does not hold it for them.
    for file in ["get-file.json", "list-files.json", "put-file.json"] {
        let (s, v) = call(&app, &as_user(file, "user-2", &id)).await;
        assert_eq!(
            (s, &v["error"]),
            (404, &Value::from("not_found")),
            "{file}: {v}"
        );
    }
    // Without X-Workspace-Id the token names no workspace: 400, as for a tenant-wide key.
    let mut bare = as_user("list-files.json", "user-1", &id);
    bare["headers"]
        .as_object_mut()
        .unwrap()
        .remove("x-workspace-id");
    let (s, v) = call(&app, &bare).await;
    assert_eq!(
        (s, &v["error"]),
        (400, &Value::from("validation_error")),
        "{v}"
    );
}

#[tokio::test]
async fn recorded_workspace_events_run_through_the_workspaces_function() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::app("workspaces", dir.path());
    let (s, ws) = call(&app, &event("workspaces-create.json", SAMPLE_ID)).await;
    assert_eq!(s, 201, "{ws}");
    assert_eq!(ws["userId"], "user-1");
    let id = ws["workspaceId"].as_str().unwrap().to_owned();
    let (s, again) = call(&app, &event("workspaces-create.json", SAMPLE_ID)).await;
    assert_eq!((s, &again["workspaceId"]), (200, &ws["workspaceId"]));
    let (s, v) = call(&app, &event("workspaces-list.json", &id)).await;
    assert_eq!(
        (s, v["workspaces"].as_array().map(Vec::len)),
        (200, Some(1))
    );
    assert_eq!(call(&app, &event("workspaces-get.json", &id)).await.0, 200);
    let (s, art) = call(&app, &event("artifacts-upload.json", &id)).await;
    assert_eq!(s, 201, "{art}");
    let (s, v) = call(&app, &event("artifacts-upload-history.json", &id)).await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = call(&app, &event("artifacts-list.json", &id)).await;
    assert_eq!((s, v["artifacts"].as_array().map(Vec::len)), (200, Some(2)));
    let art_id = art["artifactId"].as_str().unwrap();
    let get = event("artifacts-get.json", &id)
        .to_string()
        .replace("art-0123456789abcdef0123456789abcdef", art_id);
    let req = lambda_http::request::from_str(&get).unwrap();
    let resp = handle(&app, req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.body().as_ref(), b"12 passed, 0 failed\n");
    let (s, v) = call(&app, &event("sessions-list.json", &id)).await;
    assert_eq!(
        (s, v["sessions"][0]["taskCount"].as_u64()),
        (200, Some(1)),
        "{v}"
    );
    let (s, v) = call(&app, &event("sessions-history.json", &id)).await;
    assert_eq!(
        (s, v["messages"][1]["content"].as_str()),
        (200, Some("12 passed"))
    );
    assert_eq!(call(&app, &event("sessions-delete.json", &id)).await.0, 204);
    assert_eq!(
        call(&app, &event("workspaces-delete.json", &id)).await.0,
        204
    );
    assert_eq!(call(&app, &event("workspaces-get.json", &id)).await.0, 404);

    // Another function does not serve these routes.
    let other = tempfile::tempdir().unwrap();
    let files = common::app("get", other.path());
    assert_eq!(
        call(&files, &event("workspaces-list.json", &id)).await.0,
        404
    );
}

#[tokio::test]
async fn the_purge_handler_dry_run_lists_and_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
    let svc = SessionService::new(
        store.clone(),
        store.clone(),
        vec![store],
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        TokenKey::random(),
        SessionLimits::default(),
    );
    let out = purge_handler(&svc, &serde_json::json!({ "dryRun": true }))
        .await
        .unwrap();
    assert_eq!(out["dryRun"], true);
    assert_eq!(out["workspaces"], serde_json::json!([]));
    let sched = event("schedule-purge.json", SAMPLE_ID);
    let out = purge_handler(&svc, &sched).await.unwrap();
    assert_eq!(out["dryRun"], false, "a scheduled event purges");
}
