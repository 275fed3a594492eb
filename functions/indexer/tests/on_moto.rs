//! The indexer on the emulator: fed `workspace.updated` as SQS messages (the envelope an
//! EventBridge rule sends), it keeps the index object equal to the workspace whatever the
//! delivery (redelivered, reordered, duplicated), rebuilds a lost object, never loses an
//! update to a racing indexer, and a search function loads its object instead of rebuilding.

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use fn_indexer::Indexer;
use std::collections::BTreeMap;
use std::sync::Arc;
use workspace_core::events::WorkspaceEvent;
use workspace_core::ports::{FromCommittedState, RandomIds, SystemClock};
use workspace_core::search::{ChangeLogFeed, IndexObjects, Loaded};
use workspace_core::service::{SearchRequest, SearchWiring};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Scope, WorkspaceService};
use workspace_search::{SharedIndexes, SqliteIndex};
use workspace_store_aws::calls::CallLog;
use workspace_store_aws::search_index::S3IndexObjects;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

fn objects(env: &common::Env) -> S3IndexObjects {
    S3IndexObjects::new(env.clients.s3.clone(), &env.bucket)
}

/// A service as a function builds it: a fresh process, with its own cache of indexes.
fn service(env: &common::Env) -> WorkspaceService {
    let meta = Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table));
    WorkspaceService::new(
        meta.clone(),
        Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket)),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    .with_search(SearchWiring {
        indexes: Arc::new(SharedIndexes::new(Arc::new(objects(env)))),
        feed: Arc::new(ChangeLogFeed {
            meta,
            clock: Arc::new(SystemClock),
        }),
        max_file_bytes: workspace_core::search::MAX_INDEXED_FILE_BYTES,
        max_scan_bytes: workspace_core::search::MAX_SCAN_BYTES,
        max_regex_millis: workspace_core::search::MAX_REGEX_MILLIS,
        max_catch_up_paths: workspace_core::search::MAX_CATCH_UP_PATHS,
    })
}

fn scope() -> Scope {
    Scope::parse("acme", "main").unwrap()
}

fn agent() -> Identity {
    Identity::read_write(scope(), "agent-7")
}

fn put(path: &str, content: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// An SQS batch of these events, as the rule delivers them.
fn batch(events: &[WorkspaceEvent]) -> SqsEvent {
    let mut b = SqsEvent::default();
    b.records = events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut m = SqsMessage::default();
            m.message_id = Some(format!("m{i}"));
            m.body = Some(e.envelope().to_string());
            m
        })
        .collect();
    b
}

fn event(path: &str, version: u64) -> WorkspaceEvent {
    serde_json::from_value(serde_json::json!({
        "eventId": format!("e-{path}-{version}"), "tenant": "acme", "workspace": "main",
        "path": path, "version": version, "sequence": version, "etag": "\"x\"", "operation": "put",
        "principal": "agent-7", "time": "2026-11-25T00:00:00.000Z", "size": 1,
        "contentType": "text/markdown",
    }))
    .expect("an event")
}

/// What the stored index object holds: path → version.
async fn stored(env: &common::Env) -> BTreeMap<String, u64> {
    use workspace_core::search::TextIndex;
    let Loaded::Fresh { bytes, .. } = objects(env).load(&scope(), None).await.unwrap() else {
        panic!("no index object");
    };
    SqliteIndex::from_bytes(&bytes)
        .unwrap()
        .files("")
        .unwrap()
        .into_iter()
        .map(|(p, f)| (p, f.version))
        .collect()
}

/// What the workspace holds: path → version.
async fn live(svc: &WorkspaceService) -> BTreeMap<String, u64> {
    svc.list(&agent(), &Default::default(), None, None)
        .await
        .unwrap()
        .files
        .into_iter()
        .map(|f| (f.path, f.version))
        .collect()
}

#[tokio::test]
async fn any_delivery_order_leaves_the_index_equal_to_the_workspace() {
    let env = common::fresh(None).await;
    let writer = service(&env);
    for (p, t) in [("a.md", "alpha"), ("b.md", "beta"), ("c.md", "gamma")] {
        writer.put(&agent(), put(p, t)).await.unwrap();
    }
    let indexer = Indexer::new(service(&env));
    let events = [event("a.md", 1), event("b.md", 1), event("c.md", 1)];
    let r = indexer.on_batch(&batch(&events)).await;
    assert!(r.batch_item_failures.is_empty());
    let want = live(&writer).await;
    assert_eq!(stored(&env).await, want);

    // More changes, then their events late, reordered, duplicated, and redelivered in a
    // later batch: the object ends equal to the workspace every time.
    writer
        .put(&agent(), put("a.md", "alpha two"))
        .await
        .unwrap();
    writer
        .delete(&agent(), &FilePath::parse("b.md").unwrap(), None)
        .await
        .unwrap();
    let late = [
        event("b.md", 2),
        event("a.md", 2),
        event("a.md", 2),
        event("c.md", 1),
    ];
    indexer.on_batch(&batch(&late)).await;
    let want = live(&writer).await;
    assert_eq!(stored(&env).await, want);
    let again = Indexer::new(service(&env));
    again.on_batch(&batch(&late[..1])).await;
    again.on_batch(&batch(&events)).await;
    assert_eq!(stored(&env).await, want);

    // A message that is no event is dropped, not retried forever.
    let mut junk = batch(&[]);
    let mut m = SqsMessage::default();
    m.message_id = Some("junk".into());
    m.body = Some("{\"not\": \"an event\"}".into());
    junk.records.push(m);
    assert!(indexer.on_batch(&junk).await.batch_item_failures.is_empty());
}

#[tokio::test]
async fn a_lost_index_object_is_rebuilt_and_a_search_function_loads_it() {
    let env = common::fresh(None).await;
    let writer = service(&env);
    for i in 0..5 {
        writer
            .put(
                &agent(),
                put(&format!("n{i}.md"), &format!("note {i} about rollbacks")),
            )
            .await
            .unwrap();
    }
    Indexer::new(service(&env))
        .on_batch(&batch(&[event("n0.md", 1)]))
        .await;
    assert_eq!(stored(&env).await.len(), 5);
    // The object is lost (deleted with every version): the next event rebuilds it whole.
    let key = S3IndexObjects::key(&scope());
    let versions = env
        .clients
        .s3
        .list_object_versions()
        .bucket(&env.bucket)
        .prefix(&key)
        .send()
        .await
        .unwrap();
    for v in versions.versions() {
        env.clients
            .s3
            .delete_object()
            .bucket(&env.bucket)
            .key(&key)
            .set_version_id(v.version_id().map(str::to_owned))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(
        objects(&env).load(&scope(), None).await.unwrap(),
        Loaded::Missing
    );
    Indexer::new(service(&env))
        .on_batch(&batch(&[event("n4.md", 1)]))
        .await;
    assert_eq!(stored(&env).await, live(&writer).await);

    // A cold search function loads the object: nothing left to apply, every file found.
    let log = CallLog::default();
    let env2 = common::Env {
        clients: workspace_store_aws::clients::AwsClients::from_sdk_config(
            &common::sdk_config(),
            Some(log.interceptor()),
        ),
        bucket: env.bucket.clone(),
        table: env.table.clone(),
        stream_arn: None,
    };
    let search = service(&env2);
    let page = search
        .search(
            &agent(),
            &SearchRequest {
                q: "rollback".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.hits.len(), 5);
    assert_eq!(page.index.pending, 0, "the indexer had applied everything");
    let calls = log.calls();
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.as_str() == "S3.GetObject")
            .count(),
        1,
        "the index object, and no file body: {calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_indexers_never_lose_an_update() {
    let env = common::fresh(None).await;
    let writer = Arc::new(service(&env));
    let indexers: Vec<Arc<Indexer>> = (0..3)
        .map(|_| Arc::new(Indexer::new(service(&env))))
        .collect();
    // Three writers; after each acknowledged write its event goes to one of three
    // indexers, which race each other on the one index object.
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (writer, indexers) = (writer.clone(), indexers.clone());
            tokio::spawn(async move {
                let mut handled = Vec::new();
                for round in 0..6 {
                    let path = format!("w{w}/f{}.md", round % 2);
                    writer
                        .put(&agent(), put(&path, &format!("writer {w} round {round}")))
                        .await
                        .unwrap();
                    let ix = indexers[(w + round) % 3].clone();
                    let e = event(&path, 1);
                    handled.push(tokio::spawn(async move { ix.on_batch(&batch(&[e])).await }));
                }
                for h in handled {
                    assert!(h.await.unwrap().batch_item_failures.is_empty());
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    // Every write was followed by a catch-up that began after it; had any indexer's store
    // replaced a newer one, the object would miss a write now.
    assert_eq!(stored(&env).await, live(&writer).await);
}

#[tokio::test]
async fn an_event_costs_a_fixed_number_of_calls() {
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let svc = service(&env);
    let indexer = Indexer::new(service(&env));
    svc.put(&agent(), put("a.md", "first")).await.unwrap();
    indexer.on_batch(&batch(&[event("a.md", 1)])).await;
    // One more write: the event's catch-up reads the object (unchanged: 304), the change
    // log and the changed file's head (which carries its small body, inline: no S3 read
    // of it), and stores the object (and deletes the version it replaced).
    svc.put(&agent(), put("a.md", "second")).await.unwrap();
    log.reset();
    indexer.on_batch(&batch(&[event("a.md", 2)])).await;
    let calls = log.calls();
    let count = |n: &str| calls.iter().filter(|c| c.as_str() == n).count();
    assert_eq!(count("S3.GetObject"), 1, "the object (304): {calls:?}");
    assert_eq!(count("S3.PutObject"), 1, "{calls:?}");
    assert_eq!(count("S3.DeleteObject"), 1, "{calls:?}");
    assert_eq!(count("DynamoDB.GetItem"), 1, "the head: {calls:?}");
    assert_eq!(count("DynamoDB.Query"), 1, "the change log: {calls:?}");
    assert_eq!(calls.len(), 5, "{calls:?}");
}

#[tokio::test]
async fn a_store_over_an_index_another_writer_replaced_is_refused() {
    use workspace_core::search::{IndexedFile, SearchIndexes};
    let env = common::fresh(None).await;
    let first = SharedIndexes::new(Arc::new(objects(&env)));
    let second = SharedIndexes::new(Arc::new(objects(&env)));
    let entry = |v| IndexedFile {
        version: v,
        etag: format!("\"{v}\""),
        skipped: None,
    };
    // Both processes start from no object.
    let a = first.open(&scope()).await.unwrap();
    let b = second.open(&scope()).await.unwrap();
    a.lock()
        .await
        .put("a.md", &entry(1), Some("from the first"), &[])
        .unwrap();
    b.lock()
        .await
        .put("b.md", &entry(1), Some("from the second"), &[])
        .unwrap();
    assert!(
        first.save(&scope(), &a).await.unwrap(),
        "the first store wins"
    );
    assert!(
        !second.save(&scope(), &b).await.unwrap(),
        "the second was made from no object: refused, not stored over the first"
    );
    assert_eq!(stored(&env).await, BTreeMap::from([("a.md".to_owned(), 1)]));
    // The loser opens again: it gets the winner's index, and its store on top of it lands.
    let b = second.open(&scope()).await.unwrap();
    b.lock()
        .await
        .put("b.md", &entry(1), Some("from the second"), &[])
        .unwrap();
    assert!(second.save(&scope(), &b).await.unwrap());
    // The first, still holding its own (now replaced) version, is refused in turn.
    a.lock()
        .await
        .put("c.md", &entry(1), Some("late"), &[])
        .unwrap();
    assert!(!first.save(&scope(), &a).await.unwrap());
    assert_eq!(
        stored(&env).await,
        BTreeMap::from([("a.md".to_owned(), 1), ("b.md".to_owned(), 1)])
    );
}
