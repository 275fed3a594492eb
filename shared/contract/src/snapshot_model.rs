//! A model of snapshots and forks for property tests on every backend (issue 46's gate, on
//! today's pins first): random writes, deletes, snapshots, snapshot deletions, forks, writes
//! in forks and fork discards, with a retention window of two versions so that rewrites
//! prune; after every step, every read through every live snapshot, every live fork and the
//! workspace itself equals a model that keeps a copy of the state each snapshot and fork was
//! taken at. Requests go through the real router. Merges are `fork_property.rs`'s (memory).

use crate::harness::{file_uri, Call, Harness, KEY_A, LIMITS};
use crate::Backend;
use http::Method;
use proptest::prelude::*;
use std::collections::BTreeMap;
use workspace_core::Limits;

const PATHS: &[&str] = &["a.md", "b.md", "dir/c.md"];
const CONTENTS: &[&str] = &["x", "y", "z", "w"];

type Files = BTreeMap<String, String>;

#[derive(Debug, Clone)]
pub enum Op {
    Put {
        path: usize,
        content: usize,
    },
    Delete {
        path: usize,
    },
    Snapshot,
    /// Deletes the n-th live snapshot (modulo how many there are).
    DropSnapshot {
        n: usize,
    },
    Fork,
    ForkPut {
        n: usize,
        path: usize,
        content: usize,
    },
    ForkDelete {
        n: usize,
        path: usize,
    },
    /// Discards the n-th live fork.
    Discard {
        n: usize,
    },
}

pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..PATHS.len(), 0..CONTENTS.len()).prop_map(|(path, content)| Op::Put { path, content }),
        2 => (0..PATHS.len()).prop_map(|path| Op::Delete { path }),
        2 => Just(Op::Snapshot),
        1 => (0..4usize).prop_map(|n| Op::DropSnapshot { n }),
        1 => Just(Op::Fork),
        2 => (0..4usize, 0..PATHS.len(), 0..CONTENTS.len())
            .prop_map(|(n, path, content)| Op::ForkPut { n, path, content }),
        1 => (0..4usize, 0..PATHS.len()).prop_map(|(n, path)| Op::ForkDelete { n, path }),
        1 => (0..4usize).prop_map(|n| Op::Discard { n }),
    ]
}

/// The harness the model runs on: `backend` with a retention window of two versions.
pub async fn harness(backend: Backend) -> Harness {
    Harness::with_limits(
        backend,
        Limits {
            max_versions: 2,
            max_files: 10,
            ..LIMITS
        },
    )
    .await
}

/// What a read of `path` answers: through snapshot `snapshot`, in fork `fork`, or live.
async fn read(
    h: &Harness,
    path: &str,
    snapshot: Option<&str>,
    fork: Option<&str>,
) -> Option<String> {
    let uri = match snapshot {
        Some(id) => format!("{}?snapshot={id}", file_uri(path)),
        None => file_uri(path),
    };
    let mut call = h.call(Method::GET, &uri, Some(KEY_A));
    if let Some(f) = fork {
        call = call.header("x-workspace-id", f);
    }
    let r = call.send().await;
    match r.status.as_u16() {
        200 => Some(r.json()["content"].as_str().expect("text").to_owned()),
        404 => None,
        s => panic!("GET {uri} (fork {fork:?}): {s} {}", r.json()),
    }
}

fn write_in<'a>(
    h: &'a Harness,
    fork: Option<&str>,
    method: Method,
    path: &str,
    content: Option<&str>,
) -> Call<'a> {
    let mut call = h.call(method, &file_uri(path), Some(KEY_A));
    if let Some(f) = fork {
        call = call.header("x-workspace-id", f);
    }
    if let Some(c) = content {
        call = call.json(&serde_json::json!({ "content": c }));
    }
    call
}

/// Applies `op` to the service and to the model.
async fn apply(
    h: &Harness,
    op: &Op,
    live: &mut Files,
    snaps: &mut Vec<(String, Files)>,
    forks: &mut Vec<(String, Files)>,
) {
    match op {
        Op::Put { path, content } => {
            write_in(h, None, Method::PUT, PATHS[*path], Some(CONTENTS[*content]))
                .send()
                .await
                .assert_ok();
            live.insert(PATHS[*path].to_owned(), CONTENTS[*content].to_owned());
        }
        Op::Delete { path } => {
            let r = write_in(h, None, Method::DELETE, PATHS[*path], None)
                .send()
                .await;
            let was = live.remove(PATHS[*path]);
            assert_eq!(
                r.status,
                if was.is_some() { 204 } else { 404 },
                "{}",
                r.json()
            );
        }
        Op::Snapshot => {
            let v = h.snapshot(KEY_A).await.assert_ok();
            let id = v["snapshotId"].as_str().expect("id").to_owned();
            snaps.push((id, live.clone()));
        }
        Op::DropSnapshot { n } => {
            if !snaps.is_empty() {
                let (id, _) = snaps.remove(n % snaps.len());
                let r = h.delete_snapshot(KEY_A, &id).await;
                assert_eq!(r.status.as_u16(), 204, "{}", r.json());
            }
        }
        Op::Fork => {
            let id = h.new_fork(KEY_A).await;
            forks.push((id, live.clone()));
        }
        Op::ForkPut { n, path, content } => {
            if !forks.is_empty() {
                let i = n % forks.len();
                let (id, files) = &mut forks[i];
                write_in(
                    h,
                    Some(id),
                    Method::PUT,
                    PATHS[*path],
                    Some(CONTENTS[*content]),
                )
                .send()
                .await
                .assert_ok();
                files.insert(PATHS[*path].to_owned(), CONTENTS[*content].to_owned());
            }
        }
        Op::ForkDelete { n, path } => {
            if !forks.is_empty() {
                let i = n % forks.len();
                let (id, files) = &mut forks[i];
                let r = write_in(h, Some(id), Method::DELETE, PATHS[*path], None)
                    .send()
                    .await;
                let was = files.remove(PATHS[*path]);
                assert_eq!(
                    r.status,
                    if was.is_some() { 204 } else { 404 },
                    "{}",
                    r.json()
                );
            }
        }
        Op::Discard { n } => {
            if !forks.is_empty() {
                let (id, _) = forks.remove(n % forks.len());
                let r = h
                    .call(
                        Method::DELETE,
                        &format!("/v1/host/workspace/forks/{id}"),
                        Some(KEY_A),
                    )
                    .send()
                    .await;
                assert_eq!(r.status.as_u16(), 204, "{}", r.json());
            }
        }
    }
}

async fn check(
    h: &Harness,
    step: usize,
    live: &Files,
    snaps: &[(String, Files)],
    forks: &[(String, Files)],
) {
    for path in PATHS {
        assert_eq!(
            read(h, path, None, None).await.as_ref(),
            live.get(*path),
            "step {step}: live {path}"
        );
        for (id, files) in snaps {
            assert_eq!(
                read(h, path, Some(id), None).await.as_ref(),
                files.get(*path),
                "step {step}: {path} through snapshot {id}"
            );
        }
        for (id, files) in forks {
            assert_eq!(
                read(h, path, None, Some(id)).await.as_ref(),
                files.get(*path),
                "step {step}: {path} in fork {id}"
            );
        }
    }
}

/// Runs `ops` on `h`, checking every read after every step.
pub async fn run_case(h: Harness, ops: Vec<Op>) {
    let (mut live, mut snaps, mut forks) = (Files::new(), Vec::new(), Vec::new());
    for (step, op) in ops.iter().enumerate() {
        apply(&h, op, &mut live, &mut snaps, &mut forks).await;
        check(&h, step, &live, &snaps, &forks).await;
    }
}
