//! A rollback stopped midway (here: a body read fails after the first file is back) leaves
//! some files restored and the rest as they were, and running it again finishes it. The
//! failure is injected into the body store, which no emulator can make fail on cue.

use async_trait::async_trait;
use http::Method;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use workspace_contract::harness::KEY_A;
use workspace_contract::{Backend, Harness};
use workspace_core::blob::{PresignSpec, PresignedUrl};
use workspace_core::model::{BodyRef, Millis};
use workspace_core::ports::{BodyStore, Staged};
use workspace_core::{Result, WorkspaceError};
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

/// Reads fail once `armed` is set and `reads_left` is used up.
#[derive(Default)]
struct FailingReads {
    inner: MemoryBodies,
    armed: AtomicBool,
    reads_left: AtomicUsize,
}

#[async_trait]
impl BodyStore for FailingReads {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<BodyRef> {
        self.inner.put(key, bytes, content_type).await
    }
    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        if self.armed.load(Ordering::SeqCst) && self.reads_left.fetch_sub(1, Ordering::SeqCst) == 0
        {
            return Err(WorkspaceError::internal(
                "injected: the body store stopped answering",
            ));
        }
        self.inner.get(body).await
    }
    async fn delete(&self, body: &BodyRef) -> Result<()> {
        self.inner.delete(body).await
    }
    async fn presign_get(
        &self,
        body: &BodyRef,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        self.inner.presign_get(body, spec).await
    }
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

#[tokio::test]
async fn an_interrupted_rollback_finishes_when_run_again() {
    let bodies = Arc::new(FailingReads::default());
    let h = Harness::new(Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: bodies.clone(),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    })
    .await;
    for p in ["a.md", "b.md", "c.md"] {
        h.put(KEY_A, p, &format!("{p} good")).await.assert_ok();
    }
    let snap = h.snapshot(KEY_A).await.assert_ok()["snapshotId"]
        .as_str()
        .unwrap()
        .to_owned();
    let good = h.state(KEY_A).await;
    for p in ["a.md", "b.md", "c.md"] {
        h.put(KEY_A, p, &format!("{p} bad")).await.assert_ok();
    }
    h.put(KEY_A, "new.md", "created by the bad run")
        .await
        .assert_ok();

    // The first snapshot body is read (and a.md, once restored, read again by the search
    // index after its commit), the next read fails: new.md is gone and a.md is back, b.md
    // and c.md are not.
    bodies.reads_left.store(2, Ordering::SeqCst);
    bodies.armed.store(true, Ordering::SeqCst);
    let uri = format!("/v1/host/workspace/snapshots/{snap}/restore");
    let failed = h
        .call(Method::POST, &uri, Some(KEY_A))
        .json(&json!({}))
        .send()
        .await;
    assert_eq!(failed.status.as_u16(), 500);
    bodies.armed.store(false, Ordering::SeqCst);
    assert_eq!(
        h.get(KEY_A, "a.md").await.assert_ok()["content"],
        "a.md good"
    );
    assert_eq!(
        h.get(KEY_A, "b.md").await.assert_ok()["content"],
        "b.md bad"
    );
    h.get(KEY_A, "new.md").await.assert_error(404, "not_found");

    let finished = h
        .call(Method::POST, &uri, Some(KEY_A))
        .json(&json!({}))
        .send()
        .await
        .assert_ok();
    assert_eq!(
        finished,
        json!({"restored": ["b.md", "c.md"], "deleted": [], "unchanged": ["a.md"]})
    );
    let now: Vec<_> = h
        .state(KEY_A)
        .await
        .into_iter()
        .map(|(p, _, _, c)| (p, c))
        .collect();
    let good: Vec<_> = good.into_iter().map(|(p, _, _, c)| (p, c)).collect();
    assert_eq!(now, good);
}
