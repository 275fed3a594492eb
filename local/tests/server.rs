//! The local server as a user meets it: a real process on a loopback port, real HTTP.

mod common;

use common::{run_to_exit, Server};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use std::io::{Read, Write};

fn files(s: &Server, path: &str) -> String {
    s.url(&format!("/v1/host/workspace/files/{path}"))
}

#[tokio::test]
async fn first_start_generates_a_key_and_later_starts_reuse_it_without_printing_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    assert!(key.len() >= 40, "key is long and random: {key}");
    let out = s.stdout_text();
    assert!(
        out.contains(&format!(
            "curl -H 'Authorization: Bearer {key}' {}/v1/host/workspace/files",
            s.base
        )),
        "{out}"
    );
    let c = Client::new();
    let r = common::put_content(&c, files(&s, "a.md"), &key, "x").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(s.terminate().success());
    assert!(!s.stderr_text().contains(&key), "logs never carry a key");
    assert_no_plaintext_key(dir.path(), &key);

    let s2 = Server::start(dir.path(), &[]).await;
    assert!(
        !s2.stdout_text().contains(&key),
        "the key is shown only when created"
    );
    assert!(
        s2.stdout_text().contains("1 managed"),
        "{}",
        s2.stdout_text()
    );
    let r = common::get_with(&c, files(&s2, "a.md"), &key).await;
    assert_eq!(r.status(), StatusCode::OK);
}

/// No file in the data directory (or below it) holds the key in plain text.
fn assert_no_plaintext_key(dir: &std::path::Path, key: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_no_plaintext_key(&path, key);
            continue;
        }
        let bytes = std::fs::read(path).unwrap();
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "a data file holds the key in plain text"
        );
    }
}

#[tokio::test]
async fn keys_created_and_revoked_by_the_cli_count_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]).await;
    let c = Client::new();
    let admin = s.generated_key();
    common::put_content(&c, files(&s, "shared.md"), &admin, "x").await;

    let (key, out) = common::create_key(
        dir.path(),
        &[
            "--tenant",
            "local",
            "--workspace",
            "default",
            "--read-only",
            "--principal",
            "ci-bot",
        ],
    );
    assert!(
        key.starts_with("wsk_") && !key.contains(' '),
        "the key alone on the first line: {out}"
    );
    let id = key.split('_').nth(1).unwrap().to_owned();

    let r = common::get_with(&c, files(&s, "shared.md"), &key).await;
    assert_eq!(r.status(), StatusCode::OK, "a new key works at once");
    let r = common::put_content(&c, files(&s, "shared.md"), &key, "y").await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "--read-only keys cannot write"
    );

    let (_, listed, _) = common::run_args(dir.path(), &[], &["keys", "list"]);
    let line = listed
        .lines()
        .find(|l| l.starts_with(&id))
        .expect("listed by id");
    assert!(
        line.contains("access=read ")
            && line.contains("principal=ci-bot")
            && line.contains("active"),
        "{line}"
    );
    assert!(!listed.contains(&key), "list never shows a key");

    let (status, _, err) = common::run_args(dir.path(), &[], &["keys", "revoke", &id]);
    assert!(status.success(), "{err}");
    let r = common::get_with(&c, files(&s, "shared.md"), &key).await;
    assert_eq!(
        r.status(),
        StatusCode::UNAUTHORIZED,
        "a revoked key fails at once"
    );
    let (status, _, err) = common::run_args(dir.path(), &[], &["keys", "revoke", "nope"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert_no_plaintext_key(dir.path(), &key);

    // A tenant-wide key reaches any workspace of its tenant.
    let (_, out, _) = common::run_args(dir.path(), &[], &["keys", "create", "--tenant", "local"]);
    let wide = out.lines().next().unwrap().to_owned();
    let r = c
        .get(files(&s, "shared.md"))
        .bearer_auth(&wide)
        .header("x-workspace-id", "default")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn http_contract_over_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let key_a = "dev-key-acme-0123456789";
    let key_b = "dev-key-beta-0123456789";
    let keys = format!("{key_a}=acme/main,{key_b}=beta/main");
    let mut s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &keys),
            ("WORKSPACE_MAX_FILE_BYTES", "64"),
        ],
    )
    .await;
    let c = Client::new();

    // 401 with the envelope, without and with a wrong key.
    for req in [
        c.get(s.url("/v1/host/workspace/files")),
        c.get(s.url("/v1/host/workspace/files"))
            .bearer_auth("wrong-key-0123456789"),
    ] {
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "unauthenticated");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
    }

    // %2F and a raw slash are the same file.
    let r = common::put_content(
        &c,
        s.url("/v1/host/workspace/files/behavior%2FCRUD.md"),
        key_a,
        "v1",
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let etag_header = r.headers()["etag"].to_str().unwrap().to_owned();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["etag"], etag_header);
    let r = common::get_with(&c, files(&s, "behavior/CRUD.md"), key_a).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["content"].as_str(), v["version"].as_u64()),
        (Some("v1"), Some(1))
    );

    // List rows carry no content key.
    let v: Value = common::get_with(&c, s.url("/v1/host/workspace/files"), key_a)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 1);
    assert!(v["files"][0].get("content").is_none(), "{v}");

    // The configured limit is advertised and enforced.
    let d: Value = c
        .get(s.url("/.well-known/openwop"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(d["workspace"]["maxFileBytes"], 64);
    assert_eq!(d["capabilities"]["workspace"]["maxFileBytes"], 64);
    let r = common::put_content(&c, files(&s, "big.md"), key_a, &"x".repeat(65)).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // Far past the limit: the server answers 413 without reading it all and drops that
    // connection, so this request gets a client of its own (a pooled connection would die).
    let r = Client::new()
        .put(files(&s, "huge.md"))
        .bearer_auth(key_a)
        .body(vec![b'x'; 2 * 1024 * 1024])
        .send()
        .await;
    if let Ok(r) = r {
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    // The other key's tenant sees nothing of acme's.
    let r = common::get_with(&c, files(&s, "behavior/CRUD.md"), key_b).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // A dot segment sent raw reaches the router unnormalised and is refused.
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
    write!(tcp, "GET /v1/host/workspace/files/x/../behavior/CRUD.md HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key_a}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    assert!(raw.contains("validation_error"), "{raw}");

    // A malformed chunked body is bad input (400 with the envelope), not "too large".
    let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
    write!(tcp, "PUT /v1/host/workspace/files/chunked.md HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key_a}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nZZ\r\n{{}}\r\n0\r\n\r\n").unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    assert!(raw.contains("validation_error"), "{raw}");
    let r = common::get_with(&c, files(&s, "chunked.md"), key_a).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "nothing was written");
    // So is a truncated one: the connection closes (its sending side) in the middle of a
    // chunk. A client still listening reads 400 in the envelope; nothing is written.
    let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
    write!(tcp, "PUT /v1/host/workspace/files/chunked.md HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key_a}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n20\r\n{{\"content\": \"cut").unwrap();
    tcp.shutdown(std::net::Shutdown::Write).unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    assert!(raw.contains("validation_error"), "{raw}");
    assert!(raw.contains("connection: close"), "{raw}");
    let r = common::get_with(&c, files(&s, "chunked.md"), key_a).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "nothing was written");

    // One log line per request: method, route, status, duration.
    assert!(s.terminate().success());
    let log = s.stderr_text();
    let line = log
        .lines()
        .find(|l| l.contains("method=PUT") && l.contains("status=413"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        line.contains("route=\"/v1/host/workspace/files/{path+}\"")
            && line.contains("duration_ms="),
        "{line}"
    );
    assert!(
        !log.contains(key_a) && !log.contains(key_b),
        "logs never carry a key"
    );
}

#[tokio::test]
async fn concurrent_if_match_puts_over_http_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    let c = Client::new();
    let v: Value = common::put_content(&c, files(&s, "hot.md"), &key, "base")
        .await
        .json()
        .await
        .unwrap();
    let etag = v["etag"].as_str().unwrap().to_owned();
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let req = c
                .put(files(&s, "hot.md"))
                .bearer_auth(&key)
                .header("if-match", &etag)
                .json(&json!({"content": format!("w{i}")}));
            tokio::spawn(async move { req.send().await.unwrap().status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        31,
        "{statuses:?}"
    );
    let v: Value = common::get_with(&c, files(&s, "hot.md"), &key)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["version"], 2);
}

#[tokio::test]
async fn bad_settings_stop_start_up_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    for (env, expect) in [
        (("WORKSPACE_MAX_FILES", "lots"), "WORKSPACE_MAX_FILES"),
        (("WORKSPACE_MAX_VERSIONS", "0"), "maxVersions"),
        (("WORKSPACE_ADDR", "not-an-address"), "WORKSPACE_ADDR"),
        (
            ("WORKSPACE_REDACT_STRUCTURAL", "maybe"),
            "WORKSPACE_REDACT_STRUCTURAL",
        ),
        (
            ("WORKSPACE_API_KEYS", "topsecretvalue123456"),
            "WORKSPACE_API_KEYS",
        ),
        (
            ("WORKSPACE_API_KEYS", "topsecretvalue123456=ac#me"),
            "WORKSPACE_API_KEYS",
        ),
    ] {
        let (status, _, stderr) = run_to_exit(dir.path(), &[env]);
        assert_eq!(status.code(), Some(1), "{env:?}: {stderr}");
        assert!(stderr.contains(expect), "{env:?}: {stderr}");
        assert!(
            !stderr.contains("topsecretvalue"),
            "a key is never echoed: {stderr}"
        );
    }
}

#[tokio::test]
async fn structural_redaction_is_on_by_default_and_can_be_switched_off() {
    let secret = "AKIAIOSFODNN7EXAMPLE";
    for (setting, redacted) in [(None, true), (Some("false"), false)] {
        let dir = tempfile::tempdir().unwrap();
        let env: Vec<(&str, &str)> = setting
            .map(|v| ("WORKSPACE_REDACT_STRUCTURAL", v))
            .into_iter()
            .collect();
        let s = Server::start(dir.path(), &env).await;
        let key = s.generated_key();
        let v: Value = Client::new()
            .put(files(&s, "k.md"))
            .bearer_auth(&key)
            .json(&json!({ "content": format!("key {secret}") }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let content = v["content"].as_str().unwrap();
        assert_eq!(
            !content.contains(secret),
            redacted,
            "{setting:?}: {content}"
        );
    }
}

#[tokio::test]
async fn keys_can_be_managed_in_the_dynamodb_table_too() {
    use workspace_core::keys::{key_digest, KeyStore};
    let env = workspace_store_aws::testing::fresh(None).await;
    let dir = tempfile::tempdir().unwrap();
    let aws = [
        ("WORKSPACE_TABLE", env.table.as_str()),
        (
            "AWS_ENDPOINT_URL",
            &workspace_store_aws::testing::moto_url(),
        ),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
    ]
    .map(|(k, v)| (k, v.to_owned()));
    let env_refs: Vec<(&str, &str)> = aws.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, out, err) = common::run_args(
        dir.path(),
        &env_refs,
        &["keys", "create", "--tenant", "acme", "--workspace", "main"],
    );
    assert!(status.success(), "{err}");
    let key = out.lines().next().unwrap().to_owned();
    assert!(
        out.contains(&format!("DynamoDB table {}", env.table)),
        "{out}"
    );
    let store =
        workspace_store_aws::keys_table::DynamoKeys::new(env.clients.dynamodb.clone(), &env.table);
    let stored = store
        .key_by_digest(&key_digest(&key))
        .await
        .unwrap()
        .expect("stored by digest");
    assert_eq!(
        (stored.tenant.as_str(), stored.workspace.as_deref()),
        ("acme", Some("main"))
    );

    let (_, listed, _) = common::run_args(dir.path(), &env_refs, &["keys", "list"]);
    assert!(
        listed.contains(&stored.id) && !listed.contains(&key),
        "{listed}"
    );
    let (status, _, err) = common::run_args(dir.path(), &env_refs, &["keys", "revoke", &stored.id]);
    assert!(status.success(), "{err}");
    let revoked = store
        .key_by_digest(&key_digest(&key))
        .await
        .unwrap()
        .unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(
        !dir.path().join("keys.json").exists(),
        "nothing went to the local file"
    );
}

#[test]
fn keys_output_into_a_closed_pipe_is_not_a_panic() {
    // `keys create | head -n 1` closes the pipe after the key; here the reader is gone
    // before the first write, so every write fails (deterministically).
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_workspace-local"))
        .args(["keys", "create", "--tenant", "acme", "--workspace", "main"])
        .env("WORKSPACE_DATA_DIR", dir.path())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The data directory holds every tenant's content, keys and secrets: the server creates it
/// owner-only (0700) and every file in it 0600.
#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_and_its_files_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let mut s = Server::start(&dir, &[]).await;
    let key = s.generated_key();
    let c = Client::new();
    let r = common::put_content(&c, files(&s, "a.md"), &key, "x").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(s.terminate().success());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    let mut seen = Vec::new();
    // Directories (the search indexes') 0700, every file 0600, all the way down.
    let mut dirs = vec![dir.clone()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                assert_eq!(mode(&path), 0o700, "{}", path.display());
                dirs.push(path.clone());
            } else {
                assert_eq!(mode(&path), 0o600, "{}", path.display());
            }
            seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    seen.sort();
    assert!(
        seen.iter().any(|s| s.ends_with(".sqlite")),
        "the search index is there too: {seen:?}"
    );
    for expected in [
        "workspace.redb",
        "presign.key",
        "session-token.key",
        "search",
        "staging",
    ] {
        assert!(seen.iter().any(|s| s == expected), "{expected} in {seen:?}");
    }
}

/// The head decides before the body is read: a request without a valid key is 401, and a
/// declared Content-Length over the limit is 413, while the client has sent no body byte.
#[tokio::test]
async fn credentials_and_declared_lengths_are_checked_before_the_body_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    let addr = s.base.trim_start_matches("http://").to_owned();
    let head_only = |auth: &str, length: u64| {
        let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        write!(tcp, "PUT /v1/host/workspace/files/big.md HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").unwrap();
        let mut buf = [0u8; 512];
        let n = tcp.read(&mut buf).expect("an answer before any body byte");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let small = 1000;
    for auth in [
        String::new(),
        "Authorization: Bearer wsk_not_a_key\r\n".to_owned(),
    ] {
        let raw = head_only(&auth, small);
        assert!(raw.starts_with("HTTP/1.1 401"), "{raw}");
        assert!(raw.contains("unauthenticated"), "{raw}");
    }
    let raw = head_only(
        &format!("Authorization: Bearer {key}\r\n"),
        64 * 1024 * 1024,
    );
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("workspace_too_large"), "{raw}");
}

/// Slow, silent and surplus connections cannot hold the server: a connection that sends no
/// request, or only part of one, is closed after WORKSPACE_CONNECTION_TIMEOUT_SECONDS; a
/// body that does not arrive in time is 408; past WORKSPACE_MAX_CONNECTIONS a connection is
/// answered 503 with the envelope at once; and once the slow ones are gone, /health answers.
#[tokio::test]
async fn slow_silent_and_surplus_connections_are_bounded() {
    use std::net::TcpStream;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_CONNECTION_TIMEOUT_SECONDS", "1"),
            ("WORKSPACE_MAX_CONNECTIONS", "4"),
        ],
    )
    .await;
    let key = s.generated_key();
    let addr = s.base.trim_start_matches("http://").to_owned();
    let connect = || {
        let tcp = TcpStream::connect(&addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp
    };
    // Everything the server sends until it closes, and how long that took.
    let until_closed = |mut tcp: TcpStream| {
        let started = Instant::now();
        let mut out = Vec::new();
        let _ = tcp.read_to_end(&mut out);
        (
            String::from_utf8_lossy(&out).into_owned(),
            started.elapsed(),
        )
    };

    let (said, took) = until_closed(connect());
    assert!(
        took < Duration::from_secs(5),
        "a silent connection held for {took:?}"
    );
    assert!(
        said.is_empty() || said.starts_with("HTTP/1.1 408"),
        "{said}"
    );
    let mut partial = connect();
    write!(partial, "GET /health HTTP/1.1\r\nHost: x\r\n").unwrap();
    let (_, took) = until_closed(partial);
    assert!(
        took < Duration::from_secs(5),
        "a partial head held for {took:?}"
    );
    let mut no_body = connect();
    write!(no_body, "PUT /v1/host/workspace/files/slow.md HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n").unwrap();
    let (said, took) = until_closed(no_body);
    assert!(
        took < Duration::from_secs(5),
        "a missing body held for {took:?}"
    );
    assert!(said.starts_with("HTTP/1.1 408"), "{said}");
    assert!(said.contains("request_timeout"), "{said}");

    // The cap, on a server whose timeout cannot free a slot during the check: four silent
    // connections fill it, a fifth is refused at once in the envelope, and once they go,
    // it answers again.
    let dir = tempfile::tempdir().unwrap();
    let capped = Server::start(dir.path(), &[("WORKSPACE_MAX_CONNECTIONS", "4")]).await;
    let addr = capped.base.trim_start_matches("http://").to_owned();
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut fifth = TcpStream::connect(&addr).unwrap();
    fifth
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(fifth, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (said, _) = until_closed(fifth);
    assert!(said.starts_with("HTTP/1.1 503"), "{said}");
    assert!(said.contains(r#""error":"unavailable""#), "{said}");
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match reqwest::get(capped.url("/health")).await {
            Ok(r) if r.status() == StatusCode::OK => break,
            other => assert!(Instant::now() < deadline, "never answered again: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Everything the server answers on one raw connection until it closes.
fn raw_exchange(addr: &str, bytes: &[u8]) -> String {
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    tcp.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Request heads that hyper would refuse with a bare status, or read wrongly (a fragment is
/// dropped by `http::Uri`, so `PUT report.md#draft` wrote `report.md`), are refused in the
/// error envelope and change nothing; well-formed requests before them on the same
/// connection (a sized body, a chunked one with trailers) are answered first, in order.
#[tokio::test]
async fn malformed_request_heads_are_refused_in_the_envelope_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]).await;
    let key = s.generated_key();
    let addr = s.base.trim_start_matches("http://").to_owned();
    let c = Client::new();
    let r = common::put_content(&c, files(&s, "report.md"), &key, "original").await;
    assert!(r.status().is_success(), "{}", r.status());
    let auth = format!("Host: x\r\nAuthorization: Bearer {key}\r\n");
    let body = r#"{"content":"overwritten"}"#;
    let sized = |method: &str, target: &str| {
        format!(
            "{method} {target} HTTP/1.1\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };

    let hostile: Vec<(&str, String, u16, &str)> = vec![
        (
            "a fragment on a PUT",
            sized("PUT", "/v1/host/workspace/files/report.md#draft-2"),
            400,
            "fragment",
        ),
        (
            "a fragment on a DELETE",
            format!("DELETE /v1/host/workspace/files/report.md#old HTTP/1.1\r\n{auth}\r\n"),
            400,
            "fragment",
        ),
        (
            "a bad request line",
            format!("PUT  /v1/host/workspace/files/report.md HTTP/1.1 extra\r\n{auth}\r\n"),
            400,
            "malformed",
        ),
        (
            "raw bytes in the path",
            format!("PUT /v1/host/workspace/files/re\u{1}port.md HTTP/1.1\r\n{auth}\r\n"),
            400,
            "validation_error",
        ),
        (
            "a Content-Length that is not a number",
            format!("PUT /v1/host/workspace/files/report.md HTTP/1.1\r\n{auth}Content-Length: 12abc\r\n\r\n{body}"),
            400,
            "Content-Length",
        ),
        (
            "two different Content-Lengths",
            format!("PUT /v1/host/workspace/files/report.md HTTP/1.1\r\n{auth}Content-Length: 3\r\nContent-Length: 25\r\n\r\n{body}"),
            400,
            "Content-Length",
        ),
        (
            "oversized header fields",
            format!("GET /v1/host/workspace/files/report.md HTTP/1.1\r\n{auth}X-Big: {}\r\n\r\n", "a".repeat(70 * 1024)),
            431,
            "headers_too_large",
        ),
        (
            "too many header fields",
            format!("GET /v1/host/workspace/files/report.md HTTP/1.1\r\n{auth}{}\r\n", "X-A: b\r\n".repeat(200)),
            431,
            "headers_too_large",
        ),
    ];
    for (what, request, status, says) in &hostile {
        let said = raw_exchange(&addr, request.as_bytes());
        assert!(
            said.starts_with(&format!("HTTP/1.1 {status}")),
            "{what}: {said}"
        );
        let envelope: Value = serde_json::from_str(said.split("\r\n\r\n").nth(1).unwrap_or(""))
            .unwrap_or_else(|e| panic!("{what}: no envelope ({e}): {said}"));
        assert!(
            envelope["error"].is_string() && envelope["message"].is_string(),
            "{what}: {said}"
        );
        assert!(said.contains(says), "{what}: {said}");
    }

    // Keep-alive and pipelining: a sized PUT, a chunked PUT with a trailer, a GET, then a
    // fragment: three answers in order, then the refusal, then the connection closes.
    let chunked = format!(
        "PUT /v1/host/workspace/files/chunked.md HTTP/1.1\r\n{auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{{\"con\r\n{:x}\r\n{}\r\n0\r\nX-Trailer: t\r\n\r\n",
        body.len() - 5,
        &body[5..]
    );
    let pipelined = format!(
        "{}{chunked}GET /v1/host/workspace/files/chunked.md HTTP/1.1\r\n{auth}\r\n{}",
        sized("PUT", "/v1/host/workspace/files/sized.md"),
        sized("PUT", "/v1/host/workspace/files/report.md#draft-3"),
    );
    let said = raw_exchange(&addr, pipelined.as_bytes());
    let statuses: Vec<&str> = said
        .split("HTTP/1.1 ")
        .skip(1)
        .map(|answer| &answer[..3])
        .collect();
    assert_eq!(statuses, ["200", "200", "200", "400"], "{said}");
    assert!(said.contains("fragment"), "{said}");

    for (path, content) in [
        ("report.md", "original"),
        ("sized.md", "overwritten"),
        ("chunked.md", "overwritten"),
    ] {
        let r = common::get_with(&c, files(&s, path), &key).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        let got: Value = r.json().await.unwrap();
        assert_eq!(got["content"], content, "{path}");
    }
}

/// Bodies held in memory at once are bounded across connections: one that would pass
/// WORKSPACE_MAX_BUFFERED_BODY_BYTES is answered 503 from its head, and the room comes back
/// once the body holding it is answered.
#[tokio::test]
async fn bodies_held_at_once_are_bounded_across_connections() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &[("WORKSPACE_MAX_BUFFERED_BODY_BYTES", "65536")],
    )
    .await;
    let key = s.generated_key();
    let addr = s.base.trim_start_matches("http://").to_owned();
    let content = "x".repeat(40 * 1024);
    let body = serde_json::to_vec(&json!({ "content": content })).unwrap();
    let head = |path: &str| {
        format!(
            "PUT /v1/host/workspace/files/{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    };
    // The first body is announced and held back: its 40 KiB are reserved.
    let mut first = std::net::TcpStream::connect(&addr).unwrap();
    first
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    first.write_all(head("first.md").as_bytes()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut second = head("second.md").into_bytes();
    second.extend_from_slice(&body);
    let said = raw_exchange(&addr, &second);
    assert!(said.starts_with("HTTP/1.1 503"), "{said}");
    assert!(said.contains("WORKSPACE_MAX_BUFFERED_BODY_BYTES"), "{said}");
    // The first body arrives and is answered; the room is back.
    first.write_all(&body).unwrap();
    let mut answer = [0u8; 64];
    let n = first.read(&mut answer).unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );
    let said = raw_exchange(&addr, &second);
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");
    let c = Client::new();
    let r = common::get_with(&c, files(&s, "second.md"), &key).await;
    assert_eq!(r.status(), StatusCode::OK);
}
