//! Contract cases for WCT-1: nothing crosses a tenant or workspace boundary.

use crate::harness::{file_uri, Harness, KEY_A, KEY_EVIL, KEY_OTHER, KEY_TENANT};
use http::Method;
use serde_json::json;

/// WCT-1 on every endpoint: a sibling tenant whose name extends ours (`acme-evil`) and a
/// second workspace of our own tenant (`acme/other`) try everything against `acme/main`.
pub async fn isolation_holds_on_every_endpoint(h: Harness) {
    let v1 = h.put(KEY_A, "secret.md", "ACME-SECRET-1").await.assert_ok();
    h.put(KEY_A, "secret.md", "ACME-SECRET-2").await.assert_ok();
    h.put(KEY_A, "dir/x.md", "ACME-SECRET-3").await.assert_ok();
    h.call(Method::PUT, &file_uri("idem.md"), Some(KEY_A))
        .header("idempotency-key", "shared-key")
        .json(&json!({"content": "ACME-SECRET-4"}))
        .send()
        .await
        .assert_ok();
    let before = h.state(KEY_A).await;
    let etag = v1["etag"].as_str().unwrap().to_owned();

    for outsider in [KEY_EVIL, KEY_OTHER] {
        let mut replies = Vec::new();
        for uri in [
            file_uri("secret.md"),
            format!("{}?version=1", file_uri("secret.md")),
            format!("{}?version=2", file_uri("secret.md")),
            file_uri("dir/x.md"),
        ] {
            let r = h.call(Method::GET, &uri, Some(outsider)).send().await;
            r.assert_error(404, "not_found");
            replies.push(r);
        }
        for query in ["", "?prefix=dir/", "?prefix=secret", "?prefix=d&limit=1"] {
            let r = h
                .call(
                    Method::GET,
                    &format!("/v1/host/workspace/files{query}"),
                    Some(outsider),
                )
                .send()
                .await;
            assert_eq!(r.assert_ok()["files"], json!([]), "{query}");
            replies.push(r);
        }
        let r = h.delete(outsider, "secret.md").await;
        r.assert_error(404, "not_found");
        replies.push(r);
        // Our etag means nothing there: the file does not exist in that scope.
        let r = h
            .call(Method::PUT, &file_uri("secret.md"), Some(outsider))
            .header("if-match", &etag)
            .json(&json!({"content": "overwrite"}))
            .send()
            .await;
        assert_eq!(
            r.assert_error(409, "workspace_conflict")["details"]["currentVersion"],
            0
        );
        replies.push(r);
        let r = h
            .call(Method::DELETE, &file_uri("dir/x.md"), Some(outsider))
            .header("if-match", &etag)
            .send()
            .await;
        r.assert_error(404, "not_found");
        replies.push(r);
        // Our idempotency key replays nothing of ours there.
        let r = h
            .call(Method::PUT, &file_uri("idem.md"), Some(outsider))
            .header("idempotency-key", "shared-key")
            .json(&json!({"content": "theirs"}))
            .send()
            .await;
        let v = r.assert_ok();
        assert_eq!(
            (v["version"].as_u64(), v["content"].as_str()),
            (Some(1), Some("theirs"))
        );
        replies.push(r);
        for r in &replies {
            let body = String::from_utf8_lossy(&r.body);
            assert!(!body.contains("ACME-SECRET"), "leaked: {body}");
            assert!(!body.contains(&etag), "leaked our etag: {body}");
        }
    }
    assert_eq!(h.state(KEY_A).await, before, "nothing of acme/main changed");
}

/// A tenant-wide credential reaches every workspace of its own tenant, named per request in
/// `X-Workspace-Id`, and nothing of any other tenant.
pub async fn tenant_wide_credentials_stay_in_their_tenant(h: Harness) {
    h.put(KEY_A, "in-main.md", "main").await.assert_ok();
    h.put(KEY_OTHER, "in-other.md", "other").await.assert_ok();
    h.put(KEY_EVIL, "evil.md", "EVIL-ONLY").await.assert_ok();
    let as_tenant = |method: Method, uri: String, ws: Option<&str>| {
        let mut c = h.call(method, &uri, Some(KEY_TENANT));
        if let Some(w) = ws {
            c = c.header("x-workspace-id", w);
        }
        c
    };
    let list =
        |ws: &'static str| as_tenant(Method::GET, "/v1/host/workspace/files".into(), Some(ws));
    let names = |v: serde_json::Value| -> Vec<String> {
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(list("main").send().await.assert_ok()), ["in-main.md"]);
    assert_eq!(
        names(list("other").send().await.assert_ok()),
        ["in-other.md"]
    );
    // `acme-evil` here is a workspace of tenant acme, not the tenant acme-evil.
    assert_eq!(
        list("acme-evil").send().await.assert_ok()["files"],
        json!([])
    );
    as_tenant(Method::PUT, file_uri("evil.md"), Some("acme-evil"))
        .json(&json!({"content": "mine"}))
        .send()
        .await
        .assert_ok();
    assert_eq!(
        h.get(KEY_EVIL, "evil.md").await.assert_ok()["content"],
        "EVIL-ONLY"
    );

    as_tenant(Method::GET, file_uri("in-main.md"), None)
        .send()
        .await
        .assert_error(400, "validation_error");
    for bad in ["acme-evil/main", "../main", "", "main main"] {
        as_tenant(Method::GET, file_uri("in-main.md"), Some(bad))
            .send()
            .await
            .assert_error(400, "validation_error");
    }
    // A key bound to one workspace cannot be pointed at another.
    h.call(Method::GET, &file_uri("in-other.md"), Some(KEY_A))
        .header("x-workspace-id", "other")
        .send()
        .await
        .assert_error(403, "forbidden");
    h.call(Method::GET, &file_uri("in-main.md"), Some(KEY_A))
        .header("x-workspace-id", "main")
        .send()
        .await
        .assert_ok();
}

/// Naming another scope by header, query or body is refused (403) and reveals nothing;
/// naming one's own changes nothing.
pub async fn naming_another_scope_is_forbidden(h: Harness) {
    h.put(KEY_EVIL, "evil.md", "EVIL-ONLY").await.assert_ok();
    h.put(KEY_A, "mine.md", "mine").await.assert_ok();
    let before = h.state(KEY_A).await;
    let tries = [
        ("x-tenant-id", "acme-evil", file_uri("evil.md")),
        ("x-workspace-id", "other", file_uri("mine.md")),
        (
            "",
            "",
            format!("{}?tenantId=acme-evil", file_uri("evil.md")),
        ),
        (
            "",
            "",
            "/v1/host/workspace/files?tenant=acme-evil".to_owned(),
        ),
        ("", "", format!("{}?workspaceId=other", file_uri("mine.md"))),
    ];
    for (name, value, uri) in &tries {
        let mut c = h.call(Method::GET, uri, Some(KEY_A));
        if !name.is_empty() {
            c = c.header(name, value);
        }
        let r = c.send().await;
        r.assert_error(403, "forbidden");
        assert!(!String::from_utf8_lossy(&r.body).contains("EVIL-ONLY"));
    }
    for body in [
        json!({"content": "x", "tenantId": "acme-evil"}),
        json!({"content": "x", "workspaceId": "other"}),
        json!({"content": "x", "tenant": 7}),
    ] {
        h.call(Method::PUT, &file_uri("mine.md"), Some(KEY_A))
            .json(&body)
            .send()
            .await
            .assert_error(403, "forbidden");
    }
    assert_eq!(h.state(KEY_A).await, before);
    // Naming its own scope is fine.
    h.call(Method::PUT, &file_uri("mine.md"), Some(KEY_A))
        .header("x-tenant-id", "acme")
        .json(&json!({"content": "again", "tenantId": "acme", "workspaceId": "main"}))
        .send()
        .await
        .assert_ok();
}
