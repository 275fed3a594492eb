//! Linearizability of the file API through the real server process: random concurrent
//! histories of PUT, If-Match PUT, If-None-Match PUT, DELETE and GET on a few paths, each
//! checked against a register per path (its value and etag, or nothing) with a Wing–Gong
//! search. Every operation records when it was sent and when its answer arrived; a history
//! is linearizable when some order of its operations, consistent with those intervals,
//! explains every answer. Paths are independent (linearizability is local), so each path is
//! checked on its own. Hand-written: no maintained crate checks histories of this model.
//!
//! On the embedded store: 10,000 histories. On the AWS adapters over moto (served one request
//! at a time, the isolation real DynamoDB transactions have): 100.

mod common;

use common::aws::{aws_env, provision, refs};
use common::Server;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Instant;
use workspace_store_aws::testing;

const KEY: &str = "linearizability-key-0123456789";
const CLIENTS: usize = 3;
const OPS_PER_CLIENT: usize = 3;
const PATHS: usize = 2;
/// Histories run side by side (each on paths of its own).
const PARALLEL: usize = 8;

#[derive(Debug, Clone)]
enum Call {
    Get,
    Put(String),
    PutIfMatch(String, String),
    PutIfNoneMatch(String),
    Delete,
}

/// What the server answered, reduced to what the model predicts.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
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
struct Op {
    call: Call,
    answer: Answer,
    sent: Instant,
    answered: Instant,
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
fn linearizable(ops: &[Op]) -> bool {
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

/// One operation against the server, timed.
async fn perform(c: &reqwest::Client, url: &str, call: Call) -> Op {
    let req = match &call {
        Call::Get => c.get(url),
        Call::Delete => c.delete(url),
        Call::Put(v) => c.put(url).json(&json!({ "content": v })),
        Call::PutIfMatch(v, e) => c
            .put(url)
            .header("if-match", e)
            .json(&json!({ "content": v })),
        Call::PutIfNoneMatch(v) => c
            .put(url)
            .header("if-none-match", "*")
            .json(&json!({ "content": v })),
    };
    let sent = Instant::now();
    let r = req
        .bearer_auth(KEY)
        .send()
        .await
        .expect("the server answers");
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    let answered = Instant::now();
    let answer = match (&call, status) {
        (Call::Get, 200) => Answer::Read(body["content"].as_str().map(str::to_owned)),
        (Call::Get, 404) => Answer::Read(None),
        (Call::Delete, 204) => Answer::Deleted,
        (Call::Delete, 404) => Answer::Missing,
        (Call::PutIfMatch(..) | Call::PutIfNoneMatch(_), 409) => Answer::Refused,
        (_, 200) => Answer::Written(body["etag"].as_str().expect("etag").to_owned()),
        _ => panic!("{call:?} answered {status}: {body}"),
    };
    Op {
        call,
        answer,
        sent,
        answered,
    }
}

/// One history: `CLIENTS` clients, each doing `OPS_PER_CLIENT` random operations on the
/// history's own paths; answers the operations of each path.
async fn history(c: &reqwest::Client, base: &str, id: usize, seed: u64) -> Vec<Vec<Op>> {
    let clients = (0..CLIENTS).map(|client| {
        let (c, base) = (c.clone(), base.to_owned());
        tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (client as u64) << 32);
            // The etag this client last saw on each path, for its If-Match writes.
            let mut seen: Vec<Option<String>> = vec![None; PATHS];
            let mut ops = Vec::new();
            for n in 0..OPS_PER_CLIENT {
                let p = rng.random_range(0..PATHS);
                let url = format!("{base}/v1/host/workspace/files/lin/h{id}/p{p}.md");
                let value = format!("h{id}-c{client}-o{n}");
                let call = match rng.random_range(0..5) {
                    0 => Call::Get,
                    1 => Call::Put(value),
                    2 => Call::PutIfMatch(
                        value,
                        seen[p].clone().unwrap_or_else(|| "\"0-stale\"".to_owned()),
                    ),
                    3 => Call::PutIfNoneMatch(value),
                    _ => Call::Delete,
                };
                let op = perform(&c, &url, call).await;
                if let Answer::Written(e) = &op.answer {
                    seen[p] = Some(e.clone());
                }
                ops.push((p, op));
            }
            ops
        })
    });
    let mut by_path = vec![Vec::new(); PATHS];
    for c in futures_join(clients.collect()).await {
        for (p, op) in c {
            by_path[p].push(op);
        }
    }
    by_path
}

async fn futures_join<T: Send + 'static>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await.expect("client task"));
    }
    out
}

/// Runs `count` histories against `base` and checks each path of each.
async fn check_histories(base: &str, count: usize, seed: u64) {
    let started = Instant::now();
    // One connection pool for every client: a client is a task, not a connection.
    let c = reqwest::Client::new();
    let mut checked = 0;
    for batch in (0..count).collect::<Vec<_>>().chunks(PARALLEL) {
        let runs: Vec<_> = batch
            .iter()
            .map(|&id| {
                let (c, base) = (c.clone(), base.to_owned());
                tokio::spawn(async move {
                    (
                        id,
                        history(&c, &base, id, seed.wrapping_add(id as u64)).await,
                    )
                })
            })
            .collect();
        for (id, paths) in futures_join(runs).await {
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
        "{count} histories ({} operations) linearizable in {:.1} s",
        count * CLIENTS * OPS_PER_CLIENT,
        started.elapsed().as_secs_f64()
    );
}

fn seed() -> u64 {
    std::env::var("LINEARIZABILITY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_on_the_embedded_store_are_linearizable() {
    let dir = tempfile::tempdir().unwrap();
    let keys = format!("{KEY}=acme/main");
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            // Every history writes paths of its own.
            ("WORKSPACE_MAX_FILES", "100000"),
            ("RUST_LOG", "warn"),
        ],
    )
    .await;
    check_histories(&s.base, 10_000, seed()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_on_the_aws_adapters_are_linearizable() {
    let dir = tempfile::tempdir().unwrap();
    let (table, bucket) = (testing::unique("lin-meta"), testing::unique("lin-bodies"));
    let keys = format!("{KEY}=acme/main");
    let mut env = aws_env(&[("WORKSPACE_TABLE", &table), ("WORKSPACE_BUCKET", &bucket)]);
    provision(dir.path(), &env);
    env.push(("WORKSPACE_BACKEND".to_owned(), "aws".to_owned()));
    env.push(("WORKSPACE_API_KEYS".to_owned(), keys));
    env.push(("WORKSPACE_MAX_FILES".to_owned(), "100000".to_owned()));
    env.push(("RUST_LOG".to_owned(), "warn".to_owned()));
    let s = Server::start(dir.path(), &refs(&env)).await;
    check_histories(&s.base, 100, seed()).await;
}

/// The checker itself: it accepts an overlapping read of either value, and refuses a read
/// of a value no write ever made, and a stale etag winning after a newer write.
#[test]
fn the_checker_tells_linearizable_from_not() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + std::time::Duration::from_millis(ms);
    let op = |call: Call, answer: Answer, sent: u64, answered: u64| Op {
        call,
        answer,
        sent: at(sent),
        answered: at(answered),
    };
    let put_a = op(
        Call::Put("a".into()),
        Answer::Written("\"1-a\"".into()),
        0,
        10,
    );
    // A read overlapping the write may see it or not.
    for seen in [Some("a".to_owned()), None] {
        let read = op(Call::Get, Answer::Read(seen), 5, 8);
        assert!(linearizable(&[put_a.clone(), read]));
    }
    // A read after the write must see it.
    let late = op(Call::Get, Answer::Read(None), 20, 25);
    assert!(!linearizable(&[put_a.clone(), late]));
    // A value nobody wrote.
    let ghost = op(Call::Get, Answer::Read(Some("z".into())), 20, 25);
    assert!(!linearizable(&[put_a.clone(), ghost]));
    // After b replaced a, an If-Match on a's etag cannot win.
    let put_b = op(
        Call::Put("b".into()),
        Answer::Written("\"2-b\"".into()),
        20,
        30,
    );
    let stale = op(
        Call::PutIfMatch("c".into(), "\"1-a\"".into()),
        Answer::Written("\"3-c\"".into()),
        40,
        50,
    );
    assert!(!linearizable(&[put_a.clone(), put_b.clone(), stale]));
    let refused = op(
        Call::PutIfMatch("c".into(), "\"1-a\"".into()),
        Answer::Refused,
        40,
        50,
    );
    assert!(linearizable(&[put_a, put_b, refused]));
}
