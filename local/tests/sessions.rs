//! The session service through the real `workspace-local` binary: create, upload, page
//! sessions with a token that survives a restart (the key is kept in the data directory),
//! and `purge --dry-run`, which lists nothing fresh and changes nothing.

mod common;

use common::{run_args, Server};
use reqwest::Client;
use serde_json::{json, Value};

const KEY: &str = "local-tenant-wide-key-0123456789";

async fn post(c: &Client, s: &Server, path: &str, body: Value) -> (u16, Value) {
    let r = c
        .post(s.url(path))
        .bearer_auth(KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn get(c: &Client, s: &Server, path: &str) -> (u16, Value) {
    let r = c.get(s.url(path)).bearer_auth(KEY).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn sessions_page_across_a_restart_and_purge_dry_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let env = [(
        "WORKSPACE_API_KEYS",
        "local-tenant-wide-key-0123456789=local",
    )];
    let c = Client::new();
    let mut s = Server::start(dir.path(), &env).await;
    let body = json!({ "workspaceScope": "local", "localPath": "/home/me/proj" });
    let (status, ws) = post(&c, &s, "/workspaces", body.clone()).await;
    assert_eq!(status, 201, "{ws}");
    let id = ws["workspaceId"].as_str().unwrap().to_owned();
    assert_eq!(post(&c, &s, "/workspaces", body).await.0, 200);
    for session in ["s1", "s2"] {
        let (st, v) = post(
            &c,
            &s,
            &format!("/workspaces/{id}/artifacts"),
            json!({ "sessionId": session, "artifactType": "tool_output", "contentBase64": "b2s=" }),
        )
        .await;
        assert_eq!(st, 201, "{v}");
    }
    let (_, page) = get(&c, &s, &format!("/workspaces/{id}/sessions?limit=1")).await;
    let token = page["nextToken"].as_str().unwrap().to_owned();
    s.terminate();

    let s = Server::start(dir.path(), &env).await;
    let (st, rest) = get(
        &c,
        &s,
        &format!("/workspaces/{id}/sessions?limit=1&nextToken={token}"),
    )
    .await;
    assert_eq!(st, 200, "the token still verifies after a restart: {rest}");
    assert_eq!(rest["sessions"].as_array().map(Vec::len), Some(1));
    assert_ne!(
        rest["sessions"][0]["sessionId"],
        page["sessions"][0]["sessionId"]
    );
    drop(s);

    let (status, out, err) = run_args(dir.path(), &env, &["purge", "--dry-run"]);
    assert!(status.success(), "{err}");
    assert!(
        out.contains("0 workspace(s)") && out.contains("dry run"),
        "{out}"
    );
    let (status, out, err) = run_args(
        dir.path(),
        &[("WORKSPACE_PURGE_AFTER_DAYS", "0")],
        &["purge"],
    );
    assert!(!status.success(), "a zero cutoff is refused: {out}");
    assert!(err.contains("WORKSPACE_PURGE_AFTER_DAYS"), "{err}");

    let s = Server::start(dir.path(), &env).await;
    let (st, w) = get(&c, &s, &format!("/workspaces/{id}")).await;
    assert_eq!(st, 200, "{w}");
}
