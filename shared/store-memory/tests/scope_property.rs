//! Property: for a random path scope and a random sequence of requests by a key limited to
//! it, no response ever shows a path the key may not read (unless the request named that
//! path itself) or a byte of such a file, and nothing outside the key's write globs changes.
//! Requests go through the real router (files, listings with paging, history, diff, change
//! log, snapshots and reads through them, rollback, runs, MCP tools, the memory tool).

use http::Method;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_contract::harness::{Harness, Reply, KEY_A, KEY_PROPERTY};
use workspace_contract::Backend;
use workspace_core::PathScope;
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

/// The seeded files; each holds `MARK-<index>-END`, which appears nowhere else.
const PATHS: &[&str] = &[
    "memory/a.md",
    "memory/deep/b.md",
    "notes/n.md",
    "notes/sub/m.md",
    "docs/d.md",
    "docs/x/y.md",
    "secret/s.md",
    "secret/deep/t.md",
    "memories/agent-1/p.md",
    "memories/agent-2/q.md",
    "top.md",
    "memory2/z.md",
];

const GLOBS: &[&str] = &[
    "memory/**",
    "notes/*.md",
    "docs/**",
    "secret/*",
    "memories/agent-1/**",
    "*.md",
    "**/*.md",
    "memory/*",
    "docs/x/**",
    "{notes,docs}/**",
    "memor?/**",
    "[mn]*/**",
];

const PREFIXES: &[&str] = &[
    "", "memory", "memory/", "secret/", "s", "docs/x/", "m", "notes/",
];

fn mark(i: usize) -> String {
    format!("MARK-{i:02}-END")
}

#[derive(Debug, Clone)]
enum Op {
    Get(usize),
    GetVersion(usize),
    Put(usize),
    Delete(usize),
    List { prefix: usize, limit: usize },
    History(usize),
    Diff(usize),
    Changes { limit: usize },
    Snapshot,
    Rollback { to_seed: bool },
    Run,
    McpList,
    McpGrep,
    McpRead(usize),
    McpSearch,
    MemoryView,
}

fn op() -> impl Strategy<Value = Op> {
    let path = 0..PATHS.len();
    prop_oneof![
        path.clone().prop_map(Op::Get),
        path.clone().prop_map(Op::GetVersion),
        path.clone().prop_map(Op::Put),
        path.clone().prop_map(Op::Delete),
        (0..PREFIXES.len(), 1usize..4).prop_map(|(prefix, limit)| Op::List { prefix, limit }),
        path.clone().prop_map(Op::History),
        path.clone().prop_map(Op::Diff),
        (1usize..4).prop_map(|limit| Op::Changes { limit }),
        Just(Op::Snapshot),
        any::<bool>().prop_map(|to_seed| Op::Rollback { to_seed }),
        Just(Op::Run),
        Just(Op::McpList),
        Just(Op::McpGrep),
        path.prop_map(Op::McpRead),
        Just(Op::McpSearch),
        Just(Op::MemoryView),
    ]
}

fn globs() -> impl Strategy<Value = Vec<String>> {
    proptest::sample::subsequence(GLOBS, 0..=3)
        .prop_map(|g| g.into_iter().map(str::to_owned).collect())
}

struct Run {
    h: Harness,
    scope: PathScope,
    /// Snapshots to roll back to: the seed's (taken by the whole key), then the key's own.
    seed_snapshot: String,
    own_snapshot: Option<String>,
    writes: usize,
}

impl Run {
    /// Fails if `r` shows a path the key may not read (unless `asked` names it) or any
    /// byte of such a file.
    fn check(&self, r: &Reply, asked: &str) {
        let body = String::from_utf8_lossy(&r.body);
        for (i, path) in PATHS.iter().enumerate() {
            if self.scope.can_read(path) {
                continue;
            }
            assert!(
                !body.contains(&mark(i)),
                "content of {path} shown to {:?}: {asked} → {body}",
                self.scope
            );
            assert!(
                asked.contains(path) || !body.contains(path),
                "{path} shown to {:?}: {asked} → {body}",
                self.scope
            );
        }
    }

    async fn send(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        let call = self.h.call(method, uri, Some(KEY_PROPERTY));
        let r = match body {
            Some(b) => call.json(&b).send().await,
            None => call.send().await,
        };
        self.check(&r, uri);
        r
    }

    async fn tool(&self, name: &str, args: Value) {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": name, "arguments": args}});
        let r = self
            .h
            .call(Method::POST, "/mcp", Some(KEY_PROPERTY))
            .json(&msg)
            .send()
            .await;
        self.check(&r, &msg.to_string());
    }

    /// Follows every page of a listing whose rows are under `field`.
    async fn pages(&self, base: &str, field: &str) {
        let mut token: Option<String> = None;
        for _ in 0..64 {
            let uri = match &token {
                Some(t) => format!("{base}&nextToken={t}"),
                None => base.to_owned(),
            };
            let r = self.send(Method::GET, &uri, None).await;
            if !r.status.is_success() {
                return;
            }
            let page = r.json();
            assert!(page[field].is_array(), "{page}");
            match page["nextToken"].as_str() {
                Some(t) => token = Some(t.to_owned()),
                None => return,
            }
        }
        panic!("{base} did not end");
    }

    async fn apply(&mut self, op: &Op) {
        let file = |i: usize| format!("/v1/host/workspace/files/{}", PATHS[i]);
        match op {
            Op::Get(i) => {
                self.send(Method::GET, &file(*i), None).await;
            }
            Op::GetVersion(i) => {
                self.send(Method::GET, &format!("{}?version=1", file(*i)), None)
                    .await;
            }
            Op::Put(i) => {
                self.writes += 1;
                let content = format!("W-{}", self.writes);
                self.send(Method::PUT, &file(*i), Some(json!({ "content": content })))
                    .await;
            }
            Op::Delete(i) => {
                self.send(Method::DELETE, &file(*i), None).await;
            }
            Op::List { prefix, limit } => {
                let base = format!(
                    "/v1/host/workspace/files?prefix={}&limit={limit}",
                    PREFIXES[*prefix]
                );
                self.pages(&base, "files").await;
            }
            Op::History(i) => {
                let uri = format!("/v1/host/workspace/versions/{}", PATHS[*i]);
                self.send(Method::GET, &uri, None).await;
            }
            Op::Diff(i) => {
                let uri = format!("/v1/host/workspace/diff/{}?from=1", PATHS[*i]);
                self.send(Method::GET, &uri, None).await;
            }
            Op::Changes { limit } => {
                self.pages(
                    &format!("/v1/host/workspace/changes?limit={limit}"),
                    "changes",
                )
                .await;
            }
            Op::Snapshot => {
                let r = self
                    .send(
                        Method::POST,
                        "/v1/host/workspace/snapshots",
                        Some(json!({})),
                    )
                    .await;
                if r.status.is_success() {
                    let id = r.json()["snapshotId"].as_str().unwrap().to_owned();
                    self.send(
                        Method::GET,
                        &format!("/v1/host/workspace/snapshots/{id}"),
                        None,
                    )
                    .await;
                    self.own_snapshot = Some(id);
                }
                let seed = self.seed_snapshot.clone();
                self.send(
                    Method::GET,
                    &format!("/v1/host/workspace/snapshots/{seed}"),
                    None,
                )
                .await;
                self.pages(
                    &format!("/v1/host/workspace/files?snapshot={seed}&limit=2"),
                    "files",
                )
                .await;
            }
            Op::Rollback { to_seed } => {
                let id = match (&self.own_snapshot, to_seed) {
                    (Some(own), false) => own.clone(),
                    _ => self.seed_snapshot.clone(),
                };
                let uri = format!("/v1/host/workspace/snapshots/{id}/restore");
                self.send(Method::POST, &uri, Some(json!({}))).await;
            }
            Op::Run => {
                let r = self
                    .send(Method::POST, "/v1/runs", Some(json!({"workflowId": "wf"})))
                    .await;
                if r.status.is_success() {
                    let id = r.json()["runId"].as_str().unwrap().to_owned();
                    self.send(Method::GET, &format!("/v1/runs/{id}"), None)
                        .await;
                }
            }
            Op::McpList => {
                self.tool("list_directory", json!({"path": "/workspace"}))
                    .await
            }
            Op::McpGrep => self.tool("grep", json!({"pattern": "MARK"})).await,
            Op::McpRead(i) => self.tool("read_file", json!({"path": PATHS[*i]})).await,
            Op::McpSearch => {
                self.tool(
                    "search_files",
                    json!({"path": "/workspace", "pattern": "**"}),
                )
                .await
            }
            Op::MemoryView => {
                self.send(
                    Method::POST,
                    "/v1/host/workspace/memory",
                    Some(json!({"command": "view", "path": "/memories"})),
                )
                .await;
            }
        }
    }
}

async fn backend() -> Backend {
    Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    }
}

async fn run_case(allow: Vec<String>, read: Vec<String>, ops: Vec<Op>) {
    let scope = PathScope::new(allow, read).expect("globs from the pool");
    let h = Harness::with_path_scope(backend().await, scope.clone(), 64).await;
    for (i, path) in PATHS.iter().enumerate() {
        h.put(KEY_A, path, &mark(i)).await.assert_ok();
    }
    let seed = h
        .call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
        .json(&json!({}))
        .send()
        .await
        .assert_ok()["snapshotId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Later versions of every file, so history, diff and rollback have work to do.
    for (i, path) in PATHS.iter().enumerate() {
        h.put(KEY_A, path, &format!("{} v2", mark(i)))
            .await
            .assert_ok();
    }
    let before: Vec<(String, Value)> = {
        let mut out = Vec::new();
        for path in PATHS {
            let f = h.get(KEY_A, path).await.assert_ok();
            out.push(((*path).to_owned(), f["etag"].clone()));
        }
        out
    };
    let mut run = Run {
        h,
        scope,
        seed_snapshot: seed,
        own_snapshot: None,
        writes: 0,
    };
    for op in &ops {
        run.apply(op).await;
    }
    // Nothing the key may not write has changed.
    for (path, etag) in before {
        if run.scope.can_write(&path) {
            continue;
        }
        let now = run.h.get(KEY_A, &path).await.assert_ok();
        assert_eq!(
            now["etag"], etag,
            "{path} changed under {:?}: {ops:?}",
            run.scope
        );
    }
    let listed = run.h.list(KEY_A, "").await.assert_ok();
    for f in listed["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        assert!(PATHS.contains(&path), "{path} appeared: {ops:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn no_response_shows_a_path_or_byte_outside_the_key_scope(
        allow in globs(),
        read in globs(),
        ops in proptest::collection::vec(op(), 1..14),
    ) {
        prop_assume!(!allow.is_empty() || !read.is_empty());
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(run_case(allow, read, ops));
    }
}
