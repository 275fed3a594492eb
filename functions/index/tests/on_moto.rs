//! The example subscriber on the emulator, fed the events the real stream publisher makes
//! from the table's stream: the index is right after a burst of changes, redelivered and
//! out-of-order events change nothing, and its own writes trigger nothing.

use fn_index::{IndexKeeper, Outcome};
use std::sync::Arc;
use workspace_core::events::WorkspaceEvent;
use workspace_core::ports::{FromCommittedState, RandomIds, SystemClock};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Scope, WorkspaceService};
use workspace_store_aws::events::{plan, Work};
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

fn service(env: &common::Env) -> WorkspaceService {
    WorkspaceService::new(
        Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table)),
        Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket)),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
}

fn agent() -> Identity {
    Identity::read_write(Scope::parse("acme", "main").unwrap(), "agent-7")
}

fn put(path: &str, content: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// The events of every committed change so far, as the publisher announces them.
async fn announced(env: &common::Env) -> Vec<WorkspaceEvent> {
    common::stream_records(env.stream_arn.as_deref().expect("stream"))
        .await
        .iter()
        .filter_map(|r| match plan(r) {
            Ok(Some(Work::Announce(e))) => Some(*e),
            _ => None,
        })
        .collect()
}

async fn index_of(svc: &WorkspaceService) -> (String, u64) {
    let f = svc
        .get(&agent(), &FilePath::parse("memory/INDEX.md").unwrap(), None)
        .await
        .expect("the index exists");
    (String::from_utf8(f.content).unwrap(), f.meta.version)
}

#[tokio::test]
async fn the_index_follows_a_burst_and_redelivery_order_and_its_own_writes_change_nothing() {
    let env = common::fresh(None).await;
    let svc = service(&env);
    let who = agent();
    svc.put(&who, put("memory/a.md", "first")).await.unwrap();
    svc.put(&who, put("memory/b.md", "bee")).await.unwrap();
    svc.put(&who, put("notes/elsewhere.md", "x")).await.unwrap();
    svc.put(&who, put("memory/a.md", "second version"))
        .await
        .unwrap();
    svc.delete(&who, &FilePath::parse("memory/b.md").unwrap(), None)
        .await
        .unwrap();
    let burst = announced(&env).await;
    assert_eq!(burst.len(), 5);

    let keeper = IndexKeeper::new(service(&env), "memory/", "memory/INDEX.md").unwrap();
    let mut outcomes = Vec::new();
    for e in &burst {
        outcomes.push(keeper.on_event(e).await.unwrap());
    }
    // The first event in its prefix writes the index as the workspace is now; the rest
    // find it right already; the one outside the prefix is ignored.
    assert_eq!(outcomes[0], Outcome::Written { version: 1 });
    assert_eq!(outcomes[2], Outcome::Ignored("outside memory/".to_owned()));
    assert!(
        outcomes[3..].iter().all(|o| *o == Outcome::Unchanged),
        "{outcomes:?}"
    );
    let (text, version) = index_of(&svc).await;
    assert!(
        text.contains("- [memory/a.md](memory/a.md): 14 bytes, version 2"),
        "{text}"
    );
    assert!(
        !text.contains("memory/b.md"),
        "a deleted file is gone: {text}"
    );
    assert!(!text.contains("elsewhere"), "{text}");
    assert_eq!(version, 1);

    // Redelivered, and out of order: nothing new.
    for e in burst.iter().rev() {
        let o = keeper.on_event(e).await.unwrap();
        assert!(
            matches!(o, Outcome::Unchanged | Outcome::Ignored(_)),
            "{o:?}"
        );
    }
    assert_eq!(index_of(&svc).await.1, 1);

    // Its own write is an event too, and triggers nothing.
    let own: Vec<WorkspaceEvent> = announced(&env)
        .await
        .into_iter()
        .filter(|e| e.path == "memory/INDEX.md")
        .collect();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].principal, "index-subscriber");
    assert_eq!(
        keeper.on_event(&own[0]).await.unwrap(),
        Outcome::Ignored("the index itself".to_owned())
    );

    // A later change, and an index someone edited meanwhile: rebuilt over it with If-Match.
    svc.put(&who, put("memory/c.md", "sea")).await.unwrap();
    svc.put(&who, put("memory/INDEX.md", "hand edit"))
        .await
        .unwrap();
    let later = announced(&env)
        .await
        .into_iter()
        .find(|e| e.path == "memory/c.md")
        .unwrap();
    assert_eq!(
        keeper.on_event(&later).await.unwrap(),
        Outcome::Written { version: 3 }
    );
    let (text, _) = index_of(&svc).await;
    assert!(
        text.contains("memory/c.md") && !text.contains("hand edit"),
        "{text}"
    );
}

/// What `sam local invoke IndexFunction -e events/workspace-updated.json` hands the
/// function parses into the type it declares.
#[test]
fn the_recorded_event_is_what_the_function_takes() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../events/workspace-updated.json"),
    )
    .unwrap();
    let e: aws_lambda_events::eventbridge::EventBridgeEvent<WorkspaceEvent> =
        serde_json::from_str(&text).unwrap();
    assert_eq!(e.detail.path, "memory/notes/2026-11-24.md");
    assert_eq!(e.source, "agent-workspace");
}
