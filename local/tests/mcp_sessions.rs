//! MCP's Streamable HTTP transport on the local server as a client and a browser meet it:
//! `Origin` checked before anything else, sessions (`Mcp-Session-Id`) owned by their
//! credential, the `GET /mcp` stream carrying `notifications/resources/updated` for a
//! subscribed file written through the HTTP file API, once and within a second, a resumed
//! stream missing nothing, and the bounds on sessions, subscriptions and idle time.

mod common;

use common::Server;
use reqwest::{Client, Response, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const KEY: &str = "mcp-key-acme-0123456789";
const OTHER: &str = "mcp-key-acme-other-0123456789";

fn keys() -> String {
    // Two credentials of the same workspace: a session is its maker's alone.
    format!("{KEY}=acme/main,{OTHER}=acme/main")
}

async fn post(s: &Server, key: Option<&str>, session: Option<&str>, body: Value) -> Response {
    let mut req = Client::new()
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(id) = session {
        req = req.header("mcp-session-id", id);
    }
    req.send().await.unwrap()
}

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize() -> Value {
    rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "sessions-test", "version": "1"}}),
    )
}

/// A new session of `key`: its id.
async fn open_session(s: &Server, key: &str) -> String {
    let r = post(s, Some(key), None, initialize()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["result"]["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true}),
        "{v}"
    );
    id
}

async fn call(s: &Server, key: &str, session: &str, method: &str, params: Value) -> Value {
    let r = post(s, Some(key), Some(session), rpc(2, method, params)).await;
    assert_eq!(r.status(), StatusCode::OK, "{method}");
    r.json().await.unwrap()
}

async fn put(s: &Server, path: &str, content: &str) {
    let url = s.url(&format!("/v1/host/workspace/files/{path}"));
    let r = common::put_content(&Client::new(), url, KEY, content).await;
    assert!(r.status().is_success(), "{}", r.status());
}

/// A session's notification stream, read event by event.
struct Stream {
    resp: Response,
    buf: String,
}

impl Stream {
    async fn open(s: &Server, key: &str, session: &str, last_id: Option<&str>) -> Stream {
        let mut req = Client::new()
            .get(s.url("/mcp"))
            .bearer_auth(key)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session);
        if let Some(id) = last_id {
            req = req.header("last-event-id", id);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let mut stream = Stream {
            resp,
            buf: String::new(),
        };
        // The priming event comes first: an id to resume from, no data.
        let (id, data) = stream.next(Duration::from_secs(5)).await.expect("priming");
        assert!(!id.is_empty() && data.is_none(), "{id} {data:?}");
        stream
    }

    /// The next event (its id and JSON data, `None` for the priming event's empty data);
    /// `None` if none comes within `wait` or the stream ends.
    async fn next(&mut self, wait: Duration) -> Option<(String, Option<Value>)> {
        let deadline = Instant::now() + wait;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut id = None;
                let mut data = None;
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        let v = v.trim();
                        if !v.is_empty() {
                            data = Some(serde_json::from_str::<Value>(v).expect("data is JSON"));
                        }
                    }
                }
                if let Some(id) = id {
                    return Some((id, data));
                }
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match tokio::time::timeout(left, self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }

    /// Every notification until none comes for `quiet`: (id, method, uri).
    async fn drain(&mut self, quiet: Duration) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        while let Some((id, data)) = self.next(quiet).await {
            let data = data.expect("a notification");
            out.push((
                id,
                data["method"].as_str().unwrap().to_owned(),
                data["params"]["uri"].as_str().unwrap_or("").to_owned(),
            ));
        }
        out
    }
}

#[tokio::test]
async fn origin_is_checked_before_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &keys()),
            ("WORKSPACE_MCP_ALLOWED_ORIGINS", "https://app.example.test"),
        ],
    )
    .await;
    let ping = rpc(1, "ping", json!({}));
    let with_origin = |origin: &str, key: Option<&str>| {
        let mut req = Client::new()
            .post(s.url("/mcp"))
            .header("origin", origin)
            .json(&ping);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req
    };
    // No Origin (every non-browser client): served.
    assert_eq!(post(&s, Some(KEY), None, ping.clone()).await.status(), 200);
    // The configured origin, and the server's own (its console's): served.
    for allowed in ["https://app.example.test", &s.base] {
        let r = with_origin(allowed, Some(KEY)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{allowed}");
    }
    // A foreign one: 403 before the credential is even looked at, on every MCP route.
    for key in [Some(KEY), None, Some("not-a-key")] {
        let r = with_origin("http://evil.example.com", key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{key:?}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "origin_forbidden", "{v}");
    }
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = Client::new()
            .request(method.clone(), s.url("/mcp"))
            .bearer_auth(KEY)
            .header("origin", "http://127.0.0.1.evil.example.com")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{method}");
    }
    // A DNS-rebound name on the server's own port is another origin.
    let rebound = s.base.replace("127.0.0.1", "localhost");
    let r = with_origin(&rebound, Some(KEY)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "{rebound}");
    // The file routes keep their own rules: a bearer key, no cookies.
    let r = Client::new()
        .get(s.url("/v1/host/workspace/files"))
        .bearer_auth(KEY)
        .header("origin", "http://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_subscribed_file_written_over_http_is_notified_once_and_a_resumed_stream_misses_nothing()
{
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[("WORKSPACE_API_KEYS", &keys())]).await;
    let session = open_session(&s, KEY).await;
    // Another credential cannot use it, stream it or end it: as if it did not exist.
    let r = post(&s, Some(OTHER), Some(&session), rpc(2, "ping", json!({}))).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = Client::new()
        .delete(s.url("/mcp"))
        .bearer_auth(OTHER)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    let v = call(
        &s,
        KEY,
        &session,
        "resources/subscribe",
        json!({"uri": "workspace:///notes/a.md"}),
    )
    .await;
    assert_eq!(v["result"], json!({}), "{v}");
    let mut stream = Stream::open(&s, KEY, &session, None).await;
    let started = Instant::now();
    put(&s, "notes/a.md", "one").await;
    put(&s, "notes/other.md", "not subscribed").await;
    let (first_id, data) = stream
        .next(Duration::from_secs(1) - started.elapsed().min(Duration::from_millis(900)))
        .await
        .expect("notified within a second of the write");
    let data = data.unwrap();
    assert_eq!(data["method"], "notifications/resources/updated", "{data}");
    assert_eq!(data["params"]["uri"], "workspace:///notes/a.md");
    // Once: nothing else (the other file is not subscribed; no list was read, so no
    // list_changed).
    assert_eq!(stream.drain(Duration::from_millis(500)).await, vec![]);

    // The client goes away; two changes happen; it comes back with Last-Event-ID.
    drop(stream);
    put(&s, "notes/a.md", "two").await;
    put(&s, "notes/a.md", "three").await;
    let mut resumed = Stream::open(&s, KEY, &session, Some(&first_id)).await;
    let got = resumed.drain(Duration::from_millis(700)).await;
    let uris: Vec<_> = got
        .iter()
        .map(|(_, m, u)| (m.as_str(), u.as_str()))
        .collect();
    assert_eq!(
        uris,
        [("notifications/resources/updated", "workspace:///notes/a.md"); 2],
        "{got:?}"
    );
    assert!(got.iter().all(|(id, _, _)| *id != first_id));

    // Listing the resources makes the client hear when the list changes.
    let listed = call(&s, KEY, &session, "resources/list", json!({})).await;
    assert_eq!(listed["result"]["resources"].as_array().unwrap().len(), 2);
    put(&s, "notes/new.md", "created").await;
    let got = resumed.drain(Duration::from_millis(700)).await;
    let methods: Vec<_> = got.iter().map(|(_, m, _)| m.as_str()).collect();
    assert_eq!(methods, ["notifications/resources/list_changed"], "{got:?}");

    // Unsubscribed: silence.
    call(
        &s,
        KEY,
        &session,
        "resources/unsubscribe",
        json!({"uri": "workspace:///notes/a.md"}),
    )
    .await;
    put(&s, "notes/a.md", "four").await;
    assert_eq!(resumed.drain(Duration::from_millis(500)).await, vec![]);

    // DELETE ends the session: its stream ends, and the id is unknown from then on.
    let r = Client::new()
        .delete(s.url("/mcp"))
        .bearer_auth(KEY)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    put(&s, "notes/b.md", "after the end").await;
    assert!(resumed.next(Duration::from_secs(2)).await.is_none());
    let r = post(&s, Some(KEY), Some(&session), rpc(3, "ping", json!({}))).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn sessions_subscriptions_and_idle_time_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &keys()),
            ("WORKSPACE_MCP_MAX_SESSIONS", "2"),
            ("WORKSPACE_MCP_SESSION_IDLE_SECONDS", "2"),
        ],
    )
    .await;
    // Past the cap, the least recently used session without a stream ends.
    let first = open_session(&s, KEY).await;
    let second = open_session(&s, KEY).await;
    let _streaming = Stream::open(&s, KEY, &second, None).await;
    let third = open_session(&s, KEY).await;
    let gone = post(&s, Some(KEY), Some(&first), rpc(2, "ping", json!({}))).await;
    assert_eq!(
        gone.status(),
        StatusCode::NOT_FOUND,
        "the oldest idle one went"
    );
    // Every session streaming: no room, 503 with Retry-After.
    let _also = Stream::open(&s, KEY, &third, None).await;
    let r = post(&s, Some(KEY), None, initialize()).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));
    // Without a session, MCP is still served: every POST answered alone.
    let r = post(&s, Some(KEY), None, rpc(4, "resources/list", json!({}))).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert!(v["result"]["resources"].is_array(), "{v}");
    // ...but a subscription needs one.
    let r = post(
        &s,
        Some(KEY),
        None,
        rpc(
            5,
            "resources/subscribe",
            json!({"uri": "workspace:///a.md"}),
        ),
    )
    .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");

    // A hundred subscriptions per session; the next is refused, an old one again is not.
    for i in 0..100 {
        let v = call(
            &s,
            KEY,
            &second,
            "resources/subscribe",
            json!({"uri": format!("workspace:///f{i}.md")}),
        )
        .await;
        assert_eq!(v["result"], json!({}), "{i}: {v}");
    }
    let v = call(
        &s,
        KEY,
        &second,
        "resources/subscribe",
        json!({"uri": "workspace:///one-more.md"}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let v = call(
        &s,
        KEY,
        &second,
        "resources/subscribe",
        json!({"uri": "workspace:///f7.md"}),
    )
    .await;
    assert_eq!(v["result"], json!({}), "{v}");

    // Idle time: a session without requests or a stream ends after it.
    drop(_streaming);
    drop(_also);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    for id in [&second, &third] {
        let r = post(&s, Some(KEY), Some(id), rpc(6, "ping", json!({}))).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{id} expired");
    }
    // GET and DELETE without a session: no stream offered here (405).
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = Client::new()
            .request(method.clone(), s.url("/mcp"))
            .bearer_auth(KEY)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
}
