//! The metadata ports as one process wires them: each port its own object, so a Lambda
//! function plugs in only the ports its routes reach and links only those adapter methods
//! (a trait object links every method of its trait: one `dyn MetaStore` over DynamoDB
//! would put the commit transaction into a function that only reads).

use super::{
    BatchOutcome, Commit, CommitOutcome, CommitStore, Expect, HeadStore, HistoryStore, MetaStore,
    RecordStore, ScopeItemStore, SnapshotStore, StoredRecord,
};
use crate::changes::{ChangePage, ChangeQuery};
use crate::error::{Result, WorkspaceError};
use crate::model::{
    BodyRef, Erasure, Head, IdempotencyRecord, Pin, Points, Snapshot, SnapshotInfo, VersionRecord,
};
use crate::path::{FilePath, PathPrefix};
use crate::scope::Scope;
use async_trait::async_trait;
use std::sync::Arc;

/// The metadata ports a service is built on. It is itself a [`MetaStore`] (each call goes
/// to its port), so whatever takes the whole store takes this.
#[derive(Clone)]
pub struct MetaPorts {
    pub heads: Arc<dyn HeadStore>,
    pub commits: Arc<dyn CommitStore>,
    pub history: Arc<dyn HistoryStore>,
    pub snapshots: Arc<dyn SnapshotStore>,
    pub records: Arc<dyn RecordStore>,
    pub scope_items: Arc<dyn ScopeItemStore>,
}

impl MetaPorts {
    /// Every port from one store that is all of them (memory, redb, DynamoDB).
    pub fn of<S: MetaStore + 'static>(store: Arc<S>) -> Self {
        Self {
            heads: store.clone(),
            commits: store.clone(),
            history: store.clone(),
            snapshots: store.clone(),
            records: store.clone(),
            scope_items: store,
        }
    }

    /// Every port from a store already held as a whole.
    pub fn of_store(store: Arc<dyn MetaStore>) -> Self {
        Self {
            heads: store.clone(),
            commits: store.clone(),
            history: store.clone(),
            snapshots: store.clone(),
            records: store.clone(),
            scope_items: store,
        }
    }

    /// The ports of a process that only reads (on AWS: `get`, `list`, `search`): heads,
    /// history, snapshots and records, which a fork's reads through to its base need too.
    /// Committing and erasing a scope are [`NotServed`].
    pub fn reads_of<S>(store: Arc<S>) -> Self
    where
        S: HeadStore + HistoryStore + SnapshotStore + RecordStore + 'static,
    {
        Self {
            heads: store.clone(),
            commits: Arc::new(NotServed),
            history: store.clone(),
            snapshots: store.clone(),
            records: store,
            scope_items: Arc::new(NotServed),
        }
    }
}

/// A port of a process that serves no route using it. Reaching it is a wiring mistake,
/// reported as an internal error.
pub struct NotServed;

fn not_served(what: &str) -> WorkspaceError {
    WorkspaceError::internal(format!("this process serves no route that {what}"))
}

#[async_trait]
impl CommitStore for NotServed {
    async fn idempotency(&self, _: &Scope, _: &str) -> Result<Option<IdempotencyRecord>> {
        Err(not_served("commits a change"))
    }

    async fn commit(&self, _: Commit) -> Result<CommitOutcome> {
        Err(not_served("commits a change"))
    }

    async fn commit_many(&self, _: Vec<Commit>) -> Result<BatchOutcome> {
        Err(not_served("commits a change"))
    }
}

#[async_trait]
impl ScopeItemStore for NotServed {
    async fn erase_scope_items(&self, _: &Scope) -> Result<u64> {
        Err(not_served("erases a workspace's items"))
    }
}

#[async_trait]
impl HeadStore for MetaPorts {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        self.heads.head(scope, path).await
    }

    async fn list_live(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads.list_live(scope, prefix, after, limit).await
    }

    async fn list_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads.list_heads(scope, prefix, after, limit).await
    }

    async fn live_count(&self, scope: &Scope) -> Result<u64> {
        self.heads.live_count(scope).await
    }
}

#[async_trait]
impl CommitStore for MetaPorts {
    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.commits.idempotency(scope, key).await
    }

    async fn commit(&self, commit: Commit) -> Result<CommitOutcome> {
        self.commits.commit(commit).await
    }

    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        self.commits.commit_many(commits).await
    }

    fn fits_one_commit(&self, commits: &[Commit]) -> bool {
        self.commits.fits_one_commit(commits)
    }
}

#[async_trait]
impl HistoryStore for MetaPorts {
    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>> {
        self.history.version(scope, path, seq).await
    }

    async fn list_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        self.history.list_versions(scope, path, before, limit).await
    }

    async fn set_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        self.history
            .set_pins(scope, path, expect, pins, must_exist)
            .await
    }

    async fn erase_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &Erasure,
    ) -> Result<Option<Option<BodyRef>>> {
        self.history.erase_version(scope, path, seq, erasure).await
    }

    async fn list_changes(&self, scope: &Scope, query: &ChangeQuery) -> Result<ChangePage> {
        self.history.list_changes(scope, query).await
    }
}

#[async_trait]
impl SnapshotStore for MetaPorts {
    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        self.snapshots.put_snapshot(scope, snapshot).await
    }

    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>> {
        self.snapshots.snapshot(scope, id).await
    }

    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool> {
        self.snapshots.delete_snapshot(scope, id).await
    }

    async fn points(&self, scope: &Scope) -> Result<Points> {
        self.snapshots.points(scope).await
    }

    async fn swap_points(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: crate::ports::PointRecords<'_>,
    ) -> Result<bool> {
        self.snapshots
            .swap_points(scope, expect_rev, points, with)
            .await
    }

    async fn list_snapshots(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        self.snapshots
            .list_snapshots(scope, id_prefix, before, limit)
            .await
    }
}

#[async_trait]
impl RecordStore for MetaPorts {
    async fn put_record(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        self.records.put_record(scope, kind, key, record).await
    }

    async fn record(&self, scope: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>> {
        self.records.record(scope, kind, key).await
    }
}

#[async_trait]
impl ScopeItemStore for MetaPorts {
    async fn erase_scope_items(&self, scope: &Scope) -> Result<u64> {
        self.scope_items.erase_scope_items(scope).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading process's ports refuse a commit with an internal error, not a panic, and
    /// do not touch the store (there is none behind them).
    #[tokio::test]
    async fn unserved_ports_refuse_with_an_internal_error() {
        let scope = Scope::parse("acme", "main").unwrap();
        let e = NotServed.idempotency(&scope, "k").await.unwrap_err();
        assert!(matches!(e, WorkspaceError::Internal(_)), "{e:?}");
        assert!(e.to_string().contains("commits a change"), "{e}");
        let e = NotServed.erase_scope_items(&scope).await.unwrap_err();
        assert!(e.to_string().contains("erases a workspace's items"), "{e}");
    }
}
