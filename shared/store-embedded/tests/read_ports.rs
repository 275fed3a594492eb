//! A service wired with only the read ports (what the `get`, `list` and `search` functions
//! plug in: `MetaPorts::reads_of`, no staging area) answers every read, through a fork to
//! its base too, and refuses a write with an internal error that changes nothing.

use std::sync::Arc;
use workspace_core::ports::{FromCommittedState, MetaPorts, NoBodies, RandomIds, SystemClock};
use workspace_core::service::{ChangeFilter, ForkRequest};
use workspace_core::{
    FilePath, Identity, Limits, PathPrefix, PutRequest, Scope, WorkspaceError, WorkspaceService,
};
use workspace_store_embedded::EmbeddedStore;

fn put(path: &FilePath, text: &str) -> PutRequest {
    PutRequest {
        path: Some(path.clone()),
        content: text.as_bytes().to_vec(),
        ..Default::default()
    }
}

fn paths(page: &workspace_core::FilePage) -> Vec<&str> {
    page.files.iter().map(|f| f.path.as_str()).collect()
}

#[tokio::test]
async fn read_ports_alone_serve_every_read_and_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
    let writer = WorkspaceService::new(
        store.clone(),
        store.clone(),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    );
    let reader = WorkspaceService::wired(
        MetaPorts::reads_of(store.clone()),
        store.clone(),
        Arc::new(NoBodies),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    );
    let main = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    let a = FilePath::parse("notes/a.md").unwrap();
    let b = FilePath::parse("notes/b.md").unwrap();
    writer.put(&main, put(&a, "one\n")).await.unwrap();
    writer.put(&main, put(&a, "two\n")).await.unwrap();
    let fork = writer
        .create_fork(&main, ForkRequest::default())
        .await
        .unwrap();
    let forked = Identity::read_write(Scope::new(main.scope.tenant.clone(), fork.workspace), "bob");
    writer.put(&forked, put(&b, "fork only\n")).await.unwrap();

    // The parent: a file, its history, a diff, the listing, the change log.
    assert_eq!(reader.get(&main, &a, None).await.unwrap().content, b"two\n");
    let history = reader.history(&main, &a, None, None).await.unwrap();
    assert_eq!(history.versions.len(), 2);
    reader.diff(&main, &a, 1, Some(2)).await.unwrap();
    let listed = reader
        .list(&main, &PathPrefix::default(), None, None)
        .await
        .unwrap();
    assert_eq!(paths(&listed), ["notes/a.md"]);
    let changes = reader
        .changes(&main, &ChangeFilter::default(), None, None)
        .await
        .unwrap();
    assert_eq!(changes.changes.len(), 2);

    // The fork: its own file and the one it reads through to its base.
    assert_eq!(
        reader.get(&forked, &a, None).await.unwrap().content,
        b"two\n"
    );
    assert_eq!(
        reader.get(&forked, &b, None).await.unwrap().content,
        b"fork only\n"
    );
    let listed = reader
        .list(&forked, &PathPrefix::default(), None, None)
        .await
        .unwrap();
    assert_eq!(paths(&listed), ["notes/a.md", "notes/b.md"]);
    assert_eq!(
        reader
            .history(&forked, &a, None, None)
            .await
            .unwrap()
            .versions
            .len(),
        2
    );

    // A write reaches the unwired commit port: an internal error, and nothing changed.
    let refused = reader.put(&main, put(&a, "three\n")).await.unwrap_err();
    assert!(
        matches!(refused, WorkspaceError::Internal(_)),
        "{refused:?}"
    );
    assert_eq!(writer.get(&main, &a, None).await.unwrap().content, b"two\n");
    let history = writer.history(&main, &a, None, None).await.unwrap();
    assert_eq!(history.versions.len(), 2);
}
