//! Two-step uploads on the local server as a client meets them: a real process, real HTTP,
//! the default limits, and URL expiry on the wall clock (the contract suite covers the same
//! rules on a manual clock, on every backend).

mod common;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::Server;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;
use workspace_core::model::sha256_hex;

const KEY: &str = "local-acme-main-key-0001";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![("WORKSPACE_API_KEYS", "local-acme-main-key-0001=acme/main")]
}

/// `n` bytes that are not UTF-8 text, every byte value among them.
fn binary(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from((i * 7 + i / 256) % 256).unwrap())
        .collect()
}

async fn start(c: &Client, s: &Server, path: &str, bytes: &[u8]) -> Value {
    let r = c
        .post(s.url("/v1/host/workspace/uploads"))
        .bearer_auth(KEY)
        .json(&json!({
            "path": path,
            "size": bytes.len(),
            "sha256": sha256_hex(bytes),
            "contentType": "application/octet-stream",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

/// The bytes to the ticket's URL with the headers it names, and no credential.
async fn send(c: &Client, ticket: &Value, bytes: Vec<u8>) -> reqwest::Response {
    let mut req = c.put(ticket["url"].as_str().unwrap()).body(bytes);
    for (k, v) in ticket["headers"].as_object().unwrap() {
        if k != "content-length" {
            req = req.header(k, v.as_str().unwrap());
        }
    }
    req.send().await.unwrap()
}

async fn commit(c: &Client, s: &Server, path: &str, ticket: &Value) -> reqwest::Response {
    c.put(s.url(&format!("/v1/host/workspace/files/{path}")))
        .bearer_auth(KEY)
        .json(&json!({ "uploadId": ticket["uploadId"] }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_file_larger_than_one_request_uploads_in_two_steps() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &env()).await;
    let c = Client::new();
    // 8 MiB: over the default maxFileBytes (1 MiB) and over Lambda's 6 MB payload cap.
    let bytes = binary(8 * 1024 * 1024);
    let inline = c
        .put(s.url("/v1/host/workspace/files/data/big.bin"))
        .bearer_auth(KEY)
        .json(&json!({"contentBase64": STANDARD.encode(&bytes)}))
        .send()
        .await;
    // Refused from its declared length, unread: the server answers 413, says it closes the
    // connection, and closes it, which a client still sending may see as a reset instead
    // (`credentials_and_declared_lengths_are_checked_before_the_body_is_read` reads the 413
    // itself, sending no body).
    if let Ok(inline) = inline {
        assert_eq!(inline.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(inline.headers()["connection"], "close");
    }

    let ticket = start(&c, &s, "data/big.bin", &bytes).await;
    let url = ticket["url"].as_str().unwrap();
    assert!(url.starts_with(&s.base), "{url} is served by this server");
    let sent = send(&c, &ticket, bytes.clone()).await;
    assert_eq!(sent.status(), StatusCode::OK, "{:?}", sent.text().await);

    let done = commit(&c, &s, "data/big.bin", &ticket).await;
    assert_eq!(done.status(), StatusCode::OK);
    let meta: Value = done.json().await.unwrap();
    assert_eq!(meta["version"], 1);
    assert_eq!(meta["size"], bytes.len());

    // A read of it answers a download URL this server serves (no credential needed).
    let got: Value = common::get_with(&c, s.url("/v1/host/workspace/files/data/big.bin"), KEY)
        .await
        .json()
        .await
        .unwrap();
    assert!(got.get("contentBase64").is_none(), "{got}");
    let url = got["download"]["url"].as_str().unwrap();
    assert!(url.starts_with(&s.base), "{url}");
    let r = c.get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/octet-stream"
    );
    let read = r.bytes().await.unwrap().to_vec();
    assert!(read == bytes, "the committed file is the uploaded bytes");
}

#[tokio::test]
async fn upload_urls_expire_on_the_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = env();
    env.push(("WORKSPACE_UPLOAD_URL_SECONDS", "1"));
    let s = Server::start(dir.path(), &env).await;
    let c = Client::new();
    let bytes = binary(4096);
    let ticket = start(&c, &s, "late.bin", &bytes).await;
    // Expiry is a whole second at most one second away; wait it out.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let sent = send(&c, &ticket, bytes.clone()).await;
    assert_eq!(sent.status(), StatusCode::FORBIDDEN);
    let v: Value = sent.json().await.unwrap();
    assert!(v["message"].as_str().unwrap().contains("expired"), "{v}");
    // Nothing arrived, so nothing commits.
    let done = commit(&c, &s, "late.bin", &ticket).await;
    assert_eq!(done.status(), StatusCode::BAD_REQUEST);
    let r = common::get_with(&c, s.url("/v1/host/workspace/files/late.bin"), KEY).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // A fresh upload, used in time, commits.
    let ticket = start(&c, &s, "late.bin", &bytes).await;
    assert_eq!(send(&c, &ticket, bytes).await.status(), StatusCode::OK);
    assert_eq!(
        commit(&c, &s, "late.bin", &ticket).await.status(),
        StatusCode::OK
    );
}

/// An upload URL is checked from the request head (signature, expiry, declared length)
/// before a byte of its body is read: a forged or altered URL, or a length other than the
/// signed one, is refused while the client has sent no body.
#[tokio::test]
async fn upload_urls_are_checked_before_the_body_is_read() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &env()).await;
    let c = Client::new();
    let bytes = binary(1000);
    let ticket = start(&c, &s, "data/head.bin", &bytes).await;
    let url = ticket["url"].as_str().unwrap().to_owned();
    let target = url.trim_start_matches(&s.base).to_owned();
    let addr = s.base.trim_start_matches("http://").to_owned();
    let head_only = |target: &str, length: usize| {
        let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(tcp, "PUT {target} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/octet-stream\r\nContent-Length: {length}\r\n\r\n").unwrap();
        let mut buf = [0u8; 512];
        let n = tcp.read(&mut buf).expect("an answer before any body byte");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let forged = "/v1/signed/upload/acme/main/up-0123?exp=9999999999&len=104857600&ct=application%2Foctet-stream&sig=00";
    for (target, length) in [
        (forged.to_owned(), 100 * 1024 * 1024),
        (
            target.replace("len=1000", "len=104857600"),
            100 * 1024 * 1024,
        ),
        (target.clone(), 100 * 1024 * 1024),
        (target.clone(), 999),
    ] {
        let raw = head_only(&target, length);
        assert!(raw.starts_with("HTTP/1.1 403"), "{target} {length}: {raw}");
    }
    // The real URL with its signed length still works.
    let r = send(&c, &ticket, bytes).await;
    assert_eq!(r.status(), StatusCode::OK, "{:?}", r.text().await);
}
