//! Cascade delete (checked in the raw stores), resumed deletes, and the inactivity purge.

use super::{history, SessionHarness};
use crate::harness::KEY_TENANT;
use http::{Method, StatusCode};
use serde_json::json;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// A workspace holding files (with versions and an idempotency record), a snapshot, a
/// blob, a cache entry, an uncommitted upload, artifacts and sessions.
async fn filled(h: &SessionHarness) -> String {
    let ws = h.general(KEY_TENANT).await;
    for (i, path) in ["a.md", "a.md", "dir/b.md"].iter().enumerate() {
        h.call(
            Method::PUT,
            &format!("/v1/host/workspace/files/{path}"),
            Some(KEY_TENANT),
        )
        .header("x-workspace-id", &ws)
        .header("idempotency-key", format!("k{i}"))
        // Over the harness's inline threshold: each version's body is in the body store.
        .json(&json!({ "content": format!("v{i} {}", "x".repeat(100)) }))
        .send()
        .await
        .assert_ok();
    }
    // And one under it: its body is kept in its commit's items, so it goes with them.
    h.call(
        Method::PUT,
        "/v1/host/workspace/files/dir/small.md",
        Some(KEY_TENANT),
    )
    .header("x-workspace-id", &ws)
    .json(&json!({ "content": "inline" }))
    .send()
    .await
    .assert_ok();
    // A run snapshot: its record and pins are workspace data too.
    let snap = h
        .call(
            Method::POST,
            "/v1/host/workspace/snapshots",
            Some(KEY_TENANT),
        )
        .header("x-workspace-id", &ws)
        .send()
        .await;
    assert_eq!(snap.status.as_u16(), 201, "{:?}", snap.body);
    // RFC 0019 data of the workspace: a blob and a cache entry.
    for (uri, body) in [
        ("/v1/host/blob/default/k.bin", "blob bytes".to_owned()),
        (
            "/v1/host/cache/k",
            json!({"value": 1, "ttlSeconds": 600}).to_string(),
        ),
    ] {
        let r = h
            .call(Method::PUT, uri, Some(KEY_TENANT))
            .header("x-workspace-id", &ws)
            .body(body)
            .send()
            .await;
        assert_eq!(r.status.as_u16(), 200, "{uri}: {:?}", r.body);
    }
    // A two-step upload whose bytes arrived but were never committed.
    let bytes = b"staged, never committed".to_vec();
    let ticket = h
        .call(Method::POST, "/v1/host/workspace/uploads", Some(KEY_TENANT))
        .header("x-workspace-id", &ws)
        .json(&json!({"path": "up.bin", "size": bytes.len(),
            "sha256": workspace_core::model::sha256_hex(&bytes)}))
        .send()
        .await
        .assert_ok();
    let url = ticket["url"].as_str().expect("upload url");
    let sent = h.fetch(Method::PUT, url, &ticket["headers"], bytes).await;
    assert!(sent.status.is_success(), "{sent:?}");
    h.tool_output(KEY_TENANT, &ws, "s1", "output").await;
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "session_history",
        "messages": history(&[("user", "hi")]) }),
    )
    .await
    .assert_ok();
    let (items, bodies) = h.remains(&ws).await;
    assert!(
        items >= 9 && bodies >= 9,
        "filled: {items} items, {bodies} bodies"
    );
    ws
}

async fn file_count(h: &SessionHarness, ws: &str) -> usize {
    let r = h
        .call(Method::GET, "/v1/host/workspace/files", Some(KEY_TENANT))
        .header("x-workspace-id", ws)
        .send()
        .await
        .assert_ok();
    r["files"].as_array().map_or(0, Vec::len)
}

pub async fn delete_workspace_leaves_nothing_behind(h: SessionHarness) {
    let ws = filled(&h).await;
    let keep = filled(&h).await;
    let r = h.delete_uri(KEY_TENANT, &format!("/workspaces/{ws}")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(
        h.remains(&ws).await,
        (0, 0),
        "raw stores hold nothing of it"
    );
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_error(404, "not_found");
    h.delete_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_error(404, "not_found");
    // Gone from the registry, so its id reaches nothing any more: listing or writing is 404.
    h.call(Method::GET, "/v1/host/workspace/files", Some(KEY_TENANT))
        .header("x-workspace-id", &ws)
        .send()
        .await
        .assert_error(404, "not_found");
    h.call(
        Method::PUT,
        "/v1/host/workspace/files/late.md",
        Some(KEY_TENANT),
    )
    .header("x-workspace-id", &ws)
    .json(&json!({ "content": "too late" }))
    .send()
    .await
    .assert_error(404, "not_found");
    assert_eq!(
        h.remains(&ws).await,
        (0, 0),
        "nothing was written after the delete"
    );
    let listed = h.get_uri(KEY_TENANT, "/workspaces").await.assert_ok();
    assert_eq!(listed["workspaces"].as_array().map(Vec::len), Some(1));
    // The sibling workspace is untouched.
    assert_eq!(file_count(&h, &keep).await, 3);
    let arts = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{keep}/artifacts"))
        .await
        .assert_ok();
    assert_eq!(arts["artifacts"].as_array().map(Vec::len), Some(2));
}

pub async fn an_interrupted_delete_is_finished_by_the_next(h: SessionHarness) {
    let ws = filled(&h).await;
    // The first attempt stopped after erasing the metadata: bodies and the record remain.
    h.store
        .erase_scope(&h.scope_of(&ws))
        .await
        .expect("partial erase");
    let (items, bodies) = h.remains(&ws).await;
    assert_eq!(items, 0);
    assert!(bodies > 0);
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_ok();
    let r = h.delete_uri(KEY_TENANT, &format!("/workspaces/{ws}")).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(h.remains(&ws).await, (0, 0));
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_error(404, "not_found");
}

pub async fn purge_respects_the_cutoff_and_dry_run_changes_nothing(h: SessionHarness) {
    let old = filled(&h).await;
    let local = h
        .create(
            KEY_TENANT,
            json!({ "workspaceScope": "local", "localPath": "/idle" }),
        )
        .await;
    h.clock.advance(60 * DAY_MS);
    let fresh = filled(&h).await;
    h.clock.advance(31 * DAY_MS); // old and local: 91 days idle; fresh: 31
    let before = (h.remains(&old).await, h.remains(&fresh).await);

    let dry = h.svc.purge(true).await.expect("dry run");
    let mut named: Vec<_> = dry
        .workspaces
        .iter()
        .map(|w| w.workspace_id.clone())
        .collect();
    named.sort();
    let mut expected = vec![old.clone(), local.clone()];
    expected.sort();
    assert_eq!(named, expected);
    assert_eq!(
        (h.remains(&old).await, h.remains(&fresh).await),
        before,
        "dry run changed nothing"
    );
    h.get_uri(KEY_TENANT, &format!("/workspaces/{old}"))
        .await
        .assert_ok();

    let done = h.svc.purge(false).await.expect("purge");
    assert_eq!(done.workspaces.len(), 2);
    assert_eq!(h.remains(&old).await, (0, 0));
    h.get_uri(KEY_TENANT, &format!("/workspaces/{old}"))
        .await
        .assert_error(404, "not_found");
    h.get_uri(KEY_TENANT, &format!("/workspaces/{local}"))
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.remains(&fresh).await,
        before.1,
        "the active workspace is untouched"
    );
    h.get_uri(KEY_TENANT, &format!("/workspaces/{fresh}"))
        .await
        .assert_ok();
    // The purged local path can be created again (its claim went with it).
    let again = h
        .post(
            KEY_TENANT,
            "/workspaces",
            &json!({ "workspaceScope": "local", "localPath": "/idle" }),
        )
        .await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert!(h
        .svc
        .purge(false)
        .await
        .expect("again")
        .workspaces
        .is_empty());
}

/// A registered workspace with live forks is deleted only with `?force=true`, which
/// discards the forks and erases their data too; another user never reaches them.
pub async fn deleting_a_workspace_with_forks_needs_force(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    let in_ws = |method: Method, uri: &str, target: &str| {
        h.call(method, uri, Some(KEY_TENANT))
            .header("x-workspace-id", target)
    };
    in_ws(Method::PUT, "/v1/host/workspace/files/a.md", &ws)
        .json(&json!({"content": "a"}))
        .send()
        .await
        .assert_ok();
    let fork = in_ws(Method::POST, "/v1/host/workspace/forks", &ws)
        .json(&json!({}))
        .send()
        .await
        .assert_ok()["workspaceId"]
        .as_str()
        .expect("workspaceId")
        .to_owned();
    in_ws(Method::PUT, "/v1/host/workspace/files/b.md", &fork)
        .json(&json!({"content": "b"}))
        .send()
        .await
        .assert_ok();
    // Another user of the tenant does not reach the fork of a workspace not theirs.
    h.call(
        Method::GET,
        "/v1/host/workspace/files/a.md",
        Some(crate::harness::KEY_TENANT_BOB),
    )
    .header("x-workspace-id", &fork)
    .send()
    .await
    .assert_error(404, "not_found");
    let refused = h.delete_uri(KEY_TENANT, &format!("/workspaces/{ws}")).await;
    let v = refused.assert_error(409, "workspace_conflict");
    assert!(v["message"].as_str().unwrap_or("").contains(&fork), "{v}");
    assert_eq!(file_count(&h, &ws).await, 1);
    let r = h
        .delete_uri(KEY_TENANT, &format!("/workspaces/{ws}?force=true"))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(h.remains(&ws).await, (0, 0));
    assert_eq!(
        h.remains(&fork).await,
        (0, 0),
        "the fork's own data is erased too"
    );
}
