//! The server under the attacks an unauthenticated or abusive client can mount, all at once:
//! forged 100 MiB upload PUTs, keyless and over-limit declared bodies, JSON-RPC batches at
//! their bound, and hundreds of silent connections. Its resident memory stays under a stated
//! bound and `/health` keeps answering within 1 s throughout. Loopback only; every attack is
//! bounded in count and time.

mod common;

use common::Server;
use serde_json::json;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The bound this test holds the server process to (debug build; measured here: 34 MiB).
/// Before the head checks, the forged uploads alone were buffered: 10 × 16 MiB.
const MAX_RSS_BYTES: u64 = 128 * 1024 * 1024;
const KEY: &str = "hostile-load-key-0123456789";

/// Resident memory of `pid`, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A request head, then up to `send` bytes of body in 64 KiB pieces (stopping when the
/// server has closed), on a connection of its own.
fn head_then_body(addr: &str, head: &str, send: usize) {
    let Ok(mut tcp) = TcpStream::connect(addr) else {
        return;
    };
    let _ = tcp.set_write_timeout(Some(Duration::from_secs(5)));
    if tcp.write_all(head.as_bytes()).is_err() {
        return;
    }
    let piece = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < send && tcp.write_all(&piece).is_ok() {
        sent += piece.len();
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_bounded_and_health_answers_under_hostile_load() {
    let dir = tempfile::tempdir().unwrap();
    let keys = format!("{KEY}=acme/main");
    let s = Server::start(
        dir.path(),
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            ("WORKSPACE_CONNECTION_TIMEOUT_SECONDS", "2"),
        ],
    )
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let pid = s.pid();
    let mib = 1024 * 1024;

    let mut attacks = Vec::new();
    // Silent connections, held for 3 s.
    {
        let addr = addr.clone();
        attacks.push(std::thread::spawn(move || {
            let held: Vec<_> = (0..200)
                .filter_map(|_| TcpStream::connect(&addr).ok())
                .collect();
            std::thread::sleep(Duration::from_secs(3));
            drop(held);
        }));
    }
    let heads: Vec<(String, usize)> = vec![
        // Forged upload URLs declaring 100 MiB, then sending bytes anyway.
        (
            format!("PUT /v1/signed/upload/acme/main/up-x?exp=9999999999&len={n}&ct=a%2Fb&sig=00 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: {n}\r\n\r\n", n = 100 * mib),
            16 * mib,
        ),
        // Keyless PUTs with a body of 6 MiB.
        (
            format!("PUT /v1/host/workspace/files/a.md HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n\r\n", n = 6 * mib),
            6 * mib,
        ),
        // A valid key declaring 64 MiB.
        (
            format!("PUT /v1/host/workspace/files/a.md HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n\r\n", n = 64 * mib),
            8 * mib,
        ),
    ];
    for (head, send) in heads {
        for _ in 0..10 {
            let (addr, head) = (addr.clone(), head.clone());
            attacks.push(std::thread::spawn(move || {
                head_then_body(&addr, &head, send)
            }));
        }
    }
    // JSON-RPC batches at their bound, with a valid key.
    let batch: Vec<_> = (0..64)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
        .collect();
    let batch = serde_json::Value::Array(batch).to_string();
    let mut batches = Vec::new();
    for _ in 0..4 {
        let (url, batch) = (s.url("/mcp"), batch.clone());
        batches.push(tokio::spawn(async move {
            let c = reqwest::Client::new();
            for _ in 0..10 {
                let _ = c
                    .post(&url)
                    .bearer_auth(KEY)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(batch.clone())
                    .send()
                    .await;
            }
        }));
    }

    // Meanwhile: /health every 100 ms, and the server's memory.
    let health = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let (mut peak, mut slowest, mut checks) = (0, Duration::ZERO, 0);
    let until = Instant::now() + Duration::from_secs(5);
    let running = |a: &[std::thread::JoinHandle<()>], b: &[tokio::task::JoinHandle<()>]| {
        a.iter().any(|t| !t.is_finished()) || b.iter().any(|t| !t.is_finished())
    };
    while Instant::now() < until || running(&attacks, &batches) {
        assert!(
            Instant::now() < until + Duration::from_secs(60),
            "attacks did not end"
        );
        let started = Instant::now();
        let r = health.get(s.url("/health")).send().await;
        let took = started.elapsed();
        assert!(
            r.as_ref().is_ok_and(|r| r.status() == 200),
            "/health failed under load after {took:?}: {r:?}"
        );
        slowest = slowest.max(took);
        peak = peak.max(rss_bytes(pid));
        checks += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for a in attacks {
        a.join().unwrap();
    }
    for b in batches {
        b.await.unwrap();
    }
    peak = peak.max(rss_bytes(pid));
    eprintln!(
        "peak RSS {} MiB, slowest /health {slowest:?} over {checks} checks",
        peak / mib as u64
    );
    assert!(peak > 0, "RSS was read");
    assert!(peak < MAX_RSS_BYTES, "peak RSS {peak} bytes");
    assert!(
        slowest < Duration::from_secs(1),
        "slowest /health {slowest:?}"
    );
}
