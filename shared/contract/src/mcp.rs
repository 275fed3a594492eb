//! `POST /mcp` on every backend: the tools are the same service as the file routes, so an
//! MCP write is a version on the HTTP API, redacted (WSR-1) down to the adapter's stored
//! bytes, under the same quotas; and the credential alone decides the workspace and what
//! the caller may do.

use crate::harness::{scope, Harness, Reply, KEY_A, KEY_EVIL, KEY_READ_ONLY, LIMITS};
use crate::protocol::SECRET_AWS_KEY_ID;
use http::Method;
use serde_json::{json, Value};

async fn rpc(h: &Harness, key: Option<&str>, msg: &Value) -> Reply {
    h.call(Method::POST, "/mcp", key).json(msg).send().await
}

/// Calls a tool: (text, isError).
pub(crate) async fn tool(h: &Harness, key: &str, name: &str, args: Value) -> (String, bool) {
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": name, "arguments": args}});
    let r = rpc(h, Some(key), &msg).await.assert_ok();
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    (text.to_owned(), r["result"]["isError"] == true)
}

pub async fn mcp_writes_are_versions_redacted_and_bounded_like_put(h: Harness) {
    let secret = format!("aws = {SECRET_AWS_KEY_ID}\n");
    let (text, err) = tool(
        &h,
        KEY_A,
        "write_file",
        json!({"path": "mem/k.env", "content": secret}),
    )
    .await;
    assert!(
        !err && text.starts_with("Successfully wrote ") && text.contains("Version: 1"),
        "{text}"
    );
    let (text, _) = tool(
        &h,
        KEY_A,
        "edit_file",
        json!({"path": "/workspace/mem/k.env", "old_text": "aws =", "new_text": "key ="}),
    )
    .await;
    assert!(text.ends_with("Version: 2"), "{text}");
    let got = h.get(KEY_A, "mem/k.env").await.assert_ok();
    assert_eq!(got["version"], 2);
    assert_eq!(got["content"], "key = [REDACTED:aws-access-key-id]\n");
    let path = workspace_core::FilePath::parse("mem/k.env").unwrap();
    let head = h
        .meta
        .head(&scope("acme", "main"), &path)
        .await
        .unwrap()
        .expect("head");
    let raw = crate::body_bytes(&*h.bodies, head.body.as_ref().expect("body"))
        .await
        .expect("raw");
    assert!(!String::from_utf8_lossy(&raw).contains(SECRET_AWS_KEY_ID));

    // An HTTP write is what the tools then see, and a stale expected_version changes nothing.
    h.put(KEY_A, "mem/k.env", "from http").await.assert_ok();
    let before = h.state(KEY_A).await;
    let (text, err) = tool(
        &h,
        KEY_A,
        "write_file",
        json!({"path": "mem/k.env", "content": "lost", "expected_version": 2}),
    )
    .await;
    assert!(err && text.contains("current version is 3"), "{text}");
    assert_eq!(h.state(KEY_A).await, before);

    // Quotas are the service's: maxFileBytes and maxFiles answer as errors, nothing stored.
    let big = "x".repeat(usize::try_from(LIMITS.max_file_bytes).unwrap() + 1);
    let (text, err) = tool(
        &h,
        KEY_A,
        "write_file",
        json!({"path": "big.txt", "content": big}),
    )
    .await;
    assert!(
        err && text.starts_with("Error: ") && text.contains("maxFileBytes"),
        "{text}"
    );
    for i in 0..LIMITS.max_files {
        let _ = tool(
            &h,
            KEY_A,
            "write_file",
            json!({"path": format!("f{i}.txt"), "content": "x"}),
        )
        .await;
    }
    let (text, err) = tool(
        &h,
        KEY_A,
        "write_file",
        json!({"path": "one-too-many.txt", "content": "x"}),
    )
    .await;
    assert!(err && text.contains("maxFiles"), "{text}");
    h.get(KEY_A, "one-too-many.txt")
        .await
        .assert_error(404, "not_found");

    // A delete through MCP is a delete over HTTP.
    let (text, err) = tool(&h, KEY_A, "delete_file", json!({"path": "mem/k.env"})).await;
    assert!(!err, "{text}");
    h.get(KEY_A, "mem/k.env")
        .await
        .assert_error(404, "not_found");
}

pub async fn mcp_acts_only_on_the_credentials_workspace(h: Harness) {
    h.put(KEY_A, "private/plan.md", "acme only")
        .await
        .assert_ok();
    let before = h.state(KEY_A).await;
    for (name, args) in [
        ("read_file", json!({"path": "private/plan.md"})),
        ("get_file_info", json!({"path": "private/plan.md"})),
        ("list_directory", json!({"path": "private"})),
        ("delete_file", json!({"path": "private/plan.md"})),
        (
            "edit_file",
            json!({"path": "private/plan.md", "old_text": "acme", "new_text": "evil"}),
        ),
        (
            "move_file",
            json!({"source": "private/plan.md", "destination": "mine.md"}),
        ),
    ] {
        let (text, err) = tool(&h, KEY_EVIL, name, args).await;
        assert!(
            err && text.contains("not found") && !text.contains("acme only"),
            "{name}: {text}"
        );
    }
    for (name, args) in [
        ("list_directory", json!({"path": "/workspace"})),
        ("search_files", json!({"path": ".", "pattern": "**"})),
        ("grep", json!({"pattern": "acme"})),
    ] {
        let (text, _) = tool(&h, KEY_EVIL, name, args).await;
        assert!(
            !text.contains("plan") && !text.contains("private"),
            "{name}: {text}"
        );
    }
    // wait_for_changes reads this backend's change log: the caller's workspace only, and
    // a read-only key may wait.
    let since = json!({"since": "2000-01-01T00:00:00Z", "timeout_seconds": 0});
    let (text, err) = tool(&h, KEY_EVIL, "wait_for_changes", since.clone()).await;
    assert!(
        !err && text.starts_with("No changes") && !text.contains("private"),
        "{text}"
    );
    let (text, err) = tool(&h, KEY_READ_ONLY, "wait_for_changes", since).await;
    assert!(
        !err && text.contains(" put private/plan.md version 1 by "),
        "{text}"
    );
    for (name, args) in [
        ("write_file", json!({"path": "x.md", "content": "x"})),
        ("create_directory", json!({"path": "d"})),
        ("delete_file", json!({"path": "private/plan.md"})),
        (
            "edit_file",
            json!({"path": "private/plan.md", "old_text": "acme", "new_text": "x"}),
        ),
        (
            "move_file",
            json!({"source": "private/plan.md", "destination": "y.md"}),
        ),
    ] {
        let (text, err) = tool(&h, KEY_READ_ONLY, name, args).await;
        assert!(err && text.contains("workspace:write"), "{name}: {text}");
    }
    assert_eq!(
        tool(
            &h,
            KEY_READ_ONLY,
            "read_file",
            json!({"path": "private/plan.md"})
        )
        .await,
        ("acme only".to_owned(), false)
    );
    assert_eq!(h.state(KEY_A).await, before, "nothing changed");
}

pub async fn mcp_transport_rules(h: Harness) {
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    rpc(&h, None, &ping)
        .await
        .assert_error(401, "unauthenticated");
    assert_eq!(
        rpc(&h, Some(KEY_A), &ping).await.assert_ok(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = rpc(&h, Some(KEY_A), &note).await;
    assert_eq!((r.status.as_u16(), r.body.len()), (202, 0));
    let r = h
        .call(Method::POST, "/mcp", Some(KEY_A))
        .body("{oops")
        .send()
        .await;
    assert_eq!(
        (r.status.as_u16(), r.json()["error"]["code"].clone()),
        (400, json!(-32700))
    );
    let r = h
        .call(Method::POST, "/mcp", Some(KEY_A))
        .header("mcp-protocol-version", "1999-01-01")
        .json(&ping)
        .send()
        .await;
    assert_eq!(r.status.as_u16(), 400);
    let r = h
        .call(Method::POST, "/mcp", Some(KEY_A))
        .header("mcp-protocol-version", "2025-06-18")
        .json(&ping)
        .send()
        .await;
    assert_eq!(r.status.as_u16(), 200);
    // No server-initiated stream: GET is refused, so clients use POST responses only.
    h.call(Method::GET, "/mcp", Some(KEY_A))
        .send()
        .await
        .assert_error(405, "method_not_allowed");
    let health = h
        .call(Method::GET, "/mcp/health", None)
        .send()
        .await
        .assert_ok();
    assert_eq!(health["service"], "workspace-tool");
    assert_eq!(health["status"], "ok");
}
