//! Workspace lifecycle: idempotent local create, scope validation, get/list, isolation.

use super::{history, SessionHarness};
use crate::harness::{KEY_A, KEY_EVIL, KEY_READ_ONLY, KEY_TENANT, KEY_TENANT_BOB};
use http::{Method, StatusCode};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

pub async fn local_create_is_idempotent_and_general_always_new(h: SessionHarness) {
    let body = json!({ "workspaceScope": "local", "localPath": "/home/tenant-admin/proj" });
    let first = h.post(KEY_TENANT, "/workspaces", &body).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let first = first.json();
    assert_eq!(first["workspaceScope"], "local");
    assert!(first["createdAt"].is_string());
    let again = h.post(KEY_TENANT, "/workspaces", &body).await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "the same triple returns the existing one"
    );
    assert_eq!(again.json()["workspaceId"], first["workspaceId"]);
    assert_eq!(again.json()["createdAt"], first["createdAt"]);

    // Another path, or another user with the same path: a different workspace.
    let other_path = h
        .create(
            KEY_TENANT,
            json!({ "workspaceScope": "local", "localPath": "/home/tenant-admin/other" }),
        )
        .await;
    let other_user = h.create(KEY_A, body.clone()).await;
    let first_id = first["workspaceId"].as_str().unwrap_or("").to_owned();
    let ids: BTreeSet<String> = [first_id, other_path, other_user].into_iter().collect();
    assert_eq!(ids.len(), 3);

    // general (and cloud) always create.
    let g1 = h
        .post(
            KEY_TENANT,
            "/workspaces",
            &json!({ "workspaceScope": "general" }),
        )
        .await;
    let g2 = h
        .post(
            KEY_TENANT,
            "/workspaces",
            &json!({ "workspaceScope": "general" }),
        )
        .await;
    assert_eq!(
        (g1.status, g2.status),
        (StatusCode::CREATED, StatusCode::CREATED)
    );
    assert_ne!(g1.json()["workspaceId"], g2.json()["workspaceId"]);
    let c = h
        .post(
            KEY_TENANT,
            "/workspaces",
            &json!({ "workspaceScope": "cloud" }),
        )
        .await;
    assert_eq!(c.status, StatusCode::CREATED);
    assert_eq!(c.json()["workspaceScope"], "cloud");
    let listed = h.get_uri(KEY_TENANT, "/workspaces").await.assert_ok();
    assert_eq!(listed["workspaces"].as_array().map(Vec::len), Some(5));
}

pub async fn twenty_concurrent_local_creates_make_one_workspace(h: SessionHarness) {
    let h = Arc::new(h);
    let body = json!({ "workspaceScope": "local", "localPath": "C:\\Users\\admin\\race" });
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (h, body) = (h.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let r = h.post(KEY_TENANT, "/workspaces", &body).await;
            (
                r.status,
                r.assert_ok()["workspaceId"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        }));
    }
    let mut ids = BTreeSet::new();
    let mut created = 0;
    for t in tasks {
        let (status, id) = t.await.expect("task");
        if status == StatusCode::CREATED {
            created += 1;
        } else {
            assert_eq!(status, StatusCode::OK);
        }
        ids.insert(id);
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(created, 1);
    let listed = h.get_uri(KEY_TENANT, "/workspaces").await.assert_ok();
    assert_eq!(listed["workspaces"].as_array().map(Vec::len), Some(1));
}

pub async fn workspace_scope_is_validated_and_nothing_is_created(h: SessionHarness) {
    for bad in [
        json!({ "workspaceScope": "local" }),
        json!({ "workspaceScope": "local", "localPath": "" }),
        json!({ "workspaceScope": "local", "localPath": "a\u{0}b" }),
        json!({ "workspaceScope": "local", "localPath": "x".repeat(1025) }),
        json!({ "workspaceScope": "general", "localPath": "/tmp/x" }),
        json!({ "workspaceScope": "cloud", "localPath": "/tmp/x" }),
        json!({ "workspaceScope": "team" }),
        json!({ "workspaceScope": 3 }),
        json!({}),
        json!([]),
    ] {
        h.post(KEY_TENANT, "/workspaces", &bad)
            .await
            .assert_error(400, "validation_error");
    }
    h.call(Method::POST, "/workspaces", Some(KEY_TENANT))
        .body("{not json")
        .send()
        .await
        .assert_error(400, "validation_error");
    h.post(
        KEY_READ_ONLY,
        "/workspaces",
        &json!({ "workspaceScope": "general" }),
    )
    .await
    .assert_error(403, "forbidden");
    h.call(Method::POST, "/workspaces", None)
        .json(&json!({ "workspaceScope": "general" }))
        .send()
        .await
        .assert_error(401, "unauthenticated");
    let listed = h.get_uri(KEY_TENANT, "/workspaces").await.assert_ok();
    assert_eq!(listed["workspaces"], json!([]));
}

pub async fn workspaces_get_list_page_and_open_to_the_files_api(h: SessionHarness) {
    let mut ids = BTreeSet::new();
    for _ in 0..5 {
        ids.insert(h.general(KEY_TENANT).await);
    }
    let local = h
        .create(
            KEY_TENANT,
            json!({ "workspaceScope": "local", "localPath": "/p" }),
        )
        .await;
    ids.insert(local.clone());
    let got = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{local}"))
        .await
        .assert_ok();
    assert_eq!(got["workspaceId"], local.as_str());
    assert_eq!(got["workspaceScope"], "local");
    assert_eq!(got["tenantId"], "acme");
    assert_eq!(got["userId"], "tenant-admin");
    assert_eq!(got["localPath"], "/p");
    assert!(got["createdAt"].is_string() && got["lastActiveAt"].is_string());

    // Pages of 4: every workspace once, then no token.
    let mut seen = Vec::new();
    let mut uri = "/workspaces?limit=4".to_owned();
    loop {
        let page = h.get_uri(KEY_TENANT, &uri).await.assert_ok();
        for w in page["workspaces"].as_array().cloned().unwrap_or_default() {
            seen.push(w["workspaceId"].as_str().unwrap_or("").to_owned());
        }
        match page["nextToken"].as_str() {
            Some(t) => uri = format!("/workspaces?limit=4&nextToken={t}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 6);
    assert_eq!(seen.iter().cloned().collect::<BTreeSet<_>>(), ids);
    h.get_uri(KEY_TENANT, "/workspaces?nextToken=forged")
        .await
        .assert_error(400, "validation_error");
    // One page rule on every listing: a limit past the maximum is 400, never capped.
    for bad in ["0", "101"] {
        h.get_uri(KEY_TENANT, &format!("/workspaces?limit={bad}"))
            .await
            .assert_error(400, "validation_error");
    }
    h.get_uri(KEY_TENANT, "/workspaces/ws-unknown")
        .await
        .assert_error(404, "not_found");
    h.get_uri(KEY_TENANT, "/workspaces/bad%2Fid")
        .await
        .assert_error(404, "not_found");

    // A tenant-wide credential naming workspace `ws` in X-Workspace-Id.
    let named = |key: &str, method: Method, uri: &str, ws: &str| {
        h.call(method, uri, Some(key)).header("x-workspace-id", ws)
    };
    const NOTES: &str = "/v1/host/workspace/files/notes.md";
    let hello = json!({ "content": "hello" });

    // The tenant-wide credential uses the files API on the workspace it created.
    let put = named(KEY_TENANT, Method::PUT, NOTES, &local).json(&hello);
    assert_eq!(put.send().await.assert_ok()["version"], 1);
    let read = named(KEY_TENANT, Method::GET, NOTES, &local).send().await;
    assert_eq!(read.assert_ok()["content"], "hello");

    // The registry decides which registered workspace a tenant-wide credential reaches: its
    // own user's. Another user of the same tenant gets 404 on every family, and changes
    // nothing; an id the registry never issued is 404 too.
    for (method, uri) in [
        (Method::GET, NOTES),
        (Method::PUT, NOTES),
        (Method::GET, "/v1/host/workspace/files"),
        (Method::GET, "/v1/host/blob/default"),
        (Method::GET, "/v1/host/cache/k"),
    ] {
        named(KEY_TENANT_BOB, method, uri, &local)
            .json(&json!({ "content": "bob was here" }))
            .send()
            .await
            .assert_error(404, "not_found");
    }
    let unissued = format!("ws-{}", "0".repeat(32));
    named(
        KEY_TENANT,
        Method::GET,
        "/v1/host/workspace/files",
        &unissued,
    )
    .send()
    .await
    .assert_error(404, "not_found");
    let again = named(KEY_TENANT, Method::GET, NOTES, &local).send().await;
    assert_eq!(again.assert_ok()["version"], 1, "bob changed nothing");
    // Bob's own workspace is his to use.
    let bobs = h
        .create(KEY_TENANT_BOB, json!({ "workspaceScope": "general" }))
        .await;
    named(KEY_TENANT_BOB, Method::PUT, NOTES, &bobs)
        .json(&hello)
        .send()
        .await
        .assert_ok();
}

pub async fn naming_another_tenant_or_user_is_forbidden(h: SessionHarness) {
    for body in [
        json!({ "workspaceScope": "general", "tenantId": "acme-evil" }),
        json!({ "workspaceScope": "general", "userId": "alice" }),
        json!({ "workspaceScope": "general", "tenantId": "acme", "userId": "mallory" }),
    ] {
        h.post(KEY_TENANT, "/workspaces", &body)
            .await
            .assert_error(403, "forbidden");
    }
    let ws = h
        .create(
            KEY_TENANT,
            json!({ "workspaceScope": "general", "tenantId": "acme", "userId": "tenant-admin" }),
        )
        .await;
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": "aGk=", "userId": "alice" }),
    )
    .await
    .assert_error(403, "forbidden");
    h.call(Method::GET, "/workspaces", Some(KEY_TENANT))
        .header("x-tenant-id", "acme-evil")
        .send()
        .await
        .assert_error(403, "forbidden");
    h.get_uri(KEY_TENANT, "/workspaces?userId=alice")
        .await
        .assert_error(403, "forbidden");
    let listed = h.get_uri(KEY_TENANT, "/workspaces").await.assert_ok();
    assert_eq!(listed["workspaces"].as_array().map(Vec::len), Some(1));
}

/// Every route, tried by a sibling-prefix tenant and by another user of the same tenant:
/// 404 (or an empty list), never a byte of the owner's data, and nothing changes.
pub async fn other_tenants_and_users_see_nothing_on_every_route(h: SessionHarness) {
    let ws = h
        .create(
            KEY_TENANT,
            json!({ "workspaceScope": "local", "localPath": "/shared/path" }),
        )
        .await;
    let art = h
        .tool_output(KEY_TENANT, &ws, "s1", "owner-only text")
        .await;
    let art_id = art["artifactId"].as_str().unwrap_or("").to_owned();
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "session_history", "messages": history(&[("user", "owner-only chat")]) }),
    )
    .await
    .assert_ok();
    for key in [KEY_EVIL, KEY_A] {
        let listed = h.get_uri(key, "/workspaces").await.assert_ok();
        assert_eq!(listed["workspaces"], json!([]), "{key}");
        let base = format!("/workspaces/{ws}");
        for uri in [
            base.clone(),
            format!("{base}/artifacts"),
            format!("{base}/artifacts/{art_id}"),
            format!("{base}/sessions"),
            format!("{base}/sessions/s1/history"),
        ] {
            let r = h.get_uri(key, &uri).await;
            r.assert_error(404, "not_found");
            assert!(!String::from_utf8_lossy(&r.body).contains("owner-only"));
        }
        h.upload(
            key,
            &ws,
            json!({ "sessionId": "s9", "artifactType": "tool_output", "contentBase64": "aGk=" }),
        )
        .await
        .assert_error(404, "not_found");
        h.delete_uri(key, &format!("{base}/sessions/s1"))
            .await
            .assert_error(404, "not_found");
        h.delete_uri(key, &base)
            .await
            .assert_error(404, "not_found");
        // The same local path under another user or tenant is their own, new workspace.
        let theirs = h
            .create(
                key,
                json!({ "workspaceScope": "local", "localPath": "/shared/path" }),
            )
            .await;
        assert_ne!(theirs, ws);
    }
    // The owner still has everything.
    let arts = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/artifacts"))
        .await
        .assert_ok();
    assert_eq!(arts["artifacts"].as_array().map(Vec::len), Some(2));
    let hist = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await
        .assert_ok();
    assert_eq!(hist["messages"][0]["content"], "owner-only chat");
}

macro_rules! hostile_list {
    ($($name:ident: $path:expr),* $(,)?) => {
        vec![$(String::from($path)),*]
    };
}

/// The hostile-path corpus as workspace, artifact and session ids on every route: each is
/// a 4xx with the envelope (404 when it cannot name anything), and nothing changes.
pub async fn hostile_ids_are_refused_and_change_nothing(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    h.tool_output(KEY_TENANT, &ws, "s1", "keep me").await;
    let corpus: Vec<String> = crate::for_each_hostile_path!(hostile_list);
    let before = h.remains(&ws).await;
    for bad in corpus {
        let uris = [
            format!("/workspaces/{bad}"),
            format!("/workspaces/{bad}/artifacts"),
            format!("/workspaces/{ws}/artifacts/{bad}"),
            format!("/workspaces/{bad}/sessions"),
            format!("/workspaces/{ws}/sessions/{bad}/history"),
        ];
        for uri in &uris {
            let r = h.get_uri(KEY_TENANT, uri).await;
            assert!(r.status.is_client_error(), "{uri}: {}", r.status);
            r.assert_error(
                r.status.as_u16(),
                if r.status == StatusCode::NOT_FOUND {
                    "not_found"
                } else {
                    "validation_error"
                },
            );
        }
        for uri in [
            format!("/workspaces/{bad}"),
            format!("/workspaces/{ws}/sessions/{bad}"),
        ] {
            let r = h.delete_uri(KEY_TENANT, &uri).await;
            assert!(r.status.is_client_error(), "{uri}: {}", r.status);
        }
        // Some file-path cases (`c:x`) are fine session ids; the rest must be refused.
        if workspace_core::sessions::artifacts::check_name("sessionId", &bad).is_err() {
            let r = h
                .upload(
                    KEY_TENANT,
                    &ws,
                    json!({ "sessionId": &bad, "artifactType": "tool_output", "contentBase64": "aGk=" }),
                )
                .await;
            r.assert_error(400, "validation_error");
        }
    }
    assert_eq!(h.remains(&ws).await, before);
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_ok();
}
