//! `ws mount` behind API Gateway: the mount (`target/debug/ws mount DIR --foreground`) over
//! an HTTP/1.1 front on 127.0.0.1 that hands every request to the emulated HTTP API of
//! `workspace_tests::apigw` (template.yaml's routes, the payload-2.0 event, the JWT
//! authorizer's claims) and from there to the real function binary under the Lambda Runtime
//! Interface Emulator (`workspace_tests::rie`) on a fresh moto stack: the machinery of
//! `api_gateway_parity.rs`, with the mount as the client.
//!
//! The front stands in for the gateway's edge: `Authorization: Bearer <key>` with the one
//! key it knows becomes that caller's claims (tenant `acme`, workspace `main`, read and
//! write); any other key, or none, is API Gateway's own `401 {"message":"Unauthorized"}` on
//! a route under the authorizer, while `Auth: NONE` routes (discovery) pass without claims.
//! The key is itself JWT-shaped, as a real deployment's bearer token is, so the functions
//! see the header they would see on AWS. Functions are started under the emulator the first
//! time a request is routed to them, and invoked one request at a time each.
//!
//! What is checked, through the mount and through the API: a file written in the mount is
//! one version with exactly its bytes; a rename over an existing file is one `POST .../commits`
//! with a move op (the target's history gains one version, the source is gone); a write to a
//! file that changed in the workspace since it was opened fails with EIO at fsync, leaves
//! the workspace's version alone and puts the mount's bytes in `NAME.conflict-<version>-<mount
//! id>`; `ws unmount` ends the mount process with status 0.
//!
//! Run alone: start moto (`.venv/bin/python tests/moto_server.py` prints its HTTP and HTTPS
//! ports; its certificate is in `$WORKSPACE_MOTO_TLS_DIR`, default target/moto-tls), then
//! `WORKSPACE_TEST_MOTO_URL=http://127.0.0.1:<port>
//! WORKSPACE_TEST_MOTO_HTTPS_URL=https://127.0.0.1:<tls port>
//! WORKSPACE_TEST_MOTO_CA_FILE=<dir>/cert.pem cargo test -p workspace-tests --test
//! ws_mount_gateway -- --nocapture`. Needs /dev/fuse and fusermount3.

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use workspace_tests::apigw::{answer_from_lambda, Dispatch, Gateway, HttpAnswer, HttpRequest};
use workspace_tests::local::binaries;
use workspace_tests::mount::Mount;
use workspace_tests::rie::{self, Emulated, Sam};
use workspace_tests::{b64, root};

// ------------------------------------------------------------------------------ identity

/// The JWT claims API Gateway's authorizer hands the functions for the mount's caller
/// (claim names from template.yaml's defaults, as in api_gateway_parity.rs).
fn claims() -> BTreeMap<String, String> {
    [
        ("iss", "https://issuer.example.com/"),
        ("aud", "agent-workspace"),
        ("tenant_id", "acme"),
        ("workspace_id", "main"),
        ("sub", "mount-gateway-test"),
        ("scope", "workspace:read workspace:write"),
        ("iat", "1732258800"),
        ("exp", "4102444800"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// A JWT-shaped bearer token carrying `claims` (copied from api_gateway_parity.rs: the
/// gateway verified it; the function only sees the claims).
fn token(claims: &BTreeMap<String, String>) -> String {
    let url = |s: String| s.trim_end_matches('=').replace('+', "-").replace('/', "_");
    let header = url(b64::encode(br#"{"alg":"RS256","kid":"parity"}"#));
    let payload = url(b64::encode(json!(claims).to_string().as_bytes()));
    format!("{header}.{payload}.c2lnbmF0dXJl")
}

// --------------------------------------------------------------------------------- front

/// One request the front answered.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    status: u16,
    /// A POST's body (the commits).
    body: Vec<u8>,
    /// Why the gateway answered itself, or the function failed.
    note: Option<String>,
}

/// One function under the emulator, started on first use; the lock serialises its
/// invocations (one emulator runs one at a time).
type Slot = Arc<tokio::sync::Mutex<Option<Emulated>>>;

struct Front {
    gateway: Gateway,
    key: String,
    claims: BTreeMap<String, String>,
    sam: Arc<Sam>,
    bin_dir: PathBuf,
    functions: Mutex<HashMap<String, Slot>>,
    seq: AtomicU64,
    seen: Mutex<Vec<Seen>>,
}

impl Front {
    /// What the gateway answers `req` (the caller's bearer already checked: `claims`).
    async fn answer(&self, req: &HttpRequest) -> (HttpAnswer, Option<String>) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(0))
            .unwrap_or(0);
        let bearer = req
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .and_then(|(_, v)| v.strip_prefix("Bearer "));
        let claims = (bearer == Some(self.key.as_str())).then_some(&self.claims);
        let (function, event) = match self.gateway.dispatch(req, claims, now, seq) {
            Dispatch::Answer(a) => {
                let note = format!("API Gateway answered itself ({})", a.status);
                return (a, Some(note));
            }
            Dispatch::Invoke { function, event } => (function, event),
        };
        let slot = self
            .functions
            .lock()
            .unwrap()
            .entry(function.clone())
            .or_default()
            .clone();
        let mut running = slot.lock().await;
        if running.is_none() {
            let (sam, bin_dir, id) = (self.sam.clone(), self.bin_dir.clone(), function.clone());
            match tokio::task::spawn_blocking(move || rie::emulate(&sam, &id, &bin_dir)).await {
                Ok(e) => *running = Some(e),
                Err(e) => {
                    return (
                        HttpAnswer::gateway(500, "Internal Server Error"),
                        Some(format!("{function} could not be started: {e}")),
                    )
                }
            }
        }
        let e = running.as_ref().expect("started");
        // What api_gateway_parity.rs's `Functions::send` does with the invocation: the HTTP
        // API's integration gives up after 30 s, and a failed integration is a 500.
        let invoked =
            tokio::time::timeout(Duration::from_secs(30), rie::try_invoke_event(e, &event)).await;
        match invoked {
            Err(_) => (
                HttpAnswer::gateway(503, "Service Unavailable"),
                Some(format!("{function} ran past the 30 s integration timeout")),
            ),
            Ok(Err(err)) => (
                HttpAnswer::gateway(500, "Internal Server Error"),
                Some(format!("{function}: {err}")),
            ),
            Ok(Ok(result)) => {
                let note = result
                    .get("errorType")
                    .map(|t| format!("{function} failed: {t} {}", result["errorMessage"]));
                (answer_from_lambda(&result), note)
            }
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn log_from(&self, from: usize) -> String {
        self.seen()
            .iter()
            .skip(from)
            .map(|s| {
                format!(
                    "  {} {} -> {}{}\n",
                    s.method,
                    s.target,
                    s.status,
                    s.note
                        .as_ref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                )
            })
            .collect()
    }
}

/// Reads one request from `r`: `None` when the client closed the connection first.
async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
) -> std::io::Result<Option<HttpRequest>> {
    let mut lines: Vec<String> = Vec::new();
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).await? == 0 {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&line)
            .trim_end_matches(['\r', '\n'])
            .to_owned();
        if text.is_empty() {
            if lines.is_empty() {
                continue; // a stray CRLF between requests
            }
            break;
        }
        lines.push(text);
    }
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut start = lines[0].split(' ');
    let (Some(method), Some(target)) = (start.next(), start.next()) else {
        return Err(bad("not a request line"));
    };
    let mut req = HttpRequest::new(method, target);
    for l in &lines[1..] {
        let (k, v) = l.split_once(':').ok_or_else(|| bad("not a header"))?;
        req.headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).await?;
            let n = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| bad("not a chunk size"))?;
            if n == 0 {
                // Trailers, up to the empty line.
                loop {
                    let mut t = String::new();
                    if r.read_line(&mut t).await? == 0 || t.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).await?;
            req.body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = header("content-length") {
        let n: usize = n.parse().map_err(|_| bad("not a length"))?;
        req.body = vec![0; n];
        r.read_exact(&mut req.body).await?;
    }
    Ok(Some(req))
}

/// One client connection: requests one after the other (keep-alive) until it closes.
async fn connection(front: Arc<Front>, sock: tokio::net::TcpStream) -> std::io::Result<()> {
    let (r, mut w) = sock.into_split();
    let mut r = BufReader::new(r);
    while let Some(req) = read_request(&mut r).await? {
        let (answer, note) = front.answer(&req).await;
        if let Some(n) = &note {
            eprintln!("front: {} {}: {n}", req.method, req.target);
        }
        front.seen.lock().unwrap().push(Seen {
            method: req.method.clone(),
            target: req.target.clone(),
            status: answer.status,
            body: if req.method == "POST" {
                req.body.clone()
            } else {
                Vec::new()
            },
            note,
        });
        let reason = http::StatusCode::from_u16(answer.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Unknown");
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", answer.status);
        for (k, v) in &answer.headers {
            if !matches!(
                k.as_str(),
                "content-length" | "transfer-encoding" | "connection"
            ) {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", answer.body.len()));
        let mut out = head.into_bytes();
        if req.method != "HEAD" {
            out.extend_from_slice(&answer.body);
        }
        w.write_all(&out).await?;
        w.flush().await?;
        let close = req
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close"));
        if close {
            break;
        }
    }
    Ok(())
}

async fn serve(front: Arc<Front>, listener: TcpListener) {
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(connection(front.clone(), sock));
    }
}

// --------------------------------------------------------------------------------- mount

fn mounted(dir: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let want = dir.to_str().unwrap_or_default();
    mounts.lines().any(|l| {
        l.split(' ').nth(1) == Some(want)
            && l.split(' ').nth(2).is_some_and(|t| t.starts_with("fuse"))
    })
}

// ----------------------------------------------------------------------------------- API

/// The API through the front, as any client calls it.
struct Api {
    rt: Arc<tokio::runtime::Runtime>,
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    fn send(
        &self,
        method: &str,
        route: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Value) {
        self.rt.block_on(async {
            let mut rb = self
                .http
                .request(
                    method.parse().expect("a method"),
                    format!("{}{route}", self.base),
                )
                .bearer_auth(&self.key);
            for (k, v) in headers {
                rb = rb.header(*k, *v);
            }
            if let Some(b) = body {
                rb = rb.json(&b);
            }
            let resp = rb
                .send()
                .await
                .unwrap_or_else(|e| panic!("{method} {route}: {e}"));
            let status = resp.status().as_u16();
            let bytes = resp.bytes().await.expect("the answer's body");
            let v = serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
            (status, v)
        })
    }

    fn ok(
        &self,
        method: &str,
        route: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Value {
        let (status, v) = self.send(method, route, headers, body);
        assert!(
            (200..300).contains(&status),
            "{method} {route}: {status} {v}"
        );
        v
    }

    /// A file's answer: its bytes and version.
    fn file(&self, path: &str) -> (Vec<u8>, u64) {
        let v = self.ok(
            "GET",
            &format!("/v1/host/workspace/files/{path}"),
            &[],
            None,
        );
        let bytes = match (v["content"].as_str(), v["contentBase64"].as_str()) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(b)) => b64::decode(b).expect("contentBase64 is base64"),
            _ => panic!("GET {path}: no content in {v}"),
        };
        (bytes, v["version"].as_u64().expect("a version"))
    }

    /// Every live file: path → version.
    fn listing(&self) -> BTreeMap<String, u64> {
        let v = self.ok("GET", "/v1/host/workspace/files?limit=1000", &[], None);
        assert!(v.get("nextToken").is_none(), "one page: {v}");
        v["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().expect("path").to_owned(),
                    f["version"].as_u64().expect("version"),
                )
            })
            .collect()
    }

    fn versions(&self, path: &str) -> Vec<u64> {
        let v = self.ok(
            "GET",
            &format!("/v1/host/workspace/versions/{path}"),
            &[],
            None,
        );
        v["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .map(|r| r["version"].as_u64().expect("version"))
            .collect()
    }
}

/// Polls `f` until it answers `Some` (at most `secs` seconds), else panics with `what`.
fn eventually<T>(secs: u64, what: impl Fn() -> String, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "after {secs} s: {}", what());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

// ---------------------------------------------------------------------------------- test

#[test]
fn the_mount_works_through_api_gateway() {
    let started = Instant::now();
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("a runtime"),
    );
    let gateway = Gateway::from_template(&root().join("template.yaml"));

    // The functions on fresh moto resources (as api_gateway_parity.rs starts them). Bound
    // (not `..`) so the resources live as long as the test.
    let rie::MotoStack {
        env: _env,
        caps: _caps,
        observed: _observed,
        env_json,
        roles,
    } = rt.block_on(rie::fresh_stack("mount"));
    let sam = rie::sam_local(&env_json).under_roles(roles);
    let _ = std::fs::remove_file(&env_json);
    let bin_dir = rie::build_bootstraps(&sam);
    let ws = &binaries().ws;
    assert!(ws.exists(), "{} was built", ws.display());

    let claims = claims();
    let key = token(&claims);
    let front = Arc::new(Front {
        gateway,
        key: key.clone(),
        claims,
        sam: Arc::new(sam),
        bin_dir,
        functions: Mutex::new(HashMap::new()),
        seq: AtomicU64::new(0),
        seen: Mutex::new(Vec::new()),
    });
    let listener = rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("a free loopback port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    rt.spawn(serve(front.clone(), listener));
    let api = Api {
        rt: rt.clone(),
        http: reqwest::Client::new(),
        base: url.clone(),
        key: key.clone(),
    };
    // The front is the gateway's edge: another key is its own 401, discovery needs none.
    let stranger = Api {
        rt: rt.clone(),
        http: reqwest::Client::new(),
        base: url.clone(),
        key: "not-a-known-key".into(),
    };
    assert_eq!(
        stranger.send("GET", "/v1/host/workspace/files", &[], None),
        (401, json!({"message": "Unauthorized"}))
    );
    stranger.ok("GET", "/.well-known/openwop", &[], None);
    let ready = started.elapsed();

    // 1. Mount.
    // The change log every second, as by default: each read goes through the emulated
    // functions one at a time.
    let mut mount = Mount::start(&url, &key, &["--refresh-ms", "1000"]);
    let mounted_after = started.elapsed();
    eprintln!("mounted {} over {url}", mount.dir.display());

    // 2. A file written in the mount: one version, exactly its bytes, both ways.
    let a: Vec<u8> = (0..=255u8).chain(b"\r\n\0 end".iter().copied()).collect();
    std::fs::write(mount.path("a.bin"), &a).expect("write a.bin in the mount");
    let back = std::fs::read(mount.path("a.bin")).expect("read a.bin in the mount");
    assert_eq!(back, a, "a.bin read back through the mount");
    let (bytes, version) = api.file("a.bin");
    assert_eq!(bytes, a, "a.bin through the API");
    assert_eq!(version, 1, "a.bin's version");

    // 3. A rename over an existing file: one commit with a move op.
    let b1 = b"b.txt, first version\n".to_vec();
    let tmp = b"tmp.txt's bytes, now b.txt's second version\n".to_vec();
    std::fs::write(mount.path("b.txt"), &b1).expect("write b.txt");
    std::fs::write(mount.path("tmp.txt"), &tmp).expect("write tmp.txt");
    let before_rename = front.seen().len();
    std::fs::rename(mount.path("tmp.txt"), mount.path("b.txt")).unwrap_or_else(|e| {
        panic!(
            "rename tmp.txt over b.txt in the mount: {e}\nrequests:\n{}\nthe mount's output:\n{}",
            front.log_from(before_rename),
            mount.log()
        )
    });
    let writes: Vec<Seen> = front.seen()[before_rename..]
        .iter()
        .filter(|s| s.method != "GET")
        .cloned()
        .collect();
    assert_eq!(
        writes
            .iter()
            .map(|s| (s.method.as_str(), s.target.as_str(), s.status))
            .collect::<Vec<_>>(),
        [("POST", "/v1/host/workspace/commits", 200)],
        "the rename's writes; requests:\n{}",
        front.log_from(before_rename)
    );
    let commit: Value = serde_json::from_slice(&writes[0].body).expect("a JSON commit");
    let ops = commit["operations"].as_array().expect("operations");
    assert_eq!(ops.len(), 1, "one operation: {commit}");
    assert_eq!(
        (&ops[0]["op"], &ops[0]["from"], &ops[0]["to"]),
        (&json!("move"), &json!("tmp.txt"), &json!("b.txt")),
        "{commit}"
    );
    assert_eq!(
        std::fs::read(mount.path("b.txt")).expect("read b.txt in the mount"),
        tmp,
        "b.txt in the mount after the rename"
    );
    assert_eq!(
        std::fs::metadata(mount.path("tmp.txt"))
            .map_err(|e| e.kind())
            .err(),
        Some(std::io::ErrorKind::NotFound),
        "tmp.txt in the mount after the rename"
    );
    let names: BTreeSet<String> = std::fs::read_dir(&mount.dir)
        .expect("list the mount")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        !names.contains("tmp.txt") && names.contains("b.txt"),
        "the mount lists {names:?}"
    );
    let (bytes, version) = api.file("b.txt");
    assert_eq!(
        (show(&bytes), version),
        (show(&tmp), 2),
        "b.txt through the API"
    );
    assert_eq!(
        api.listing(),
        BTreeMap::from([("a.bin".to_owned(), 1), ("b.txt".to_owned(), 2)]),
        "the API's listing after the rename"
    );
    assert_eq!(
        api.versions("b.txt"),
        [2, 1],
        "b.txt's history, newest first"
    );

    // 4. A conflict: c.txt changes in the workspace while the mount has it open.
    let c1 = b"c v1\n".to_vec();
    let c_api = b"c v2, written through the API\n".to_vec();
    let c_mount = b"c from the mount, longer than v1\n".to_vec();
    let created = api.ok(
        "PUT",
        "/v1/host/workspace/files/c.txt",
        &[("If-None-Match", "*")],
        Some(json!({"content": std::str::from_utf8(&c1).unwrap()})),
    );
    let etag1 = created["etag"].as_str().expect("an etag").to_owned();
    eventually(
        15,
        || {
            format!(
                "the mount never showed c.txt's bytes\nthe mount's output:\n{}",
                mount.log()
            )
        },
        || (std::fs::read(mount.path("c.txt")).ok()? == c1).then_some(()),
    );
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(mount.path("c.txt"))
        .expect("open c.txt read-write in the mount");
    let changed = api.ok(
        "PUT",
        "/v1/host/workspace/files/c.txt",
        &[("If-Match", &etag1)],
        Some(json!({"content": std::str::from_utf8(&c_api).unwrap()})),
    );
    assert_eq!(changed["version"], 2, "{changed}");
    let before_close = front.seen().len();
    f.write_all(&c_mount)
        .expect("write c.txt through the open handle");
    let synced = f.sync_all();
    drop(f);
    assert_eq!(
        synced.as_ref().map_err(std::io::Error::raw_os_error),
        Err(Some(libc::EIO)),
        "fsync of c.txt, changed in the workspace since it was opened: {synced:?}\nrequests:\n{}\nthe mount's output:\n{}",
        front.log_from(before_close),
        mount.log()
    );
    let (bytes, version) = api.file("c.txt");
    assert_eq!(
        (show(&bytes), version),
        (show(&c_api), 2),
        "c.txt through the API keeps the API's version"
    );
    let listing = api.listing();
    let copies: Vec<&String> = listing
        .keys()
        .filter(|p| p.starts_with("c.txt.conflict-"))
        .collect();
    assert_eq!(
        copies.len(),
        1,
        "one conflict copy in {listing:?}\nrequests:\n{}",
        front.log_from(before_close)
    );
    let copy = copies[0].clone();
    assert!(
        copy.starts_with("c.txt.conflict-2-"),
        "named after the workspace's version: {copy}"
    );
    let (bytes, version) = api.file(&copy);
    assert_eq!(
        (show(&bytes), version),
        (show(&c_mount), 1),
        "the conflict copy holds the mount's bytes"
    );
    assert_eq!(
        listing,
        BTreeMap::from([
            ("a.bin".to_owned(), 1),
            ("b.txt".to_owned(), 2),
            ("c.txt".to_owned(), 2),
            (copy.clone(), 1),
        ]),
        "nothing else changed"
    );
    assert_eq!(api.versions("c.txt"), [2, 1], "c.txt's history");
    // The mount shows both sides too.
    eventually(
        15,
        || {
            format!(
                "the mount never showed c.txt as the API wrote it\nthe mount's output:\n{}",
                mount.log()
            )
        },
        || (std::fs::read(mount.path("c.txt")).ok()? == c_api).then_some(()),
    );
    // The copy shows at once: the mount adds what it wrote itself.
    assert_eq!(
        std::fs::read(mount.path(&copy)).map(|b| show(&b)).ok(),
        Some(show(&c_mount)),
        "the mount shows {copy} with the mount's bytes"
    );

    // 5. Unmount: the process ends with status 0.
    let status = mount.unmount();
    assert!(
        status.success(),
        "the mount process exited {status}; its output:\n{}",
        mount.log()
    );
    assert!(
        !mounted(&mount.dir),
        "{} is still mounted",
        mount.dir.display()
    );
    eprintln!(
        "ws mount through API Gateway: {} requests in {:.1?} (stack and functions ready after {ready:.1?}, mounted after {mounted_after:.1?}); answered by the gateway itself or failed:\n{}",
        front.seen().len(),
        started.elapsed(),
        front
            .seen()
            .iter()
            .filter(|s| s.note.is_some() || s.status >= 500)
            .map(|s| format!("  {} {} -> {} {:?}\n", s.method, s.target, s.status, s.note))
            .collect::<String>()
    );
    drop(mount);
}
