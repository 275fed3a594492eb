//! Linearizability of the file API: random concurrent histories of PUT, If-Match PUT,
//! If-None-Match PUT, DELETE and GET on a few paths, each checked against a register per
//! path (its value and etag, or nothing) with a Wing–Gong search. Every operation records
//! when it was sent and when its answer arrived; a history is linearizable when some order of
//! its operations, consistent with those intervals, explains every answer. Paths are
//! independent (linearizability is local), so each path is checked on its own. Hand-written:
//! no maintained crate checks histories of this model.
//!
//! What the histories go through is a [`Transport`]: the local server over HTTP ([`Http`],
//! local/tests/linearizability.rs, which includes this file with `#[path]`: workspace-local
//! does not depend on this crate), or the functions behind the emulated API Gateway
//! (tests/tests/linearizability_gateway.rs). Only std, tokio, serde_json and reqwest, which
//! both crates have.

use serde_json::{json, Value};
use std::collections::HashSet;
use std::future::Future;
use std::time::Instant;

pub const CLIENTS: usize = 3;
pub const OPS_PER_CLIENT: usize = 3;
pub const PATHS: usize = 2;

#[derive(Debug, Clone)]
pub enum Call {
    Get,
    Put(String),
    PutIfMatch(String, String),
    PutIfNoneMatch(String),
    Delete,
}

/// What the server answered, reduced to what the model predicts.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A write took effect with this etag.
    Written(String),
    /// A read found this value, or nothing.
    Read(Option<String>),
    /// A conditional write was refused (409).
    Refused,
    Deleted,
    /// DELETE of nothing (404).
    Missing,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub call: Call,
    pub answer: Answer,
    pub sent: Instant,
    pub answered: Instant,
}

/// The register of one path: its value and etag, or nothing.
type State = Option<(String, String)>;

/// The state after `op`, if `op`'s answer is possible from `state`.
fn step(state: &State, op: &Op) -> Option<State> {
    let etag = state.as_ref().map(|(_, e)| e.as_str());
    match (&op.call, &op.answer) {
        (Call::Get, Answer::Read(v)) => {
            (state.as_ref().map(|(v, _)| v) == v.as_ref()).then(|| state.clone())
        }
        (Call::Put(v), Answer::Written(e)) => Some(Some((v.clone(), e.clone()))),
        (Call::PutIfMatch(v, want), Answer::Written(e)) => {
            (etag == Some(want.as_str())).then(|| Some((v.clone(), e.clone())))
        }
        (Call::PutIfMatch(_, want), Answer::Refused) => {
            (etag != Some(want.as_str())).then(|| state.clone())
        }
        (Call::PutIfNoneMatch(v), Answer::Written(e)) => {
            state.is_none().then(|| Some((v.clone(), e.clone())))
        }
        (Call::PutIfNoneMatch(_), Answer::Refused) => state.is_some().then(|| state.clone()),
        (Call::Delete, Answer::Deleted) => state.is_some().then_some(None),
        (Call::Delete, Answer::Missing) => state.is_none().then(|| state.clone()),
        _ => None,
    }
}

/// Wing–Gong: is there an order of `ops`, each placed between its sending and its answer,
/// that the register explains? `done` is a bitmask of the operations placed so far.
pub fn linearizable(ops: &[Op]) -> bool {
    fn search(ops: &[Op], done: u64, state: &State, seen: &mut HashSet<(u64, State)>) -> bool {
        if done.count_ones() as usize == ops.len() {
            return true;
        }
        if !seen.insert((done, state.clone())) {
            return false;
        }
        // Only an operation sent before every pending one was answered can come next.
        let first_answer = (0..ops.len())
            .filter(|i| done & (1 << i) == 0)
            .map(|i| ops[i].answered)
            .min()
            .expect("an operation is pending");
        (0..ops.len())
            .filter(|i| done & (1 << i) == 0 && ops[*i].sent <= first_answer)
            .any(|i| {
                step(state, &ops[i]).is_some_and(|next| search(ops, done | (1 << i), &next, seen))
            })
    }
    assert!(ops.len() <= 64);
    search(ops, 0, &None, &mut HashSet::new())
}

/// One request of a history: method, path (from `/v1/...`), headers, JSON body.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<Value>,
}

/// How the histories reach the API: a request's status and JSON body (`Null` when the body
/// is not JSON). Cloned into every client task.
pub trait Transport: Clone + Send + Sync + 'static {
    fn send(&self, req: Request) -> impl Future<Output = (u16, Value)> + Send;
}

/// The API over HTTP at `base`, with a bearer key.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Http {
    /// One connection pool for every client: a client is a task, not a connection.
    pub fn new(base: &str, key: &str) -> Self {
        Self {
            client: reqwest::Client::new(),
            base: base.to_owned(),
            key: key.to_owned(),
        }
    }
}

impl Transport for Http {
    async fn send(&self, req: Request) -> (u16, Value) {
        let method = req.method.parse().expect("a method");
        let mut rb = self
            .client
            .request(method, format!("{}{}", self.base, req.path))
            .bearer_auth(&self.key);
        for (k, v) in &req.headers {
            rb = rb.header(*k, v);
        }
        if let Some(b) = &req.body {
            rb = rb.json(b);
        }
        let r = rb.send().await.expect("the server answers");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }
}

/// One operation on `path`, timed.
async fn perform<T: Transport>(t: &T, path: &str, call: Call) -> Op {
    let write = |v: &str, headers: Vec<(&'static str, String)>| Request {
        method: "PUT",
        path: path.to_owned(),
        headers,
        body: Some(json!({ "content": v })),
    };
    let req = match &call {
        Call::Get | Call::Delete => Request {
            method: if matches!(call, Call::Get) {
                "GET"
            } else {
                "DELETE"
            },
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
        },
        Call::Put(v) => write(v, Vec::new()),
        Call::PutIfMatch(v, e) => write(v, vec![("if-match", e.clone())]),
        Call::PutIfNoneMatch(v) => write(v, vec![("if-none-match", "*".to_owned())]),
    };
    let sent = Instant::now();
    let (status, body) = t.send(req).await;
    let answered = Instant::now();
    let answer = match (&call, status) {
        (Call::Get, 200) => Answer::Read(body["content"].as_str().map(str::to_owned)),
        (Call::Get, 404) => Answer::Read(None),
        (Call::Delete, 204) => Answer::Deleted,
        (Call::Delete, 404) => Answer::Missing,
        (Call::PutIfMatch(..) | Call::PutIfNoneMatch(_), 409) => Answer::Refused,
        (_, 200) => Answer::Written(body["etag"].as_str().expect("etag").to_owned()),
        _ => panic!("{call:?} on {path} answered {status}: {body}"),
    };
    Op {
        call,
        answer,
        sent,
        answered,
    }
}

/// SplitMix64: the histories' randomness, reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// One history: `CLIENTS` clients, each doing `OPS_PER_CLIENT` random operations on the
/// history's own paths; answers the operations of each path.
async fn history<T: Transport>(t: &T, id: usize, seed: u64) -> Vec<Vec<Op>> {
    let clients = (0..CLIENTS).map(|client| {
        let t = t.clone();
        tokio::spawn(async move {
            let mut rng = Rng(seed ^ (client as u64) << 32);
            // The etag this client last saw on each path, for its If-Match writes.
            let mut seen: Vec<Option<String>> = vec![None; PATHS];
            let mut ops = Vec::new();
            for n in 0..OPS_PER_CLIENT {
                let p = rng.below(PATHS);
                let path = format!("/v1/host/workspace/files/lin/h{id}/p{p}.md");
                let value = format!("h{id}-c{client}-o{n}");
                let call = match rng.below(5) {
                    0 => Call::Get,
                    1 => Call::Put(value),
                    2 => Call::PutIfMatch(
                        value,
                        seen[p].clone().unwrap_or_else(|| "\"0-stale\"".to_owned()),
                    ),
                    3 => Call::PutIfNoneMatch(value),
                    _ => Call::Delete,
                };
                let op = perform(&t, &path, call).await;
                if let Answer::Written(e) = &op.answer {
                    seen[p] = Some(e.clone());
                }
                ops.push((p, op));
            }
            ops
        })
    });
    let mut by_path = vec![Vec::new(); PATHS];
    for c in join_all(clients.collect()).await {
        for (p, op) in c {
            by_path[p].push(op);
        }
    }
    by_path
}

async fn join_all<T: Send + 'static>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.expect("client task"));
    }
    out
}

/// Runs `count` histories through `t`, `parallel` side by side (each on paths of its own),
/// and checks each path of each.
pub async fn check_histories<T: Transport>(t: &T, count: usize, parallel: usize, seed: u64) {
    let started = Instant::now();
    let mut checked = 0;
    for batch in (0..count).collect::<Vec<_>>().chunks(parallel) {
        let runs: Vec<_> = batch
            .iter()
            .map(|&id| {
                let t = t.clone();
                tokio::spawn(
                    async move { (id, history(&t, id, seed.wrapping_add(id as u64)).await) },
                )
            })
            .collect();
        for (id, paths) in join_all(runs).await {
            for (p, ops) in paths.iter().enumerate() {
                assert!(
                    linearizable(ops),
                    "history {id} (seed {seed}), path p{p} is not linearizable: {ops:#?}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, count);
    eprintln!(
        "{count} histories ({} operations, seed {seed}) linearizable in {:.1} s",
        count * CLIENTS * OPS_PER_CLIENT,
        started.elapsed().as_secs_f64()
    );
}

/// `LINEARIZABILITY_SEED` when set (to replay a failure), else a fresh one.
pub fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::env::var("LINEARIZABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        })
}
