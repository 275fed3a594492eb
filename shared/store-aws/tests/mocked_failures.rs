//! Failures the emulator cannot produce, with SDK-level mocks (aws-smithy-mocks): partial
//! PutEvents failures, throttling, and S3 refusing a write. Each proves nothing is dropped
//! and nothing partial is left behind.

use aws_sdk_eventbridge::operation::put_events::PutEventsOutput;
use aws_sdk_eventbridge::types::PutEventsResultEntry;
use aws_smithy_mocks::{mock, mock_client, RuleMode};
use aws_smithy_types::retry::RetryConfig;
use std::sync::Arc;
use std::time::Duration;
use workspace_core::ports::{
    Bodies, FromCommittedState, HeadStore, HistoryStore, Operation, RandomIds, SystemClock,
    WorkspaceEvent,
};
use workspace_core::{
    FilePath, Identity, Limits, PutRequest, Scope, WorkspaceError, WorkspaceService,
};
use workspace_store_aws::events::EventBridgeSink;
use workspace_store_aws::{DynamoMeta, S3Bodies};
use workspace_store_memory::{MemoryBodies, MemoryMeta};

fn event(path: &str) -> WorkspaceEvent {
    WorkspaceEvent {
        event_id: workspace_core::events::event_id("acme", "main", path, 1),
        tenant: "acme".into(),
        workspace: "main".into(),
        path: path.into(),
        version: 1,
        sequence: 1,
        etag: "\"1-x\"".into(),
        operation: Operation::Put,
        principal: "alice".into(),
        time: "2026-01-01T00:00:00.000Z".into(),
        size: 3,
        content_type: "text/markdown".into(),
        merge_id: None,
        fork_id: None,
    }
}

fn ok_entry() -> PutEventsResultEntry {
    PutEventsResultEntry::builder().event_id("id").build()
}

fn failed_entry() -> PutEventsResultEntry {
    PutEventsResultEntry::builder()
        .error_code("InternalFailure")
        .error_message("try again")
        .build()
}

fn retrying() -> RetryConfig {
    RetryConfig::standard()
        .with_max_attempts(3)
        .with_initial_backoff(Duration::from_millis(1))
}

#[tokio::test]
async fn put_events_partial_failure_resends_only_the_failed_entries() {
    let first = mock!(aws_sdk_eventbridge::Client::put_events)
        .match_requests(|r| r.entries().len() == 2)
        .then_output(|| {
            PutEventsOutput::builder()
                .failed_entry_count(1)
                .entries(ok_entry())
                .entries(failed_entry())
                .build()
        });
    let resend = mock!(aws_sdk_eventbridge::Client::put_events)
        .match_requests(|r| {
            r.entries().len() == 1 && r.entries()[0].detail().is_some_and(|d| d.contains("b.md"))
        })
        .then_output(|| {
            PutEventsOutput::builder()
                .failed_entry_count(0)
                .entries(ok_entry())
                .build()
        });
    let client = mock_client!(aws_sdk_eventbridge, RuleMode::MatchAny, [&first, &resend]);
    let sink = EventBridgeSink::new(client, "bus");
    sink.publish_all(&[event("a.md"), event("b.md")])
        .await
        .expect("delivered after a resend");
    assert_eq!((first.num_calls(), resend.num_calls()), (1, 1));
}

#[tokio::test]
async fn put_events_that_keep_failing_are_reported_not_dropped() {
    let always = mock!(aws_sdk_eventbridge::Client::put_events)
        .sequence()
        .output(|| {
            PutEventsOutput::builder()
                .failed_entry_count(1)
                .entries(failed_entry())
                .build()
        })
        .repeatedly()
        .build();
    let client = mock_client!(aws_sdk_eventbridge, [&always]);
    let sink = EventBridgeSink::new(client, "bus");
    let err = sink.publish_all(&[event("a.md")]).await.unwrap_err();
    assert!(err.to_string().contains("still failing"), "{err}");
    assert_eq!(
        always.num_calls(),
        4,
        "bounded resends, then the batch is reported failed"
    );
}

#[tokio::test]
async fn s3_throttling_is_retried_by_the_sdk() {
    let rule = mock!(aws_sdk_s3::Client::put_object)
        .sequence()
        .http_status(503, None)
        .times(2)
        .output(|| {
            aws_sdk_s3::operation::put_object::PutObjectOutput::builder()
                .version_id("v1")
                .build()
        })
        .build();
    let client = mock_client!(aws_sdk_s3, RuleMode::Sequential, [&rule], |c| c
        .retry_config(retrying()));
    let bodies = S3Bodies::new(client, "bucket");
    let body = workspace_core::ports::Bodies::put(
        &bodies,
        "t/acme/w/main/files/a",
        b"x".to_vec(),
        "text/plain",
    )
    .await
    .expect("succeeds after two throttled attempts");
    assert_eq!(body.version_id, "v1");
    assert_eq!(rule.num_calls(), 3);
}

fn who() -> Identity {
    Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice")
}

fn req(path: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: b"hello".to_vec(),
        ..PutRequest::default()
    }
}

#[tokio::test]
async fn an_s3_conflict_on_upload_commits_nothing() {
    // S3 answers 409 ConditionalRequestConflict (concurrent writes to one key): the write
    // fails as a 5xx and the metadata never moves.
    let rule = mock!(aws_sdk_s3::Client::put_object)
        .sequence()
        .http_status(
            409,
            Some(
                "<Error><Code>ConditionalRequestConflict</Code><Message>busy</Message></Error>"
                    .into(),
            ),
        )
        .repeatedly()
        .build();
    let client = mock_client!(aws_sdk_s3, RuleMode::Sequential, [&rule], |c| c
        .retry_config(retrying()));
    let meta = Arc::new(MemoryMeta::default());
    let svc = WorkspaceService::new(
        meta.clone(),
        Arc::new(S3Bodies::new(client, "bucket")),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    .with_inline_body_bytes(0);
    let err = svc.put(&who(), req("a.md")).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::Internal(_)), "{err:?}");
    assert!(meta
        .head(&who().scope, &FilePath::parse("a.md").unwrap())
        .await
        .unwrap()
        .is_none());
    assert_eq!(meta.live_count(&who().scope).await.unwrap(), 0);
}

#[tokio::test]
async fn a_throttled_commit_fails_cleanly_and_leaves_no_body() {
    use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
    let head =
        mock!(aws_sdk_dynamodb::Client::get_item).then_output(|| GetItemOutput::builder().build());
    let commit = mock!(aws_sdk_dynamodb::Client::transact_write_items)
        .sequence()
        .http_status(
            400,
            Some(r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate exceeded"}"#.into()),
        )
        .repeatedly()
        .build();
    let client = mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        [&head, &commit],
        |c| c.retry_config(retrying())
    );
    let bodies = Arc::new(MemoryBodies::default());
    let svc = WorkspaceService::new(
        Arc::new(DynamoMeta::new(client, "table")),
        bodies.clone(),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    .with_inline_body_bytes(0);
    let err = svc.put(&who(), req("a.md")).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::Internal(_)), "{err:?}");
    assert_eq!(
        commit.num_calls(),
        3,
        "the SDK retried the throttled commit"
    );
    assert!(bodies.is_empty(), "the uncommitted body was discarded");
}

/// A pin that meets a commit's transaction in flight on the same head (DynamoDB answers
/// TransactionConflictException, which moto never does) is a moved head: `set_pins`
/// reports `false` so the snapshot re-reads and retries; a condition failure likewise.
/// Any other error is an error.
#[tokio::test]
async fn a_pin_meeting_a_transaction_in_flight_is_retried_not_failed() {
    use workspace_core::ports::Expect;
    let conflict = |code: &str| {
        mock!(aws_sdk_dynamodb::Client::update_item)
            .sequence()
            .http_status(
                400,
                Some(format!(
                    r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{code}","message":"no"}}"#
                )),
            )
            .build()
    };
    let expect = Expect::Live { seq: 3, pin_rev: 0 };
    let path = FilePath::parse("a.md").unwrap();
    for (code, outcome) in [
        ("TransactionConflictException", Some(false)),
        ("ConditionalCheckFailedException", Some(false)),
        ("ResourceNotFoundException", None),
    ] {
        let rule = conflict(code);
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&rule], |c| c
            .retry_config(RetryConfig::disabled()));
        let meta = DynamoMeta::new(client, "table");
        let got = meta
            .set_pins(&who().scope, &path, expect.clone(), Vec::new(), None)
            .await
            .ok();
        assert_eq!(got, outcome, "{code}");
    }
}

/// The secrets-epoch race at the SDK boundary: the secrets are read (epoch 0, none), a
/// secret is registered elsewhere, and the commit's ConditionCheck on the epoch cancels the
/// transaction. The write reads the secrets again (epoch 1, the new one), redacts, uploads
/// again and commits; the first body is discarded, so no plain text stays stored.
#[tokio::test]
async fn a_moved_secrets_epoch_is_redacted_again_and_retried() {
    use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
    use aws_sdk_dynamodb::operation::query::QueryOutput;
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsOutput;
    use aws_sdk_dynamodb::types::AttributeValue;
    use workspace_core::ports::BodyInventory;
    use workspace_store_aws::secrets_table::DynamoSecrets;
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let secrets = mock!(aws_sdk_dynamodb::Client::query)
        .sequence()
        .output(|| QueryOutput::builder().build())
        .output(move || {
            QueryOutput::builder()
                .items(
                    [
                        ("pk", s("acme##secrets")),
                        ("sk", s("secret#db-password")),
                        ("secretId", s("db-password")),
                        ("value", s("hunter2-correct-horse")),
                        ("createdAt", AttributeValue::N("0".into())),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
                )
                .items(
                    [
                        ("pk", s("acme##secrets")),
                        ("sk", s("epoch")),
                        ("epoch", AttributeValue::N("1".into())),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
                )
                .build()
        })
        .build();
    let head =
        mock!(aws_sdk_dynamodb::Client::get_item).then_output(|| GetItemOutput::builder().build());
    // Head, version, change-log entry, count, then the epoch check: only the last failed.
    let commit = mock!(aws_sdk_dynamodb::Client::transact_write_items)
        .sequence()
        .http_status(
            400,
            Some(r#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","Message":"Transaction cancelled","CancellationReasons":[{"Code":"None"},{"Code":"None"},{"Code":"None"},{"Code":"None"},{"Code":"ConditionalCheckFailed"}]}"#.into()),
        )
        .output(|| TransactWriteItemsOutput::builder().build())
        .build();
    let client = mock_client!(
        aws_sdk_dynamodb,
        RuleMode::MatchAny,
        [&secrets, &head, &commit],
        |c| c.retry_config(retrying())
    );
    let bodies = Arc::new(MemoryBodies::default());
    let svc = WorkspaceService::new(
        Arc::new(DynamoMeta::new(client.clone(), "table")),
        bodies.clone(),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    .with_secrets(Arc::new(DynamoSecrets::new(client, "table")))
    .with_inline_body_bytes(0);
    let stored = svc
        .put(
            &who(),
            PutRequest {
                path: Some(FilePath::parse("a.md").unwrap()),
                content: b"pw: hunter2-correct-horse".to_vec(),
                ..PutRequest::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.content, b"pw: [REDACTED:db-password]");
    assert_eq!((secrets.num_calls(), commit.num_calls()), (2, 2));
    let kept = bodies.stored_bodies().await.unwrap();
    assert_eq!(kept.len(), 1, "the body redacted too little was discarded");
    assert_eq!(
        bodies.get(&kept[0]).await.unwrap().unwrap(),
        b"pw: [REDACTED:db-password]"
    );
}
