//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned with the
//! Node 22 it needs in `tests/mcp_conformance/package-lock.json`, installed here with
//! `npm ci` when missing or out of date) against the real `workspace-local` over Streamable
//! HTTP: every server scenario, pending ones included, and the run fails on any scenario
//! that fails and is not listed in `tests/mcp_conformance/baseline.yml`, or that is listed
//! and passes. The suite's client cannot send a credential, so it talks to a loopback proxy
//! of this test's own that adds the key and passes everything else through as it comes.

mod common;

use bytes::Bytes;
use common::Server;
use http::header::{HeaderValue, AUTHORIZATION};
use http::{Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

const KEY: &str = "key-acme-main-0123456789";
/// The whole suite takes about a second; this bounds a hung scenario.
const SUITE_TIMEOUT: Duration = Duration::from_secs(120);

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_conformance")
}

/// `npm ci` in tests/mcp_conformance unless what is installed came from this lock file;
/// returns `node_modules/.bin`, which holds `conformance` and Node 22's `node`.
fn install_suite() -> PathBuf {
    let dir = suite_dir();
    let bin = dir.join("node_modules/.bin");
    let lock = std::fs::read(dir.join("package-lock.json"))
        .expect("tests/mcp_conformance/package-lock.json");
    let stamp = dir.join("node_modules/.installed-package-lock.json");
    let installed = bin.join("conformance").exists()
        && bin.join("node").exists()
        && std::fs::read(&stamp).is_ok_and(|s| s == lock);
    if !installed {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "npm is needed to install the MCP conformance suite (tests/mcp_conformance, \
                     `npm ci`): {e}. Install Node.js with npm (Node 20 is enough: the suite's \
                     Node 22 comes from the npm package `node`)"
                )
            });
        assert!(
            out.status.success(),
            "`npm ci` in tests/mcp_conformance failed (network? registry?):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&stamp, &lock).expect("write the install stamp");
    }
    let version = Command::new(bin.join("node"))
        .arg("--version")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; delete tests/mcp_conformance/node_modules and run again",
                bin.join("node").display()
            )
        });
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    assert!(
        version.starts_with("v22."),
        "tests/mcp_conformance/node_modules/.bin/node is {version:?}, not Node 22: delete \
         tests/mcp_conformance/node_modules and run again (`npm ci` must run the `node` \
         package's install script, which fetches the binary)"
    );
    bin
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// The suite's client has no way to send a credential (no header option, no token), and
/// `/mcp` answers 401 without one. This proxy adds `Authorization: Bearer <key>` and
/// forwards everything else unchanged: method, path, body, and every header, `Host` and
/// `Origin` included (the DNS-rebinding scenario sets both), over a fresh connection per
/// request; the answer's head passes unchanged and its body frame by frame as the server
/// sends it (server-sent event streams are never buffered).
fn start_proxy(
    listener: TcpListener,
    upstream: SocketAddr,
    key: &str,
) -> tokio::task::JoinHandle<()> {
    let auth = HeaderValue::from_str(&format!("Bearer {key}")).expect("a header value");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let auth = auth.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req| forward(req, upstream, auth.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

async fn forward(
    mut req: Request<Incoming>,
    upstream: SocketAddr,
    auth: HeaderValue,
) -> Result<Response<ProxyBody>, Infallible> {
    req.headers_mut().insert(AUTHORIZATION, auth);
    let sent = async {
        let stream = TcpStream::connect(upstream)
            .await
            .map_err(|e| e.to_string())?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await.map_err(|e| e.to_string())
    };
    Ok(match sent.await {
        Ok(resp) => resp.map(BodyExt::boxed),
        Err(e) => {
            let mut resp = Response::new(
                Full::new(Bytes::from(format!("proxy: upstream failed: {e}")))
                    .map_err(|never| match never {})
                    .boxed(),
            );
            *resp.status_mut() = StatusCode::BAD_GATEWAY;
            resp
        }
    })
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The checks of every scenario that did not pass (a FAILURE or a WARNING fails it), from
/// the `checks.json` each scenario writes: the suite's summary shows neither.
fn failed_checks(results: &Path) -> String {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    dirs.sort();
    let mut out = String::new();
    for dir in dirs {
        let Ok(text) = std::fs::read_to_string(dir.join("checks.json")) else {
            continue;
        };
        let checks: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
        let bad: Vec<_> = checks
            .iter()
            .filter(|c| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
            .collect();
        if bad.is_empty() {
            continue;
        }
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        out.push_str(&format!("{name}\n"));
        for c in bad {
            out.push_str(&format!(
                "  {} {}: {}\n",
                c["status"].as_str().unwrap_or("?"),
                c["id"].as_str().unwrap_or("?"),
                c["errorMessage"]
                    .as_str()
                    .or(c["details"]["message"].as_str())
                    .unwrap_or_else(|| c["description"].as_str().unwrap_or(""))
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn official_mcp_conformance_suite() {
    let bin = tokio::task::spawn_blocking(install_suite)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    // The proxy's port must be known before the server starts: it is the browser origin
    // the server allows (the suite sends `Origin: http://<the URL's host>`).
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    let origin = format!("http://127.0.0.1:{proxy_port}");
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &format!("{KEY}=acme/main")),
            ("WORKSPACE_MCP_ALLOWED_ORIGINS", &origin),
        ],
    )
    .await;
    let upstream: SocketAddr = server
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("the server's address");
    let proxy = start_proxy(listener, upstream, KEY);

    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("results");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let run = tokio::process::Command::new(bin.join("conformance"))
        .args([
            "server",
            "--url",
            &format!("{origin}/mcp"),
            "--suite",
            "all",
        ])
        .arg("--expected-failures")
        .arg(suite_dir().join("baseline.yml"))
        .arg("--output-dir")
        .arg(&results)
        .current_dir(work.path())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(SUITE_TIMEOUT, run).await;
    proxy.abort();
    let out = match out {
        Ok(out) => out.expect("run the conformance suite"),
        Err(_) => panic!(
            "the conformance suite did not finish within {SUITE_TIMEOUT:?}; failed checks so far:\n{}\nserver log:\n{}\n{}",
            failed_checks(&results),
            server.stdout_text(),
            server.stderr_text()
        ),
    };
    let stdout = strip_ansi(&String::from_utf8_lossy(&out.stdout));
    let stderr = strip_ansi(&String::from_utf8_lossy(&out.stderr));
    let not_passing = failed_checks(&results);
    println!(
        "{stdout}\n{stderr}\nnot passing:\n{not_passing}\n(the suite ran in {:.1?})",
        started.elapsed()
    );
    // The suite's summary (from `=== SUMMARY ===`) and its baseline verdict; the whole
    // output is the test's captured stdout.
    let summary = stdout
        .find("=== SUMMARY ===")
        .map_or(&stdout[..], |i| &stdout[i..]);
    assert!(
        out.status.success(),
        "the MCP conformance suite failed against its baseline \
         (tests/mcp_conformance/baseline.yml): an unexpected failure, or a listed scenario that \
         now passes (remove it from the baseline and from docs/mcp.md)\n{summary}\n{stderr}\n\
         checks of the scenarios that did not pass:\n{not_passing}"
    );
}

/// The proxy itself: the key added, `Host`, `Origin` and the session headers passed as
/// sent, the answer's head unchanged, and a server-sent event stream passed on event by
/// event (the second event is only sent once the first has arrived through the proxy).
#[tokio::test]
async fn the_proxy_adds_the_key_and_passes_the_rest_through() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = upstream.local_addr().unwrap();
    let (first_seen, first_arrived) = tokio::sync::oneshot::channel::<()>();
    let fake = tokio::spawn(async move {
        let (mut conn, _) = upstream.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = conn.read(&mut buf).await.unwrap();
            assert!(n > 0, "the proxy closed before a whole head");
            head.extend_from_slice(&buf[..n]);
        }
        conn.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s-1\r\n\
              transfer-encoding: chunked\r\n\r\n11\r\nid: 1\ndata: one\n\n\r\n",
        )
        .await
        .unwrap();
        first_arrived
            .await
            .expect("the first event arrives before the second is sent");
        conn.write_all(b"11\r\nid: 2\ndata: two\n\n\r\n0\r\n\r\n")
            .await
            .unwrap();
        String::from_utf8_lossy(&head).to_lowercase()
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_addr = listener.local_addr().unwrap();
    let proxy = start_proxy(listener, upstream_addr, KEY);

    let mut resp = reqwest::Client::new()
        .get(format!("http://{proxy_addr}/mcp?x=1"))
        .header("host", "evil.example.com")
        .header("origin", "http://evil.example.com")
        .header("mcp-session-id", "s-1")
        .header("last-event-id", "7")
        .header("mcp-protocol-version", "2025-11-25")
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(resp.headers()["mcp-session-id"], "s-1");
    let first = resp.chunk().await.unwrap().expect("the first event");
    assert_eq!(&first[..], b"id: 1\ndata: one\n\n");
    first_seen.send(()).unwrap();
    let second = resp.chunk().await.unwrap().expect("the second event");
    assert_eq!(&second[..], b"id: 2\ndata: two\n\n");
    assert!(resp.chunk().await.unwrap().is_none());
    let head = fake.await.unwrap();
    proxy.abort();
    for line in [
        "get /mcp?x=1 http/1.1\r\n",
        &format!("authorization: bearer {}\r\n", KEY.to_lowercase()),
        "host: evil.example.com\r\n",
        "origin: http://evil.example.com\r\n",
        "mcp-session-id: s-1\r\n",
        "last-event-id: 7\r\n",
        "mcp-protocol-version: 2025-11-25\r\n",
        "accept: text/event-stream\r\n",
    ] {
        assert!(
            head.contains(line),
            "{line:?} not in the forwarded head:\n{head}"
        );
    }
}
