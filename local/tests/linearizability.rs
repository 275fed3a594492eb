//! Linearizability of the file API through the real server process: random concurrent
//! histories of PUT, If-Match PUT, If-None-Match PUT, DELETE and GET on a few paths, each
//! checked against a register per path with a Wing–Gong search (the histories and the checker:
//! tests/src/linearizability.rs, shared with the same check through the functions behind the
//! emulated API Gateway, tests/tests/linearizability_gateway.rs).
//!
//! On the embedded store: 10,000 histories. On the AWS adapters over moto (served one request
//! at a time, the isolation real DynamoDB transactions have): 100.

mod common;
#[path = "../../tests/src/linearizability.rs"]
mod linearizability;

use common::aws::{aws_env, provision, refs};
use common::Server;
use linearizability::{check_histories, linearizable, seed, Answer, Call, Http, Op};
use std::time::Instant;
use workspace_store_aws::testing;

const KEY: &str = "linearizability-key-0123456789";
/// Histories run side by side (each on paths of its own).
const PARALLEL: usize = 8;

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
    check_histories(&Http::new(&s.base, KEY), 10_000, PARALLEL, seed()).await;
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
    check_histories(&Http::new(&s.base, KEY), 100, PARALLEL, seed()).await;
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
