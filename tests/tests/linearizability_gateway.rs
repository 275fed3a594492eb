//! Linearizability of small-file writes and reads through API Gateway and the functions:
//! the random concurrent histories of `workspace_tests::linearizability` (GET, PUT, If-Match
//! PUT, If-None-Match PUT, DELETE on a few paths, the checker local/tests/linearizability.rs
//! runs against the local server) sent through the emulated HTTP API of
//! `workspace_tests::apigw` (template.yaml's routes, the payload-2.0 event, the JWT
//! authorizer's claims) to fn-get, fn-put and fn-delete under the Lambda Runtime Interface
//! Emulator (`workspace_tests::rie`), each with its own role's credentials, on a fresh moto
//! stack: the machinery of ws_mount_gateway.rs, with the histories as the client. The values
//! are short, so every write keeps its body inline with its commit (below
//! `InlineBodyMaxBytes`), and an If-Match PUT naming the head is one TransactWriteItems.
//!
//! As on Lambda, a request finds an idle instance of its function or starts one (a cold
//! start); each instance runs one invocation at a time, and at most [`INSTANCES`] of a
//! function run at once (its reserved concurrency), so writes to one path race each other
//! in different processes. The emulators listen on free loopback ports and are stopped on
//! drop, pass or fail.
//!
//! Run alone: start moto as ws_mount_gateway.rs says (`WORKSPACE_TEST_MOTO_URL`,
//! `WORKSPACE_TEST_MOTO_HTTPS_URL`, `WORKSPACE_TEST_MOTO_CA_FILE`), then `cargo test -p
//! workspace-tests --test linearizability_gateway -- --nocapture`; `LINEARIZABILITY_SEED`
//! replays a failure's histories (not its timing).

use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;
use workspace_tests::apigw::{answer_from_lambda, Dispatch, Gateway, HttpAnswer, HttpRequest};
use workspace_tests::linearizability::{check_histories, seed, Request, Transport};
use workspace_tests::rie::{self, Emulated, Sam};
use workspace_tests::{b64, root};

/// Histories (each `CLIENTS` × `OPS_PER_CLIENT` operations on paths of its own).
const HISTORIES: usize = 50;
/// Histories run side by side. One: with three, moto (one Python process behind every
/// function) sometimes did not accept a function's connection within the SDK's 3.1 s
/// connect timeout on a loaded CI machine (the functions' log said so), a 500 that is the
/// emulator's capacity, not the functions'. Within a history the clients still race through
/// different instances.
const PARALLEL: usize = 1;
/// Instances of one function running at once.
const INSTANCES: usize = 2;

/// The instances of one function: idle ones, and a turn for each that may run.
struct Pool {
    idle: Mutex<Vec<Emulated>>,
    turns: Semaphore,
}

struct Stack {
    gateway: Gateway,
    /// What API Gateway's JWT authorizer hands the functions, and the bearer token they
    /// came from (the functions see the header they would see on AWS).
    claims: BTreeMap<String, String>,
    bearer: String,
    sam: Arc<Sam>,
    bin_dir: PathBuf,
    /// Logical id → its instances.
    pools: HashMap<String, Pool>,
    seq: AtomicU64,
    cold_starts: AtomicU64,
}

impl Stack {
    /// What the gateway answers `req`: the route's function, invoked with the event.
    async fn answer(&self, req: &HttpRequest) -> HttpAnswer {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0));
        let (function, event) = match self.gateway.dispatch(req, Some(&self.claims), now, seq) {
            Dispatch::Invoke { function, event } => (function, event),
            Dispatch::Answer(a) => panic!(
                "API Gateway answered {} {} itself: {}",
                req.method, req.target, a.status
            ),
        };
        let pool = &self.pools[&function];
        let _turn = pool.turns.acquire().await.expect("the pool stays open");
        let idle = pool.idle.lock().unwrap().pop();
        let instance = match idle {
            Some(e) => e,
            None => {
                self.cold_starts.fetch_add(1, Ordering::Relaxed);
                let (sam, dir, id) = (self.sam.clone(), self.bin_dir.clone(), function.clone());
                tokio::task::spawn_blocking(move || rie::emulate(&sam, &id, &dir))
                    .await
                    .unwrap_or_else(|e| panic!("{function} could not be started: {e}"))
            }
        };
        // The HTTP API's integration gives up after 30 s.
        let invoked = tokio::time::timeout(
            Duration::from_secs(30),
            rie::try_invoke_event(&instance, &event),
        )
        .await;
        let result = match invoked {
            Ok(Ok(result)) => result,
            Ok(Err(err)) => panic!("{} {}: {function}: {err}", req.method, req.target),
            Err(_) => panic!("{function} ran past the 30 s integration timeout"),
        };
        if let Some(t) = result.get("errorType") {
            panic!(
                "{} {}: {function} failed: {t} {}",
                req.method, req.target, result["errorMessage"]
            );
        }
        pool.idle.lock().unwrap().push(instance);
        answer_from_lambda(&result)
    }
}

/// The histories' requests, as a client sends them to the gateway.
#[derive(Clone)]
struct ThroughGateway(Arc<Stack>);

impl Transport for ThroughGateway {
    async fn send(&self, req: Request) -> (u16, Value) {
        let mut http = HttpRequest::new(req.method, &req.path)
            .header("authorization", &format!("Bearer {}", self.0.bearer));
        for (k, v) in &req.headers {
            http = http.header(k, v);
        }
        if let Some(body) = &req.body {
            let body = body.to_string();
            http = http
                .header("content-type", "application/json")
                .header("content-length", &body.len().to_string())
                .body(body);
        }
        let a = self.0.answer(&http).await;
        if a.status >= 500 {
            eprintln!(
                "{} {} answered {}; the functions' warnings and errors:\n{}",
                req.method,
                req.path,
                a.status,
                rie::function_log_problems()
            );
        }
        (
            a.status,
            serde_json::from_slice(&a.body).unwrap_or(Value::Null),
        )
    }
}

/// Tenant `acme`, workspace `main`, read and write (template.yaml's claim names), and a
/// JWT-shaped token carrying them (the gateway verified it; a function sees only the claims).
fn caller() -> (BTreeMap<String, String>, String) {
    let claims: BTreeMap<String, String> = serde_json::from_value(json!({
        "iss": "https://issuer.example.com/", "aud": "agent-workspace",
        "tenant_id": "acme", "workspace_id": "main", "sub": "linearizability",
        "scope": "workspace:read workspace:write", "iat": "1732258800", "exp": "4102444800",
    }))
    .expect("string claims");
    let part = |v: Value| {
        let s = b64::encode(v.to_string().as_bytes());
        s.trim_end_matches('=').replace('+', "-").replace('/', "_")
    };
    let token = format!(
        "{}.{}.c2lnbmF0dXJl",
        part(json!({"alg": "RS256", "kid": "linearizability"})),
        part(json!(claims))
    );
    (claims, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_through_api_gateway_and_the_functions_are_linearizable() {
    let started = Instant::now();
    // The functions' logs go to one file, so a 5xx can be shown with the error that made it.
    if std::env::var_os(rie::FUNCTION_LOG).is_none() {
        let log = std::env::temp_dir().join(format!("lin-gateway-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        // Set before any function starts (each reads it when it is spawned).
        std::env::set_var(rie::FUNCTION_LOG, &log);
    }
    let gateway = Gateway::from_template(&root().join("template.yaml"));
    // Held to the end: its resources live as long as the test.
    let moto = rie::fresh_stack("lin").await;
    let (env_json, roles) = (moto.env_json.clone(), moto.roles.clone());
    let (sam, bin_dir) = tokio::task::spawn_blocking(move || {
        let sam = rie::sam_local(&env_json).under_roles(roles);
        let _ = std::fs::remove_file(&env_json);
        let bin_dir = rie::build_bootstraps(&sam);
        (sam, bin_dir)
    })
    .await
    .expect("the functions are built");
    let pools = gateway
        .routes
        .iter()
        .map(|r| {
            let pool = Pool {
                idle: Mutex::new(Vec::new()),
                turns: Semaphore::new(INSTANCES),
            };
            (r.function.clone(), pool)
        })
        .collect();
    let (claims, bearer) = caller();
    let stack = Arc::new(Stack {
        gateway,
        claims,
        bearer,
        sam: Arc::new(sam),
        bin_dir,
        pools,
        seq: AtomicU64::new(0),
        cold_starts: AtomicU64::new(0),
    });
    let ready = started.elapsed();

    check_histories(&ThroughGateway(stack.clone()), HISTORIES, PARALLEL, seed()).await;

    eprintln!(
        "through API Gateway: {} requests, {} cold starts, {:.1?} in all (stack and functions ready after {ready:.1?})",
        stack.seq.load(Ordering::Relaxed),
        stack.cold_starts.load(Ordering::Relaxed),
        started.elapsed()
    );
}
