//! `bench-load --base URL --key K --op put|get|list --clients N --requests M`: each of N
//! clients (one keep-alive connection each) sends its share of M requests one after the
//! other; prints `{"op", "clients", "requests", "seconds", "perSecond", "p50Ms", "p99Ms",
//! "errors"}`. Paths are `bench/<n>.md` for n below `--paths`; `list` reads a page of 100
//! under `--prefix`. A load generator of our own because it must speak our API (keys,
//! JSON bodies) and count only what we time; it targets loopback only.

use clap::Parser;
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    base: String,
    #[arg(long)]
    key: String,
    #[arg(long)]
    op: String,
    #[arg(long, default_value_t = 1)]
    clients: usize,
    #[arg(long, default_value_t = 1000)]
    requests: usize,
    #[arg(long, default_value_t = 500)]
    paths: usize,
    #[arg(long, default_value = "")]
    prefix: String,
    /// Bytes of content per PUT.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// PUT English prose (numbered per request) instead of one repeated byte: what a
    /// search index has to tokenize.
    #[arg(long)]
    text: bool,
}

const PROSE: &str = "The agent keeps its memory in the workspace: each note records what it \
    learnt, which tools it used, and why a plan changed. Before a deploy it reads the \
    runbook, checks the last release notes, and writes a short summary for the next run. ";

/// `size` bytes of prose starting with the request's number.
fn prose(n: usize, size: usize) -> String {
    let mut s = format!("note {n}: ");
    while s.len() < size {
        s.push_str(PROSE);
    }
    s.truncate(size);
    s
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    assert!(
        args.base.starts_with("http://127.0.0.1:") || args.base.starts_with("http://localhost:"),
        "bench-load targets loopback only"
    );
    let content = "x".repeat(args.size);
    let (text, size) = (args.text, args.size);
    let per_client = args.requests.div_ceil(args.clients);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let (base, key, op, prefix, content) = (
            args.base.clone(),
            args.key.clone(),
            args.op.clone(),
            args.prefix.clone(),
            content.clone(),
        );
        let paths = args.paths;
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .expect("client");
            let mut times = Vec::with_capacity(per_client);
            let mut errors = 0usize;
            for i in 0..per_client {
                let n = (c * per_client + i) % paths;
                let req = match op.as_str() {
                    "put" => client
                        .put(format!("{base}/v1/host/workspace/files/bench/{n}.md"))
                        .json(&json!({ "content": if text { prose(c * per_client + i, size) } else { content.clone() } })),
                    "get" => client.get(format!("{base}/v1/host/workspace/files/bench/{n}.md")),
                    "list" => client.get(format!(
                        "{base}/v1/host/workspace/files?prefix={prefix}&limit=100"
                    )),
                    other => panic!("unknown op {other}"),
                };
                let t = Instant::now();
                let ok = match req.bearer_auth(&key).send().await {
                    Ok(r) => {
                        let ok = r.status().is_success();
                        ok && r.bytes().await.is_ok()
                    }
                    Err(_) => false,
                };
                times.push(t.elapsed());
                if !ok {
                    errors += 1;
                }
            }
            (times, errors)
        }));
    }
    let mut times: Vec<Duration> = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (ts, e) = t.await.expect("client task");
        times.extend(ts);
        errors += e;
    }
    let seconds = started.elapsed().as_secs_f64();
    times.sort();
    let at = |q: f64| {
        let i = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1;
        times[i].as_secs_f64() * 1000.0
    };
    println!(
        "{}",
        json!({
            "op": args.op, "clients": args.clients, "requests": times.len(),
            "seconds": seconds, "perSecond": times.len() as f64 / seconds,
            "p50Ms": at(0.50), "p99Ms": at(0.99), "errors": errors,
        })
    );
}
