//! Operations made of several commits, stopped midway and run again: a memory `rename` (a
//! copy with `If-None-Match: *`, then a delete guarded by the source's etag), a rollback
//! (one commit per file), and a forced erase of a version a kept snapshot holds (the kept
//! copy's delete, the snapshot's record, the version item).
//!
//! The stores are wrapped from the test side as in [`crate::faults`]: every port call of the
//! operation is broken in turn (it fails, or the "process" dies just before or just after
//! it), then a restarted process over the same stores looks, and runs the operation again.
//! Nothing may be lost or half-written at any point, and the retry must finish the job.

use crate::faults::{faulty_process, FaultPlan, FAULTS};
use crate::harness::{scope, Harness, Reply, KEY_A, KEY_ADMIN, KEY_TENANT};
use async_trait::async_trait;
use http::Method;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use workspace_core::blob::{PresignSpec, PresignedUrl};
use workspace_core::model::{BodyRef, Millis};
use workspace_core::ports::{Bodies, BodyStore, Staged, Staging};
use workspace_core::{Result, WorkspaceError};

/// One workspace of tenant `acme`, named per request with the tenant-wide key, in one
/// process (harness).
struct Run<'a> {
    h: &'a Harness,
    workspace: &'a str,
}

impl Run<'_> {
    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        let mut c = self
            .h
            .call(method, uri, Some(KEY_TENANT))
            .header("x-workspace-id", self.workspace);
        if let Some(b) = body {
            c = c.json(&b);
        }
        c.send().await
    }

    /// The live content of `path`, `None` when there is no live file.
    async fn content(&self, path: &str) -> Option<String> {
        let r = self
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files/{path}"),
                None,
            )
            .await;
        match r.status.as_u16() {
            404 => None,
            200 => Some(r.json()["content"].as_str().expect("content").to_owned()),
            other => panic!(
                "reading {path}: {other} {}",
                String::from_utf8_lossy(&r.body)
            ),
        }
    }

    /// The live paths under `prefix`, sorted.
    async fn paths(&self, prefix: &str) -> Vec<String> {
        let list = self
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files?prefix={prefix}"),
                None,
            )
            .await
            .assert_ok();
        list["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| f["path"].as_str().expect("path").to_owned())
            .collect()
    }

    async fn put(&self, path: &str, content: &str) {
        self.call(
            Method::PUT,
            &format!("/v1/host/workspace/files/{path}"),
            Some(json!({ "content": content })),
        )
        .await
        .assert_ok();
    }

    /// A memory tool call: the raw reply (a store failure is a 5xx, not an answer).
    async fn memory(&self, input: Value) -> Reply {
        self.call(Method::POST, "/v1/host/workspace/memory", Some(input))
            .await
    }
}

/// `(content, isError)` of a memory reply that is an answer.
fn answer(r: &Reply) -> (String, bool) {
    let v = r.assert_ok();
    (
        v["content"].as_str().expect("content").to_owned(),
        v["isError"].as_bool().expect("isError"),
    )
}

const NOTE: &str = "# Preferences\r\nlikes: tea\nno final newline";
const OLD_FILE: &str = "memories/inbox/prefs.md";
const NEW_FILE: &str = "memories/archive/prefs.md";
const RENAMED: &str = "Successfully renamed /memories/inbox/prefs.md to /memories/archive/prefs.md";

fn rename() -> Value {
    json!({"command": "rename", "old_path": "/memories/inbox/prefs.md",
           "new_path": "/memories/archive/prefs.md"})
}

async fn create_note(run: &Run<'_>) {
    let created = answer(
        &run.memory(
            json!({"command": "create", "path": "/memories/inbox/prefs.md",
                           "file_text": NOTE}),
        )
        .await,
    );
    assert!(!created.1, "{created:?}");
}

/// A memory `rename` broken at every port call it makes: at every point the file exists at
/// the old path or the new one (or both), whole, and a rename run again by a restarted
/// process finishes the move (the old path gone, the new one holding the file). At least one
/// point must stop it between its copy and its delete (both paths exist).
pub async fn an_interrupted_memory_rename_never_loses_the_file_and_a_retry_finishes_it(h: Harness) {
    let plan = Arc::new(FaultPlan::default());
    let process = faulty_process(&h, &plan).await;
    let run = Run {
        h: &process,
        workspace: "rename-count",
    };
    create_note(&run).await;
    let before = plan.calls();
    assert_eq!(
        answer(&run.memory(rename()).await),
        (RENAMED.to_owned(), false)
    );
    let steps = plan.calls() - before;
    assert!(steps >= 4, "a rename took {steps} port calls");

    let mut runs = 0;
    let mut stopped_between = 0;
    for step in 0..steps {
        for fault in FAULTS {
            runs += 1;
            let context = format!("rename, step {step} of {steps}, {fault:?}");
            let workspace = format!("rename{runs}");
            let plan = Arc::new(FaultPlan::default());
            let process = faulty_process(&h, &plan).await;
            let run = Run {
                h: &process,
                workspace: &workspace,
            };
            create_note(&run).await;
            plan.arm(plan.calls() + step, fault);
            let reply = run.memory(rename()).await;
            let acked = reply.status.is_success() && !answer(&reply).1;

            // The restarted process, over the same stores.
            let after = Run {
                h: &h,
                workspace: &workspace,
            };
            let old = after.content(OLD_FILE).await;
            let new = after.content(NEW_FILE).await;
            assert!(
                old.is_some() || new.is_some(),
                "{context}: the file is at neither path"
            );
            for (path, got) in [(OLD_FILE, &old), (NEW_FILE, &new)] {
                if let Some(got) = got {
                    assert_eq!(got, NOTE, "{context}: {path} is not the file");
                }
            }
            if acked {
                assert_eq!(
                    (old.as_deref(), new.as_deref()),
                    (None, Some(NOTE)),
                    "{context}: acknowledged, but not moved"
                );
            }
            if old.is_some() && new.is_some() {
                stopped_between += 1;
            }
            if old.is_some() {
                assert_eq!(
                    answer(&after.memory(rename()).await),
                    (RENAMED.to_owned(), false),
                    "{context}: the retry (the new path {})",
                    if new.is_some() {
                        "held the copy"
                    } else {
                        "was free"
                    }
                );
            }
            assert_eq!(after.content(OLD_FILE).await, None, "{context}: old path");
            assert_eq!(
                after.content(NEW_FILE).await.as_deref(),
                Some(NOTE),
                "{context}: new path"
            );
            assert_eq!(
                after.paths("memories/").await,
                vec![NEW_FILE.to_owned()],
                "{context}: memories left"
            );
        }
    }
    assert!(
        stopped_between > 0,
        "no crash point stopped a rename between its copy and its delete ({runs} tried)"
    );
}

const GOOD: [(&str, &str); 3] = [("a.md", "a good"), ("b.md", "b good"), ("c.md", "c good")];
const NEW_MD: &str = "created by the bad run";
/// The commits of [`rollback_setup`]: three good puts, three bad ones, `new.md`.
const SETUP_COMMITS: usize = 7;

/// Three files, a snapshot of them, then a bad run: each file overwritten and `new.md`
/// created. The snapshot's id.
async fn rollback_setup(run: &Run<'_>) -> String {
    for (path, good) in GOOD {
        run.put(path, good).await;
    }
    let snap = run
        .call(Method::POST, "/v1/host/workspace/snapshots", None)
        .await
        .assert_ok();
    for (path, _) in GOOD {
        run.put(path, &format!("{path} bad")).await;
    }
    run.put("new.md", NEW_MD).await;
    snap["snapshotId"].as_str().expect("snapshotId").to_owned()
}

async fn rollback(run: &Run<'_>, snapshot: &str) -> Reply {
    run.h
        .call(
            Method::POST,
            &format!("/v1/host/workspace/snapshots/{snapshot}/restore"),
            Some(KEY_TENANT),
        )
        .header("x-workspace-id", run.workspace)
        .header("idempotency-key", "roll-back-the-bad-run")
        .json(&json!({}))
        .send()
        .await
}

/// The live `(path, content)` pairs of the run's workspace.
async fn contents(run: &Run<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in run.paths("").await {
        let content = run.content(&path).await.expect("a listed file reads");
        out.push((path, content));
    }
    out
}

/// A rollback broken at its port calls (`POINTS` of them spread over all, as the emulated
/// AWS backend is too slow for every one; each in the three ways): at every point each file
/// is as the bad run left it or as the snapshot holds it, never anything else; running the
/// rollback again (same `Idempotency-Key`, a restarted process) brings the workspace back to
/// the snapshot, and the change log holds each of its changes exactly once.
pub async fn an_interrupted_rollback_is_finished_by_a_retry(h: Harness) {
    const POINTS: usize = 8;
    let plan = Arc::new(FaultPlan::default());
    let process = faulty_process(&h, &plan).await;
    let run = Run {
        h: &process,
        workspace: "rollback-count",
    };
    let snap = rollback_setup(&run).await;
    let before = plan.calls();
    let report = rollback(&run, &snap).await.assert_ok();
    let steps = plan.calls() - before;
    assert_eq!(
        report,
        json!({"restored": ["a.md", "b.md", "c.md"], "deleted": ["new.md"], "unchanged": []})
    );
    assert!(steps >= 8, "a rollback took {steps} port calls");
    let good: Vec<(String, String)> = GOOD
        .iter()
        .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(contents(&run).await, good);

    let stride = steps.div_ceil(POINTS).max(1);
    let mut runs = 0;
    let mut stopped_midway = 0;
    for step in (0..steps).step_by(stride) {
        for fault in FAULTS {
            runs += 1;
            let context = format!("rollback, step {step} of {steps}, {fault:?}");
            let workspace = format!("rollback{runs}");
            let plan = Arc::new(FaultPlan::default());
            let process = faulty_process(&h, &plan).await;
            let run = Run {
                h: &process,
                workspace: &workspace,
            };
            let snap = rollback_setup(&run).await;
            plan.arm(plan.calls() + step, fault);
            let acked = rollback(&run, &snap).await.status.is_success();

            let after = Run {
                h: &h,
                workspace: &workspace,
            };
            let now = contents(&after).await;
            let mut back = 0;
            for (path, content) in &now {
                let good = GOOD.iter().find(|(p, _)| p == path).map(|(_, c)| *c);
                let bad = match good {
                    Some(_) => format!("{path} bad"),
                    None => NEW_MD.to_owned(),
                };
                assert!(
                    Some(content.as_str()) == good || *content == bad,
                    "{context}: {path} holds {content:?}"
                );
                back += usize::from(Some(content.as_str()) == good);
            }
            for (path, _) in GOOD {
                assert!(
                    now.iter().any(|(p, _)| p == path),
                    "{context}: {path} is gone"
                );
            }
            if acked {
                assert_eq!(now, good, "{context}: acknowledged, but not rolled back");
            }
            let deleted = !now.iter().any(|(p, _)| p == "new.md");
            if (back > 0 || deleted) && now != good {
                stopped_midway += 1;
            }

            let retried = rollback(&after, &snap).await;
            assert!(
                retried.status.is_success(),
                "{context}: the retry answered {} {}",
                retried.status,
                String::from_utf8_lossy(&retried.body)
            );
            assert_eq!(contents(&after).await, good, "{context}: after the retry");
            let log = after
                .call(Method::GET, "/v1/host/workspace/changes?limit=100", None)
                .await
                .assert_ok();
            let entries = log["changes"].as_array().expect("changes").len();
            assert_eq!(
                entries,
                SETUP_COMMITS + 4,
                "{context}: a change of the rollback doubled or missing: {log}"
            );
        }
    }
    assert!(
        stopped_midway > 0,
        "no crash point stopped a rollback with some files back and others not ({runs} tried)"
    );
}

/// How the armed delete of a kept snapshot's copy goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CopyDelete {
    /// The store refuses it: the copy stays.
    Refused,
    /// The store deletes it, and the answer is lost.
    AnswerLost,
}

/// The body store, with the next delete of a kept snapshot's copy broken.
struct BreakKeptDelete {
    inner: Arc<dyn BodyStore>,
    armed: Mutex<Option<CopyDelete>>,
}

#[async_trait]
impl Bodies for BreakKeptDelete {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<BodyRef> {
        self.inner.put(key, bytes, content_type).await
    }

    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        self.inner.get(body).await
    }

    async fn delete(&self, body: &BodyRef) -> Result<()> {
        let armed = if body.key.contains("/kept/") {
            self.armed.lock().unwrap_or_else(|e| e.into_inner()).take()
        } else {
            None
        };
        match armed {
            None => self.inner.delete(body).await,
            Some(CopyDelete::Refused) => Err(WorkspaceError::internal(
                "injected: the kept copy's delete was refused",
            )),
            Some(CopyDelete::AnswerLost) => {
                self.inner.delete(body).await?;
                Err(WorkspaceError::internal(
                    "injected: the kept copy's delete answered nothing",
                ))
            }
        }
    }

    async fn presign_get(
        &self,
        body: &BodyRef,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        self.inner.presign_get(body, spec).await
    }
}

#[async_trait]
impl Staging for BreakKeptDelete {
    async fn put_staged(&self, key: &str, bytes: Vec<u8>, now: Millis) -> Result<()> {
        self.inner.put_staged(key, bytes, now).await
    }

    async fn get_staged(&self, key: &str, max_bytes: u64) -> Result<Option<Staged>> {
        self.inner.get_staged(key, max_bytes).await
    }

    async fn delete_staged(&self, key: &str) -> Result<()> {
        self.inner.delete_staged(key).await
    }

    async fn prune_staged(&self, prefix: &str, cutoff: Millis) -> Result<u64> {
        self.inner.prune_staged(prefix, cutoff).await
    }

    async fn presign_staged_put(
        &self,
        key: &str,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        self.inner.presign_staged_put(key, spec).await
    }
}

/// The copy a snapshot keeps of `path` (acme/main), read from the raw snapshot record.
pub(crate) async fn kept_copy(h: &Harness, id: &str, path: &str) -> Option<BodyRef> {
    h.meta
        .snapshot(&scope("acme", "main"), id)
        .await
        .expect("snapshot read")
        .expect("the snapshot record")
        .files
        .into_iter()
        .find(|f| f.path == path)
        .and_then(|f| f.kept)
}

/// A forced erase of a version a kept snapshot holds, whose delete of the kept copy fails
/// (refused, or done with its answer lost): an acknowledged erase has removed the copy from
/// the raw store; an unacknowledged one is finished by running it again, after which the
/// copy is gone and every read of the version (live history, the snapshot) is 410.
pub async fn a_forced_erase_whose_kept_copy_delete_fails_is_finished_by_a_retry(h: Harness) {
    let bodies = Arc::new(BreakKeptDelete {
        inner: h.bodies.clone(),
        armed: Mutex::new(None),
    });
    let process = Harness::new(crate::Backend {
        meta: h.meta.clone(),
        bodies: bodies.clone(),
        secrets: h.secrets.clone(),
        guard: Box::new(()),
    })
    .await;
    for (i, mode) in [CopyDelete::Refused, CopyDelete::AnswerLost]
        .into_iter()
        .enumerate()
    {
        let path = format!("leak{i}.md");
        let secret = format!("token-{i}-that-leaked");
        h.put(KEY_A, &path, &secret).await.assert_ok();
        let kept = h
            .call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
            .json(&json!({"keep": true, "label": format!("before-{i}")}))
            .send()
            .await
            .assert_ok()["snapshotId"]
            .as_str()
            .expect("snapshotId")
            .to_owned();
        h.put(KEY_A, &path, "cleaned").await.assert_ok();
        let copy = kept_copy(&h, &kept, &path).await.expect("a kept copy");
        assert_eq!(
            h.bodies.get(&copy).await.expect("raw read").as_deref(),
            Some(secret.as_bytes()),
            "{mode:?}: the kept copy is in the raw store"
        );

        *bodies.armed.lock().unwrap() = Some(mode);
        let first = process
            .call(
                Method::DELETE,
                &format!("/v1/host/workspace/versions/{path}/1?force=true"),
                Some(KEY_ADMIN),
            )
            .send()
            .await;
        assert!(
            bodies.armed.lock().unwrap().is_none(),
            "{mode:?}: the erase never deleted the kept copy"
        );
        if first.status.as_u16() == 204 {
            assert_eq!(
                h.bodies.get(&copy).await.expect("raw read"),
                None,
                "{mode:?}: the erase was acknowledged with the kept copy still stored"
            );
        } else {
            assert_eq!(first.status.as_u16(), 500, "{mode:?}");
            assert_eq!(
                h.erase(KEY_ADMIN, &path, 1, "?force=true")
                    .await
                    .status
                    .as_u16(),
                204,
                "{mode:?}: the retried erase"
            );
        }
        assert_eq!(
            h.bodies.get(&copy).await.expect("raw read"),
            None,
            "{mode:?}: the kept copy is still in the raw store"
        );
        assert_eq!(kept_copy(&h, &kept, &path).await, None, "{mode:?}");
        h.get_in(KEY_A, &kept, &path)
            .await
            .assert_error(410, "gone");
        h.get_version(KEY_A, &path, 1)
            .await
            .assert_error(410, "gone");
        assert_eq!(
            h.get(KEY_A, &path).await.assert_ok()["content"],
            "cleaned",
            "{mode:?}"
        );
    }
}
