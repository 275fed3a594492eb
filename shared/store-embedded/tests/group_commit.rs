//! Group commit: commits that queue while one is being made durable are decided together
//! in one transaction, one by one, each under its own rules.

use std::sync::Arc;
use workspace_core::ports::{FromCommittedState, RandomIds, SystemClock};
use workspace_core::{
    FilePath, Identity, Limits, PutRequest, Scope, WorkspaceError, WorkspaceService,
};
use workspace_store_embedded::EmbeddedStore;

fn put(path: &str, content: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_decides_each_write_under_its_own_rules() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
    let svc = Arc::new(WorkspaceService::new(
        store.clone(),
        store.clone(),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits {
            max_files: 20,
            ..Limits::default()
        },
    ));
    let who = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    let base = svc.put(&who, put("race.md", "v1")).await.unwrap();
    let (commits_before, _) = store.commit_stats();

    // Every writer queues while the database's write transaction is held; released, they
    // are decided in (almost) one batch.
    let hold = store.hold_writes().unwrap();
    let mut tasks = Vec::new();
    for i in 0..64 {
        let (svc, who, etag) = (svc.clone(), who.clone(), base.meta.etag.clone());
        tasks.push(tokio::spawn(async move {
            let req = match i % 4 {
                // 16 writers racing on one If-Match
                0 => PutRequest {
                    if_match: Some(etag),
                    ..put("race.md", &format!("racer {i}"))
                },
                // 16 retries of one idempotent request
                1 => PutRequest {
                    idempotency_key: Some("same-request".to_owned()),
                    ..put("idem.md", "once")
                },
                // 16 creators of one file
                2 => PutRequest {
                    if_none_match_any: true,
                    ..put("create.md", &format!("creator {i}"))
                },
                // 16 writes of their own files, past the file quota for some
                _ => put(&format!("own/{i}.md"), "mine"),
            };
            (i % 4, svc.put(&who, req).await)
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(hold);
    let mut results = vec![Vec::new(); 4];
    for t in tasks {
        let (kind, r) = t.await.unwrap();
        results[kind].push(r);
    }

    let ok = |rs: &[Result<_, WorkspaceError>]| rs.iter().filter(|r| r.is_ok()).count();
    let conflicts = |rs: &[Result<_, WorkspaceError>]| {
        rs.iter()
            .filter(|r| matches!(r, Err(WorkspaceError::Conflict { .. })))
            .count()
    };
    assert_eq!(
        (ok(&results[0]), conflicts(&results[0])),
        (1, 15),
        "one If-Match winner"
    );
    assert_eq!(
        (ok(&results[2]), conflicts(&results[2])),
        (1, 15),
        "one creator"
    );
    // Every retry answers with the one version it made.
    let versions: Vec<u64> = results[1]
        .iter()
        .map(|r| r.as_ref().unwrap().meta.version)
        .collect();
    assert!(versions.iter().all(|v| *v == 1), "{versions:?}");
    // Files: race.md, idem.md, create.md, and own files up to the quota of 20.
    let own_ok = ok(&results[3]);
    let over_quota = results[3]
        .iter()
        .filter(|r| matches!(r, Err(WorkspaceError::TooLarge { .. })))
        .count();
    assert_eq!((own_ok, over_quota), (16, 0));
    let listed = svc
        .list(
            &who,
            &workspace_core::PathPrefix::parse("").unwrap(),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(listed.files.len(), 19);
    let history = svc
        .history(&who, &FilePath::parse("race.md").unwrap(), None, None)
        .await
        .unwrap();
    assert_eq!(history.versions.len(), 2, "one racer's write and the base");

    // The proof of batching: far fewer transactions (fsyncs) than commits.
    let (commits, transactions) = store.commit_stats();
    let batched = commits - commits_before;
    assert!(batched >= 64, "{batched}");
    assert!(
        transactions <= 1 + 1 + 3 + (batched - 64),
        "{batched} commits took {transactions} transactions"
    );
}
