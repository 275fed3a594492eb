//! Retention on the embedded store: a commit that prunes version items deletes their
//! bodies in its own transaction (bodies and metadata share one database), so nothing is
//! left for the caller to delete and no pruned body outlives its item.

use std::sync::Arc;
use workspace_core::model::VersionRecord;
use workspace_core::ports::{
    Bodies, Commit, CommitOutcome, CommitStore, Expect, FromCommittedState, HeadStore,
    HistoryStore, RandomIds, SystemClock,
};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Scope, WorkspaceService};
use workspace_store_embedded::EmbeddedStore;

#[tokio::test]
async fn a_commit_past_retention_deletes_the_pruned_bodies_itself() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
    let svc = WorkspaceService::new(
        store.clone(),
        store.clone(),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    // Bodies in the body table: this is about pruning them (an inline one goes with its
    // item).
    .with_inline_body_bytes(0);
    let scope = Scope::parse("acme", "main").unwrap();
    let who = Identity::read_write(scope.clone(), "alice");
    let path = FilePath::parse("notes/r.md").unwrap();
    for i in 1..=3 {
        let req = PutRequest {
            path: Some(path.clone()),
            content: format!("v{i}").into_bytes(),
            ..Default::default()
        };
        svc.put(&who, req).await.unwrap();
    }
    let mut bodies = Vec::new();
    for seq in 1..=3 {
        let item = store.version(&scope, &path, seq).await.unwrap().unwrap();
        bodies.push(item.body.unwrap());
    }

    // The next commit keeps only seq 3 and up (and names version 3's body again, as a
    // restore of the same content may).
    let head = store.head(&scope, &path).await.unwrap().unwrap();
    let mut next = head.clone();
    next.seq += 1;
    next.version += 1;
    let commit = Commit {
        scope: scope.clone(),
        path: path.clone(),
        expect: Expect::of(Some(&head)),
        version: VersionRecord::of_head(&next, None),
        head: next,
        live_delta: 0,
        max_files: 10,
        idempotency: None,
        idempotency_valid_after: 0,
        retain_from_seq: 3,
        released: Vec::new(),
        secrets_epoch: None,
        points_rev: 0,
    };
    assert_eq!(
        store.commit(commit).await.unwrap(),
        CommitOutcome::Committed { pruned: vec![] },
        "nothing left for the caller to delete"
    );
    assert!(store.version(&scope, &path, 2).await.unwrap().is_none());
    assert!(
        store.get(&bodies[0]).await.unwrap().is_none(),
        "seq 1's body"
    );
    assert!(
        store.get(&bodies[1]).await.unwrap().is_none(),
        "seq 2's body"
    );
    assert_eq!(store.get(&bodies[2]).await.unwrap(), Some(b"v3".to_vec()));
}
