//! `workspace.updated` on the local server, as a subscriber meets it: the server-sent
//! event stream (live, resumed, expired), the outbox across a SIGKILL, and webhooks that
//! fail and come back. Every event is held to `schemas/workspace-updated.schema.json`.

mod common;

use common::Server;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};
use workspace_contract::event_schema::assert_valid;

const KEY_A: &str = "events-key-acme-0123456789";
const KEY_EVIL: &str = "events-key-evil-0123456789";

fn keys() -> String {
    format!("{KEY_A}=acme/main,{KEY_EVIL}=acme-evil/main")
}

fn files(s: &Server, path: &str) -> String {
    s.url(&format!("/v1/host/workspace/files/{path}"))
}

/// A server-sent event stream, read frame by frame.
struct Sse {
    resp: reqwest::Response,
    buf: String,
}

impl Sse {
    async fn open(s: &Server, key: &str, last_id: Option<u64>) -> Sse {
        let mut req = Client::new()
            .get(s.url("/v1/host/workspace/events"))
            .bearer_auth(key);
        if let Some(id) = last_id {
            req = req.header("last-event-id", id.to_string());
        }
        let resp = req.send().await.expect("the stream opens");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Sse {
            resp,
            buf: String::new(),
        }
    }

    /// The next event (id and envelope), skipping comments; `None` if none comes in `wait`.
    async fn next(&mut self, wait: Duration) -> Option<(u64, Value)> {
        let deadline = Instant::now() + wait;
        loop {
            while let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut id = None;
                let mut data = None;
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = v.parse().ok();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = Some(serde_json::from_str::<Value>(v).expect("data is JSON"));
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        assert_eq!(v, "workspace.updated", "{frame}");
                    }
                }
                if let (Some(id), Some(data)) = (id, data) {
                    assert_valid(&data);
                    return Some((id, data));
                }
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match tokio::time::timeout(left, self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(_) => return None, // the stream ended
                Err(_) => return None,
            }
        }
    }

    async fn expect(&mut self) -> (u64, Value) {
        self.next(Duration::from_secs(10))
            .await
            .expect("an event within 10 s")
    }
}

async fn put(s: &Server, key: &str, path: &str, content: &str) -> Value {
    let r = common::put_content(&Client::new(), files(s, path), key, content).await;
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

#[tokio::test]
async fn the_stream_carries_each_committed_change_once_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &keys),
            ("WORKSPACE_MAX_FILE_BYTES", "64"),
        ],
    )
    .await;
    let c = Client::new();
    let mut live = Sse::open(&s, KEY_A, None).await;

    let a = put(&s, KEY_A, "notes/a.md", "one").await;
    let (first, e) = live.expect().await;
    let d = &e["detail"];
    assert_eq!(
        (
            d["tenant"].as_str(),
            d["workspace"].as_str(),
            d["path"].as_str()
        ),
        (Some("acme"), Some("main"), Some("notes/a.md"))
    );
    assert_eq!(
        (d["operation"].as_str(), d["version"].as_u64()),
        (Some("put"), Some(1))
    );
    assert_eq!(
        (d["sequence"].as_u64(), d["size"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(d["etag"], a["etag"]);
    assert_eq!(d["contentType"], "text/markdown");
    assert_eq!(e["id"], d["eventId"]);
    assert!(!e.to_string().contains("\"one\""), "no content: {e}");

    // Refused writes (409, 413, 400) and another tenant's write announce nothing here: the
    // next event is the next accepted write of this workspace.
    let refused = [
        c.put(files(&s, "notes/a.md"))
            .bearer_auth(KEY_A)
            .header("if-match", "\"9-stale\"")
            .json(&json!({"content": "x"})),
        c.put(files(&s, "notes/big.md"))
            .bearer_auth(KEY_A)
            .json(&json!({"content": "x".repeat(100)})),
        c.put(files(&s, "notes/bad.md"))
            .bearer_auth(KEY_A)
            .body("{not json"),
        c.put(files(&s, "notes/bad%00.md"))
            .bearer_auth(KEY_A)
            .json(&json!({"content": "x"})),
    ];
    let mut statuses = Vec::new();
    for r in refused {
        statuses.push(r.send().await.unwrap().status().as_u16());
    }
    assert_eq!(statuses, [409, 413, 400, 400]);
    put(&s, KEY_EVIL, "notes/a.md", "theirs").await;
    put(&s, KEY_A, "notes/b.md", "two").await;
    let (_, e) = live.expect().await;
    assert_eq!(e["detail"]["path"], "notes/b.md", "{e}");
    let r = c
        .delete(files(&s, "notes/a.md"))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let (_, e) = live.expect().await;
    assert_eq!(
        (
            e["detail"]["operation"].as_str(),
            e["detail"]["sequence"].as_u64()
        ),
        (Some("delete"), Some(2))
    );
    assert!(live.next(Duration::from_millis(500)).await.is_none());

    // Resuming after the first event gives each later one once, in commit order.
    let mut resumed = Sse::open(&s, KEY_A, Some(first)).await;
    let (_, e1) = resumed.expect().await;
    let (_, e2) = resumed.expect().await;
    assert_eq!(e1["detail"]["path"], "notes/b.md");
    assert_eq!(e2["detail"]["operation"], "delete");
    assert!(resumed.next(Duration::from_millis(500)).await.is_none());
    // The other tenant's stream has only its own.
    let mut theirs = Sse::open(&s, KEY_EVIL, None).await;
    let (_, e) = theirs.expect().await;
    assert_eq!(e["detail"]["tenant"], "acme-evil");
    assert!(theirs.next(Duration::from_millis(300)).await.is_none());

    // A resume point that is not an id is 400.
    let r = c
        .get(s.url("/v1/host/workspace/events"))
        .bearer_auth(KEY_A)
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = c
        .get(s.url("/v1/host/workspace/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_resume_point_past_retention_is_410_not_silence() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let env = [
        ("WORKSPACE_API_KEYS", keys.as_str()),
        ("WORKSPACE_EVENT_RETENTION_SECONDS", "1"),
    ];
    let mut s = Server::start(dir.path(), &env).await;
    put(&s, KEY_A, "a.md", "one").await;
    put(&s, KEY_A, "b.md", "two").await;
    assert!(s.terminate().success());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Retention drops both at start.
    let s = Server::start(dir.path(), &env).await;
    let r = Client::new()
        .get(s.url("/v1/host/workspace/events"))
        .bearer_auth(KEY_A)
        .header("last-event-id", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::GONE);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "events_expired", "{body}");
    // From the start (no id) is fine: what is kept, then what comes.
    let mut live = Sse::open(&s, KEY_A, None).await;
    put(&s, KEY_A, "c.md", "three").await;
    let (id, e) = live.expect().await;
    assert_eq!((id, e["detail"]["path"].as_str()), (3, Some("c.md")));
}

/// SIGKILL during a stream of writes, then a restart: every acknowledged write has exactly
/// its event, and no event names a change that did not commit.
#[tokio::test]
async fn after_a_sigkill_every_acknowledged_write_has_exactly_its_event() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let env = [("WORKSPACE_API_KEYS", keys.as_str())];
    let mut s = Server::start(dir.path(), &env).await;
    let base = s.base.clone();
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (base, acked) = (base.clone(), acked.clone());
        writers.push(tokio::spawn(async move {
            let c = Client::new();
            for i in 0.. {
                let path = format!("p{}.md", (w + i) % 5);
                let r = c
                    .put(format!("{base}/v1/host/workspace/files/{path}"))
                    .bearer_auth(KEY_A)
                    .json(&json!({"content": format!("{w}-{i}")}))
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status().is_success() => {
                        let v: Value = match r.json().await {
                            Ok(v) => v,
                            Err(_) => return,
                        };
                        let etag = v["etag"].as_str().unwrap_or_default().to_owned();
                        acked.lock().unwrap().push((path, etag));
                    }
                    _ => return,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    s.kill9();
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 10,
        "only {} writes before the kill",
        acked.len()
    );

    let s = Server::start(dir.path(), &env).await;
    let mut all = Sse::open(&s, KEY_A, None).await;
    let mut events: Vec<Value> = Vec::new();
    while let Some((_, e)) = all.next(Duration::from_millis(700)).await {
        events.push(e["detail"].clone());
    }
    let mut by_etag: HashMap<String, usize> = HashMap::new();
    for e in &events {
        *by_etag
            .entry(e["etag"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for (path, etag) in &acked {
        assert_eq!(
            by_etag.get(etag),
            Some(&1),
            "acknowledged write of {path} ({etag}) has not exactly one event"
        );
    }
    // Per path: sequences 1..=n once each, the last one the file as it is now.
    let mut per_path: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for e in &events {
        per_path
            .entry(e["path"].as_str().unwrap().to_owned())
            .or_default()
            .push(e);
    }
    let c = Client::new();
    for (path, evs) in per_path {
        let seqs: Vec<u64> = evs
            .iter()
            .map(|e| e["sequence"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (1..=evs.len() as u64).collect::<Vec<_>>(), "{path}");
        let now: Value = common::get_with(&c, files(&s, &path), KEY_A)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(evs.last().unwrap()["etag"], now["etag"], "{path}");
    }
}

/// What a test receiver got: each POST's headers and body.
#[derive(Default)]
struct Received {
    attempts: usize,
    /// Answer 503 while this is above zero (counting down).
    fail_next: usize,
    /// Hold this many attempts without an answer (a receiver that hangs), counting down.
    hang_next: usize,
    delivered: Vec<(HashMap<String, String>, Vec<u8>)>,
}

async fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Received>>) {
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode as Sc};
    type Shared = std::sync::Arc<std::sync::Mutex<Received>>;
    async fn hook(State(r): State<Shared>, headers: HeaderMap, body: axum::body::Bytes) -> Sc {
        let hang = {
            let mut r = r.lock().unwrap();
            let hang = r.hang_next > 0;
            if hang {
                r.hang_next -= 1;
                r.attempts += 1;
            }
            hang
        };
        if hang {
            tokio::time::sleep(Duration::from_secs(120)).await;
            return Sc::SERVICE_UNAVAILABLE;
        }
        let mut r = r.lock().unwrap();
        r.attempts += 1;
        if r.fail_next > 0 {
            r.fail_next -= 1;
            return Sc::SERVICE_UNAVAILABLE;
        }
        let h = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        r.delivered.push((h, body.to_vec()));
        Sc::NO_CONTENT
    }
    let state: Shared = Default::default();
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

/// A webhook delivery's envelope, checked: valid, its event id in the header, and signed
/// with `secret` over `<t>.<body>`.
fn signed_envelope(headers: &HashMap<String, String>, body: &[u8], secret: &str) -> Value {
    let envelope: Value = serde_json::from_slice(body).unwrap();
    assert_valid(&envelope);
    assert_eq!(
        headers["x-workspace-event-id"],
        envelope["detail"]["eventId"]
    );
    let sig = &headers["x-workspace-signature"];
    let (t, v1) = sig
        .strip_prefix("t=")
        .and_then(|r| r.split_once(",v1="))
        .unwrap_or_else(|| panic!("signature header: {sig}"));
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    assert_eq!(v1, hmac_hex(secret, &signed), "signature");
    envelope
}

fn hmac_hex(secret: &str, message: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(message);
    hex::encode(mac.finalize().into_bytes())
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn webhooks_get_every_event_signed_in_order_through_failures_and_restarts() {
    let (url, got) = receiver().await;
    got.lock().unwrap().fail_next = 2;
    let secret = "webhook-secret-0123456789";
    let hooks =
        json!([{"url": url, "secret": secret, "tenant": "acme", "workspace": "main"}]).to_string();
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let env = [
        ("WORKSPACE_API_KEYS", keys.as_str()),
        ("WORKSPACE_WEBHOOKS", hooks.as_str()),
    ];
    let mut s = Server::start(dir.path(), &env).await;
    for p in ["a.md", "b.md", "c.md"] {
        put(&s, KEY_A, p, "x").await;
    }
    put(&s, KEY_EVIL, "theirs.md", "x").await; // another tenant: not this target's
    wait_for("three deliveries", || {
        got.lock().unwrap().delivered.len() >= 3
    })
    .await;

    // Down while two more commit: kept, and delivered after a restart.
    got.lock().unwrap().fail_next = usize::MAX;
    put(&s, KEY_A, "d.md", "x").await;
    put(&s, KEY_A, "e.md", "x").await;
    // Two failed attempts at d.md: the second (after a 1 s backoff) comes after e.md
    // committed, so the status it writes counts both.
    wait_for("two failed attempts", || got.lock().unwrap().attempts >= 7).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.terminate().success());
    let (status, out, err) = common::run_args(dir.path(), &env, &["webhooks", "status"]);
    assert!(status.success(), "{err}");
    assert!(out.contains("backlog 2"), "{out}");
    assert!(out.contains("answered 503"), "{out}");
    got.lock().unwrap().fail_next = 0;
    let _s = Server::start(dir.path(), &env).await;
    wait_for("five deliveries", || {
        got.lock().unwrap().delivered.len() >= 5
    })
    .await;

    let got = got.lock().unwrap();
    let mut paths = Vec::new();
    for (headers, body) in &got.delivered {
        let envelope = signed_envelope(headers, body, secret);
        paths.push(envelope["detail"]["path"].as_str().unwrap().to_owned());
    }
    paths.dedup(); // at least once: a redelivery repeats, never reorders
    assert_eq!(paths, ["a.md", "b.md", "c.md", "d.md", "e.md"]);
}

/// A fork's merge announces each change it makes in the parent like any write, and names
/// the merge and the fork; other changes name neither.
#[tokio::test]
async fn changes_a_merge_makes_name_the_merge_and_the_fork() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[("WORKSPACE_API_KEYS", &keys())]).await;
    let c = Client::new();
    let mut live = Sse::open(&s, KEY_A, None).await;
    put(&s, KEY_A, "notes/a.md", "one").await;
    let (_, e) = live.expect().await;
    assert!(e["detail"].get("mergeId").is_none() && e["detail"].get("forkId").is_none());

    let fork: Value = c
        .post(s.url("/v1/host/workspace/forks"))
        .bearer_auth(KEY_A)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let fork_ws = fork["workspaceId"]
        .as_str()
        .expect("workspaceId")
        .to_owned();
    let r = c
        .put(files(&s, "notes/b.md"))
        .bearer_auth(KEY_A)
        .header("x-workspace-id", &fork_ws)
        .json(&json!({"content": "from the fork"}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let r = c
        .delete(files(&s, "notes/a.md"))
        .bearer_auth(KEY_A)
        .header("x-workspace-id", &fork_ws)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let merged: Value = c
        .post(s.url(&format!(
            "/v1/host/workspace/forks/{}/merge",
            fork["forkId"].as_str().unwrap()
        )))
        .bearer_auth(KEY_A)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let merge_id = merged["mergeId"].as_str().expect("mergeId").to_owned();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let (_, e) = live.expect().await;
        let d = &e["detail"];
        assert_eq!(d["workspace"], "main", "the parent's stream: {e}");
        assert_eq!(d["mergeId"], merge_id.as_str(), "{e}");
        assert_eq!(d["forkId"], fork_ws.as_str(), "{e}");
        seen.push((
            d["path"].as_str().unwrap().to_owned(),
            d["operation"].as_str().unwrap().to_owned(),
        ));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("notes/a.md".to_owned(), "delete".to_owned()),
            ("notes/b.md".to_owned(), "put".to_owned())
        ]
    );
    put(&s, KEY_A, "notes/c.md", "after").await;
    let (_, e) = live.expect().await;
    assert!(e["detail"].get("mergeId").is_none(), "{e}");
}

#[tokio::test]
async fn a_path_scoped_key_hears_only_of_its_own_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (scoped, out) = common::create_key(
        dir.path(),
        &[
            "--tenant",
            "acme",
            "--workspace",
            "main",
            "--allow",
            "memory/**",
            "--read",
            "docs/**",
        ],
    );
    assert!(
        out.contains("paths=allow:memory/** read:docs/**"),
        "keys create shows the paths: {out}"
    );
    let (_, listed, _) = common::run_args(dir.path(), &[], &["keys", "list"]);
    assert!(
        listed.contains("paths=allow:memory/** read:docs/**"),
        "{listed}"
    );
    let (refused, _, err) = common::run_args(
        dir.path(),
        &[],
        &["keys", "create", "--tenant", "acme", "--allow", "a b"],
    );
    assert!(
        !refused.success() && err.contains("--allow/--read"),
        "{err}"
    );

    let keys = keys();
    let s = Server::start(dir.path(), &[("WORKSPACE_API_KEYS", &keys)]).await;
    let mut mine = Sse::open(&s, &scoped, None).await;
    put(&s, KEY_A, "secret/x.md", "hidden").await;
    put(&s, KEY_A, "docs/d.md", "readable").await;
    put(&s, KEY_A, "memory/m.md", "writable").await;
    let (_, first) = mine.expect().await;
    let (_, second) = mine.expect().await;
    assert_eq!(
        (&first["detail"]["path"], &second["detail"]["path"]),
        (&json!("docs/d.md"), &json!("memory/m.md"))
    );
    assert!(mine.next(Duration::from_millis(500)).await.is_none());
    // And over real HTTP, writes outside are refused.
    let r = common::put_content(&Client::new(), files(&s, "secret/y.md"), &scoped, "x").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = common::put_content(&Client::new(), files(&s, "memory/n.md"), &scoped, "x").await;
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn event_streams_are_bounded_and_a_closed_one_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", &keys),
            ("WORKSPACE_MAX_EVENT_STREAMS", "2"),
        ],
    )
    .await;
    let first = Sse::open(&s, KEY_A, None).await;
    let _second = Sse::open(&s, KEY_EVIL, None).await;
    let open = || async {
        Client::new()
            .get(s.url("/v1/host/workspace/events"))
            .bearer_auth(KEY_A)
            .send()
            .await
            .unwrap()
    };
    let third = open().await;
    assert_eq!(third.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(third.headers()["retry-after"], "1");
    let body: Value = third.json().await.unwrap();
    assert_eq!(body["error"], "unavailable", "{body}");
    // Ordinary requests still have room.
    put(&s, KEY_A, "a.md", "one").await;
    // A client that leaves gives its slot back at once, not at the next keep-alive.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = open().await;
        if r.status() == StatusCode::OK {
            break;
        }
        assert!(Instant::now() < deadline, "the slot was not freed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads `sse` until it is quiet for `quiet` (or ends): every event, in the order sent.
async fn read_until_quiet(sse: &mut Sse, quiet: Duration) -> Vec<(u64, Value)> {
    let mut got = Vec::new();
    while let Some(e) = sse.next(quiet).await {
        got.push(e);
    }
    got
}

/// `n` writers PUTting to `path{0..paths}.md` of KEY_A's workspace (each content unique)
/// until the server stops answering; every acknowledged write's (path, etag) lands in
/// `acked`. `pace` between writes keeps the stream of events to a size a test reads fast.
fn spawn_writers(
    base: &str,
    n: usize,
    paths: usize,
    pace: Duration,
    acked: &std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|w| {
            let (base, acked) = (base.to_owned(), acked.clone());
            tokio::spawn(async move {
                let c = Client::new();
                for i in 0.. {
                    let path = format!("p{}.md", (w + i) % paths);
                    let r = c
                        .put(format!("{base}/v1/host/workspace/files/{path}"))
                        .bearer_auth(KEY_A)
                        .json(&json!({"content": format!("writer {w} write {i}")}))
                        .send()
                        .await;
                    let Ok(r) = r else { return };
                    if !r.status().is_success() {
                        return;
                    }
                    let Ok(v) = r.json::<Value>().await else {
                        return;
                    };
                    let etag = v["etag"].as_str().expect("etag").to_owned();
                    acked.lock().unwrap().push((path, etag));
                    tokio::time::sleep(pace).await;
                }
            })
        })
        .collect()
}

/// (path, etag) of an event's detail.
fn change_of(e: &Value) -> (String, String) {
    let d = &e["detail"];
    (
        d["path"].as_str().expect("path").to_owned(),
        d["etag"].as_str().expect("etag").to_owned(),
    )
}

/// Per path, the sequences of `events` in the order given.
fn sequences_per_path<'a>(events: impl Iterator<Item = &'a Value>) -> BTreeMap<String, Vec<u64>> {
    let mut per: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in events {
        per.entry(e["detail"]["path"].as_str().unwrap().to_owned())
            .or_default()
            .push(e["detail"]["sequence"].as_u64().unwrap());
    }
    per
}

/// An SSE client that was reading while the server was SIGKILLed resumes, after the
/// restart, from the last id it saw (`Last-Event-ID`): it gets every later event exactly
/// once, in commit order per path, and nothing it saw before the kill is lost or changed.
/// Two clients: one reading until the kill, one that left early (so events committed before
/// the kill come after its last id).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_sse_client_resumes_across_a_sigkill_with_each_later_event_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let env = [("WORKSPACE_API_KEYS", keys.as_str())];
    let mut s = Server::start(dir.path(), &env).await;

    // Reads until the stream ends (the kill) or `stop_after` events.
    let reader = |sse: Sse, stop_after: usize| {
        tokio::spawn(async move {
            let mut sse = sse;
            let mut seen = Vec::new();
            while seen.len() < stop_after {
                match sse.next(Duration::from_secs(60)).await {
                    Some(e) => seen.push(e),
                    None => break,
                }
            }
            seen
        })
    };
    let live = reader(Sse::open(&s, KEY_A, None).await, usize::MAX);
    let early = reader(Sse::open(&s, KEY_A, None).await, 10);

    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers = spawn_writers(&s.base, 4, 6, Duration::ZERO, &acked);
    // Kill in the middle of the stream: once the early client left and enough writes (and
    // so events after its last id) were acknowledged.
    wait_for("40 acknowledged writes and the early client gone", || {
        acked.lock().unwrap().len() >= 40 && early.is_finished()
    })
    .await;
    s.kill9();
    for w in writers {
        let _ = w.await;
    }
    let live = tokio::time::timeout(Duration::from_secs(20), live)
        .await
        .expect("the live stream ends with the server")
        .unwrap();
    let early = early.await.unwrap();
    assert_eq!(early.len(), 10);
    assert!(
        !live.is_empty(),
        "the live client saw events before the kill"
    );
    let acked = acked.lock().unwrap().clone();
    drop(s);

    let s = Server::start(dir.path(), &env).await;
    // The outbox as the restarted server has it.
    let all = read_until_quiet(
        &mut Sse::open(&s, KEY_A, None).await,
        Duration::from_secs(1),
    )
    .await;
    let ids: Vec<u64> = all.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in order: {ids:?}");
    // Every acknowledged write has exactly its event.
    let mut count: HashMap<(String, String), usize> = HashMap::new();
    for (_, e) in &all {
        *count.entry(change_of(e)).or_default() += 1;
    }
    for change in &acked {
        assert_eq!(
            count.get(change),
            Some(&1),
            "acknowledged write {change:?} has not exactly one event"
        );
    }
    // And no event without its commit: per path, sequences 1..=n, the last one the head.
    for (path, seqs) in sequences_per_path(all.iter().map(|(_, e)| e)) {
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{path}");
        let head: Value = common::get_with(&Client::new(), files(&s, &path), KEY_A)
            .await
            .json()
            .await
            .unwrap();
        let last = all
            .iter()
            .rev()
            .find(|(_, e)| e["detail"]["path"] == path.as_str())
            .unwrap();
        assert_eq!(last.1["detail"]["etag"], head["etag"], "{path}");
    }

    let mut resumed = Vec::new();
    for (who, seen) in [("live", &live), ("early", &early)] {
        let last = seen.last().unwrap().0;
        // What it saw before the kill is the outbox up to its last id, unchanged.
        let before: Vec<&(u64, Value)> = all.iter().filter(|(id, _)| *id <= last).collect();
        assert_eq!(
            before.len(),
            seen.len(),
            "{who}: saw {} events through {last}, the outbox has {}",
            seen.len(),
            before.len()
        );
        for ((id, e), (oid, oe)) in seen.iter().zip(before) {
            assert_eq!(
                (id, &e["detail"]["eventId"]),
                (oid, &oe["detail"]["eventId"])
            );
        }
        let mut sse = Sse::open(&s, KEY_A, Some(last)).await;
        let got = read_until_quiet(&mut sse, Duration::from_secs(1)).await;
        let later: Vec<u64> = ids.iter().copied().filter(|id| *id > last).collect();
        assert_eq!(
            got.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            later,
            "{who} resumed after {last}: each later event once, in commit order"
        );
        if who == "early" {
            assert!(
                later.len() >= 30,
                "events committed before the kill follow the early client's last id"
            );
        }
        resumed.push((who, seen, got, sse));
    }
    // Then the resumed streams go on live.
    let next = put(&s, KEY_A, "after-restart.md", "x").await;
    for (who, seen, mut got, mut sse) in resumed {
        let (id, e) = sse.expect().await;
        assert_eq!(e["detail"]["etag"], next["etag"], "{who}");
        got.push((id, e));
        assert!(
            sse.next(Duration::from_millis(300)).await.is_none(),
            "{who}"
        );
        // Per path, what it saw before and after together is 1..=n, each once, in order.
        let together = seen.iter().chain(got.iter()).map(|(_, e)| e);
        for (path, seqs) in sequences_per_path(together) {
            assert_eq!(
                seqs,
                (1..=seqs.len() as u64).collect::<Vec<_>>(),
                "{who}: {path}"
            );
        }
    }
}

/// Webhooks across a SIGKILL: the receiver refuses the first attempts, the server is killed
/// during a stream of writes while it backs off, and after a restart (where it refuses once
/// more) the receiver gets every acknowledged write's event, signed, in commit order; a
/// redelivery repeats, never reorders or skips.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn webhooks_get_every_acknowledged_event_across_a_sigkill() {
    let (url, got) = receiver().await;
    got.lock().unwrap().fail_next = 2;
    let secret = "webhook-secret-kill-0123456789";
    let hooks = json!([{"url": url, "secret": secret, "tenant": "acme"}]).to_string();
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let env = [
        ("WORKSPACE_API_KEYS", keys.as_str()),
        ("WORKSPACE_WEBHOOKS", hooks.as_str()),
    ];
    let mut s = Server::start(dir.path(), &env).await;
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers = spawn_writers(&s.base, 4, 5, Duration::from_millis(5), &acked);
    // Killed while writes go on and the target is backing off after its refusals.
    wait_for("two refused attempts and 30 acknowledged writes", || {
        got.lock().unwrap().attempts >= 2 && acked.lock().unwrap().len() >= 30
    })
    .await;
    s.kill9();
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().unwrap().clone();
    drop(s);
    // The restarted server meets one more refusal.
    got.lock().unwrap().fail_next = 1;

    let s = Server::start(dir.path(), &env).await;
    let after = put(&s, KEY_A, "after-restart.md", "x").await;
    let outbox = read_until_quiet(
        &mut Sse::open(&s, KEY_A, None).await,
        Duration::from_secs(1),
    )
    .await;
    let outbox_ids: Vec<String> = outbox
        .iter()
        .map(|(_, e)| e["detail"]["eventId"].as_str().unwrap().to_owned())
        .collect();
    let changes: std::collections::HashSet<(String, String)> =
        outbox.iter().map(|(_, e)| change_of(e)).collect();
    for change in &acked {
        assert!(changes.contains(change), "{change:?} has its event");
    }
    assert_eq!(outbox.last().unwrap().1["detail"]["etag"], after["etag"]);

    let delivered_ids = || {
        let g = got.lock().unwrap();
        let mut first = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (headers, _) in &g.delivered {
            let id = headers["x-workspace-event-id"].clone();
            if seen.insert(id.clone()) {
                first.push(id);
            }
        }
        first
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered_ids().len() < outbox_ids.len() {
        assert!(
            Instant::now() < deadline,
            "only {} of {} events delivered",
            delivered_ids().len(),
            outbox_ids.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Each event's first delivery in commit order: every one, none skipped, none extra.
    assert_eq!(delivered_ids(), outbox_ids);
    let g = got.lock().unwrap();
    assert!(
        g.attempts > g.delivered.len(),
        "refused attempts were retried"
    );
    let mut delivered_changes = std::collections::HashSet::new();
    for (headers, body) in &g.delivered {
        let envelope = signed_envelope(headers, body, secret);
        delivered_changes.insert(change_of(&envelope));
    }
    for change in &acked {
        assert!(
            delivered_changes.contains(change),
            "acknowledged {change:?} delivered"
        );
    }
}

/// A refused write (409, 413, 400) reaches no webhook: the receiver gets the accepted
/// writes before and after them, and nothing between (delivery is in commit order, so an
/// event of a refused write would have come before the second).
#[tokio::test]
async fn refused_writes_reach_no_webhook() {
    let (url, got) = receiver().await;
    let secret = "webhook-secret-refused-0123456789";
    let hooks = json!([{"url": url, "secret": secret}]).to_string();
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            ("WORKSPACE_WEBHOOKS", hooks.as_str()),
            ("WORKSPACE_MAX_FILE_BYTES", "64"),
        ],
    )
    .await;
    let c = Client::new();
    let first = put(&s, KEY_A, "notes/a.md", "one").await;
    wait_for("the first delivery", || {
        !got.lock().unwrap().delivered.is_empty()
    })
    .await;
    let refused = [
        c.put(files(&s, "notes/a.md"))
            .bearer_auth(KEY_A)
            .header("if-match", "\"9-stale\"")
            .json(&json!({"content": "x"})),
        c.put(files(&s, "notes/big.md"))
            .bearer_auth(KEY_A)
            .json(&json!({"content": "x".repeat(100)})),
        c.put(files(&s, "notes/bad.md"))
            .bearer_auth(KEY_A)
            .body("{not json"),
        c.put(files(&s, "notes/bad%00.md"))
            .bearer_auth(KEY_A)
            .json(&json!({"content": "x"})),
        c.put(files(&s, "notes/a.md"))
            .bearer_auth(KEY_A)
            .json(&json!({"text": "no content field"})),
        c.delete(files(&s, "notes/a.md"))
            .bearer_auth(KEY_A)
            .header("if-match", "\"9-stale\""),
    ];
    let mut statuses = Vec::new();
    for r in refused {
        statuses.push(r.send().await.unwrap().status().as_u16());
    }
    assert_eq!(statuses, [409, 413, 400, 400, 400, 409]);
    let second = put(&s, KEY_A, "notes/b.md", "two").await;
    wait_for("the second delivery", || {
        got.lock().unwrap().delivered.len() >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let etags: Vec<Value> = got
        .lock()
        .unwrap()
        .delivered
        .iter()
        .map(|(_, body)| {
            let e: Value = serde_json::from_slice(body).unwrap();
            assert_valid(&e);
            e["detail"]["etag"].clone()
        })
        .collect();
    assert_eq!(etags, [first["etag"].clone(), second["etag"].clone()]);
    // The stream agrees: two events, nothing else.
    let all = read_until_quiet(
        &mut Sse::open(&s, KEY_A, None).await,
        Duration::from_millis(700),
    )
    .await;
    assert_eq!(all.len(), 2, "{all:?}");
}

/// Discovery advertises how this server delivers `workspace.updated`: the stream's route
/// (which answers), its retention as configured, and webhooks; no EventBridge here.
#[tokio::test]
async fn discovery_advertises_the_event_stream_and_webhooks() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            ("WORKSPACE_EVENT_RETENTION_SECONDS", "3600"),
        ],
    )
    .await;
    let c = Client::new();
    let want = json!({
        "supported": true,
        "source": "agent-workspace",
        "detailType": "workspace.updated",
        "eventBridge": false,
        "stream": "/v1/host/workspace/events",
        "streamRetentionSeconds": 3600,
        "webhooks": true,
    });
    for route in ["/.well-known/openwop", "/v1/host/capabilities"] {
        let r = c.get(s.url(route)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{route}");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["events"], want, "{route}");
        assert_eq!(doc["capabilities"]["events"], want, "{route}");
    }
    // The advertised route is the stream, and the events carry the advertised source and
    // detail-type.
    let mut live = Sse::open(&s, KEY_A, None).await;
    put(&s, KEY_A, "a.md", "x").await;
    let (_, e) = live.expect().await;
    assert_eq!(
        (e["source"].as_str(), e["detail-type"].as_str()),
        (Some("agent-workspace"), Some("workspace.updated"))
    );
    // The default retention is 7 days.
    drop(live);
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[("WORKSPACE_API_KEYS", keys.as_str())]).await;
    let doc: Value = c
        .get(s.url("/.well-known/openwop"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["events"]["streamRetentionSeconds"], 7 * 24 * 3600);
    assert_eq!(doc["events"]["webhooks"], true);
}

/// A target configured on a fresh store, whose first attempt is still waiting for an
/// answer when the server is killed: after the restart it still gets the events committed
/// before the kill (it is not taken for a new target that starts from now).
#[tokio::test]
async fn a_webhook_whose_first_attempt_never_ended_gets_every_event_after_a_sigkill() {
    let (url, got) = receiver().await;
    got.lock().unwrap().hang_next = 1;
    let secret = "webhook-secret-hang-0123456789";
    let hooks = json!([{"url": url, "secret": secret}]).to_string();
    let dir = tempfile::tempdir().unwrap();
    let keys = keys();
    let env = [
        ("WORKSPACE_API_KEYS", keys.as_str()),
        ("WORKSPACE_WEBHOOKS", hooks.as_str()),
    ];
    let mut s = Server::start(dir.path(), &env).await;
    let a = put(&s, KEY_A, "a.md", "one").await;
    let b = put(&s, KEY_A, "b.md", "two").await;
    wait_for("the first attempt", || got.lock().unwrap().attempts >= 1).await;
    s.kill9();
    drop(s);
    let s = Server::start(dir.path(), &env).await;
    let c = put(&s, KEY_A, "c.md", "three").await;
    let etags = || -> Vec<Value> {
        let mut seen: Vec<Value> = Vec::new();
        for (_, body) in &got.lock().unwrap().delivered {
            let e: Value = serde_json::from_slice(body).unwrap();
            assert_valid(&e);
            if !seen.contains(&e["detail"]["etag"]) {
                seen.push(e["detail"]["etag"].clone());
            }
        }
        seen
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !etags().contains(&c["etag"]) {
        assert!(Instant::now() < deadline, "c.md was never delivered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        etags(),
        [a["etag"].clone(), b["etag"].clone(), c["etag"].clone()]
    );
}
