//! What a path-scoped key's check costs per path: `workspace_core::globs` (globset's
//! rendering matched by regex-lite) against globset's own matcher, on the same globs and
//! paths, in one run, and what building each set costs (on Lambda a route function builds
//! the set from the claim on every request). Run with
//! `cargo run --profile local -p workspace-core --example glob_match [globs]` (1 to 32 globs,
//! default 4; 32 is the most a key carries).

use globset::{GlobBuilder, GlobSetBuilder};
use std::time::Instant;
use workspace_core::globs::{GlobSyntax, Globs};

const ROUNDS: usize = 9;

fn median_ns_per_path(paths: &[String], mut is_match: impl FnMut(&str) -> bool) -> (f64, usize) {
    let mut times = Vec::new();
    let mut hits = 0;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        hits = paths.iter().filter(|p| is_match(p)).count();
        times.push(t.elapsed().as_nanos() as f64 / paths.len() as f64);
    }
    times.sort_by(f64::total_cmp);
    (times[ROUNDS / 2], hits)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4)
        .clamp(1, 32);
    let shapes = [
        "memory/**",
        "notes/*.md",
        "docs/**/*.md",
        "{agents,tools}/*/config.json",
        "runs/[0-9]*/out-?.txt",
    ];
    let globs: Vec<String> = (0..n)
        .map(|i| format!("team{}/{}", i / shapes.len(), shapes[i % shapes.len()]))
        .collect();
    // 20,000 paths of 2-6 segments, about one in eight inside the first glob's team.
    let words = [
        "memory", "notes", "docs", "agents", "tools", "runs", "a", "b2", "x.md",
    ];
    let paths: Vec<String> = (0..20_000usize)
        .map(|i| {
            let depth = 2 + i % 5;
            let mut segs = vec![format!("team{}", i % 8)];
            segs.extend((1..depth).map(|d| words[(i * 7 + d * 13) % words.len()].to_owned()));
            segs.join("/")
        })
        .collect();

    let ours = Globs::new(globs.iter().map(String::as_str), GlobSyntax::PATHS).expect("globs");
    let mut b = GlobSetBuilder::new();
    for g in &globs {
        b.add(
            GlobBuilder::new(g)
                .literal_separator(true)
                .backslash_escape(false)
                .build()
                .expect("glob"),
        );
    }
    let theirs = b.build().expect("set");

    let (ours_ns, ours_hits) = median_ns_per_path(&paths, |p| ours.is_match(p));
    let (theirs_ns, theirs_hits) = median_ns_per_path(&paths, |p| theirs.is_match(p));
    assert_eq!(ours_hits, theirs_hits, "the two matchers disagree");
    let t = Instant::now();
    for _ in 0..100 {
        let _ = Globs::new(globs.iter().map(String::as_str), GlobSyntax::PATHS);
    }
    let build_us = t.elapsed().as_secs_f64() * 1e6 / 100.0;
    let t = Instant::now();
    for _ in 0..100 {
        let mut b = GlobSetBuilder::new();
        for g in &globs {
            b.add(
                GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .expect("glob"),
            );
        }
        let _ = b.build();
    }
    let globset_build_us = t.elapsed().as_secs_f64() * 1e6 / 100.0;
    println!(
        "{n} globs, {} paths ({ours_hits} match): regex-lite {ours_ns:.0} ns/path, \
         globset {theirs_ns:.0} ns/path; building the set: {build_us:.0} µs, \
         globset's {globset_build_us:.0} µs",
        paths.len()
    );
}
