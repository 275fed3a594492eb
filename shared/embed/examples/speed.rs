//! How fast the model embeds: one 10-word query (the search request's cost), and 128-token
//! passages in the model's batches (indexing). `cargo run [--release] -p workspace-embed --example
//! speed -- <model dir> [passages]`.

use std::time::Instant;
use workspace_core::search::Embedder;
use workspace_embed::MiniLm;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: speed <model dir> [passages]");
    let passages: usize = args.next().map_or(256, |n| n.parse().expect("a count"));
    let start = Instant::now();
    let model = MiniLm::load(dir.as_ref()).expect("load");
    println!(
        "load: {:.0} ms ({})",
        start.elapsed().as_secs_f64() * 1e3,
        memory()
    );

    let query = "how do I retry a payment that failed last night";
    model.embed(&[query]).expect("embed");
    let runs = 20;
    let start = Instant::now();
    for _ in 0..runs {
        model.embed(&[query]).expect("embed");
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / runs as f64;
    println!("query (10 words): {ms:.1} ms ({})", memory());

    // Words of one token each: 126 of them and [CLS], [SEP] make 128 tokens.
    let words = [
        "file", "version", "search", "agent", "write", "read", "merge", "fork", "change",
        "history", "record", "commit", "path", "text", "model", "index",
    ];
    let texts: Vec<String> = (0..passages)
        .map(|p| {
            (0..126)
                .map(|i| words[(p * 7 + i * (p % 5 + 1)) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let start = Instant::now();
    for batch in refs.chunks(32) {
        model.embed(batch).expect("embed");
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "passages (128 tokens, batched): {passages} in {secs:.2} s, {:.1} passages/s",
        passages as f64 / secs
    );
    println!("{}", memory());
}

/// Resident memory now and at its peak (Linux).
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("?".to_string(), |v| v.trim().to_string())
    };
    format!("RSS {}, peak {}", field("VmRSS:"), field("VmHWM:"))
}
