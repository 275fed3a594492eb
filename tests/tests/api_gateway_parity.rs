//! API Gateway parity: a client must not be able to tell from any answer whether it talks to
//! the local server or to the functions behind API Gateway (issue 14).
//!
//! Every request of a scripted sequence goes (a) to `workspace-local` over HTTP, as the
//! client sends it (raw request target, repeated headers kept), on a fresh data directory
//! (the embedded store), and (b) through an emulated API Gateway HTTP API
//! (`workspace_tests::apigw`: template.yaml's routes, the payload-2.0 event API Gateway
//! builds, the JWT authorizer's claims) to the real function binary under the Lambda
//! Runtime Interface Emulator (`workspace_tests::rie`) on fresh moto resources. The two
//! answers are compared: status, the headers that matter, and body bytes (JSON bodies after
//! normalising what legitimately differs between two stores: timestamps, generated ids and
//! etags, presigned URLs, paging tokens). Routes that return stored bytes are also checked
//! against exactly the bytes stored, on each side.
//!
//! Identities. Each credential of the suite exists twice: as an API key of the local server
//! (`WORKSPACE_API_KEYS`) and as the JWT claims the HTTP API's authorizer hands the functions
//! for the same caller (claim names from template.yaml's defaults: `tenant_id`,
//! `workspace_id`, `sub`, `scope`). A key's principal on the local server is `apikey:<n>`
//! (its place in WORKSPACE_API_KEYS), so the token's `sub` is the same.
//!
//! The one documented exception: a request to a route under the JWT authorizer without a
//! valid token never reaches a function. API Gateway answers it itself with `401
//! {"message":"Unauthorized"}`, where the local server answers our envelope (`401
//! {"error":"unauthenticated",...}`). The suite sends no such request to the functions
//! (the driver refuses to) and only unauthenticated requests to `Auth: NONE` routes.
//!
//! A step can use what an earlier step answered: generated values (ids, etags, tokens,
//! URLs) are named `<kind@step#n>` (the n-th new value of that kind in the answer of
//! `step`), and each side fills in its own real value. The integration's 30 s limit is
//! emulated too (API Gateway's own `503 {"message":"Service Unavailable"}`).
//!
//! Sections: the contract-like cases, a corpus of content types and byte patterns on every
//! route that returns a body, one section per item of issue 14 (named `issue-14.<n>`), and
//! forks (`forks: ...`: created, written in, merged, discarded; based on a snapshot; a
//! workspace deleted with its live fork).
//! Every mismatch is collected and reported (request, local answer, lambda answer), then
//! the test fails. `PARITY_VERBOSE=1` prints every step's two statuses as it goes.
//!
//! Run alone: start moto (`.venv/bin/python tests/moto_server.py` prints its port), then
//! `WORKSPACE_TEST_MOTO_URL=http://127.0.0.1:<port> cargo test -p workspace-tests --test
//! api_gateway_parity`.

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use workspace_core::model::sha256_hex;
use workspace_tests::apigw::{answer_from_lambda, Dispatch, Gateway, HttpAnswer, HttpRequest};
use workspace_tests::local::{build_local_server, LocalServer};
use workspace_tests::rie::{self, Emulated};
use workspace_tests::{b64, root};

// ------------------------------------------------------------------------------ identities

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Who {
    /// Bound to acme/main.
    Bound,
    /// Tenant-wide for acme: names its workspace in `X-Workspace-Id`.
    Wide,
    /// Bound to another tenant's workspace, globex/main.
    Other,
    /// No credential (only for routes without an authorizer).
    Anon,
}

struct Credential {
    /// The local server's API key.
    key: &'static str,
    /// `<tenant>/<workspace>` or `<tenant>` (WORKSPACE_API_KEYS).
    grant: &'static str,
    /// The JWT claims API Gateway's authorizer passes for the same caller.
    claims: BTreeMap<String, String>,
}

const SCOPES: &str = "workspace:read workspace:write";

fn credential(who: Who) -> Option<Credential> {
    let (key, grant, n, tenant, workspace) = match who {
        Who::Bound => (
            "parity-bound-key-000001",
            "acme/main",
            1,
            "acme",
            Some("main"),
        ),
        Who::Wide => ("parity-tenant-key-000002", "acme", 2, "acme", None),
        Who::Other => (
            "parity-other-key-000003",
            "globex/main",
            3,
            "globex",
            Some("main"),
        ),
        Who::Anon => return None,
    };
    let mut claims: BTreeMap<String, String> = [
        ("iss", "https://issuer.example.com/"),
        ("aud", "agent-workspace"),
        ("tenant_id", tenant),
        ("scope", SCOPES),
        ("iat", "1732258800"),
        ("exp", "4102444800"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    claims.insert("sub".into(), format!("apikey:{n}"));
    if let Some(w) = workspace {
        claims.insert("workspace_id".into(), w.to_owned());
    }
    Some(Credential { key, grant, claims })
}

/// The browser origin both sides allow on MCP's routes (events/env.json sets it for the
/// functions).
const MCP_ORIGIN: &str = "https://console.example.test";

/// WORKSPACE_API_KEYS for the local server: entry n is principal `apikey:n`.
fn api_keys() -> String {
    [Who::Bound, Who::Wide, Who::Other]
        .into_iter()
        .map(|w| {
            let c = credential(w).unwrap();
            format!("{}={}", c.key, c.grant)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A JWT-shaped bearer token carrying `claims` (the gateway verified it; the function only
/// sees the claims).
fn token(claims: &BTreeMap<String, String>) -> String {
    let url = |s: String| s.trim_end_matches('=').replace('+', "-").replace('/', "_");
    let header = url(b64::encode(br#"{"alg":"RS256","kid":"parity"}"#));
    let payload = url(b64::encode(json!(claims).to_string().as_bytes()));
    format!("{header}.{payload}.c2lnbmF0dXJl")
}

// ------------------------------------------------------------------------------ the script

/// What one side's answer must also satisfy (beyond equalling the other side's).
#[derive(Debug, Clone)]
enum Expect {
    /// The body is exactly these bytes.
    Body(Vec<u8>),
    /// The `content-type` header is exactly this.
    ContentType(String),
    /// A file read: JSON whose `content` (UTF-8) or `contentBase64` is exactly these bytes.
    FileContent(Vec<u8>),
    /// This status with our error envelope `{"error": code, "message": ...}`.
    Envelope(u16, &'static str),
    Status(u16),
    /// Every `expiresAt` in the JSON body is whole seconds (`.000Z`).
    WholeSecondExpiry,
}

#[derive(Debug, Clone)]
enum Action {
    /// An API request (local server; gateway → function).
    Api(HttpRequest),
    /// template.yaml routes what no other route matches to a function (`$default`), so
    /// wrong methods and unknown paths reach our envelope.
    TemplateHasDefaultRoute,
    /// A request straight to the presigned URL a previous step answered (`{url, method,
    /// headers}` at `pointer` in its JSON), on each side: the local server's own signed URL,
    /// S3's (moto) behind the functions. Statuses are not compared (two different
    /// services); both must succeed, and a GET must answer exactly `expect` when given.
    Direct {
        ticket: String,
        pointer: &'static str,
        body: Vec<u8>,
        expect: Option<Vec<u8>>,
    },
}

#[derive(Debug, Clone)]
struct Step {
    section: &'static str,
    label: String,
    who: Who,
    action: Action,
    expect: Vec<Expect>,
}

impl Step {
    fn header(mut self, name: &str, value: &str) -> Self {
        if let Action::Api(req) = &mut self.action {
            req.headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    fn json(self, body: Value) -> Self {
        self.raw("application/json", body.to_string().into_bytes())
    }

    fn raw(mut self, content_type: &str, body: Vec<u8>) -> Self {
        if let Action::Api(req) = &mut self.action {
            req.headers
                .push(("Content-Type".to_owned(), content_type.to_owned()));
            req.body = body;
        }
        self
    }

    fn expect(mut self, e: Expect) -> Self {
        self.expect.push(e);
        self
    }

    fn who(mut self, who: Who) -> Self {
        self.who = who;
        self
    }
}

/// The script, built section by section.
struct Script {
    steps: Vec<Step>,
    section: &'static str,
}

impl Script {
    fn section(&mut self, name: &'static str) {
        self.section = name;
    }

    fn push(&mut self, label: &str, who: Who, action: Action) -> Step {
        assert!(
            self.steps.iter().all(|s| s.label != label),
            "step label {label} used twice"
        );
        Step {
            section: self.section,
            label: label.to_owned(),
            who,
            action,
            expect: Vec::new(),
        }
    }

    /// A request (by `Who::Bound` unless `f` says `.who(...)`), shaped by `f`.
    fn add(&mut self, label: &str, method: &str, target: &str, f: impl FnOnce(Step) -> Step) {
        let step = self.push(
            label,
            Who::Bound,
            Action::Api(HttpRequest::new(method, target)),
        );
        self.steps.push(f(step));
    }

    fn template_check(&mut self, label: &str) {
        let step = self.push(label, Who::Anon, Action::TemplateHasDefaultRoute);
        self.steps.push(step);
    }

    fn direct(
        &mut self,
        label: &str,
        ticket: &str,
        pointer: &'static str,
        body: &[u8],
        expect: Option<&[u8]>,
    ) {
        let action = Action::Direct {
            ticket: ticket.to_owned(),
            pointer,
            body: body.to_vec(),
            expect: expect.map(<[u8]>::to_vec),
        };
        let step = self.push(label, Who::Anon, action);
        self.steps.push(step);
    }
}

/// The placeholder of the `n`th value of `kind` first answered by step `label`; each side
/// substitutes its own real value into later requests.
fn id(kind: &str, label: &str, n: usize) -> String {
    format!("<{kind}@{label}#{n}>")
}

const FILES: &str = "/v1/host/workspace/files";

fn file_url(path: &str) -> String {
    format!("{FILES}/{path}")
}

/// Deterministic pseudo-random bytes.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// About 1 MB of UTF-8 text (under maxFileBytes and the artifact limit).
fn large_text() -> Vec<u8> {
    let line = "lorem ipsum dolor sit amet, \u{fc}n\u{ef}c\u{f6}d\u{e9} \u{2713} \u{1f600}\n";
    let mut text = String::new();
    while text.len() + line.len() <= 1_000_000 {
        text.push_str(line);
    }
    text.into_bytes()
}

/// Content types and byte patterns every body-returning route is tried with.
fn patterns() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    vec![
        (
            "utf8-bom",
            "text/plain",
            b"\xEF\xBB\xBFwith a byte-order mark\n".to_vec(),
        ),
        (
            "latin1",
            "text/plain; charset=iso-8859-1",
            b"caf\xE9 cr\xE8me br\xFBl\xE9e\n".to_vec(),
        ),
        (
            "invalid-utf8",
            "text/plain",
            b"invalid \xFF\xFE \xC3( utf-8\n".to_vec(),
        ),
        (
            "nul",
            "text/markdown",
            b"nul \0 inside \0\0 text\n".to_vec(),
        ),
        ("empty", "text/plain", Vec::new()),
        ("octets", "application/octet-stream", noise(4096, 1)),
        ("large", "application/octet-stream", noise(1_000_000, 2)),
        (
            "json-utf16",
            "application/json; charset=utf-16",
            br#"{"declared":"utf-16","bytes":"utf-8"}"#.to_vec(),
        ),
        (
            "utf8-plain",
            "text/plain; charset=utf-8",
            "h\u{e9}llo w\u{f6}rld \u{2713}\n".as_bytes().to_vec(),
        ),
        ("large-text", "text/markdown", large_text()),
    ]
}

fn mcp(method: &str, id: u64, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn tool(id: u64, name: &str, args: Value) -> Value {
    mcp("tools/call", id, json!({"name": name, "arguments": args}))
}

#[allow(clippy::too_many_lines)]
fn script() -> Vec<Step> {
    let mut s = Script {
        steps: Vec::new(),
        section: "",
    };
    let mcp_headers = |st: Step| {
        st.header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
    };

    s.section("contract: health and discovery");
    for (label, target) in [
        ("health", "/health"),
        ("discovery", "/.well-known/openwop"),
        ("capabilities", "/v1/host/capabilities"),
        ("mcp-health", "/mcp/health"),
        ("openapi", "/openapi.json"),
    ] {
        s.add(label, "GET", target, |st| {
            st.who(Who::Anon).expect(Expect::Status(200))
        });
    }

    s.section("contract: files");
    let today = file_url("notes/today.md");
    s.add("put-v1", "PUT", &today, |st| {
        st.json(json!({"content": "hello", "contentType": "text/markdown"}))
            .expect(Expect::Status(200))
    });
    s.add("get-v1", "GET", &today, |st| {
        st.expect(Expect::FileContent(b"hello".to_vec()))
    });
    s.add("list", "GET", &format!("{FILES}?prefix=notes/"), |st| {
        st.header("Cookie", "theme=dark; session=abc")
    });
    s.add("put-v2-if-match", "PUT", &today, |st| {
        st.header("If-Match", &id("etag", "put-v1", 1))
            .json(json!({"content": "hello again"}))
            .expect(Expect::Status(200))
    });
    s.add("put-stale-if-match", "PUT", &today, |st| {
        st.header("If-Match", &id("etag", "put-v1", 1))
            .json(json!({"content": "lost"}))
            .expect(Expect::Envelope(409, "workspace_conflict"))
    });
    s.add("put-if-none-match-existing", "PUT", &today, |st| {
        st.header("If-None-Match", "*")
            .json(json!({"content": "lost"}))
            .expect(Expect::Envelope(409, "workspace_conflict"))
    });
    s.add(
        "put-if-none-match-new",
        "PUT",
        &file_url("notes/other.md"),
        |st| {
            st.header("If-None-Match", "*")
                .json(json!({"content": "other"}))
                .expect(Expect::Status(200))
        },
    );
    for label in ["put-idempotent-1", "put-idempotent-2"] {
        s.add(label, "PUT", &file_url("notes/idem.md"), |st| {
            st.header("Idempotency-Key", "parity-key-1")
                .json(json!({"content": "once"}))
                .expect(Expect::Status(200))
        });
    }
    s.add(
        "get-version-1",
        "GET",
        &format!("{today}?version=1"),
        |st| st.expect(Expect::FileContent(b"hello".to_vec())),
    );
    s.add(
        "get-version-bad",
        "GET",
        &format!("{today}?version=abc"),
        |st| st.expect(Expect::Envelope(400, "validation_error")),
    );
    s.add(
        "versions",
        "GET",
        "/v1/host/workspace/versions/notes/today.md",
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "diff",
        "GET",
        "/v1/host/workspace/diff/notes/today.md?from=1&to=2",
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "restore",
        "POST",
        "/v1/host/workspace/versions/notes/today.md",
        |st| st.json(json!({"restore": 1})).expect(Expect::Status(200)),
    );
    // Erasing history needs workspace:admin, which these keys do not hold.
    s.add(
        "erase-not-admin",
        "DELETE",
        "/v1/host/workspace/versions/notes/today.md/1",
        |st| st.expect(Expect::Envelope(403, "forbidden")),
    );
    s.add("list-page-1", "GET", &format!("{FILES}?limit=1"), |st| st);
    s.add(
        "list-page-2",
        "GET",
        &format!(
            "{FILES}?limit=1&nextToken={}",
            id("nextToken", "list-page-1", 1)
        ),
        |st| st,
    );
    s.add(
        "list-repeated-param",
        "GET",
        &format!("{FILES}?prefix=notes/&prefix=x/"),
        |st| st,
    );
    s.add(
        "delete-stale-if-match",
        "DELETE",
        &file_url("notes/other.md"),
        |st| {
            st.header("If-Match", "\"1-0000\"")
                .expect(Expect::Envelope(409, "workspace_conflict"))
        },
    );
    s.add("delete", "DELETE", &file_url("notes/other.md"), |st| {
        st.expect(Expect::Status(204))
    });
    s.add("get-deleted", "GET", &file_url("notes/other.md"), |st| {
        st.expect(Expect::Envelope(404, "not_found"))
    });
    s.add(
        "delete-again",
        "DELETE",
        &file_url("notes/other.md"),
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );
    s.add("recreate", "PUT", &file_url("notes/other.md"), |st| {
        st.json(json!({"content": "new lineage"}))
            .expect(Expect::Status(200))
    });
    s.add("list-after", "GET", FILES, |st| st);

    s.section("contract: snapshots");
    s.add(
        "snapshot-create",
        "POST",
        "/v1/host/workspace/snapshots",
        |st| st.json(json!({})).expect(Expect::Status(201)),
    );
    let snap = id("snapshotId", "snapshot-create", 1);
    s.add(
        "snapshot-get",
        "GET",
        &format!("/v1/host/workspace/snapshots/{snap}"),
        |st| st.expect(Expect::Status(200)),
    );
    s.add("snapshot-write-after", "PUT", &today, |st| {
        st.json(json!({"content": "after the snapshot"}))
    });
    s.add(
        "snapshot-list",
        "GET",
        &format!("{FILES}?snapshot={snap}"),
        |st| st,
    );
    s.add(
        "snapshot-read",
        "GET",
        &format!("{today}?snapshot={snap}"),
        |st| st.expect(Expect::FileContent(b"hello".to_vec())),
    );
    s.add(
        "snapshot-list-all",
        "GET",
        "/v1/host/workspace/snapshots",
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "snapshot-rollback-none",
        "POST",
        &format!("/v1/host/workspace/snapshots/{snap}/restore"),
        |st| {
            st.json(json!({"paths": ["nothing/**"]}))
                .expect(Expect::Status(200))
        },
    );
    // A rollback that changes a file: notes/today.md was written after the snapshot, so
    // it is restored from the snapshot's version (its body read, a new version written).
    s.add(
        "snapshot-rollback-notes",
        "POST",
        &format!("/v1/host/workspace/snapshots/{snap}/restore"),
        |st| {
            st.json(json!({"paths": ["notes/**"]}))
                .expect(Expect::Status(200))
        },
    );
    s.add("snapshot-rolled-back", "GET", &today, |st| {
        st.expect(Expect::FileContent(b"hello".to_vec()))
    });
    s.add(
        "snapshot-delete",
        "DELETE",
        &format!("/v1/host/workspace/snapshots/{snap}"),
        |st| st.expect(Expect::Status(204)),
    );
    // A kept checkpoint holds its own copies of the bodies; a rollback to it after a bad
    // run; deleting it removes the copies.
    s.add(
        "checkpoint-create",
        "POST",
        "/v1/host/workspace/snapshots",
        |st| {
            st.json(json!({"label": "before the run", "keep": true}))
                .expect(Expect::Status(201))
        },
    );
    let checkpoint = id("snapshotId", "checkpoint-create", 1);
    s.add("checkpoint-bad-run", "PUT", &today, |st| {
        st.json(json!({"content": "a bad run wrote this"}))
            .expect(Expect::Status(200))
    });
    s.add(
        "checkpoint-bad-run-junk",
        "PUT",
        &file_url("notes/junk.md"),
        |st| {
            st.json(json!({"content": "and this"}))
                .expect(Expect::Status(200))
        },
    );
    s.add(
        "checkpoint-rollback",
        "POST",
        &format!("/v1/host/workspace/snapshots/{checkpoint}/restore"),
        |st| {
            st.header("Idempotency-Key", "parity-rollback-1")
                .json(json!({}))
                .expect(Expect::Status(200))
        },
    );
    s.add("checkpoint-rolled-back", "GET", &today, |st| {
        st.expect(Expect::FileContent(b"hello".to_vec()))
    });
    s.add(
        "checkpoint-junk-gone",
        "GET",
        &file_url("notes/junk.md"),
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );
    s.add(
        "checkpoint-read",
        "GET",
        &format!("{today}?snapshot={checkpoint}"),
        |st| st.expect(Expect::FileContent(b"hello".to_vec())),
    );
    s.add(
        "checkpoint-delete",
        "DELETE",
        &format!("/v1/host/workspace/snapshots/{checkpoint}"),
        |st| st.expect(Expect::Status(204)),
    );
    s.add(
        "checkpoint-gone",
        "GET",
        &format!("/v1/host/workspace/snapshots/{checkpoint}"),
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );
    s.add(
        "snapshot-gone",
        "GET",
        &format!("/v1/host/workspace/snapshots/{snap}"),
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );

    s.section("contract: change log");
    s.add(
        "changes",
        "GET",
        "/v1/host/workspace/changes?limit=3",
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "changes-bad",
        "GET",
        "/v1/host/workspace/changes?since=yesterday",
        |st| st.expect(Expect::Envelope(400, "validation_error")),
    );

    s.section("contract: memory tool");
    s.add("memory-create", "POST", "/v1/host/workspace/memory", |st| {
        st.json(
            json!({"command": "create", "path": "/memories/parity.md", "file_text": "one\ntwo\n"}),
        )
        .expect(Expect::Status(200))
    });
    s.add("memory-edit", "POST", "/v1/host/workspace/memory", |st| {
        st.json(json!({"command": "str_replace", "path": "/memories/parity.md", "old_str": "two", "new_str": "2"}))
    });
    s.add("memory-view", "POST", "/v1/host/workspace/memory", |st| {
        st.json(json!({"command": "view", "path": "/memories"}))
    });
    s.add("memory-escape", "POST", "/v1/host/workspace/memory", |st| {
        st.json(json!({"command": "view", "path": "/memories/%2e%2e/x"}))
    });

    s.section("contract: run records");
    s.add("run-create", "POST", "/v1/runs", |st| {
        st.json(json!({"workflowId": "parity-noop"}))
            .expect(Expect::Status(201))
    });
    let run = id("runId", "run-create", 1);
    s.add("run-write-after", "PUT", &today, |st| {
        st.json(json!({"content": "after the run"}))
    });
    s.add("run-get", "GET", &format!("/v1/runs/{run}"), |st| {
        st.expect(Expect::Status(200))
    });
    s.add("run-list", "GET", "/v1/runs?limit=5", |st| {
        st.expect(Expect::Status(200))
    });
    s.add("run-bad-body", "POST", "/v1/runs", |st| {
        st.json(json!({"workflow": "x"}))
            .expect(Expect::Envelope(400, "validation_error"))
    });
    s.add(
        "run-unknown",
        "GET",
        "/v1/runs/run_0000000000000_0000000000000000",
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );

    s.section("contract: two-step upload");
    s.add("upload-start", "POST", "/v1/host/workspace/uploads", |st| {
        st.json(json!({
            "path": "up/big.bin",
            "size": 11,
            "sha256": "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
            "contentType": "application/octet-stream",
        }))
        .expect(Expect::Status(201))
    });
    s.direct("upload-bytes", "upload-start", "", b"hello world", None);
    s.add("upload-commit", "PUT", &file_url("up/big.bin"), |st| {
        st.json(json!({"uploadId": id("uploadId", "upload-start", 1)}))
            .expect(Expect::Status(200))
    });
    s.add("upload-read", "GET", &file_url("up/big.bin"), |st| {
        st.expect(Expect::FileContent(b"hello world".to_vec()))
    });
    s.add(
        "upload-start-bad",
        "POST",
        "/v1/host/workspace/uploads",
        |st| {
            st.json(json!({"path": "up/x.bin", "size": 1}))
                .expect(Expect::Envelope(400, "validation_error"))
        },
    );

    s.section("contract: a file over maxFileBytes (upload, download URL)");
    let huge = noise(1_200_000, 4);
    s.add(
        "huge-upload-start",
        "POST",
        "/v1/host/workspace/uploads",
        |st| {
            st.json(json!({
                "path": "up/huge.bin",
                "size": huge.len(),
                "sha256": sha256_hex(&huge),
                "contentType": "application/octet-stream",
            }))
            .expect(Expect::Status(201))
        },
    );
    s.direct("huge-upload-bytes", "huge-upload-start", "", &huge, None);
    s.add("huge-commit", "PUT", &file_url("up/huge.bin"), |st| {
        st.json(json!({"uploadId": id("uploadId", "huge-upload-start", 1)}))
            .expect(Expect::Status(200))
    });
    s.add("huge-get", "GET", &file_url("up/huge.bin"), |st| {
        st.expect(Expect::Status(200))
    });
    s.direct("huge-download", "huge-get", "/download", b"", Some(&huge));

    s.section("contract: blob, cache, presign");
    let blob = "/v1/host/blob/default/b/one.bin";
    let octets = noise(300, 3);
    s.add("blob-put", "PUT", blob, |st| {
        st.raw("application/octet-stream", octets.clone())
            .expect(Expect::Status(200))
    });
    s.add("blob-get", "GET", blob, |st| {
        st.expect(Expect::Body(octets.clone()))
            .expect(Expect::ContentType("application/octet-stream".into()))
    });
    s.add(
        "blob-list",
        "GET",
        "/v1/host/blob/default?prefix=b/",
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "blob-list-page",
        "GET",
        "/v1/host/blob/default?limit=1",
        |st| st,
    );
    s.add(
        "blob-presign-get",
        "POST",
        "/v1/host/blob/default/presign",
        |st| {
            st.json(json!({"key": "b/one.bin", "method": "GET", "expiresInSeconds": 60}))
                .expect(Expect::Status(200))
        },
    );
    s.direct(
        "blob-presigned-fetch",
        "blob-presign-get",
        "",
        b"",
        Some(&octets),
    );
    s.add(
        "blob-presign-bad",
        "POST",
        "/v1/host/blob/default/presign",
        |st| {
            st.json(json!({"key": "b/one.bin"}))
                .expect(Expect::Envelope(400, "validation_error"))
        },
    );
    s.add("blob-unknown-bucket", "GET", "/v1/host/blob/nope/x", |st| {
        st
    });
    s.add("blob-delete", "DELETE", blob, |st| {
        st.expect(Expect::Status(204))
    });
    s.add("blob-get-deleted", "GET", blob, |st| st);
    s.add("cache-put", "PUT", "/v1/host/cache/weather-berlin", |st| {
        st.json(json!({"value": {"tempC": 21, "note": "caf\u{e9}"}, "ttlSeconds": 300}))
            .expect(Expect::Status(200))
    });
    s.add("cache-get", "GET", "/v1/host/cache/weather-berlin", |st| {
        st.expect(Expect::Status(200))
    });
    s.add(
        "cache-put-bad",
        "PUT",
        "/v1/host/cache/weather-berlin",
        |st| {
            st.json(json!({"value": 1}))
                .expect(Expect::Envelope(400, "validation_error"))
        },
    );
    s.add(
        "cache-delete",
        "DELETE",
        "/v1/host/cache/weather-berlin",
        |st| st.expect(Expect::Status(204)),
    );
    s.add("cache-miss", "GET", "/v1/host/cache/weather-berlin", |st| {
        st
    });

    s.section("contract: workspaces, artifacts, sessions");
    s.add("ws-create", "POST", "/workspaces", |st| {
        st.json(json!({"workspaceScope": "general"}))
            .expect(Expect::Status(201))
    });
    s.add("ws-create-local", "POST", "/workspaces", |st| {
        st.json(json!({"workspaceScope": "local", "localPath": "/home/u/agent"}))
            .expect(Expect::Status(201))
    });
    s.add("ws-create-local-again", "POST", "/workspaces", |st| {
        st.json(json!({"workspaceScope": "local", "localPath": "/home/u/agent"}))
            .expect(Expect::Status(200))
    });
    s.add("ws-create-bad", "POST", "/workspaces", |st| {
        st.json(json!({"workspaceScope": "moon"}))
            .expect(Expect::Envelope(400, "validation_error"))
    });
    s.add("ws-list", "GET", "/workspaces", |st| {
        st.expect(Expect::Status(200))
    });
    let ws = id("workspaceId", "ws-create", 1);
    s.add("ws-get", "GET", &format!("/workspaces/{ws}"), |st| {
        st.expect(Expect::Status(200))
    });
    s.add("ws-get-unknown", "GET", "/workspaces/ws-nope", |st| {
        st.expect(Expect::Envelope(404, "not_found"))
    });
    s.add(
        "artifact-upload",
        "POST",
        &format!("/workspaces/{ws}/artifacts"),
        |st| {
            st.json(json!({
                "sessionId": "sess-1", "taskId": "task-1", "artifactType": "tool_output",
                "artifactName": "pytest.log", "contentType": "text/plain",
                "contentBase64": b64::encode(b"12 passed, 0 failed\n"),
            }))
            .expect(Expect::Status(201))
        },
    );
    s.add(
        "artifact-history",
        "POST",
        &format!("/workspaces/{ws}/artifacts"),
        |st| {
            st.json(json!({
                "sessionId": "sess-1", "artifactType": "session_history",
                "messages": [
                    {"role": "user", "content": "run the tests", "timestamp": "2026-11-22T09:00:00Z", "messageId": "m1"},
                    {"role": "assistant", "content": "12 passed", "timestamp": "2026-11-22T09:00:05Z", "messageId": "m2"},
                ],
            }))
            .expect(Expect::Status(201))
        },
    );
    s.add(
        "artifact-list",
        "GET",
        &format!("/workspaces/{ws}/artifacts"),
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "artifact-get",
        "GET",
        &format!(
            "/workspaces/{ws}/artifacts/{}",
            id("artifactId", "artifact-upload", 1)
        ),
        |st| {
            st.expect(Expect::Body(b"12 passed, 0 failed\n".to_vec()))
                .expect(Expect::ContentType("text/plain".into()))
        },
    );
    s.add(
        "artifact-get-history",
        "GET",
        &format!(
            "/workspaces/{ws}/artifacts/{}",
            id("artifactId", "artifact-history", 1)
        ),
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "sessions",
        "GET",
        &format!("/workspaces/{ws}/sessions"),
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "session-history",
        "GET",
        &format!("/workspaces/{ws}/sessions/sess-1/history"),
        |st| st.expect(Expect::Status(200)),
    );
    // A session's history replaced: the new artifact in, the old one's item out.
    s.add(
        "artifact-history-again",
        "POST",
        &format!("/workspaces/{ws}/artifacts"),
        |st| {
            st.json(json!({
                "sessionId": "sess-1", "artifactType": "session_history",
                "messages": [
                    {"role": "user", "content": "run them again", "timestamp": "2026-11-22T09:01:00Z", "messageId": "m3"},
                ],
            }))
            .expect(Expect::Status(201))
        },
    );
    s.add(
        "session-history-replaced",
        "GET",
        &format!("/workspaces/{ws}/sessions/sess-1/history"),
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "artifact-history-replaced",
        "GET",
        &format!(
            "/workspaces/{ws}/artifacts/{}",
            id("artifactId", "artifact-history", 1)
        ),
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );
    s.add(
        "ws-foreign-tenant",
        "GET",
        &format!("/workspaces/{ws}"),
        |st| {
            st.who(Who::Other)
                .expect(Expect::Envelope(404, "not_found"))
        },
    );
    s.add(
        "ws-names-other-tenant",
        "GET",
        "/workspaces?tenantId=globex",
        |st| st.expect(Expect::Envelope(403, "forbidden")),
    );

    s.section("contract: mcp");
    s.add("mcp-initialize", "POST", "/mcp", |st| {
        mcp_headers(st)
            .json(mcp(
                "initialize",
                1,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "parity", "version": "1"}}),
            ))
            .expect(Expect::Status(200))
    });
    s.add("mcp-initialized", "POST", "/mcp", |st| {
        mcp_headers(st).json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    });
    s.add("mcp-tools-list", "POST", "/mcp", |st| {
        mcp_headers(st).json(mcp("tools/list", 2, json!({})))
    });
    s.add("mcp-write", "POST", "/mcp", |st| {
        mcp_headers(st).json(tool(
            3,
            "write_file",
            json!({"path": "mcp/agent.md", "content": "written by an agent\n"}),
        ))
    });
    s.add("mcp-read", "POST", "/mcp", |st| {
        mcp_headers(st).json(tool(4, "read_file", json!({"path": "mcp/agent.md"})))
    });
    s.add("mcp-list-dir", "POST", "/mcp", |st| {
        mcp_headers(st).json(tool(5, "list_directory", json!({"path": "/workspace"})))
    });
    s.add("mcp-file-info", "POST", "/mcp", |st| {
        mcp_headers(st).json(tool(6, "get_file_info", json!({"path": "mcp/agent.md"})))
    });
    s.add("mcp-bad-json", "POST", "/mcp", |st| {
        mcp_headers(st).raw("application/json", b"{not json".to_vec())
    });
    // MCP's DNS-rebinding rule: a browser Origin outside the allow-list is 403 before
    // anything else; the allowed one and none (every other step) are served.
    s.add("mcp-origin-foreign", "POST", "/mcp", |st| {
        mcp_headers(st)
            .header("Origin", "http://evil.example.com")
            .json(mcp("ping", 8, json!({})))
            .expect(Expect::Envelope(403, "origin_forbidden"))
    });
    s.add("mcp-origin-foreign-stream", "GET", "/mcp", |st| {
        st.header("Origin", "http://evil.example.com")
            .expect(Expect::Envelope(403, "origin_forbidden"))
    });
    s.add("mcp-origin-allowed", "POST", "/mcp", |st| {
        mcp_headers(st)
            .header("Origin", MCP_ORIGIN)
            .json(mcp("ping", 9, json!({})))
            .expect(Expect::Status(200))
    });
    s.add("mcp-resources-templates", "POST", "/mcp", |st| {
        mcp_headers(st).json(mcp("resources/templates/list", 10, json!({})))
    });
    s.add("mcp-resources-read", "POST", "/mcp", |st| {
        mcp_headers(st).json(mcp(
            "resources/read",
            11,
            json!({"uri": "workspace:///mcp/agent.md"}),
        ))
    });
    s.add("mcp-complete-path", "POST", "/mcp", |st| {
        mcp_headers(st).json(mcp(
            "completion/complete",
            12,
            json!({"ref": {"type": "ref/resource", "uri": "workspace:///{+path}"},
                   "argument": {"name": "path", "value": "mcp/"}}),
        ))
    });
    s.add("mcp-bad-version", "POST", "/mcp", |st| {
        st.header("MCP-Protocol-Version", "1999-01-01")
            .json(mcp("tools/list", 7, json!({})))
    });
    s.add("mcp-read-after", "GET", &file_url("mcp/agent.md"), |st| {
        st.expect(Expect::FileContent(b"written by an agent\n".to_vec()))
    });

    s.section("contract: errors");
    for (label, path) in [
        ("path-double-slash", "a//b.md"),
        ("path-dot-dot", "a/../b.md"),
        ("path-dot", "a/./b.md"),
        ("path-encoded-dot-dot", "%2e%2e/secret.md"),
        ("path-encoded-traversal", "a/..%2Fb.md"),
        ("path-trailing-slash", "notes/"),
        ("path-leading-dot", ".hidden"),
        ("path-nul", "a%00b.md"),
        ("path-backslash", "a%5Cb.md"),
        ("path-fullwidth-dot", "a/%EF%BC%8E%EF%BC%8E/b.md"),
    ] {
        s.add(label, "PUT", &file_url(path), |st| {
            st.json(json!({"content": "x"}))
                .expect(Expect::Envelope(400, "validation_error"))
        });
    }
    s.add("put-bad-json", "PUT", &file_url("notes/bad.md"), |st| {
        st.raw("application/json", b"{\"content\": ".to_vec())
            .expect(Expect::Envelope(400, "validation_error"))
    });
    s.add(
        "put-both-contents",
        "PUT",
        &file_url("notes/bad.md"),
        |st| {
            st.json(json!({"content": "a", "contentBase64": "YQ=="}))
                .expect(Expect::Envelope(400, "validation_error"))
        },
    );
    s.add(
        "put-long-if-match",
        "PUT",
        &file_url("notes/bad.md"),
        |st| {
            st.header("If-Match", &format!("\"{}\"", "a".repeat(300)))
                .json(json!({"content": "a"}))
                .expect(Expect::Envelope(400, "validation_error"))
        },
    );
    s.add("get-missing", "GET", &file_url("notes/missing.md"), |st| {
        st.expect(Expect::Envelope(404, "not_found"))
    });
    s.add("cross-tenant-get", "GET", &today, |st| {
        st.who(Who::Other)
            .expect(Expect::Envelope(404, "not_found"))
    });
    s.add("cross-tenant-list", "GET", FILES, |st| st.who(Who::Other));
    s.add("bound-names-other-workspace", "GET", FILES, |st| {
        st.header("X-Workspace-Id", "other")
            .expect(Expect::Envelope(403, "forbidden"))
    });
    s.add(
        "snapshot-unknown",
        "GET",
        "/v1/host/workspace/snapshots/nope",
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );

    s.section("contract: console");
    // The web console as a browser loads it (no credential): the page, an asset of this
    // build, the asset again as a cache revalidation, an unknown asset, and `/console/`,
    // which no route matches (the `$default` route's function redirects it).
    let page = workspace_console::page();
    let js = workspace_console::asset("app.js").expect("app.js is compiled in");
    let browser = |st: Step| st.who(Who::Anon).header("Accept", "text/html,*/*;q=0.8");
    s.add("console-page", "GET", workspace_console::PAGE, |st| {
        browser(st)
            .expect(Expect::Status(200))
            .expect(Expect::ContentType(page.content_type.to_owned()))
            .expect(Expect::Body(page.bytes.to_vec()))
    });
    s.add("console-page-index", "GET", "/console/index.html", |st| {
        browser(st)
            .expect(Expect::Status(200))
            .expect(Expect::Body(page.bytes.to_vec()))
    });
    let app_js = format!("/console/assets/{}/app.js", workspace_console::BUILD);
    s.add("console-asset", "GET", &app_js, |st| {
        browser(st)
            .expect(Expect::Status(200))
            .expect(Expect::ContentType(js.content_type.to_owned()))
            .expect(Expect::Body(js.bytes.to_vec()))
    });
    s.add("console-asset-not-modified", "GET", &app_js, |st| {
        browser(st)
            .header("If-None-Match", js.etag)
            .expect(Expect::Status(304))
            .expect(Expect::Body(Vec::new()))
    });
    s.add(
        "console-asset-unknown",
        "GET",
        &format!("/console/assets/{}/nope.js", workspace_console::BUILD),
        |st| browser(st).expect(Expect::Envelope(404, "not_found")),
    );
    s.add(
        "console-asset-other-build",
        "GET",
        "/console/assets/000000000000/app.js",
        |st| browser(st).expect(Expect::Envelope(404, "not_found")),
    );
    s.add("console-trailing-slash", "GET", "/console/", |st| {
        browser(st).expect(Expect::Envelope(308, "moved"))
    });

    s.section("corpus: content types and byte patterns");
    for (name, ct, bytes) in patterns() {
        let blob = format!("/v1/host/blob/default/corpus/{name}");
        s.add(&format!("corpus-blob-put-{name}"), "PUT", &blob, |st| {
            st.raw(ct, bytes.clone())
        });
        s.add(&format!("corpus-blob-get-{name}"), "GET", &blob, |st| {
            st.expect(Expect::Body(bytes.clone()))
                .expect(Expect::ContentType(ct.to_owned()))
        });
        // Artifacts are text (redacted before storage): other bytes are refused.
        let utf8 = std::str::from_utf8(&bytes).is_ok();
        let put = format!("corpus-artifact-put-{name}");
        s.add(&put, "POST", &format!("/workspaces/{ws}/artifacts"), |st| {
            let st = st.json(json!({
                "sessionId": "corpus", "artifactType": "tool_output", "artifactName": name,
                "contentType": ct, "contentBase64": b64::encode(&bytes),
            }));
            if utf8 {
                st.expect(Expect::Status(201))
            } else {
                st.expect(Expect::Envelope(400, "validation_error"))
            }
        });
        if utf8 {
            s.add(
                &format!("corpus-artifact-get-{name}"),
                "GET",
                &format!("/workspaces/{ws}/artifacts/{}", id("artifactId", &put, 1)),
                |st| {
                    st.expect(Expect::Body(bytes.clone()))
                        .expect(Expect::ContentType(ct.to_owned()))
                },
            );
        }
        let file = file_url(&format!("corpus/{name}.bin"));
        s.add(&format!("corpus-file-put-b64-{name}"), "PUT", &file, |st| {
            st.json(json!({"contentBase64": b64::encode(&bytes), "contentType": ct}))
        });
        s.add(&format!("corpus-file-get-b64-{name}"), "GET", &file, |st| {
            st.expect(Expect::FileContent(bytes.clone()))
        });
        s.add(&format!("corpus-mcp-read-{name}"), "POST", "/mcp", |st| {
            mcp_headers(st).json(tool(
                8,
                "read_file",
                json!({"path": format!("corpus/{name}.bin")}),
            ))
        });
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let file = file_url(&format!("corpus/{name}.txt"));
            s.add(
                &format!("corpus-file-put-text-{name}"),
                "PUT",
                &file,
                |st| st.json(json!({"content": text, "contentType": ct})),
            );
            s.add(
                &format!("corpus-file-get-text-{name}"),
                "GET",
                &file,
                |st| st.expect(Expect::FileContent(bytes.clone())),
            );
        }
    }
    // JSON values with a BOM, NUL and other control characters, through the cache.
    let odd = "\u{feff}bom, nul \u{0}, bell \u{7}, caf\u{e9}, \u{1f600}, \u{2028}";
    s.add(
        "corpus-cache-put-odd",
        "PUT",
        "/v1/host/cache/odd-text",
        |st| {
            st.json(json!({"value": {"text": odd, "list": [odd, 1.5, null]}, "ttlSeconds": 60}))
                .expect(Expect::Status(200))
        },
    );
    s.add(
        "corpus-cache-get-odd",
        "GET",
        "/v1/host/cache/odd-text",
        |st| st.expect(Expect::Status(200)),
    );
    s.add(
        "corpus-list",
        "GET",
        &format!("{FILES}?prefix=corpus/"),
        |st| st,
    );
    s.add(
        "corpus-blob-list",
        "GET",
        "/v1/host/blob/default?prefix=corpus/",
        |st| st,
    );

    s.section("issue-14.1 byte-exact bodies from the functions");
    for (name, ct, bytes) in [
        (
            "bom",
            "text/plain",
            b"\xEF\xBB\xBFa text blob with a BOM\n".to_vec(),
        ),
        (
            "latin1",
            "text/plain; charset=iso-8859-1",
            b"na\xEFve caf\xE9\n".to_vec(),
        ),
        (
            "invalid",
            "text/plain",
            b"bad \xC0\xAF bytes \xFF\n".to_vec(),
        ),
    ] {
        let blob = format!("/v1/host/blob/default/issue1/{name}.txt");
        s.add(&format!("i1-blob-put-{name}"), "PUT", &blob, |st| {
            st.raw(ct, bytes.clone()).expect(Expect::Status(200))
        });
        s.add(&format!("i1-blob-get-{name}"), "GET", &blob, |st| {
            st.expect(Expect::Body(bytes.clone()))
                .expect(Expect::ContentType(ct.to_owned()))
        });
    }
    let bom_text = b"\xEF\xBB\xBFa text artifact with a BOM\n".to_vec();
    s.add(
        "i1-artifact-put-bom",
        "POST",
        &format!("/workspaces/{ws}/artifacts"),
        |st| {
            st.json(json!({
                "sessionId": "issue1", "artifactType": "tool_output", "artifactName": "bom.log",
                "contentType": "text/plain", "contentBase64": b64::encode(&bom_text),
            }))
            .expect(Expect::Status(201))
        },
    );
    s.add(
        "i1-artifact-get-bom",
        "GET",
        &format!(
            "/workspaces/{ws}/artifacts/{}",
            id("artifactId", "i1-artifact-put-bom", 1)
        ),
        |st| st.expect(Expect::Body(bom_text.clone())),
    );
    s.add(
        "i1-presign-bom",
        "POST",
        "/v1/host/blob/default/presign",
        |st| {
            st.json(json!({"key": "issue1/bom.txt", "method": "GET", "expiresInSeconds": 60}))
                .expect(Expect::Status(200))
        },
    );
    s.direct(
        "i1-presigned-fetch-bom",
        "i1-presign-bom",
        "",
        b"",
        Some(b"\xEF\xBB\xBFa text blob with a BOM\n"),
    );

    s.section("issue-14.2 tenant-wide token names its workspace");
    s.add("i2-create", "POST", "/workspaces", |st| {
        st.who(Who::Wide)
            .json(json!({"workspaceScope": "general"}))
            .expect(Expect::Status(201))
    });
    let wide_ws = id("workspaceId", "i2-create", 1);
    s.add("i2-list-files", "GET", FILES, |st| {
        st.who(Who::Wide)
            .header("X-Workspace-Id", &wide_ws)
            .expect(Expect::Status(200))
    });
    s.add("i2-put-file", "PUT", &file_url("wide/a.md"), |st| {
        st.who(Who::Wide)
            .header("X-Workspace-Id", &wide_ws)
            .json(json!({"content": "tenant-wide"}))
            .expect(Expect::Status(200))
    });
    s.add("i2-get-file", "GET", &file_url("wide/a.md"), |st| {
        st.who(Who::Wide)
            .header("X-Workspace-Id", &wide_ws)
            .expect(Expect::FileContent(b"tenant-wide".to_vec()))
    });
    s.add("i2-cache-put", "PUT", "/v1/host/cache/wide-key", |st| {
        st.who(Who::Wide)
            .header("X-Workspace-Id", &wide_ws)
            .json(json!({"value": "v", "ttlSeconds": 60}))
            .expect(Expect::Status(200))
    });
    s.add(
        "i2-blob-put",
        "PUT",
        "/v1/host/blob/default/wide.bin",
        |st| {
            st.who(Who::Wide)
                .header("X-Workspace-Id", &wide_ws)
                .raw("application/octet-stream", b"wide".to_vec())
                .expect(Expect::Status(200))
        },
    );
    s.add(
        "i2-blob-get",
        "GET",
        "/v1/host/blob/default/wide.bin",
        |st| {
            st.who(Who::Wide)
                .header("X-Workspace-Id", &wide_ws)
                .expect(Expect::Body(b"wide".to_vec()))
        },
    );
    // A tenant-wide presign names a registered workspace (checked in the registry).
    s.add(
        "i2-blob-presign",
        "POST",
        "/v1/host/blob/default/presign",
        |st| {
            st.who(Who::Wide)
                .header("X-Workspace-Id", &wide_ws)
                .json(json!({"key": "wide.bin", "method": "GET", "expiresInSeconds": 60}))
                .expect(Expect::Status(200))
        },
    );
    s.direct(
        "i2-blob-presigned-fetch",
        "i2-blob-presign",
        "",
        b"",
        Some(b"wide"),
    );
    s.add("i2-no-header", "GET", FILES, |st| st.who(Who::Wide));
    s.add("i2-never-created", "GET", FILES, |st| {
        st.who(Who::Wide).header("X-Workspace-Id", "never-created")
    });
    s.add("i2-bound-workspace", "GET", FILES, |st| {
        st.who(Who::Wide).header("X-Workspace-Id", "main")
    });

    s.section("issue-14.3 one error shape (405, unknown routes)");
    s.template_check("i3-template-has-default-route");
    for (label, method, target) in [
        ("i3-get-mcp", "GET", "/mcp"),
        ("i3-delete-mcp", "DELETE", "/mcp"),
    ] {
        s.add(label, method, target, |st| {
            st.expect(Expect::Envelope(405, "method_not_allowed"))
        });
    }
    s.add("i3-unknown-no-token", "GET", "/v1/nope", |st| {
        st.who(Who::Anon).expect(Expect::Envelope(404, "not_found"))
    });
    for (label, target) in [
        ("i3-unknown-v1", "/v1/nope"),
        ("i3-unknown-workspace-route", "/v1/host/workspace/nope"),
        ("i3-unknown-root", "/nope"),
    ] {
        s.add(label, "GET", target, |st| {
            st.expect(Expect::Envelope(404, "not_found"))
        });
    }
    s.add("i3-post-file", "POST", &file_url("notes/today.md"), |st| {
        st.json(json!({"content": "x"}))
            .expect(Expect::Envelope(405, "method_not_allowed"))
    });
    s.add(
        "i3-patch-workspace",
        "PATCH",
        &format!("/workspaces/{ws}"),
        |st| {
            st.json(json!({}))
                .expect(Expect::Envelope(405, "method_not_allowed"))
        },
    );

    s.section("issue-14.4 duplicate If-Match headers");
    s.add("i4-put", "PUT", &file_url("dup/a.md"), |st| {
        st.json(json!({"content": "v1"}))
            .expect(Expect::Status(200))
    });
    let cur = id("etag", "i4-put", 1);
    s.add(
        "i4-put-current-and-stale",
        "PUT",
        &file_url("dup/a.md"),
        |st| {
            st.header("If-Match", &cur)
                .header("If-Match", "\"1-stale\"")
                .json(json!({"content": "v2"}))
        },
    );
    s.add("i4-put-stale-twice", "PUT", &file_url("dup/a.md"), |st| {
        st.header("If-Match", "\"1-stale\"")
            .header("If-Match", "\"2-stale\"")
            .json(json!({"content": "v2"}))
    });
    s.add("i4-delete-two", "DELETE", &file_url("dup/a.md"), |st| {
        st.header("If-Match", "\"1-stale\"")
            .header("If-Match", "\"2-stale\"")
    });
    s.add(
        "i4-two-idempotency-keys",
        "PUT",
        &file_url("dup/a.md"),
        |st| {
            st.header("Idempotency-Key", "k1")
                .header("Idempotency-Key", "k2")
                .json(json!({"content": "v3"}))
        },
    );

    s.section("issue-14.5 presigned URL expiry in whole seconds");
    s.add("i5-blob-put", "PUT", "/v1/host/blob/default/i5.bin", |st| {
        st.raw("application/octet-stream", b"i5".to_vec())
    });
    for (label, method) in [("i5-presign-get", "GET"), ("i5-presign-put", "PUT")] {
        s.add(label, "POST", "/v1/host/blob/default/presign", |st| {
            let mut body = json!({"key": "i5.bin", "method": method, "expiresInSeconds": 120});
            if method == "PUT" {
                body["contentLength"] = json!(2);
                body["contentType"] = json!("application/octet-stream");
            }
            st.json(body)
                .expect(Expect::Status(200))
                .expect(Expect::WholeSecondExpiry)
        });
    }
    // The PUT URL works: S3 takes the signed length and type (under the presign
    // function's role on AWS), and the blob reads back as sent.
    s.direct("i5-presigned-put", "i5-presign-put", "", b"I5", None);
    s.add(
        "i5-blob-get-after-put",
        "GET",
        "/v1/host/blob/default/i5.bin",
        |st| st.expect(Expect::Body(b"I5".to_vec())),
    );
    s.add(
        "i5-upload-start",
        "POST",
        "/v1/host/workspace/uploads",
        |st| {
            st.json(json!({
                "path": "i5/up.bin", "size": 2,
                "sha256": "8b2b5a3b7ba8d7e0d6e1a5d1e3c56a7b1c3c7d1e5b1f0a8c7e2d9b4f6a3c1e0d",
            }))
            .expect(Expect::Status(201))
            .expect(Expect::WholeSecondExpiry)
        },
    );
    s.add("i5-download-url", "GET", &file_url("up/huge.bin"), |st| {
        st.expect(Expect::Status(200))
            .expect(Expect::WholeSecondExpiry)
    });

    s.section("issue-14.7 encoded characters in paths");
    for (name, encoded) in [
        ("question", "a%3Fb.md"),
        ("space", "a%20b.md"),
        ("hash", "a%23b.md"),
        ("percent", "a%25b.md"),
        ("slash", "a%2Fb.md"),
    ] {
        let url = file_url(&format!("enc/{encoded}"));
        s.add(&format!("i7-put-{name}"), "PUT", &url, |st| {
            st.json(json!({"content": name}))
        });
        s.add(&format!("i7-get-{name}"), "GET", &url, |st| st);
    }
    s.add("i7-list", "GET", &format!("{FILES}?prefix=enc/"), |st| st);
    s.add(
        "i7-blob-question",
        "PUT",
        "/v1/host/blob/default/enc/a%3Fb",
        |st| st.raw("application/octet-stream", b"q".to_vec()),
    );
    s.add("i7-cache-slash", "PUT", "/v1/host/cache/a%2Fb", |st| {
        st.json(json!({"value": 1, "ttlSeconds": 60}))
    });
    // An empty file path: no route in API Gateway (a greedy parameter needs a character).
    for method in ["PUT", "GET", "DELETE"] {
        s.add(
            &format!("i7-empty-{method}"),
            method,
            &format!("{FILES}/"),
            |st| {
                st.json(json!({"content": "x"}))
                    .expect(Expect::Envelope(404, "not_found"))
            },
        );
    }

    forks(&mut s, &wide_ws);

    s.steps
}

/// Forks (docs/forks.md): one forked, written in, compared, merged and discarded; one
/// based on a snapshot older than a file's head; a workspace deleted with its live fork.
#[allow(clippy::too_many_lines)]
fn forks(s: &mut Script, wide_ws: &str) {
    const FORKS: &str = "/v1/host/workspace/forks";
    let base_md = file_url("notes/fork-base.md");
    s.section("forks: fork, write, diff, merge, discard");
    s.add("fk-seed", "PUT", &base_md, |st| {
        st.json(json!({"content": "base line 1\nbase line 2\n"}))
            .expect(Expect::Status(200))
    });
    s.add("fk-create", "POST", FORKS, |st| {
        st.json(json!({"label": "parity fork", "ttlSeconds": 3600}))
            .expect(Expect::Status(201))
    });
    let fork = id("forkId", "fk-create", 1);
    let in_fork = |st: Step| st.header("X-Workspace-Id", &fork);
    s.add("fk-list", "GET", FORKS, |st| st.expect(Expect::Status(200)));
    s.add("fk-read-inherited", "GET", &base_md, |st| {
        in_fork(st).expect(Expect::FileContent(b"base line 1\nbase line 2\n".to_vec()))
    });
    s.add("fk-write", "PUT", &base_md, |st| {
        in_fork(st)
            .json(json!({"content": "base line 1\nbase line 2, by the fork\n"}))
            .expect(Expect::Status(200))
    });
    s.add(
        "fk-write-new",
        "PUT",
        &file_url("notes/fork-new.md"),
        |st| {
            in_fork(st)
                .json(json!({"content": "only in the fork"}))
                .expect(Expect::Status(200))
        },
    );
    s.add(
        "fk-delete-inherited",
        "DELETE",
        &file_url("notes/idem.md"),
        |st| in_fork(st).expect(Expect::Status(204)),
    );
    s.add(
        "fk-parent-write",
        "PUT",
        &file_url("notes/today.md"),
        |st| {
            st.json(json!({"content": "the parent, after the fork"}))
                .expect(Expect::Status(200))
        },
    );
    s.add("fk-parent-untouched", "GET", &base_md, |st| {
        st.expect(Expect::FileContent(b"base line 1\nbase line 2\n".to_vec()))
    });
    s.add("fk-get", "GET", &format!("{FORKS}/{fork}"), |st| {
        st.expect(Expect::Status(200))
    });
    s.add("fk-diff", "GET", &format!("{FORKS}/{fork}/diff"), |st| {
        st.expect(Expect::Status(200))
    });
    s.add(
        "fk-merge-dry",
        "POST",
        &format!("{FORKS}/{fork}/merge"),
        |st| {
            st.json(json!({"strategy": "three-way", "dryRun": true}))
                .expect(Expect::Status(200))
        },
    );
    s.add("fk-merge", "POST", &format!("{FORKS}/{fork}/merge"), |st| {
        st.header("Idempotency-Key", "parity-merge-1")
            .json(json!({"strategy": "three-way"}))
            .expect(Expect::Status(200))
    });
    s.add(
        "fk-merge-replayed",
        "POST",
        &format!("{FORKS}/{fork}/merge"),
        |st| {
            st.header("Idempotency-Key", "parity-merge-1")
                .json(json!({"strategy": "three-way"}))
                .expect(Expect::Status(200))
        },
    );
    s.add("fk-merged", "GET", &base_md, |st| {
        st.expect(Expect::FileContent(
            b"base line 1\nbase line 2, by the fork\n".to_vec(),
        ))
    });
    s.add(
        "fk-merged-new",
        "GET",
        &file_url("notes/fork-new.md"),
        |st| st.expect(Expect::FileContent(b"only in the fork".to_vec())),
    );
    s.add(
        "fk-merged-deleted",
        "GET",
        &file_url("notes/idem.md"),
        |st| st.expect(Expect::Envelope(404, "not_found")),
    );
    s.add("fk-parent-kept", "GET", &file_url("notes/today.md"), |st| {
        st.expect(Expect::FileContent(b"the parent, after the fork".to_vec()))
    });
    // Both sides change one line each of the same file: a conflict, nothing applied.
    s.add("fk-conflict-fork", "PUT", &base_md, |st| {
        in_fork(st)
            .json(json!({"content": "fork wins this\n"}))
            .expect(Expect::Status(200))
    });
    s.add("fk-conflict-parent", "PUT", &base_md, |st| {
        st.json(json!({"content": "parent wins this\n"}))
            .expect(Expect::Status(200))
    });
    s.add(
        "fk-merge-conflict",
        "POST",
        &format!("{FORKS}/{fork}/merge"),
        |st| {
            st.json(json!({"strategy": "three-way"}))
                .expect(Expect::Envelope(409, "workspace_conflict"))
        },
    );
    s.add("fk-discard", "DELETE", &format!("{FORKS}/{fork}"), |st| {
        st.expect(Expect::Status(204))
    });
    s.add("fk-discarded", "GET", &format!("{FORKS}/{fork}"), |st| {
        st.expect(Expect::Envelope(404, "not_found"))
    });
    s.add("fk-discarded-files", "GET", &base_md, |st| {
        in_fork(st).expect(Expect::Envelope(404, "not_found"))
    });
    s.add("fk-parent-after-discard", "GET", &base_md, |st| {
        st.expect(Expect::FileContent(b"parent wins this\n".to_vec()))
    });

    // A fork based on a snapshot whose version of a file is no longer its head: that
    // version is pinned again for the fork, on condition that its item still exists.
    s.section("forks: based on an older snapshot");
    s.add(
        "fs-snapshot",
        "POST",
        "/v1/host/workspace/snapshots",
        |st| st.json(json!({})).expect(Expect::Status(201)),
    );
    let older = id("snapshotId", "fs-snapshot", 1);
    s.add("fs-write-after", "PUT", &base_md, |st| {
        st.json(json!({"content": "written after the snapshot\n"}))
            .expect(Expect::Status(200))
    });
    s.add("fs-create", "POST", FORKS, |st| {
        st.json(json!({"from": older, "label": "from a snapshot"}))
            .expect(Expect::Status(201))
    });
    let fork = id("forkId", "fs-create", 1);
    s.add("fs-read", "GET", &base_md, |st| {
        st.header("X-Workspace-Id", &fork)
            .expect(Expect::FileContent(b"parent wins this\n".to_vec()))
    });
    s.add("fs-discard", "DELETE", &format!("{FORKS}/{fork}"), |st| {
        st.expect(Expect::Status(204))
    });
    s.add(
        "fs-snapshot-delete",
        "DELETE",
        &format!("/v1/host/workspace/snapshots/{older}"),
        |st| st.expect(Expect::Status(204)),
    );

    // A workspace with a live fork: deleted only with ?force=true, which discards it.
    s.section("forks: a forced workspace delete");
    let wide = |st: Step| st.who(Who::Wide).header("X-Workspace-Id", wide_ws);
    s.add("fw-create", "POST", FORKS, |st| {
        wide(st)
            .json(json!({"label": "left running"}))
            .expect(Expect::Status(201))
    });
    let fork = id("forkId", "fw-create", 1);
    s.add("fw-write", "PUT", &file_url("wide/a.md"), |st| {
        st.who(Who::Wide)
            .header("X-Workspace-Id", &fork)
            .json(json!({"content": "the fork's"}))
            .expect(Expect::Status(200))
    });
    let ws_url = format!("/workspaces/{wide_ws}");
    s.add("fw-delete-refused", "DELETE", &ws_url, |st| {
        st.who(Who::Wide).expect(Expect::Status(409))
    });
    s.add(
        "fw-delete-forced",
        "DELETE",
        &format!("{ws_url}?force=true"),
        |st| st.who(Who::Wide).expect(Expect::Status(204)),
    );
    s.add("fw-gone", "GET", &ws_url, |st| {
        st.who(Who::Wide).expect(Expect::Envelope(404, "not_found"))
    });
    s.add("fw-fork-gone", "GET", &file_url("wide/a.md"), |st| {
        st.who(Who::Wide)
            .header("X-Workspace-Id", &fork)
            .expect(Expect::Envelope(404, "not_found"))
    });
}

// ----------------------------------------------------------------------- normalisation

/// JSON keys whose values are generated per store (ids, opaque tokens): each distinct value
/// gets one placeholder, the same on both sides when the sequences agree. (Any key ending
/// in `etag`, like a diff's `fromEtag`, is an etag too.)
const GENERATED: &[&str] = &[
    "workspaceId",
    "forkId",
    "parentWorkspaceId",
    "mergeId",
    "snapshotId",
    "runId",
    "uploadId",
    "artifactId",
    "etag",
    "nextToken",
    "nextCursor",
];

/// Placeholders ↔ one side's real values.
#[derive(Default)]
struct Ids {
    placeholder: HashMap<String, String>,
    real: HashMap<String, String>,
}

impl Ids {
    fn name(
        &mut self,
        real: &str,
        kind: &str,
        step: &str,
        n: &mut HashMap<String, usize>,
    ) -> String {
        if let Some(p) = self.placeholder.get(real) {
            return p.clone();
        }
        let count = n.entry(kind.to_owned()).or_insert(0);
        *count += 1;
        let p = id(kind, step, *count);
        self.placeholder.insert(real.to_owned(), p.clone());
        self.real.insert(p.clone(), real.to_owned());
        p
    }

    /// `text` with every placeholder this side knows replaced by its real value.
    fn fill(&self, text: &str) -> String {
        if !text.contains('<') {
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for (p, r) in &self.real {
            if out.contains(p.as_str()) {
                out = out.replace(p.as_str(), r);
            }
        }
        out
    }

    /// Real values (long enough not to collide with ordinary text) inside other strings,
    /// the longest first (a fork's id holds its parent's).
    fn replace_inside(&self, text: &str) -> String {
        let mut out = text.to_owned();
        let mut reals: Vec<(&String, &String)> = self
            .placeholder
            .iter()
            .filter(|(r, _)| r.len() >= 12 && text.contains(r.as_str()) && text != r.as_str())
            .collect();
        reals.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(b.0)));
        for (r, p) in reals {
            if out.contains(r.as_str()) && out != *r {
                out = out.replace(r.as_str(), p);
            }
        }
        out
    }
}

/// A placeholder left in `text` (one this side never saw).
fn unfilled(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        let candidate = &rest[open..];
        if let Some(close) = candidate.find('>') {
            let inner = &candidate[1..close];
            if inner.contains('@') && inner.contains('#') && !inner.contains(char::is_whitespace) {
                return Some(&candidate[..=close]);
            }
        }
        rest = &rest[open + 1..];
    }
    None
}

/// Whether `s` starts with an RFC 3339 UTC/offset timestamp; its length.
fn timestamp_len(s: &[u8]) -> Option<usize> {
    let digits =
        |r: std::ops::Range<usize>| s.get(r).is_some_and(|b| b.iter().all(u8::is_ascii_digit));
    let at = |i: usize, c: u8| s.get(i) == Some(&c);
    if !(digits(0..4)
        && at(4, b'-')
        && digits(5..7)
        && at(7, b'-')
        && digits(8..10)
        && at(10, b'T')
        && digits(11..13)
        && at(13, b':')
        && digits(14..16)
        && at(16, b':')
        && digits(17..19))
    {
        return None;
    }
    let mut i = 19;
    if at(i, b'.') {
        i += 1;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if at(i, b'Z') {
        return Some(i + 1);
    }
    if (at(i, b'+') || at(i, b'-'))
        && digits(i + 1..i + 3)
        && at(i + 3, b':')
        && digits(i + 4..i + 6)
    {
        return Some(i + 6);
    }
    None
}

/// Every timestamp inside `text` replaced by `<time>`.
fn replace_times(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(n) = timestamp_len(&bytes[i..]) {
            out.push_str("<time>");
            i += n;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn normalize_json(
    v: &mut Value,
    key: Option<&str>,
    ids: &mut Ids,
    step: &str,
    n: &mut HashMap<String, usize>,
) {
    match v {
        Value::String(s) => {
            if let Some(k) = key.filter(|k| GENERATED.contains(k)) {
                *s = ids.name(s, k, step, n);
            } else if key.is_some_and(|k| k.to_ascii_lowercase().ends_with("etag")) {
                *s = ids.name(s, "etag", step, n);
            } else if key == Some("url") && (s.starts_with("http://") || s.starts_with("https://"))
            {
                *s = ids.name(s, "url", step, n);
            } else if timestamp_len(s.as_bytes()) == Some(s.len()) {
                *s = "<time>".to_owned();
            }
        }
        Value::Number(_) if key.is_some_and(|k| k.ends_with("At") || k.ends_with("AtMs")) => {
            *v = Value::String("<time:int>".to_owned());
        }
        Value::Array(a) => {
            for x in a {
                normalize_json(x, key, ids, step, n);
            }
        }
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                normalize_json(x, Some(k), ids, step, n);
            }
        }
        _ => {}
    }
}

fn replace_strings(v: &mut Value, ids: &mut Ids, step: &str, n: &mut HashMap<String, usize>) {
    match v {
        Value::String(s) => {
            let t = replace_times(&replace_etags(&ids.replace_inside(s), ids, step, n));
            *s = t;
        }
        Value::Array(a) => a.iter_mut().for_each(|x| replace_strings(x, ids, step, n)),
        Value::Object(o) => o
            .values_mut()
            .for_each(|x| replace_strings(x, ids, step, n)),
        _ => {}
    }
}

/// File etags (`"<version>-<hex>-<seq>-<lineage>"`, or `"<version>-<hex>"` from before)
/// inside text (messages, MCP tool output) mapped like the `etag` fields.
fn replace_etags(text: &str, ids: &mut Ids, step: &str, n: &mut HashMap<String, usize>) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let at = i + 1 + digits;
            if digits > 0 && b.get(at) == Some(&b'-') {
                let hex = b[at + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_hexdigit() || **c == b'-')
                    .count();
                let end = at + 1 + hex;
                if hex >= 8 && b.get(end) == Some(&b'"') {
                    out.push_str(&ids.name(&text[i..=end], "etag", step, n));
                    i = end + 1;
                    continue;
                }
            }
        }
        let c = text[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Lists ordered by a generated id (workspaces, artifacts) are in a different order on
/// each store: such arrays are compared as sets (sorted by their normalised text).
fn sort_id_lists(v: &mut Value) {
    match v {
        Value::Array(a) => {
            a.iter_mut().for_each(sort_id_lists);
            let by_id = !a.is_empty()
                && a.iter().all(|x| {
                    ["workspaceId", "artifactId", "snapshotId"]
                        .iter()
                        .any(|k| x.get(k).is_some())
                });
            if by_id {
                a.sort_by_cached_key(Value::to_string);
            }
        }
        Value::Object(o) => o.values_mut().for_each(sort_id_lists),
        _ => {}
    }
}

/// Headers a client may act on; compared (normalised) between the sides.
const COMPARED_HEADERS: &[&str] = &[
    "content-type",
    "etag",
    "location",
    "allow",
    "www-authenticate",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "retry-after",
    // What a browser enforces on the console's answers.
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
];

#[derive(Debug, PartialEq)]
enum Body {
    Empty,
    Json {
        normalized: Value,
        raw: Vec<u8>,
        changed: bool,
    },
    Bytes(Vec<u8>),
}

#[derive(Debug)]
struct Seen {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Body,
}

/// How a discovery document says events are delivered differs by design (EventBridge on
/// AWS; the stream and webhooks on the local server); what they are must not: only the
/// events family's `source` and `detailType` are compared. Likewise the MCP family's
/// absolute `url` (its `path` is compared) and the origin of its `serverUrls` (absolute
/// where the public URL is known, root-relative elsewhere: their paths are compared), and
/// the reason search by meaning is off.
fn only_the_event_contract(doc: &mut Value) {
    if doc.get("protocol").and_then(Value::as_str) != Some("openwop") {
        return;
    }
    for at in ["/events", "/capabilities/events"] {
        if let Some(o) = doc.pointer_mut(at).and_then(Value::as_object_mut) {
            o.retain(|k, _| k == "source" || k == "detailType");
        }
    }
    // Why search by meaning is off says how to turn it on where the document comes from
    // (`workspace-local models install` locally, the function's model folder on Lambda):
    // whether it is on is compared, and so are the modes.
    for at in ["/search/semantic", "/capabilities/search/semantic"] {
        if let Some(o) = doc.pointer_mut(at).and_then(Value::as_object_mut) {
            o.remove("reason");
        }
    }
    // The MCP server's absolute URL is known only where the public URL is (locally).
    for at in ["/mcp", "/capabilities/mcp"] {
        if let Some(o) = doc.pointer_mut(at).and_then(Value::as_object_mut) {
            o.remove("url");
            if let Some(urls) = o.get_mut("serverUrls").and_then(Value::as_array_mut) {
                for u in urls.iter_mut() {
                    if let Some(path) = u
                        .as_str()
                        .and_then(|s| s.split_once("://"))
                        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
                    {
                        *u = Value::String(path);
                    }
                }
            }
        }
    }
}

/// Whether MCP resources can be subscribed to differs by design: the local server holds
/// sessions with a notification stream, a function behind the HTTP API cannot. The rest of
/// an initialize answer is compared.
fn no_subscriptions_on_lambda(answer: &mut Value) {
    if let Some(o) = answer
        .pointer_mut("/result/capabilities/resources")
        .and_then(Value::as_object_mut)
    {
        o.remove("subscribe");
        o.remove("listChanged");
    }
}

fn normalize(a: &HttpAnswer, ids: &mut Ids, step: &str) -> Seen {
    let mut n = HashMap::new();
    let body = if a.body.is_empty() {
        Body::Empty
    } else {
        match serde_json::from_slice::<Value>(&a.body) {
            Ok(original) => {
                let mut v = original.clone();
                only_the_event_contract(&mut v);
                no_subscriptions_on_lambda(&mut v);
                normalize_json(&mut v, None, ids, step, &mut n);
                replace_strings(&mut v, ids, step, &mut n);
                sort_id_lists(&mut v);
                Body::Json {
                    changed: v != original,
                    normalized: v,
                    raw: a.body.clone(),
                }
            }
            Err(_) => Body::Bytes(a.body.clone()),
        }
    };
    let mut headers = BTreeMap::new();
    for name in COMPARED_HEADERS {
        if let Some(v) = a.header(name) {
            let v = if *name == "etag" {
                ids.name(&v, "etag", step, &mut n)
            } else {
                ids.replace_inside(&v)
            };
            headers.insert((*name).to_owned(), v);
        }
    }
    Seen {
        status: a.status,
        headers,
        body,
    }
}

// --------------------------------------------------------------------------------- sides

struct Functions {
    gateway: Gateway,
    emulated: HashMap<String, Emulated>,
    seq: u64,
}

impl Functions {
    /// The gateway's answer to `req` from `who`; a note when the gateway answered itself.
    async fn send(&mut self, req: &HttpRequest, who: Who) -> (HttpAnswer, Option<String>) {
        self.seq += 1;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(0))
            .unwrap_or(0);
        let claims = credential(who).map(|c| c.claims);
        match self.gateway.dispatch(req, claims.as_ref(), now, self.seq) {
            Dispatch::Answer(a) => {
                let note = match a.status {
                    404 => format!(
                        "API Gateway answered itself: no route of template.yaml matches {} {} and template.yaml has no $default route",
                        req.method,
                        req.raw_path()
                    ),
                    401 => "API Gateway's authorizer answered itself (no token): the suite must not send this".to_owned(),
                    _ => "API Gateway answered itself".to_owned(),
                };
                (a, Some(note))
            }
            Dispatch::Invoke { function, event } => {
                let e = self
                    .emulated
                    .get(&function)
                    .unwrap_or_else(|| panic!("{function} is not emulated"));
                // The HTTP API's integration gives up after 30 s, whatever the function's
                // own timeout.
                let invoked =
                    tokio::time::timeout(Duration::from_secs(30), rie::try_invoke_event(e, &event))
                        .await;
                let Ok(invoked) = invoked else {
                    return (
                        HttpAnswer::gateway(503, "Service Unavailable"),
                        Some(format!("{function} ran past the 30 s integration timeout")),
                    );
                };
                match invoked {
                    Ok(result) => {
                        let note = result
                            .get("errorType")
                            .map(|t| format!("{function} failed: {t} {}", result["errorMessage"]));
                        (answer_from_lambda(&result), note)
                    }
                    // What API Gateway answers when the integration fails.
                    Err(err) => (
                        HttpAnswer::gateway(500, "Internal Server Error"),
                        Some(format!("{function}: {err}")),
                    ),
                }
            }
        }
    }
}

/// The request a side sends for a step: placeholders filled, the credential, and the
/// `Content-Length` a client sends.
fn materialize(req: &HttpRequest, who: Who, ids: &Ids, lambda: bool) -> HttpRequest {
    let mut out = HttpRequest::new(&req.method, &ids.fill(&req.target));
    out.headers
        .push(("User-Agent".into(), "parity-suite/1".into()));
    out.headers
        .push(("Accept".into(), "application/json".into()));
    if let Some(c) = credential(who) {
        let bearer = if lambda {
            token(&c.claims)
        } else {
            c.key.to_owned()
        };
        out.headers
            .push(("Authorization".into(), format!("Bearer {bearer}")));
    }
    for (k, v) in &req.headers {
        if k.eq_ignore_ascii_case("accept") {
            out.headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("accept"));
        }
        out.headers.push((k.clone(), ids.fill(v)));
    }
    out.body = match std::str::from_utf8(&req.body) {
        Ok(text) if text.contains('<') => ids.fill(text).into_bytes(),
        _ => req.body.clone(),
    };
    if !out.body.is_empty() || matches!(out.method.as_str(), "PUT" | "POST" | "PATCH") {
        out.headers
            .push(("Content-Length".into(), out.body.len().to_string()));
    }
    out
}

// ------------------------------------------------------------------------------- reports

fn show_body(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty)".to_owned();
    }
    match std::str::from_utf8(body) {
        Ok(t) if t.chars().all(|c| !c.is_control() || c == '\n' || c == '\t') => {
            let shown: String = t.chars().take(700).collect();
            let more = if t.chars().count() > 700 { " …" } else { "" };
            format!("{shown}{more} ({} bytes)", body.len())
        }
        _ => {
            let hex: String = body.iter().take(48).map(|b| format!("{b:02x}")).collect();
            format!(
                "hex {hex}{} ({} bytes)",
                if body.len() > 48 { "…" } else { "" },
                body.len()
            )
        }
    }
}

fn show_answer(a: &HttpAnswer) -> String {
    let mut s = format!("{}", a.status);
    for name in COMPARED_HEADERS {
        if let Some(v) = a.header(name) {
            let _ = write!(s, "\n      {name}: {v}");
        }
    }
    let _ = write!(s, "\n      body: {}", show_body(&a.body));
    s
}

fn show_request(r: &HttpRequest) -> String {
    let mut s = format!("{} {}", r.method, r.target);
    for (k, v) in &r.headers {
        if k.eq_ignore_ascii_case("user-agent") || k.eq_ignore_ascii_case("accept") {
            continue;
        }
        let v = if k.eq_ignore_ascii_case("authorization") {
            "Bearer …"
        } else {
            v.as_str()
        };
        let _ = write!(s, "\n      {k}: {v}");
    }
    if !r.body.is_empty() {
        let _ = write!(s, "\n      body: {}", show_body(&r.body));
    }
    s
}

struct Failure {
    section: &'static str,
    label: String,
    problems: Vec<String>,
    request: String,
    local: String,
    lambda: String,
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "{} vs {} bytes, first difference at byte {at}",
        a.len(),
        b.len()
    )
}

/// The side's own checks of a step (exact bytes, envelope, expiry).
fn check_side(side: &str, expect: &[Expect], a: &HttpAnswer, problems: &mut Vec<String>) {
    let json = serde_json::from_slice::<Value>(&a.body).ok();
    for e in expect {
        match e {
            Expect::Status(want) if a.status != *want => {
                problems.push(format!(
                    "{side}: status {} where {want} was expected",
                    a.status
                ));
            }
            Expect::Body(want) if a.body != *want => problems.push(format!(
                "{side}: body is not the stored bytes ({})",
                first_difference(want, &a.body)
            )),
            Expect::ContentType(want) if a.header("content-type").as_deref() != Some(want) => {
                problems.push(format!(
                    "{side}: content-type {:?}, stored as {want:?}",
                    a.header("content-type")
                ));
            }
            Expect::FileContent(want) => {
                let got = json.as_ref().and_then(|v| {
                    v["content"]
                        .as_str()
                        .map(|t| t.as_bytes().to_vec())
                        .or_else(|| v["contentBase64"].as_str().and_then(b64::decode))
                });
                match got {
                    Some(got) if got == *want => {}
                    Some(got) => problems.push(format!(
                        "{side}: file content is not the stored bytes ({})",
                        first_difference(want, &got)
                    )),
                    None => problems.push(format!(
                        "{side}: no content or contentBase64 in a {} answer",
                        a.status
                    )),
                }
            }
            Expect::Envelope(status, code) => {
                let ok = a.status == *status
                    && json.as_ref().is_some_and(|v| {
                        v["error"] == *code
                            && v["message"].is_string()
                            && v.as_object().is_some_and(|o| {
                                o.keys()
                                    .all(|k| ["error", "message", "details"].contains(&k.as_str()))
                            })
                    });
                if !ok {
                    problems.push(format!(
                        "{side}: not our envelope {status} {{\"error\":\"{code}\",\"message\":…}}"
                    ));
                }
            }
            Expect::WholeSecondExpiry => {
                let mut found = Vec::new();
                collect_key(
                    json.as_ref().unwrap_or(&Value::Null),
                    "expiresAt",
                    &mut found,
                );
                if found.is_empty() {
                    problems.push(format!("{side}: no expiresAt in the answer"));
                }
                for t in found {
                    let whole = t.as_str().is_some_and(|s| {
                        timestamp_len(s.as_bytes()) == Some(s.len())
                            && (!s.contains('.') || s.ends_with(".000Z"))
                    });
                    if !whole {
                        problems.push(format!(
                            "{side}: expiresAt {t} is not whole seconds (the URL's signature expires at the second before)"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
}

fn collect_key(v: &Value, key: &str, out: &mut Vec<Value>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                if k == key {
                    out.push(x.clone());
                }
                collect_key(x, key, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_key(x, key, out)),
        _ => {}
    }
}

/// The differences between the sides' normalised answers.
fn compare(local: &Seen, lambda: &Seen, problems: &mut Vec<String>) {
    if local.status != lambda.status {
        problems.push(format!(
            "status differs: local {} / lambda {}",
            local.status, lambda.status
        ));
    }
    let names: BTreeSet<&String> = local.headers.keys().chain(lambda.headers.keys()).collect();
    for name in names {
        let (l, r) = (local.headers.get(name), lambda.headers.get(name));
        if l != r {
            problems.push(format!("header {name} differs: local {l:?} / lambda {r:?}"));
        }
    }
    match (&local.body, &lambda.body) {
        (
            Body::Json {
                normalized: a,
                raw: ra,
                changed: ca,
            },
            Body::Json {
                normalized: b,
                raw: rb,
                changed: cb,
            },
        ) => {
            if a != b {
                problems.push(format!(
                    "JSON body differs (normalised): local {} / lambda {}",
                    truncate(&a.to_string()),
                    truncate(&b.to_string())
                ));
            } else if !ca && !cb && ra != rb {
                problems.push(format!(
                    "same JSON, different bytes ({})",
                    first_difference(ra, rb)
                ));
            }
        }
        (Body::Bytes(a), Body::Bytes(b)) if a != b => {
            problems.push(format!("body bytes differ ({})", first_difference(a, b)));
        }
        (a, b) if std::mem::discriminant(a) != std::mem::discriminant(b) => {
            problems.push(format!(
                "body kinds differ: local {} / lambda {}",
                kind(a),
                kind(b)
            ));
        }
        _ => {}
    }
}

fn kind(b: &Body) -> &'static str {
    match b {
        Body::Empty => "empty",
        Body::Json { .. } => "JSON",
        Body::Bytes(_) => "bytes (not JSON)",
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 900 {
        format!("{} …", s.chars().take(900).collect::<String>())
    } else {
        s.to_owned()
    }
}

// -------------------------------------------------------------------------------- driver

/// One more step (and its time) for `section`.
fn count(
    per_section: &mut Vec<(&'static str, usize, Duration)>,
    section: &'static str,
    t0: Instant,
) {
    match per_section.last_mut() {
        Some((s, n, d)) if *s == section => {
            *n += 1;
            *d += t0.elapsed();
        }
        _ => per_section.push((section, 1, t0.elapsed())),
    }
}

/// The bytes of a direct step: PUT to the ticket's URL with its headers.
async fn direct(
    answer: Option<&Value>,
    pointer: &str,
    body: &[u8],
    expect: Option<&[u8]>,
) -> Result<u16, String> {
    let ticket = answer
        .and_then(|a| a.pointer(pointer))
        .ok_or("the ticket step answered no presigned URL there")?;
    let url = ticket["url"].as_str().ok_or("the ticket has no url")?;
    let method = ticket["method"].as_str().unwrap_or("PUT");
    let mut req =
        rie::presigned_url_client().request(method.parse().map_err(|_| "bad method")?, url);
    if !body.is_empty() {
        req = req.body(body.to_vec());
    }
    for (k, v) in ticket["headers"].as_object().into_iter().flatten() {
        if !matches!(k.to_ascii_lowercase().as_str(), "content-length" | "host") {
            req = req.header(k, v.as_str().unwrap_or_default());
        }
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    if resp.status().is_success() {
        let got = resp.bytes().await.map_err(|e| e.to_string())?;
        match expect {
            Some(want) if got.as_ref() != want => Err(format!(
                "{status}, but not the stored bytes ({})",
                first_difference(want, &got)
            )),
            _ => Ok(status),
        }
    } else {
        Err(format!(
            "{status}: {}",
            resp.text().await.unwrap_or_default()
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_functions_behind_api_gateway_answer_as_the_local_server() {
    let started = Instant::now();
    let gateway = Gateway::from_template(&root().join("template.yaml"));

    // The functions on fresh moto resources.
    // Bound (not `..`) so the resources live as long as the test.
    let rie::MotoStack {
        env: _env,
        caps: _caps,
        observed: _observed,
        env_json,
        roles,
    } = rie::fresh_stack("parity").await;
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("events/env.json")).unwrap())
            .unwrap();
    // The same session-token key on both sides, so paging tokens compare.
    let session_key = committed["Parameters"]["WORKSPACE_SESSION_TOKEN_KEY"]
        .as_str()
        .expect("env.json sets WORKSPACE_SESSION_TOKEN_KEY")
        .to_owned();
    let routed: BTreeSet<String> = gateway.routes.iter().map(|r| r.function.clone()).collect();
    let (emulated, local_bin) = tokio::task::spawn_blocking(move || {
        // The model on both sides: the functions' layer, the local server's install.
        let sam = rie::sam_local(&env_json)
            .under_roles(roles)
            .with_model(&rie::installed_model());
        let _ = std::fs::remove_file(&env_json);
        let bin_dir = rie::build_bootstraps(&sam);
        let local_bin = build_local_server();
        let emulated: HashMap<String, Emulated> = routed
            .iter()
            .map(|id| (id.clone(), rie::emulate(&sam, id, &bin_dir)))
            .collect();
        (emulated, local_bin)
    })
    .await
    .unwrap();
    let keys = api_keys();
    let local = LocalServer::start(
        &local_bin,
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            ("WORKSPACE_SESSION_TOKEN_KEY", session_key.as_str()),
            // The browser origin events/env.json allows the mcp function too.
            ("WORKSPACE_MCP_ALLOWED_ORIGINS", MCP_ORIGIN),
            ("WORKSPACE_MODEL_DIR", rie::installed_model().as_str()),
        ],
    );
    let mut functions = Functions {
        gateway: gateway.clone(),
        emulated,
        seq: 0,
    };
    let ready = started.elapsed();

    let mut failures: Vec<Failure> = Vec::new();
    let verbose = std::env::var_os("PARITY_VERBOSE").is_some();

    let steps = script();
    let mut local_ids = Ids::default();
    let mut lambda_ids = Ids::default();
    let mut local_json: HashMap<String, Value> = HashMap::new();
    let mut lambda_json: HashMap<String, Value> = HashMap::new();
    let mut per_section: Vec<(&'static str, usize, Duration)> = Vec::new();
    for step in &steps {
        let t0 = Instant::now();
        let mut problems = Vec::new();
        let (request, local_shown, lambda_shown) = match &step.action {
            Action::Api(template) => {
                let lreq = materialize(template, step.who, &local_ids, false);
                let freq = materialize(template, step.who, &lambda_ids, true);
                // The documented exception: without a token, a route under the JWT
                // authorizer is answered by API Gateway itself (401 {"message":
                // "Unauthorized"}), never by a function. Such a step is a script error.
                let target_route = gateway
                    .route(&freq.method, freq.raw_path())
                    .map(|m| m.route.clone())
                    .or_else(|| gateway.default_route().cloned());
                if step.who == Who::Anon && target_route.as_ref().is_some_and(|r| r.authorized) {
                    problems.push(format!(
                        "not sent: {} is under the JWT authorizer, so without a token API Gateway answers 401 {{\"message\":\"Unauthorized\"}} itself (the documented exception); the suite sends no such request",
                        target_route.map(|r| r.key()).unwrap_or_default()
                    ));
                }
                for (side, req) in [("local", &lreq), ("lambda", &freq)] {
                    let text = format!(
                        "{} {:?} {}",
                        req.target,
                        req.headers,
                        std::str::from_utf8(&req.body).unwrap_or("")
                    );
                    if let Some(p) = unfilled(&text) {
                        problems.push(format!(
                            "not sent: placeholder {p} names nothing on the {side} side (the step that answers it failed there)"
                        ));
                    }
                }
                if !problems.is_empty() {
                    failures.push(Failure {
                        section: step.section,
                        label: step.label.clone(),
                        problems,
                        request: show_request(&lreq),
                        local: "-".into(),
                        lambda: "-".into(),
                    });
                    count(&mut per_section, step.section, t0);
                    continue;
                }
                let la = local.send(&lreq).await;
                let (fa, note) = functions.send(&freq, step.who).await;
                problems.extend(note.map(|n| format!("lambda: {n}")));
                check_side("local", &step.expect, &la, &mut problems);
                check_side("lambda", &step.expect, &fa, &mut problems);
                let ls = normalize(&la, &mut local_ids, &step.label);
                let fs = normalize(&fa, &mut lambda_ids, &step.label);
                compare(&ls, &fs, &mut problems);
                if let Ok(v) = serde_json::from_slice::<Value>(&la.body) {
                    local_json.insert(step.label.clone(), v);
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&fa.body) {
                    lambda_json.insert(step.label.clone(), v);
                }
                (show_request(&lreq), show_answer(&la), show_answer(&fa))
            }
            Action::TemplateHasDefaultRoute => {
                if gateway.default_route().is_none() {
                    problems.push(
                        "template.yaml has no $default route (an HttpApi event without Path and Method): a request no route matches gets API Gateway's own 404 {\"message\":\"Not Found\"}, never our envelope".into(),
                    );
                }
                let shown = gateway.default_route().map_or("(none)".to_owned(), |r| {
                    format!("$default → {}", r.function)
                });
                ("(template.yaml)".to_owned(), "-".to_owned(), shown)
            }
            Action::Direct {
                ticket,
                pointer,
                body,
                expect,
            } => {
                let expect = expect.as_deref();
                let l = direct(local_json.get(ticket), pointer, body, expect).await;
                let f = direct(lambda_json.get(ticket), pointer, body, expect).await;
                if let Err(e) = &l {
                    problems.push(format!("local: the presigned request failed: {e}"));
                }
                if let Err(e) = &f {
                    problems.push(format!("lambda: the presigned request failed: {e}"));
                }
                (
                    format!(
                        "<the presigned URL {ticket}{pointer} answered> ({} bytes)",
                        body.len()
                    ),
                    format!("{l:?}"),
                    format!("{f:?}"),
                )
            }
        };
        if verbose {
            let first = |t: &str| t.lines().next().unwrap_or("").to_owned();
            eprintln!(
                "{:<40} local {:<12} lambda {:<12} {}",
                step.label,
                first(&local_shown),
                first(&lambda_shown),
                if problems.is_empty() {
                    "same"
                } else {
                    "DIFFERENT"
                }
            );
        }
        if !problems.is_empty() {
            failures.push(Failure {
                section: step.section,
                label: step.label.clone(),
                problems,
                request,
                local: local_shown,
                lambda: lambda_shown,
            });
        }
        count(&mut per_section, step.section, t0);
    }

    let mut summary = format!(
        "API Gateway parity: {} steps in {:.1?} (emulators and servers ready after {:.1?})\n",
        steps.len(),
        started.elapsed(),
        ready
    );
    for (section, n, d) in &per_section {
        let failed = failures.iter().filter(|f| f.section == *section).count();
        let verdict = if failed == 0 {
            "pass".to_owned()
        } else {
            format!("FAIL ({failed} of {n} steps)")
        };
        let _ = writeln!(summary, "  {section:<58} {n:>3} steps {d:>8.1?}  {verdict}");
    }
    eprintln!("{summary}");
    if failures.is_empty() {
        return;
    }
    let mut report = String::new();
    for f in &failures {
        let _ = writeln!(report, "\n=== [{}] {}", f.section, f.label);
        for p in &f.problems {
            let _ = writeln!(report, "  ✗ {p}");
        }
        let _ = writeln!(report, "  request: {}", f.request);
        let _ = writeln!(report, "  local:   {}", f.local);
        let _ = writeln!(report, "  lambda:  {}", f.lambda);
    }
    let server_log = local.stderr();
    drop(local);
    panic!(
        "{} of {} steps differ between the local server and the functions behind API Gateway:\n{report}\n{summary}{}",
        failures.len(),
        steps.len(),
        if server_log.trim().is_empty() {
            String::new()
        } else {
            format!("\nlocal server log:\n{}", truncate(&server_log))
        }
    );
}

/// The comparison itself: what normalisation hides and what it keeps.
#[test]
fn normalisation_hides_only_what_two_stores_may_differ_in() {
    let answer = |body: Value, etag: &str| HttpAnswer {
        status: 200,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("etag".into(), etag.into()),
        ],
        body: body.to_string().into_bytes(),
    };
    let (mut a, mut b) = (Ids::default(), Ids::default());
    let la = normalize(
        &answer(
            json!({"etag": "\"1-aaaaaaaaaa\"", "updatedAt": "2026-11-24T09:23:10.874Z",
                   "workspaceId": "ws-0123456789abcdef", "uri": "/workspaces/ws-0123456789abcdef/x",
                   "message": "etag \"2-cccccccccc\" at 2026-11-24T09:23:10Z", "size": 5}),
            "\"1-aaaaaaaaaa\"",
        ),
        &mut a,
        "s1",
    );
    let lb = normalize(
        &answer(
            json!({"etag": "\"1-bbbbbbbbbb\"", "updatedAt": "2026-11-24T09:23:11.001Z",
                   "workspaceId": "ws-fedcba9876543210", "uri": "/workspaces/ws-fedcba9876543210/x",
                   "message": "etag \"2-dddddddddd\" at 2026-11-24T09:23:12Z", "size": 5}),
            "\"1-bbbbbbbbbb\"",
        ),
        &mut b,
        "s1",
    );
    let mut problems = Vec::new();
    compare(&la, &lb, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(la.headers["etag"], id("etag", "s1", 1));
    // Each side fills a placeholder with its own value.
    assert_eq!(a.fill(&id("workspaceId", "s1", 1)), "ws-0123456789abcdef");
    assert_eq!(b.fill(&id("workspaceId", "s1", 1)), "ws-fedcba9876543210");
    assert_eq!(
        unfilled(&format!("x {} y", id("etag", "s9", 1))),
        Some("<etag@s9#1>")
    );
    assert_eq!(unfilled("a <b> c"), None);
    // A size, a status or a plain string that differs is a difference.
    let lc = normalize(&answer(json!({"size": 6}), "\"x\""), &mut b, "s2");
    let ld = normalize(&answer(json!({"size": 5}), "\"x\""), &mut a, "s2");
    compare(&lc, &ld, &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(timestamp_len(b"2026-11-24T09:23:10+01:00 rest"), Some(25));
    assert_eq!(timestamp_len(b"2026-11-24 09:23:10Z"), None);
    // Discovery: how events are delivered may differ, what they are may not.
    let doc = |bridge: bool, source: &str| {
        let events =
            json!({"source": source, "detailType": "workspace.updated", "eventBridge": bridge});
        json!({"protocol": "openwop", "events": events, "capabilities": {"events": events}})
    };
    let mut problems = Vec::new();
    let (e1, e2) = (
        normalize(&answer(doc(true, "agent-workspace"), "\"x\""), &mut a, "s3"),
        normalize(
            &answer(doc(false, "agent-workspace"), "\"x\""),
            &mut b,
            "s3",
        ),
    );
    compare(&e1, &e2, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let e3 = normalize(&answer(doc(false, "someone-else"), "\"x\""), &mut b, "s3");
    compare(&e1, &e3, &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    // Search by meaning: why it is off may differ, whether it is on may not.
    let search = |on: bool, reason: &str| {
        let search = json!({"modes": ["keyword"], "semantic": {"supported": on, "reason": reason}});
        json!({"protocol": "openwop", "search": search, "capabilities": {"search": search}})
    };
    let mut problems = Vec::new();
    let s1 = normalize(
        &answer(search(false, "install it here"), "\"x\""),
        &mut a,
        "s4",
    );
    let s2 = normalize(
        &answer(search(false, "give the function a layer"), "\"x\""),
        &mut b,
        "s4",
    );
    compare(&s1, &s2, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let s3 = normalize(
        &answer(search(true, "install it here"), "\"x\""),
        &mut b,
        "s4",
    );
    compare(&s1, &s3, &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
    // The MCP server's URLs: compared by path, whatever origin one side knows.
    let mcp = |urls: Value| {
        let family = json!({"path": "/mcp", "serverUrls": urls});
        json!({"protocol": "openwop", "mcp": family, "capabilities": {"mcp": family}})
    };
    let mut problems = Vec::new();
    let m1 = normalize(
        &answer(mcp(json!(["http://127.0.0.1:1/mcp"])), "\"x\""),
        &mut a,
        "s4",
    );
    let m2 = normalize(&answer(mcp(json!(["/mcp"])), "\"x\""), &mut b, "s4");
    compare(&m1, &m2, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let m3 = normalize(&answer(mcp(json!(["/elsewhere"])), "\"x\""), &mut b, "s4");
    compare(&m1, &m3, &mut problems);
    assert_eq!(problems.len(), 1, "{problems:?}");
}
