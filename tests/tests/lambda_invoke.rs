//! Every recorded event in `events/` through the real function binary: `cargo lambda watch`
//! runs the functions (built from this workspace) against the moto emulator, and
//! `cargo lambda invoke` sends each event. `tests/run.sh` puts cargo-lambda on PATH and
//! starts moto.

use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use workspace_store_aws::testing;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `cargo lambda watch` and the functions it starts, stopped (whole process group) on drop.
struct Watch {
    child: Child,
    port: u16,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let pgid = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &pgid]).status();
        std::thread::sleep(Duration::from_millis(300));
        let _ = Command::new("kill").args(["-KILL", "--", &pgid]).status();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start_watch(env: &[(&str, String)]) -> Watch {
    use std::os::unix::process::CommandExt;
    let port = free_port();
    let child = Command::new("cargo")
        .current_dir(root())
        .args(["lambda", "watch", "--quiet", "--ignore-changes"])
        .args([
            "--invoke-address",
            "127.0.0.1",
            "--invoke-port",
            &port.to_string(),
        ])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("`cargo lambda` is on PATH (tests/run.sh installs it into .venv)");
    let watch = Watch { child, port };
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "cargo lambda watch never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    watch
}

/// Invokes `function` with `events/<file>` and returns the function's JSON answer.
fn invoke(watch: &Watch, function: &str, file: &str) -> Value {
    invoke_path(watch, function, &format!("events/{file}"))
}

/// Invokes `function` with a recorded event changed by `edit` (written to `target/`).
fn invoke_edited(watch: &Watch, function: &str, file: &str, edit: impl Fn(&mut Value)) -> Value {
    let text = std::fs::read_to_string(root().join("events").join(file)).expect("event file");
    let mut event: Value = serde_json::from_str(&text).expect("event JSON");
    edit(&mut event);
    let path = root()
        .join("target")
        .join(format!("edited-{function}-{file}"));
    std::fs::write(&path, event.to_string()).expect("write edited event");
    invoke_path(watch, function, &path.to_string_lossy())
}

fn invoke_path(watch: &Watch, function: &str, data_file: &str) -> Value {
    let out = Command::new("cargo")
        .current_dir(root())
        .args([
            "lambda",
            "invoke",
            function,
            "--invoke-address",
            "127.0.0.1",
        ])
        .args(["--invoke-port", &watch.port.to_string()])
        .args(["--data-file", data_file])
        .output()
        .expect("cargo lambda invoke");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "invoke {function} {data_file} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{function} {data_file}: {e}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recorded_event_runs_through_its_function_binary() {
    let env = testing::fresh(None).await;
    let observed = testing::observed_bus().await;
    let caps = testing::fresh_capabilities().await;
    let settings = vec![
        ("AWS_ENDPOINT_URL", testing::moto_url()),
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("WORKSPACE_TABLE", env.table.clone()),
        ("WORKSPACE_BUCKET", env.bucket.clone()),
        ("WORKSPACE_EVENT_BUS", observed.bus.clone()),
        ("WORKSPACE_ORPHAN_GRACE_SECONDS", "3600".to_owned()),
        ("WORKSPACE_CACHE_TABLE", caps.cache_table.clone()),
        ("WORKSPACE_BLOB_S3_BUCKET", caps.blob_bucket.clone()),
        (
            "WORKSPACE_SESSION_TOKEN_KEY",
            "test-session-token-key-0123456789abcdef".to_owned(),
        ),
    ];
    let watch = tokio::task::spawn_blocking(move || start_watch(&settings))
        .await
        .unwrap();
    let w = &watch;

    let status = |v: &Value| v["statusCode"].as_u64().unwrap_or_default();
    let body = |v: &Value| -> Value {
        serde_json::from_str(v["body"].as_str().unwrap_or("null")).unwrap_or(Value::Null)
    };

    let put = invoke(w, "fn-put", "put-file.json");
    assert_eq!(status(&put), 200, "{put}");
    assert_eq!(body(&put)["version"], 1);
    let get = invoke(w, "fn-get", "get-file.json");
    assert_eq!(
        (status(&get), body(&get)["content"].as_str()),
        (200, Some("hello")),
        "{get}"
    );
    let list = invoke(w, "fn-list", "list-files.json");
    assert_eq!(status(&list), 200, "{list}");
    assert_eq!(body(&list)["files"][0]["path"], "notes/today.md");
    let health = invoke(w, "fn-get", "health.json");
    assert_eq!(status(&health), 200, "{health}");

    // History, restore and diff; snapshots (the recorded id names none: 404).
    let restored = invoke(w, "fn-put", "restore-version.json");
    assert_eq!(
        (status(&restored), body(&restored)["version"].as_u64()),
        (200, Some(2)),
        "{restored}"
    );
    let history = invoke(w, "fn-get", "list-versions.json");
    assert_eq!(status(&history), 200, "{history}");
    assert_eq!(body(&history)["versions"][0]["version"], 2);
    let diff = invoke(w, "fn-get", "diff.json");
    assert_eq!(
        (status(&diff), body(&diff)["diff"].as_str()),
        (200, Some("")),
        "{diff}"
    );
    let snap = invoke(w, "fn-snapshots", "create-snapshot.json");
    assert_eq!(status(&snap), 201, "{snap}");
    assert_eq!(body(&snap)["files"][0]["version"], 2);
    for file in ["get-snapshot.json", "delete-snapshot.json"] {
        let r = invoke(w, "fn-snapshots", file);
        assert_eq!(
            (status(&r), body(&r)["error"].as_str()),
            (404, Some("not_found")),
            "{r}"
        );
    }

    // A two-step upload: fn-put presigns an S3 PUT, the bytes go straight to S3 (the
    // emulator), and a second fn-put call commits them.
    let started = invoke(w, "fn-put", "start-upload.json");
    assert_eq!(status(&started), 201, "{started}");
    let ticket = body(&started);
    let url = ticket["url"].as_str().expect("a presigned URL");
    assert!(url.starts_with(&testing::moto_url()), "{url} is S3's");
    let mut req = reqwest::Client::new().put(url).body("hello world");
    for (k, v) in ticket["headers"].as_object().expect("headers") {
        if !matches!(k.as_str(), "content-length" | "host") {
            req = req.header(k, v.as_str().unwrap_or_default());
        }
    }
    let sent = req.send().await.expect("S3 answers");
    assert!(sent.status().is_success(), "{:?}", sent.text().await);
    let id = ticket["uploadId"].as_str().expect("uploadId").to_owned();
    let committed = invoke_edited(w, "fn-put", "put-file.json", |e| {
        e["rawPath"] = "/v1/host/workspace/files/notes/big.bin".into();
        e["requestContext"]["http"]["path"] = "/v1/host/workspace/files/notes/big.bin".into();
        e["pathParameters"]["path"] = "notes/big.bin".into();
        let b = serde_json::json!({ "uploadId": id }).to_string();
        e["headers"]["content-length"] = b.len().to_string().into();
        e["body"] = b.into();
    });
    assert_eq!(
        (status(&committed), body(&committed)["size"].as_u64()),
        (200, Some(11)),
        "{committed}"
    );

    let delete = invoke(w, "fn-delete", "delete-file.json");
    assert_eq!(status(&delete), 204, "{delete}");

    // The stream publisher announces a recorded version item, and the sweeper runs.
    let published = invoke(w, "fn-publish", "stream-insert.json");
    assert_eq!(
        published["batchItemFailures"],
        serde_json::json!([]),
        "{published}"
    );
    let got = observed.drain(1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["detail"]["path"], "notes/today.md");
    let removed = invoke(w, "fn-publish", "stream-remove.json");
    assert_eq!(
        removed["batchItemFailures"],
        serde_json::json!([]),
        "{removed}"
    );
    // The workspace service on DynamoDB and S3: an idempotent local create, and a purge
    // that finds nothing idle.
    let created = invoke(w, "fn-workspaces", "workspaces-create.json");
    assert_eq!(status(&created), 201, "{created}");
    let again = invoke(w, "fn-workspaces", "workspaces-create.json");
    assert_eq!(status(&again), 200, "{again}");
    assert_eq!(body(&again)["workspaceId"], body(&created)["workspaceId"]);
    let purged = invoke(w, "fn-purge", "schedule-purge.json");
    assert_eq!(purged["workspaces"], serde_json::json!([]), "{purged}");

    let swept = invoke(w, "fn-sweep", "schedule-sweep.json");
    assert!(
        swept["examined"].as_u64().is_some_and(|n| n >= 1),
        "{swept}"
    );
    // The MCP function: a tool write lands on DynamoDB/S3 like a PUT, and is listed.
    let text = |v: &Value| body(v)["result"]["content"][0]["text"].clone();
    let wrote = invoke(w, "fn-mcp", "mcp-write-file.json");
    assert_eq!(status(&wrote), 200, "{wrote}");
    assert_eq!(
        text(&wrote),
        "Successfully wrote 20 bytes to notes/agent.md\nVersion: 1"
    );
    let listed = invoke(w, "fn-mcp", "mcp-list-directory.json");
    assert_eq!(
        text(&listed),
        "Contents of /workspace:\n\n[DIR] notes",
        "{listed}"
    );
    for event in ["mcp-health.json", "health.json"] {
        let health = invoke(w, "fn-mcp", event);
        assert_eq!(
            body(&health)["service"],
            "workspace-tool",
            "{event}: {health}"
        );
    }

    // RFC 0019 on the DynamoDB cache table and the S3 blob bucket: a binary body arrives
    // base64 encoded and leaves base64 encoded, byte for byte.
    let cached = invoke(w, "fn-cache", "put-cache.json");
    assert_eq!(
        (status(&cached), body(&cached)["ok"].as_bool()),
        (200, Some(true)),
        "{cached}"
    );
    let stored = invoke(w, "fn-blob", "put-blob.json");
    assert_eq!(
        (status(&stored), body(&stored)["sizeBytes"].as_u64()),
        (200, Some(256)),
        "{stored}"
    );
    let got = invoke(w, "fn-blob", "get-blob.json");
    assert_eq!(status(&got), 200, "{got}");
    assert_eq!(got["isBase64Encoded"], true, "{got}");
    let put_event: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("events/put-blob.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        got["body"], put_event["body"],
        "the same bytes, base64 both ways"
    );
    drop(watch);
}
