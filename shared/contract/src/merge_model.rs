//! A model of a fork's merge for property tests on every backend: for random writes and
//! deletes on a workspace and on its fork, and rebases of the fork with each strategy
//! between them, then a merge with each strategy, both sides end exactly as the model says
//! (so nothing outside the other side's changes moved, and a refused rebase or merge
//! changed nothing), and after a successful merge the fork holds the same files. Requests
//! go through the real router.

use crate::harness::{file_uri, Harness, KEY_A};
use http::Method;
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;

pub const PATHS: &[&str] = &["a.md", "b.md", "dir/c.md", "dir/d.md"];
/// One line each: a text merge of two different changes to a path never applies cleanly,
/// so `three-way` settles exactly what `fail` would.
pub const CONTENTS: &[&str] = &["x", "y", "z"];
pub const STRATEGIES: &[&str] = &["fail", "fork-wins", "parent-wins", "three-way"];

#[derive(Debug, Clone)]
pub enum Op {
    Put {
        fork: bool,
        path: usize,
        content: usize,
    },
    Delete {
        fork: bool,
        path: usize,
    },
    /// The parent's changes since the base brought into the fork; the base moves.
    Rebase {
        strategy: usize,
    },
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<bool>(), 0..PATHS.len(), 0..CONTENTS.len()).prop_map(|(fork, path, content)| {
            Op::Put {
                fork,
                path,
                content,
            }
        }),
        (any::<bool>(), 0..PATHS.len()).prop_map(|(fork, path)| Op::Delete { fork, path }),
        (0..STRATEGIES.len()).prop_map(|strategy| Op::Rebase { strategy }),
    ]
}

type Files = BTreeMap<String, String>;

/// Every live file of the workspace (or the fork) and its content.
async fn state(h: &Harness, fork: Option<&str>) -> Files {
    let mut call = h.call(Method::GET, "/v1/host/workspace/files", Some(KEY_A));
    if let Some(f) = fork {
        call = call.header("x-workspace-id", f);
    }
    let listed = call.send().await.assert_ok();
    let mut out = Files::new();
    for f in listed["files"].as_array().expect("files") {
        let path = f["path"].as_str().expect("path");
        let mut call = h.call(Method::GET, &file_uri(path), Some(KEY_A));
        if let Some(f) = fork {
            call = call.header("x-workspace-id", f);
        }
        let v = call.send().await.assert_ok();
        out.insert(
            path.to_owned(),
            v["content"].as_str().expect("text").to_owned(),
        );
    }
    out
}

/// What the model says a merge does: `Ok(parent after)` or `Err(conflicting paths)`.
fn model_merge(
    base: &Files,
    fork: &Files,
    parent: &Files,
    strategy: &str,
) -> Result<Files, Vec<String>> {
    model_combine(base, fork, parent, strategy, false)
}

/// What the model says a rebase does: `Ok(fork after)` (the parent stays as it is) or
/// `Err(conflicting paths)`.
fn model_rebase(
    base: &Files,
    fork: &Files,
    parent: &Files,
    strategy: &str,
) -> Result<Files, Vec<String>> {
    model_combine(base, fork, parent, strategy, true)
}

/// One side takes the other's changes since the base (the parent the fork's in a merge,
/// the fork the parent's in a rebase); a path both changed differently is settled by the
/// strategy (`fork-wins`, `parent-wins`) or is a conflict.
fn model_combine(
    base: &Files,
    fork: &Files,
    parent: &Files,
    strategy: &str,
    into_fork: bool,
) -> Result<Files, Vec<String>> {
    let (target, source) = if into_fork {
        (fork, parent)
    } else {
        (parent, fork)
    };
    let mut out = target.clone();
    let mut conflicts = Vec::new();
    for p in PATHS {
        let (b, f, q) = (base.get(*p), fork.get(*p), parent.get(*p));
        let (t, s) = (target.get(*p), source.get(*p));
        let result = if s == b || t == s {
            t
        } else if t == b {
            s
        } else {
            match strategy {
                "fork-wins" => f,
                "parent-wins" => q,
                _ => {
                    conflicts.push((*p).to_owned());
                    continue;
                }
            }
        };
        match result {
            Some(c) => out.insert((*p).to_owned(), c.clone()),
            None => out.remove(*p),
        };
    }
    if conflicts.is_empty() {
        Ok(out)
    } else {
        Err(conflicts)
    }
}

/// The paths a refused rebase or merge names.
fn conflicts_of(v: &serde_json::Value) -> Vec<String> {
    v["details"]["conflicts"]
        .as_array()
        .expect("conflicts")
        .iter()
        .filter_map(|c| c["path"].as_str().map(str::to_owned))
        .collect()
}

/// The sides as the model has them: the base, the parent, the fork.
struct Sides {
    base: Files,
    parent: Files,
    forked: Files,
}

async fn apply(h: &Harness, fork: &str, op: &Op, sides: &mut Sides) {
    let (on_fork, path, content) = match op {
        Op::Put {
            fork,
            path,
            content,
        } => (*fork, PATHS[*path], Some(CONTENTS[*content])),
        Op::Delete { fork, path } => (*fork, PATHS[*path], None),
        Op::Rebase { strategy } => {
            let strategy = STRATEGIES[*strategy];
            let r = h
                .call(
                    Method::POST,
                    &format!("/v1/host/workspace/forks/{fork}/rebase"),
                    Some(KEY_A),
                )
                .json(&json!({ "strategy": strategy }))
                .send()
                .await;
            match model_rebase(&sides.base, &sides.forked, &sides.parent, strategy) {
                Ok(after) => {
                    r.assert_ok();
                    sides.forked = after;
                    sides.base = sides.parent.clone();
                }
                Err(conflicts) => {
                    let v = r.assert_error(409, "workspace_conflict");
                    assert_eq!(conflicts_of(&v), conflicts, "a rebase's conflicts");
                }
            }
            assert_eq!(
                state(h, Some(fork)).await,
                sides.forked,
                "the fork after {op:?}"
            );
            assert_eq!(
                state(h, None).await,
                sides.parent,
                "a rebase leaves the parent"
            );
            return;
        }
    };
    let (parent, forked) = (&mut sides.parent, &mut sides.forked);
    let mut call = match content {
        Some(c) => h
            .call(Method::PUT, &file_uri(path), Some(KEY_A))
            .json(&json!({ "content": c })),
        None => h.call(Method::DELETE, &file_uri(path), Some(KEY_A)),
    };
    if on_fork {
        call = call.header("x-workspace-id", fork);
    }
    let r = call.send().await;
    let side = if on_fork { forked } else { parent };
    match content {
        Some(c) => {
            r.assert_ok();
            side.insert(path.to_owned(), c.to_owned());
        }
        None if side.remove(path).is_some() => {
            assert_eq!(
                r.status.as_u16(),
                204,
                "{}",
                String::from_utf8_lossy(&r.body)
            );
        }
        None => {
            r.assert_error(404, "not_found");
        }
    }
}

/// Seeds the workspace, forks it, runs `ops`, merges with `strategy`, and checks both sides.
pub async fn run_case(h: Harness, seed: Vec<(usize, usize)>, ops: Vec<Op>, strategy: &'static str) {
    let mut parent = Files::new();
    for (path, content) in seed {
        h.put(KEY_A, PATHS[path], CONTENTS[content])
            .await
            .assert_ok();
        parent.insert(PATHS[path].to_owned(), CONTENTS[content].to_owned());
    }
    let fork = h.new_fork(KEY_A).await;
    let mut sides = Sides {
        base: parent.clone(),
        forked: parent.clone(),
        parent,
    };
    for op in &ops {
        apply(&h, &fork, op, &mut sides).await;
    }
    let Sides {
        base,
        parent,
        forked,
    } = sides;
    assert_eq!(
        state(&h, None).await,
        parent,
        "the workspace before the merge"
    );
    assert_eq!(
        state(&h, Some(&fork)).await,
        forked,
        "the fork before the merge"
    );

    let r = h.merge(KEY_A, &fork, json!({ "strategy": strategy })).await;
    match model_merge(&base, &forked, &parent, strategy) {
        Ok(expected) => {
            r.assert_ok();
            assert_eq!(
                state(&h, None).await,
                expected,
                "the workspace after the merge"
            );
            assert_eq!(
                state(&h, Some(&fork)).await,
                expected,
                "the fork after the merge"
            );
            let d = h.fork_diff(KEY_A, &fork, "").await.assert_ok();
            assert_eq!(d["changes"], json!([]), "nothing left to merge");
        }
        Err(conflicts) => {
            let v = r.assert_error(409, "workspace_conflict");
            assert_eq!(conflicts_of(&v), conflicts);
            assert_eq!(
                state(&h, None).await,
                parent,
                "a refused merge changes nothing"
            );
            assert_eq!(state(&h, Some(&fork)).await, forked);
        }
    }
}
