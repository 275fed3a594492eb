//! The MCP tools through a real MCP client: the official Python SDK (`tests/mcp_client.py`,
//! installed into .venv by tests/run.sh from tests/requirements.txt) drives the real
//! `workspace-local` over Streamable HTTP and over stdio, and asserts every tool's texts,
//! traversal refusals, isolation, read-only credentials, and that MCP writes are versions
//! on the HTTP API, redacted; and the files as resources: paged listing, text, blob,
//! version and snapshot reads, templates, completion, path-scoped and other tenants' keys,
//! and the notifications of subscriptions (a session's GET stream; stdout on stdio). This
//! file checks the process side: exit status, events, logs.

mod common;

use common::Server;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const KEY: &str = "key-acme-main-0123456789";
const EVIL_KEY: &str = "key-acme-evil-0123456789";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `tests/mcp_client.py` with the venv's Python; panics with its output on failure.
fn python_client(args: &[&str]) -> Output {
    let python = root().join(".venv/bin/python");
    let out = Command::new(&python)
        .arg(root().join("tests/mcp_client.py"))
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{} not runnable ({e}); tests/run.sh installs it with the mcp package",
                python.display()
            )
        });
    assert!(
        out.status.success(),
        "MCP client checks failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_mcp_client_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let (read_only, _) = common::create_key(
        dir.path(),
        &["--tenant", "acme", "--workspace", "main", "--read-only"],
    );
    let (scoped, _) = common::create_key(
        dir.path(),
        &[
            "--tenant",
            "acme",
            "--workspace",
            "main",
            "--allow",
            "watch/**",
        ],
    );
    let keys = format!("{KEY}=acme/main,{EVIL_KEY}=acme-evil/main");
    let server = Server::start(dir.path(), &[("WORKSPACE_API_KEYS", &keys)]).await;
    // The client finds the server through discovery: the `mcp` family's absolute URL.
    let doc: serde_json::Value = reqwest::get(server.url("/.well-known/openwop"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mcp = &doc["mcp"];
    assert_eq!(mcp["supported"], true, "{doc}");
    assert_eq!(mcp["transport"], "streamable-http");
    assert_eq!(mcp["path"], "/mcp");
    assert!(mcp["protocolVersions"]
        .as_array()
        .is_some_and(|v| v.iter().any(|x| x == "2025-06-18")));
    assert_eq!(mcp["tools"].as_array().map(Vec::len), Some(18), "{mcp}");
    assert!(
        mcp["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|x| x == "wait_for_changes")),
        "{mcp}"
    );
    // The shape the openwop suite reads (serverUrls, profiles, serverMount), and the
    // server it names answers an MCP initialize.
    workspace_contract::protocol::check_mcp_family(&doc);
    let url = mcp["serverUrls"][0]
        .as_str()
        .expect("an absolute URL locally")
        .to_owned();
    assert_eq!(url, server.url("/mcp"));
    assert_eq!(mcp["url"], url.as_str());
    let init = reqwest::Client::new()
        .post(&url)
        .bearer_auth(KEY)
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "discovery-check", "version": "1"},
            },
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(init.status(), reqwest::StatusCode::OK);
    let init: serde_json::Value = init.json().await.unwrap();
    assert_eq!(init["id"], 1, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(init["result"]["serverInfo"]["name"].is_string(), "{init}");
    let base = url.strip_suffix("/mcp").unwrap().to_owned();
    let run = tokio::task::spawn_blocking(move || {
        python_client(&[
            "http",
            "--base",
            &base,
            "--key",
            KEY,
            "--evil-key",
            EVIL_KEY,
            "--read-only-key",
            &read_only,
            "--scoped-key",
            &scoped,
        ])
    })
    .await
    .unwrap();
    assert!(String::from_utf8_lossy(&run.stdout).contains("checks passed (http)"));
    // MCP writes were committed and announced like HTTP writes: in acme/main's event
    // stream, and never in another scope's.
    let announced = |key: &'static str| {
        let url = server.url("/v1/host/workspace/events");
        async move {
            let mut resp = reqwest::Client::new()
                .get(url)
                .bearer_auth(key)
                .send()
                .await
                .unwrap();
            let mut text = String::new();
            while let Ok(Ok(Some(chunk))) =
                tokio::time::timeout(std::time::Duration::from_millis(700), resp.chunk()).await
            {
                text.push_str(&String::from_utf8_lossy(&chunk));
            }
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(|d| serde_json::from_str::<serde_json::Value>(d).unwrap())
                .filter(|e| e["detail"]["path"] == "mem/keys.env")
                .count()
        }
    };
    assert_eq!(announced(KEY).await, 2);
    assert_eq!(announced(EVIL_KEY).await, 0);
    let logs = server.stderr_text();
    assert!(!logs.contains("tenant=acme-evil"), "{logs}");
    assert!(
        logs.contains("route=\"/mcp\"") || logs.contains("route=/mcp"),
        "{logs}"
    );
    for secret in [KEY, EVIL_KEY, "AKIAIOSFODNN7EXAMPLE"] {
        assert!(!logs.contains(secret), "logs carry {secret}");
    }
}

#[test]
fn python_mcp_client_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let run = python_client(&[
        "stdio",
        "--bin",
        env!("CARGO_BIN_EXE_workspace-local"),
        "--data-dir",
        data,
    ]);
    assert!(String::from_utf8_lossy(&run.stdout).contains("checks passed (stdio)"));
}

/// `workspace-local mcp` with `env`, one line on stdin: (status, stdout, stderr).
fn stdio_once(dir: &Path, env: &[(&str, &str)], args: &[&str], line: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_workspace-local"))
        .arg("mcp")
        .args(args)
        .env_clear()
        .env("WORKSPACE_DATA_DIR", dir)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(format!("{line}\n").as_bytes());
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn stdio_acts_as_the_api_key_it_is_given_and_needs_one() {
    let dir = tempfile::tempdir().unwrap();
    let write = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"k.md","content":"by key"}}}"#;
    let out = stdio_once(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &format!("{KEY}=acme/main")),
            ("WORKSPACE_API_KEY", KEY),
        ],
        &[],
        write,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Successfully wrote 6 bytes to k.md\nVersion: 1"
    );
    // The same file, seen by flags naming that workspace; another workspace sees nothing.
    let read = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"k.md"}}}"#;
    let out = stdio_once(
        dir.path(),
        &[],
        &["--tenant", "acme", "--workspace", "main"],
        read,
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "by key");
    let out = stdio_once(
        dir.path(),
        &[],
        &["--tenant", "acme-evil", "--workspace", "main"],
        read,
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Error: File not found: k.md"
    );
    // A read-only stdio server refuses writes.
    let out = stdio_once(
        dir.path(),
        &[],
        &["--tenant", "acme", "--workspace", "main", "--read-only"],
        write,
    );
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["result"]["isError"], true);

    let out = stdio_once(dir.path(), &[], &[], write);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a credential"));
    let out = stdio_once(
        dir.path(),
        &[("WORKSPACE_API_KEY", "not-a-known-key-000000")],
        &[],
        write,
    );
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not-a-known-key"));
}

/// A `wait_for_changes` on stdio runs beside the other messages: a ping and a write sent
/// after it are answered while it waits, the write ends it, `notifications/cancelled` ends
/// another without an answer, and closing stdin ends the process at once, mid-wait.
#[test]
fn stdio_answers_other_calls_while_a_wait_runs() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_workspace-local"))
        .args(["mcp", "--tenant", "acme", "--workspace", "main"])
        .env_clear()
        .env("WORKSPACE_DATA_DIR", dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str(&line).unwrap());
        }
    });
    let mut send = move |v: serde_json::Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    let call = |id: u64, name: &str, args: serde_json::Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": name, "arguments": args}})
    };
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("an answer");
    let started = Instant::now();
    send(call(
        1,
        "wait_for_changes",
        serde_json::json!({"timeout_seconds": 20}),
    ));
    send(call(
        2,
        "wait_for_changes",
        serde_json::json!({"timeout_seconds": 20, "prefix": "never/"}),
    ));
    send(serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    assert_eq!(next()["id"], 3, "a ping is answered while two waits run");
    std::thread::sleep(Duration::from_millis(200));
    send(call(
        4,
        "write_file",
        serde_json::json!({"path": "w.md", "content": "x"}),
    ));
    let (a, b) = (next(), next());
    let mut ids = [a["id"].as_u64().unwrap(), b["id"].as_u64().unwrap()];
    ids.sort();
    assert_eq!(ids, [1, 4], "{a} {b}");
    let wait = if a["id"] == 1 { &a } else { &b };
    let text = wait["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(" put w.md version 1 by mcp-stdio"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // Cancelled: no answer ever comes for 2; the next message is answered.
    send(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 2}}),
    );
    send(serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}));
    assert_eq!(next()["id"], 5);
    // Another wait, then stdin closes: the process ends now, not when the wait would.
    send(call(
        6,
        "wait_for_changes",
        serde_json::json!({"timeout_seconds": 20}),
    ));
    std::thread::sleep(Duration::from_millis(200));
    drop(send);
    let closed = Instant::now();
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(
        closed.elapsed() < Duration::from_secs(5),
        "{:?}",
        closed.elapsed()
    );
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "no answer to 2 or 6"
    );
}
