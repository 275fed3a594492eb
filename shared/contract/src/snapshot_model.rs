//! A model of snapshots and forks for property tests on every backend (issue 46's gate, on
//! today's pins first): random writes, deletes, snapshots, snapshot deletions, forks, writes
//! in forks, fork discards and the clock moving past expiries, with a retention window of two
//! versions so that rewrites prune; after every step, every read through every live
//! snapshot, every live fork and the workspace itself equals a model that keeps a copy of the
//! state each snapshot and fork was taken at. At the end, once every snapshot and fork has
//! expired and each file is written once more, no file keeps more than the window's
//! versions: nothing stays protected after what protected it ended. Requests go through the
//! real router. Merges are `merge_model`'s.

use crate::harness::{file_uri, Call, Harness, KEY_A, LIMITS};
use crate::Backend;
use http::Method;
use proptest::prelude::*;
use std::collections::BTreeMap;
use workspace_core::ports::Clock;
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
    /// Moves the clock `days` days (and a millisecond, so no expiry falls on the instant).
    Advance {
        days: i64,
    },
}

/// A snapshot's life (the service's default) and a fork's (asked for at creation).
const SNAPSHOT_TTL_MS: i64 = 7 * DAY_MS;
const FORK_TTL_MS: i64 = 4 * DAY_MS;
const DAY_MS: i64 = 24 * 60 * 60 * 1000;
/// The retention window the model's harness runs with.
const MAX_VERSIONS: u64 = 2;

/// A snapshot or fork of the model: its id, the files it reads, when it ends.
type Held = (String, Files, i64);

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
        1 => (1..4i64).prop_map(|days| Op::Advance { days }),
    ]
}

/// The harness the model runs on: `backend` with a retention window of two versions.
pub async fn harness(backend: Backend) -> Harness {
    Harness::with_limits(
        backend,
        Limits {
            max_versions: MAX_VERSIONS,
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
    snaps: &mut Vec<Held>,
    forks: &mut Vec<Held>,
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
            snaps.push((id, live.clone(), h.clock.now_ms() + SNAPSHOT_TTL_MS));
        }
        Op::DropSnapshot { n } => {
            if !snaps.is_empty() {
                let (id, _, _) = snaps.remove(n % snaps.len());
                let r = h.delete_snapshot(KEY_A, &id).await;
                assert_eq!(r.status.as_u16(), 204, "{}", r.json());
            }
        }
        Op::Fork => {
            let v = h
                .create_fork(
                    KEY_A,
                    serde_json::json!({ "ttlSeconds": FORK_TTL_MS / 1000 }),
                )
                .await
                .assert_ok();
            let id = v["workspaceId"].as_str().expect("workspaceId").to_owned();
            forks.push((id, live.clone(), h.clock.now_ms() + FORK_TTL_MS));
        }
        Op::ForkPut { n, path, content } => {
            if !forks.is_empty() {
                let i = n % forks.len();
                let (id, files, _) = &mut forks[i];
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
                let (id, files, _) = &mut forks[i];
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
                let (id, _, _) = forks.remove(n % forks.len());
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
        Op::Advance { days } => {
            h.clock.advance(days * DAY_MS + 1);
            let now = h.clock.now_ms();
            snaps.retain(|(_, _, until)| *until > now);
            forks.retain(|(_, _, until)| *until > now);
        }
    }
}

async fn check(h: &Harness, step: usize, live: &Files, snaps: &[Held], forks: &[Held]) {
    for path in PATHS {
        assert_eq!(
            read(h, path, None, None).await.as_ref(),
            live.get(*path),
            "step {step}: live {path}"
        );
        for (id, files, _) in snaps {
            assert_eq!(
                read(h, path, Some(id), None).await.as_ref(),
                files.get(*path),
                "step {step}: {path} through snapshot {id}"
            );
        }
        for (id, files, _) in forks {
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
    // Every snapshot and fork ends; the next write of each file releases what they held.
    h.clock.advance(8 * DAY_MS);
    for (path, content) in &live {
        write_in(&h, None, Method::PUT, path, Some(content))
            .send()
            .await
            .assert_ok();
        let (s, v) = {
            let r = h
                .call(
                    Method::GET,
                    &format!("/v1/host/workspace/versions/{path}"),
                    Some(KEY_A),
                )
                .send()
                .await;
            (r.status.as_u16(), r.json())
        };
        assert_eq!(s, 200, "{v}");
        let kept = v["versions"].as_array().expect("versions").len() as u64;
        assert!(
            kept <= MAX_VERSIONS,
            "{path} keeps {kept} versions once nothing protects them: {v}"
        );
    }
}
