//! A key bound to a fork (what a sub-agent is handed) reaches that fork and nothing else,
//! through the binary: naming its parent or a sibling fork on every route family (files,
//! history, snapshots, change log, search, memory, forks, MCP) reads nothing and changes
//! nothing, it cannot merge, rebase or discard its own fork, and another tenant's key finds
//! no trace of the fork.

mod common;

use common::Server;
use reqwest::{Client, Method};
use serde_json::{json, Value};

const PARENT_TEXT: &str = "parent-only-text";
const SIBLING_TEXT: &str = "sibling-only-text";

async fn call(
    c: &Client,
    s: &Server,
    key: &str,
    workspace: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let mut req = c.request(method, s.url(path)).bearer_auth(key);
    if let Some(ws) = workspace {
        req = req.header("x-workspace-id", ws);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    if path == "/mcp" {
        req = req.header("accept", "application/json, text/event-stream");
    }
    let r = req.send().await.expect("the server answers");
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

/// Refused: an error status, or (the memory tool and MCP tools, which answer errors in
/// band) an answer marked as an error.
fn refused(status: u16, answer: &str) -> bool {
    status >= 400 || answer.contains("\"isError\":true")
}

fn key_for(dir: &std::path::Path, tenant: &str, workspace: &str) -> String {
    let (status, out, err) = common::run_args(
        dir,
        &[],
        &[
            "keys",
            "create",
            "--tenant",
            tenant,
            "--workspace",
            workspace,
        ],
    );
    assert!(status.success(), "{err}");
    out.lines().next().expect("the key").trim().to_owned()
}

fn mcp_call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// Every route family, as (method, path, body); `{fork}` is the fork the key is bound to.
fn routes(own_fork: &str) -> Vec<(Method, String, Option<Value>)> {
    let w = "/v1/host/workspace";
    vec![
        (Method::GET, format!("{w}/files/notes/secret.md"), None),
        (Method::GET, format!("{w}/files"), None),
        (
            Method::PUT,
            format!("{w}/files/planted.md"),
            Some(json!({"content": "x"})),
        ),
        (Method::DELETE, format!("{w}/files/notes/secret.md"), None),
        (Method::GET, format!("{w}/versions/notes/secret.md"), None),
        (
            Method::POST,
            format!("{w}/versions/notes/secret.md"),
            Some(json!({"restore": 1})),
        ),
        (
            Method::GET,
            format!("{w}/diff/notes/secret.md?from=1"),
            None,
        ),
        (Method::POST, format!("{w}/snapshots"), Some(json!({}))),
        (Method::GET, format!("{w}/snapshots"), None),
        (Method::GET, format!("{w}/changes"), None),
        (Method::GET, format!("{w}/search?q=only"), None),
        (
            Method::POST,
            format!("{w}/memory"),
            Some(json!({"command": "view", "path": "/memories"})),
        ),
        (Method::POST, format!("{w}/forks"), Some(json!({}))),
        (Method::GET, format!("{w}/forks"), None),
        (Method::GET, format!("{w}/forks/{own_fork}/diff"), None),
        (
            Method::POST,
            format!("{w}/forks/{own_fork}/merge"),
            Some(json!({})),
        ),
        (
            Method::POST,
            format!("{w}/forks/{own_fork}/rebase"),
            Some(json!({})),
        ),
        (Method::DELETE, format!("{w}/forks/{own_fork}"), None),
        (
            Method::POST,
            "/mcp".to_owned(),
            Some(mcp_call("read_file", json!({"path": "notes/secret.md"}))),
        ),
        (
            Method::POST,
            "/mcp".to_owned(),
            Some(mcp_call(
                "write_file",
                json!({"path": "planted.md", "content": "x"}),
            )),
        ),
    ]
}

async fn contents(c: &Client, s: &Server, key: &str, ws: &str) -> Vec<(String, u64)> {
    let (status, body) = call(
        c,
        s,
        key,
        Some(ws),
        Method::GET,
        "/v1/host/workspace/files?limit=100",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["version"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_key_reaches_its_fork_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::new();
    let s = Server::start(dir.path(), &[]).await;
    let parent_key = s.generated_key();
    let (status, body) = call(
        &c,
        &s,
        &parent_key,
        None,
        Method::PUT,
        "/v1/host/workspace/files/notes/secret.md",
        Some(json!({"content": PARENT_TEXT})),
    )
    .await;
    assert!(status < 300, "{body}");
    let mut forks = Vec::new();
    for _ in 0..2 {
        let (status, body) = call(
            &c,
            &s,
            &parent_key,
            None,
            Method::POST,
            "/v1/host/workspace/forks",
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        forks.push(v["workspaceId"].as_str().unwrap().to_owned());
    }
    let (own, sibling) = (forks[0].clone(), forks[1].clone());
    let (status, body) = call(
        &c,
        &s,
        &parent_key,
        Some(&sibling),
        Method::PUT,
        "/v1/host/workspace/files/notes/sibling.md",
        Some(json!({"content": SIBLING_TEXT})),
    )
    .await;
    assert!(status < 300, "{body}");
    let fork_key = key_for(dir.path(), "local", &own);
    let other_tenant = key_for(dir.path(), "elsewhere", "default");

    // In its own fork the key reads what the fork inherited and writes its own files.
    let (status, body) = call(
        &c,
        &s,
        &fork_key,
        None,
        Method::GET,
        "/v1/host/workspace/files/notes/secret.md",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call(
        &c,
        &s,
        &fork_key,
        None,
        Method::PUT,
        "/v1/host/workspace/files/mine.md",
        Some(json!({"content": "the sub-agent's"})),
    )
    .await;
    assert!(status < 300, "{body}");

    let parent_before = contents(&c, &s, &parent_key, "default").await;
    let sibling_before = contents(&c, &s, &parent_key, &sibling).await;

    // Naming the parent or the sibling: refused on every route, nothing revealed.
    for target in ["default", sibling.as_str()] {
        for (method, path, body) in routes(&own) {
            let (status, answer) =
                call(&c, &s, &fork_key, Some(target), method.clone(), &path, body).await;
            assert!(
                status == 403 || status == 404,
                "{method} {path} as the fork key naming {target}: {status} {answer}"
            );
            for secret in [PARENT_TEXT, SIBLING_TEXT, "sibling.md"] {
                assert!(
                    !answer.contains(secret),
                    "{method} {path} revealed {secret}: {answer}"
                );
            }
        }
    }
    // Its own fork's merge, rebase and discard are the parent's to do.
    for (method, path) in [
        (
            Method::POST,
            format!("/v1/host/workspace/forks/{own}/merge"),
        ),
        (
            Method::POST,
            format!("/v1/host/workspace/forks/{own}/rebase"),
        ),
        (Method::DELETE, format!("/v1/host/workspace/forks/{own}")),
    ] {
        let (status, answer) = call(
            &c,
            &s,
            &fork_key,
            None,
            method.clone(),
            &path,
            Some(json!({})),
        )
        .await;
        assert!(
            status == 403 || status == 404,
            "{method} {path}: {status} {answer}"
        );
    }
    let (status, answer) = call(
        &c,
        &s,
        &fork_key,
        None,
        Method::POST,
        "/mcp",
        Some(mcp_call(
            "merge_fork",
            json!({"fork_id": own, "apply": true}),
        )),
    )
    .await;
    assert!(
        status >= 400 || answer.contains("\"isError\":true"),
        "the merge_fork tool with the fork's key: {status} {answer}"
    );
    // Its MCP tools see only the fork.
    let (status, answer) = call(
        &c,
        &s,
        &fork_key,
        None,
        Method::POST,
        "/mcp",
        Some(mcp_call("read_file", json!({"path": "notes/sibling.md"}))),
    )
    .await;
    assert!(
        !answer.contains(SIBLING_TEXT),
        "the sibling's file through the fork's tools: {status} {answer}"
    );

    // Another tenant's key naming the fork finds nothing there.
    let mut answered = Vec::new();
    for (method, path, body) in routes(&own) {
        let (status, answer) = call(
            &c,
            &s,
            &other_tenant,
            Some(&own),
            method.clone(),
            &path,
            body,
        )
        .await;
        assert!(!answer.contains(PARENT_TEXT), "{answer}");
        if !refused(status, &answer) {
            answered.push(format!("{method} {path}: {status} {answer}"));
        }
    }
    assert!(
        answered.is_empty(),
        "another tenant naming the fork was answered:\n{}",
        answered.join("\n")
    );

    // Nothing changed: the parent and the sibling hold what they held, the fork still
    // stands, and the fork holds its own write.
    assert_eq!(
        contents(&c, &s, &parent_key, "default").await,
        parent_before
    );
    assert_eq!(
        contents(&c, &s, &parent_key, &sibling).await,
        sibling_before
    );
    let mine = contents(&c, &s, &fork_key, &own).await;
    assert!(mine.iter().any(|(p, _)| p == "mine.md"), "{mine:?}");
    assert!(!mine.iter().any(|(p, _)| p == "planted.md"), "{mine:?}");
    let (status, body) = call(
        &c,
        &s,
        &parent_key,
        None,
        Method::GET,
        "/v1/host/workspace/forks",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed["forks"].as_array().unwrap().len(), 2, "{listed}");
}
