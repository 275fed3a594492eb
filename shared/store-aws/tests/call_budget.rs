//! AWS calls per operation, counted on the emulator with an SDK interceptor: what each
//! operation costs and how many round trips it waits for in sequence.

use std::sync::Arc;
use workspace_core::ports::{Bodies, FromCommittedState, RandomIds, Staging, SystemClock};
use workspace_core::{FilePath, Identity, Limits, PathPrefix, PutRequest, Scope, WorkspaceService};
use workspace_store_aws::calls::CallLog;
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

fn who() -> Identity {
    Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice")
}

fn put(path: &str, content: &str, if_match: Option<String>) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        if_match,
        ..PutRequest::default()
    }
}

#[tokio::test]
async fn each_operation_stays_within_its_call_budget() {
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    // Every body in S3, as files over the inline threshold are (`small_files_...` below).
    let svc = env
        .service_with_secrets(Limits::default())
        .with_inline_body_bytes(0);
    let path = FilePath::parse("notes/a.md").unwrap();

    // The first PUT of a container: the tenant's registered secrets and their epoch (WSR-1:
    // the body is redacted before it is uploaded), then the body upload, the head read and
    // the workspace's point registry side by side, then one transaction, which checks the
    // epoch and the registry's revision.
    log.reset();
    let v1 = svc
        .put(&who(), put("notes/a.md", "one", None))
        .await
        .unwrap();
    assert_eq!(
        log.calls(),
        [
            "DynamoDB.GetItem",
            "DynamoDB.GetItem",
            "DynamoDB.Query",
            "DynamoDB.TransactWriteItems",
            "S3.PutObject"
        ]
    );
    assert_eq!(log.sequential_depth(), 3, "PUT waits for three round trips");

    // Every later PUT: the secrets are kept (the commit checks their epoch). One whose
    // If-Match names the head: the body upload, then the transaction (no head read).
    log.reset();
    let v2 = svc
        .put(&who(), put("notes/a.md", "two", Some(v1.meta.etag)))
        .await
        .unwrap();
    assert_eq!(log.calls(), ["DynamoDB.TransactWriteItems", "S3.PutObject"]);
    assert_eq!(log.sequential_depth(), 2, "PUT waits for two round trips");

    // Without a precondition: the body upload and the head read side by side, then the
    // transaction: two round trips.
    log.reset();
    svc.put(&who(), put("notes/a.md", "two", None))
        .await
        .unwrap();
    assert_eq!(
        log.calls(),
        [
            "DynamoDB.GetItem",
            "DynamoDB.TransactWriteItems",
            "S3.PutObject"
        ]
    );
    assert_eq!(log.sequential_depth(), 2, "PUT waits for two round trips");
    assert_eq!(v2.meta.version, 2);

    // GET: the head (it carries the latest body's VersionId), then the body.
    log.reset();
    assert_eq!(svc.get(&who(), &path, None).await.unwrap().content, b"two");
    assert_eq!(log.calls(), ["DynamoDB.GetItem", "S3.GetObject"]);
    assert_eq!(log.sequential_depth(), 2);

    // A past version needs its version item too.
    log.reset();
    assert_eq!(
        svc.get(&who(), &path, Some(1)).await.unwrap().content,
        b"one"
    );
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.GetItem", "S3.GetObject"]
    );

    // LIST: one Query.
    log.reset();
    let page = svc
        .list(&who(), &PathPrefix::default(), None, None)
        .await
        .unwrap();
    assert_eq!(page.files.len(), 1);
    assert_eq!(log.calls(), ["DynamoDB.Query"]);

    // HISTORY: one Query.
    log.reset();
    let page = svc.history(&who(), &path, None, None).await.unwrap();
    assert_eq!(page.versions.len(), 3);
    assert_eq!(log.calls(), ["DynamoDB.Query"]);

    // SNAPSHOT: a point in history, whatever the number of files: the point registry,
    // one transaction (the registry's revision and the record), then one page of the
    // listing for the answer's first files.
    log.reset();
    let snap = svc.create_snapshot(&who()).await.unwrap();
    assert_eq!(
        log.calls(),
        [
            "DynamoDB.GetItem",
            "DynamoDB.Query",
            "DynamoDB.TransactWriteItems"
        ]
    );
    assert_eq!(log.sequential_depth(), 3);

    // A read through it: the record, the path's newest version items (the one at the
    // point is among them), the body.
    log.reset();
    let through = svc.get_in_snapshot(&who(), &snap.id, &path).await.unwrap();
    assert_eq!(through.content, b"two");
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.Query", "S3.GetObject"]
    );

    // A write to a file the snapshot sees costs what any write costs (its transaction
    // holds the version it supersedes on the new head).
    log.reset();
    svc.put(&who(), put("notes/a.md", "three", None))
        .await
        .unwrap();
    assert_eq!(
        log.calls(),
        [
            "DynamoDB.GetItem",
            "DynamoDB.TransactWriteItems",
            "S3.PutObject"
        ]
    );

    // DELETE: the head, then one transaction.
    log.reset();
    svc.delete(&who(), &path, None).await.unwrap();
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.TransactWriteItems"]
    );
    assert_eq!(log.sequential_depth(), 2);

    // Two-step upload. Start: the declaration is one object. The second PutObject is the
    // presigning: the SDK runs it through its interceptors but sends nothing.
    use workspace_core::model::sha256_hex;

    use workspace_core::service::{UploadCommit, UploadRequest};
    let bytes = vec![7u8; 2 * 1024 * 1024];
    log.reset();
    let ticket = svc
        .start_upload(
            &who(),
            UploadRequest {
                path: FilePath::parse("big.bin").unwrap(),
                size: bytes.len() as u64,
                sha256: sha256_hex(&bytes),
                content_type: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(log.calls(), ["S3.PutObject", "S3.PutObject"]);
    // (The client's PUT to the URL, made here through the port.)
    let staged = format!("t/acme/w/main/uploads/{}/bytes", ticket.upload_id);
    S3Bodies::new(env.clients.s3.clone(), &env.bucket)
        .put_staged(&staged, bytes, 0)
        .await
        .unwrap();
    // Commit: declaration and bytes side by side, then the PUT's own calls, then both
    // staged objects go side by side (each: list its versions, delete each).
    log.reset();
    svc.commit_upload(
        &who(),
        &FilePath::parse("big.bin").unwrap(),
        UploadCommit {
            upload_id: ticket.upload_id,
            ..UploadCommit::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        log.calls(),
        [
            "DynamoDB.GetItem",
            "DynamoDB.TransactWriteItems",
            "S3.DeleteObject",
            "S3.DeleteObject",
            "S3.GetObject",
            "S3.GetObject",
            "S3.ListObjectVersions",
            "S3.ListObjectVersions",
            "S3.PutObject"
        ]
    );
    assert_eq!(log.sequential_depth(), 5);
}

/// Every item of the table, raw: what an inline body must never leave behind.
async fn raw_items(
    env: &common::Env,
) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    let plain = aws_sdk_dynamodb::Client::new(&common::sdk_config());
    // Every page: a scan answers at most 1 MB at a time.
    plain
        .scan()
        .table_name(&env.table)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .unwrap()
}

/// Whether any attribute of any item holds `needle` (as text or as binary).
fn any_item_holds(
    items: &[std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>],
    needle: &[u8],
) -> bool {
    use aws_sdk_dynamodb::types::AttributeValue;
    let holds = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    items.iter().flat_map(|i| i.values()).any(|v| match v {
        AttributeValue::S(t) => holds(t.as_bytes()),
        AttributeValue::B(b) => holds(b.as_ref()),
        _ => false,
    })
}

/// Files up to the inline threshold on the AWS backend: a write whose precondition names
/// the head is one `TransactWriteItems`, any other write one head read and the
/// transaction, a read one `GetItem`; no S3 request at all. A file crossing the threshold
/// either way reads and writes as its size says.
#[tokio::test]
async fn small_files_cost_one_dynamodb_request_and_no_s3_request() {
    use workspace_core::blob::inline::DEFAULT_INLINE_BODY_BYTES;
    use workspace_core::secrets::{SecretRecord, SecretStore};
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let svc = env.service_with_secrets(Limits::default());
    assert_eq!(svc.inline_body_bytes(), DEFAULT_INLINE_BODY_BYTES);
    let path = FilePath::parse("notes/a.md").unwrap();
    let at_threshold = "a".repeat(DEFAULT_INLINE_BODY_BYTES as usize);
    let over = "b".repeat(DEFAULT_INLINE_BODY_BYTES as usize + 1);

    // The container's first write: the secrets and their epoch, the head and the point
    // registry side by side, the transaction. No S3 call.
    log.reset();
    let v1 = svc
        .put(&who(), put("notes/a.md", "one", None))
        .await
        .unwrap();
    assert!(
        log.calls().iter().all(|c| c.starts_with("DynamoDB.")),
        "{:?}",
        log.calls()
    );

    // If-Match names the head: the transaction alone, one round trip.
    log.reset();
    let v2 = svc
        .put(
            &who(),
            put("notes/a.md", &at_threshold, Some(v1.meta.etag.clone())),
        )
        .await
        .unwrap();
    assert_eq!(log.calls(), ["DynamoDB.TransactWriteItems"]);
    assert_eq!(log.sequential_depth(), 1);
    assert_eq!(v2.meta.version, 2);

    // A stale If-Match is refused by the transaction, then read and answered 409; nothing
    // changes.
    log.reset();
    let stale = svc
        .put(
            &who(),
            put("notes/a.md", "late", Some(v1.meta.etag.clone())),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(stale, workspace_core::WorkspaceError::Conflict { .. }),
        "{stale:?}"
    );
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.TransactWriteItems"]
    );

    // If-None-Match: * on a new path: the transaction alone.
    log.reset();
    svc.put(
        &who(),
        PutRequest {
            if_none_match_any: true,
            ..put("notes/new.md", "fresh", None)
        },
    )
    .await
    .unwrap();
    assert_eq!(log.calls(), ["DynamoDB.TransactWriteItems"]);

    // An unconditional write: the head, then the transaction.
    log.reset();
    let v3 = svc
        .put(&who(), put("notes/a.md", "three", None))
        .await
        .unwrap();
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.TransactWriteItems"]
    );
    assert_eq!(log.sequential_depth(), 2);

    // GET: the head carries the body.
    log.reset();
    assert_eq!(
        svc.get(&who(), &path, None).await.unwrap().content,
        b"three"
    );
    assert_eq!(log.calls(), ["DynamoDB.GetItem"]);

    // A past version: the head (for its seq), then the version item, which carries the
    // body. No S3 call.
    log.reset();
    assert_eq!(
        svc.get(&who(), &path, Some(2)).await.unwrap().content,
        at_threshold.as_bytes()
    );
    assert_eq!(log.calls(), ["DynamoDB.GetItem", "DynamoDB.GetItem"]);

    // LIST and HISTORY: one Query each.
    log.reset();
    svc.list(&who(), &PathPrefix::default(), None, None)
        .await
        .unwrap();
    svc.history(&who(), &path, None, None).await.unwrap();
    assert_eq!(log.calls(), ["DynamoDB.Query", "DynamoDB.Query"]);

    // Crossing the threshold upwards: one byte over goes to S3 (its If-Match still names
    // the head: the upload, then the transaction).
    log.reset();
    let v4 = svc
        .put(&who(), put("notes/a.md", &over, Some(v3.meta.etag.clone())))
        .await
        .unwrap();
    assert_eq!(log.calls(), ["DynamoDB.TransactWriteItems", "S3.PutObject"]);
    assert_eq!(log.sequential_depth(), 2);
    log.reset();
    assert_eq!(
        svc.get(&who(), &path, None).await.unwrap().content,
        over.as_bytes()
    );
    assert_eq!(log.calls(), ["DynamoDB.GetItem", "S3.GetObject"]);

    // And back down: inline again, and the S3 version is still read by version number.
    log.reset();
    svc.put(&who(), put("notes/a.md", "small again", Some(v4.meta.etag)))
        .await
        .unwrap();
    assert_eq!(log.calls(), ["DynamoDB.TransactWriteItems"]);
    log.reset();
    assert_eq!(
        svc.get(&who(), &path, None).await.unwrap().content,
        b"small again"
    );
    assert_eq!(log.calls(), ["DynamoDB.GetItem"]);
    log.reset();
    assert_eq!(
        svc.get(&who(), &path, Some(4)).await.unwrap().content,
        over.as_bytes()
    );
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.GetItem", "S3.GetObject"]
    );

    // A diff, a snapshot and a read through it, a restore of a small version: no S3
    // request either (last: a live snapshot makes a later If-Match write read the head).
    log.reset();
    svc.diff(&who(), &path, 2, Some(3)).await.unwrap();
    let snap = svc.create_snapshot(&who()).await.unwrap();
    assert_eq!(
        svc.get_in_snapshot(&who(), &snap.id, &path)
            .await
            .unwrap()
            .content,
        b"small again"
    );
    let restored = svc.restore(&who(), &path, 2, None, None).await.unwrap();
    assert_eq!(restored.content, at_threshold.as_bytes());
    assert!(
        log.calls().iter().all(|c| c.starts_with("DynamoDB.")),
        "{:?}",
        log.calls()
    );

    // A read through a fork (the file unchanged since the fork: read at the fork's point in
    // its parent) and the memory tool's view: no S3 request either. Creating the fork puts
    // its one empty marker object (the orphan sweep finds forks by it).
    svc.put(&who(), put("memories/plan.md", "step one", None))
        .await
        .unwrap();
    log.reset();
    let fork = svc
        .create_fork(&who(), workspace_core::service::ForkRequest::default())
        .await
        .unwrap();
    let s3: Vec<String> = log
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("S3."))
        .collect();
    assert_eq!(s3, ["S3.PutObject"]);
    let in_fork = Identity::read_write(
        Scope::new(who().scope.tenant.clone(), fork.workspace.clone()),
        "alice",
    );
    log.reset();
    let through_fork = svc.get(&in_fork, &path, None).await.unwrap();
    assert_eq!(through_fork.content, at_threshold.as_bytes());
    let view = workspace_core::memory::MemoryCommand::parse(
        &serde_json::json!({"command": "view", "path": "/memories/plan.md"}),
    )
    .unwrap();
    let answer = workspace_core::memory::execute(&svc, &who(), &view)
        .await
        .unwrap();
    assert!(answer.content.contains("step one"), "{}", answer.content);
    assert!(
        log.calls().iter().all(|c| c.starts_with("DynamoDB.")),
        "{:?}",
        log.calls()
    );

    // Redaction happens before the body reaches DynamoDB: a registered secret written into
    // a small file is in no item, as text or bytes.
    let secrets = DynamoSecrets::new(env.clients.dynamodb.clone(), &env.table);
    secrets
        .put_secret(
            SecretRecord::new(
                &who().scope.tenant,
                "db-password",
                "hunter2-correct-horse",
                0,
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let stored = svc
        .put(
            &who(),
            put("notes/creds.md", "pw: hunter2-correct-horse", None),
        )
        .await
        .unwrap();
    assert_eq!(stored.content, b"pw: [REDACTED:db-password]");
    // The workspace's items (the tenant's secrets partition holds the secret itself).
    let items: Vec<_> = raw_items(&env)
        .await
        .into_iter()
        .filter(|i| {
            i.get("pk").and_then(|v| v.as_s().ok()).map(String::as_str) == Some("acme#main")
        })
        .collect();
    assert!(any_item_holds(&items, b"pw: [REDACTED:db-password]"));
    assert!(!any_item_holds(&items, b"hunter2-correct-horse"));
}

/// The largest inline files: at the largest threshold, 20 files of 64 KiB of binary at
/// 256-byte paths (the longest) in one atomic commit (its most operations). Each item keeps
/// its body with room to spare under DynamoDB's 400 KB item limit, the commit is one
/// `TransactWriteItems` (2.6 MB of bodies, under its 4 MB) with no S3 request, and every file
/// reads back byte for byte.
#[tokio::test]
async fn the_largest_inline_files_fit_their_items_and_one_transaction() {
    use workspace_core::blob::inline::MAX_INLINE_BODY_BYTES;
    use workspace_core::path::MAX_PATH_LEN;
    use workspace_core::service::commits::{CommitOp, CommitRequest, MAX_COMMIT_OPERATIONS};
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let svc = env
        .service_with_secrets(Limits::default())
        .with_inline_body_bytes(MAX_INLINE_BODY_BYTES);
    let body = |i: usize| -> Vec<u8> {
        (0..MAX_INLINE_BODY_BYTES as usize)
            .map(|j| ((i * 7 + j) % 256) as u8)
            .collect()
    };
    let paths: Vec<FilePath> = (0..MAX_COMMIT_OPERATIONS)
        .map(|i| {
            let dir = format!("{i:02}/");
            FilePath::parse(&format!("{dir}{}", "p".repeat(MAX_PATH_LEN - dir.len()))).unwrap()
        })
        .collect();
    assert!(paths.iter().all(|p| p.as_str().len() == MAX_PATH_LEN));
    log.reset();
    let answer = svc
        .commit_operations(
            &who(),
            CommitRequest {
                operations: paths
                    .iter()
                    .enumerate()
                    .map(|(i, path)| CommitOp::Put {
                        path: path.clone(),
                        content: body(i),
                        content_type: None,
                        if_match: None,
                        if_none_match_any: true,
                    })
                    .collect(),
                idempotency_key: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(answer.results.len(), MAX_COMMIT_OPERATIONS);
    let calls = log.calls();
    assert!(
        calls.iter().all(|c| c.starts_with("DynamoDB.")),
        "{calls:?}"
    );
    assert_eq!(
        calls
            .iter()
            .filter(|c| *c == "DynamoDB.TransactWriteItems")
            .count(),
        1,
        "{calls:?}"
    );

    // DynamoDB's item size: each attribute's name and value, by length.
    fn value_len(v: &aws_sdk_dynamodb::types::AttributeValue) -> usize {
        use aws_sdk_dynamodb::types::AttributeValue as A;
        match v {
            A::S(x) | A::N(x) => x.len(),
            A::B(b) => b.as_ref().len(),
            A::M(m) => m.iter().map(|(k, v)| k.len() + value_len(v) + 3).sum(),
            A::L(l) => l.iter().map(|v| value_len(v) + 1).sum(),
            _ => 8,
        }
    }
    let with_body: Vec<usize> = raw_items(&env)
        .await
        .iter()
        .filter(|i| i.contains_key("body"))
        .map(|i| i.iter().map(|(k, v)| k.len() + value_len(v)).sum())
        .collect();
    // A head and a version item per file.
    assert_eq!(with_body.len(), 2 * MAX_COMMIT_OPERATIONS);
    let largest = *with_body.iter().max().unwrap();
    assert!(largest > MAX_INLINE_BODY_BYTES as usize);
    assert!(
        largest < MAX_INLINE_BODY_BYTES as usize + 4 * 1024,
        "{largest} bytes"
    );
    assert!(largest < 400 * 1024);

    for (i, path) in paths.iter().enumerate() {
        log.reset();
        let read = svc.get(&who(), path, None).await.unwrap();
        assert_eq!(read.content, body(i));
        assert_eq!(log.calls(), ["DynamoDB.GetItem"]);
    }
}

/// A secret registered between two PUTs of one container (which keeps the tenant's
/// secrets between writes): the second PUT's commit finds the epoch moved, changes
/// nothing, and is redacted with the new secret and committed again. The plain text is
/// never stored.
#[tokio::test]
async fn a_secret_registered_between_two_puts_redacts_the_second() {
    use workspace_core::secrets::{SecretRecord, SecretStore};
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let secrets = DynamoSecrets::new(env.clients.dynamodb.clone(), &env.table);
    let meta = Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table));
    let bodies = Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket));
    let svc = WorkspaceService::new(
        meta.clone(),
        bodies.clone(),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    .with_secrets(Arc::new(secrets.clone()))
    .with_inline_body_bytes(0);
    svc.put(&who(), put("notes/a.md", "first", None))
        .await
        .unwrap();
    // Another process (the CLI) registers a secret.
    let tenant = who().scope.tenant;
    secrets
        .put_secret(SecretRecord::new(&tenant, "db-password", "hunter2-correct-horse", 0).unwrap())
        .await
        .unwrap();

    log.reset();
    let stored = svc
        .put(
            &who(),
            put("notes/b.md", "password is hunter2-correct-horse", None),
        )
        .await
        .unwrap();
    let text = String::from_utf8(stored.content).unwrap();
    assert_eq!(text, "password is [REDACTED:db-password]");
    // The first commit was refused (epoch moved), its body deleted; the secrets were read
    // again; the redacted body uploaded and committed.
    let calls = log.calls();
    assert_eq!(
        calls
            .iter()
            .filter(|c| *c == "DynamoDB.TransactWriteItems")
            .count(),
        2,
        "{calls:?}"
    );
    assert_eq!(
        calls.iter().filter(|c| *c == "DynamoDB.Query").count(),
        1,
        "{calls:?}"
    );
    assert!(calls.contains(&"S3.DeleteObject".to_owned()), "{calls:?}");
    // What S3 holds for the file is the redacted text, and only that version is named.
    let head = workspace_core::ports::HeadStore::head(
        meta.as_ref(),
        &who().scope,
        &FilePath::parse("notes/b.md").unwrap(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(head.version, 1);
    let raw = bodies
        .get(head.body.as_ref().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw, b"password is [REDACTED:db-password]");
    // A later write is back to two round trips, with the new secret kept.
    log.reset();
    let again = svc
        .put(
            &who(),
            put("notes/c.md", "hunter2-correct-horse again", None),
        )
        .await
        .unwrap();
    assert_eq!(again.content, b"[REDACTED:db-password] again");
    assert_eq!(log.sequential_depth(), 2);
}

// ------------------------------------------------------------------------------------------
// What each operation costs: the calls above and more (a search, MCP tool calls, a fork, a
// merge, the indexer's work after a write), each with the DynamoDB capacity it consumes,
// recorded in `bench/cost/calls.json`, from which `bench/cost.py` writes `docs/cost.md`.

mod cost {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;
    use aws_smithy_runtime_api::box_error::BoxError;
    use aws_smithy_runtime_api::client::interceptors::context::{
        AfterDeserializationInterceptorContextRef, BeforeDeserializationInterceptorContextRef,
        BeforeTransmitInterceptorContextRef,
    };
    use aws_smithy_runtime_api::client::interceptors::{Intercept, SharedInterceptor};
    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
    use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
    use serde_json::{json, Map, Value};
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;
    use workspace_core::search::ChangeLogFeed;
    use workspace_core::service::SearchWiring;
    use workspace_core::service::{ForkRequest, MergeOutcome, MergeRequest, SearchRequest};

    const REGENERATE: &str = "UPDATE_COST_CALLS=1 /tmp/with_moto.sh cargo test -p workspace-store-aws --test call_budget cost \
        (or with `bash tests/run.sh`), then `python3 bench/cost.py` to rewrite docs/cost.md";

    /// One DynamoDB exchange: the operation, its request and its answer (JSON).
    #[derive(Debug, Clone)]
    struct Exchange {
        op: String,
        request: Value,
        response: Value,
    }

    /// The shared [`CallLog`] (calls and round trips), and beside it each DynamoDB request
    /// and answer, to tell which items a call read or wrote.
    #[derive(Debug, Clone, Default)]
    struct Meter {
        log: CallLog,
        exchanges: Arc<Mutex<Vec<Exchange>>>,
    }

    #[derive(Debug, Clone)]
    struct Slot(usize);
    impl Storable for Slot {
        type Storer = StoreReplace<Self>;
    }

    fn json_of(bytes: Option<&[u8]>) -> Value {
        bytes
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Value::Null)
    }

    impl Intercept for Meter {
        fn name(&self) -> &'static str {
            "CostMeter"
        }

        fn read_before_transmit(
            &self,
            context: &BeforeTransmitInterceptorContextRef<'_>,
            rc: &RuntimeComponents,
            cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            self.log.read_before_transmit(context, rc, cfg)?;
            let req = context.request();
            if let Some(target) = req.headers().get("x-amz-target") {
                if target.starts_with("DynamoDB") {
                    let op = target.rsplit('.').next().unwrap_or(target).to_owned();
                    let mut ex = self.exchanges.lock().unwrap();
                    cfg.interceptor_state().store_put(Slot(ex.len()));
                    ex.push(Exchange {
                        op,
                        request: json_of(req.body().bytes()),
                        response: Value::Null,
                    });
                }
            }
            Ok(())
        }

        fn read_after_transmit(
            &self,
            context: &BeforeDeserializationInterceptorContextRef<'_>,
            rc: &RuntimeComponents,
            cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            self.log.read_after_transmit(context, rc, cfg)
        }

        fn read_after_deserialization(
            &self,
            context: &AfterDeserializationInterceptorContextRef<'_>,
            _rc: &RuntimeComponents,
            cfg: &mut ConfigBag,
        ) -> Result<(), BoxError> {
            if let Some(Slot(i)) = cfg.load::<Slot>().cloned() {
                if let Some(ex) = self.exchanges.lock().unwrap().get_mut(i) {
                    ex.response = json_of(context.response().body().bytes());
                }
                cfg.interceptor_state().unset::<Slot>();
            }
            Ok(())
        }
    }

    impl Meter {
        fn reset(&self) {
            self.log.reset();
            self.exchanges.lock().unwrap().clear();
        }
    }

    /// DynamoDB's item size rules: names and values in bytes (a number about one byte per
    /// two digits and one more; a map or list 3 bytes and 1 per element).
    fn value_size(v: &AttributeValue) -> usize {
        match v {
            AttributeValue::S(s) => s.len(),
            AttributeValue::N(n) => {
                let digits = n.chars().filter(char::is_ascii_digit).count();
                digits.div_ceil(2) + 1
            }
            AttributeValue::B(b) => b.as_ref().len(),
            AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
            AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
            AttributeValue::Ns(v) => v.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
            AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
            AttributeValue::L(l) => 3 + l.iter().map(|e| value_size(e) + 1).sum::<usize>(),
            AttributeValue::M(m) => {
                3 + m
                    .iter()
                    .map(|(k, e)| k.len() + value_size(e) + 1)
                    .sum::<usize>()
            }
            _ => 0,
        }
    }

    type Sizes = HashMap<(String, String), usize>;

    /// Every item of the table, by key, with its size (read with a client that is not counted).
    async fn sizes(dynamodb: &aws_sdk_dynamodb::Client, table: &str) -> Sizes {
        let mut out = Sizes::new();
        let mut start = None;
        loop {
            let page = dynamodb
                .scan()
                .table_name(table)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan");
            for item in page.items() {
                let key = |k: &str| match item.get(k) {
                    Some(AttributeValue::S(s)) => s.clone(),
                    _ => String::new(),
                };
                let size = item.iter().map(|(k, v)| k.len() + value_size(v)).sum();
                out.insert((key("pk"), key("sk")), size);
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return out;
            }
        }
    }

    fn key_of(v: &Value) -> (String, String) {
        let s = |k: &str| v[k]["S"].as_str().unwrap_or_default().to_owned();
        (s("pk"), s("sk"))
    }

    /// The size of the item under `key` before or after the operation, whichever is larger
    /// (DynamoDB bills a write by the larger of the two images).
    fn larger(key: &(String, String), before: &Sizes, after: &Sizes) -> usize {
        before
            .get(key)
            .copied()
            .unwrap_or(0)
            .max(after.get(key).copied().unwrap_or(0))
    }

    fn units(bytes: usize, per: usize) -> u64 {
        bytes.div_ceil(per).max(1) as u64
    }

    /// Capacity consumed by the DynamoDB calls of one operation, in half read request units
    /// (an eventually consistent read of up to 4 KB is one half) and write request units.
    #[derive(Default)]
    struct Capacity {
        half_rru: u64,
        wru: u64,
        consistent_reads: u64,
        eventual_reads: u64,
        transact_items: u64,
        largest_item_bytes: usize,
    }

    fn capacity(exchanges: &[Exchange], before: &Sizes, after: &Sizes) -> Capacity {
        let mut c = Capacity::default();
        let read = |c: &mut Capacity, bytes: usize, consistent: bool, factor: u64| {
            let per4k = units(bytes, 4096);
            if consistent {
                c.consistent_reads += 1;
                c.half_rru += 2 * per4k * factor;
            } else {
                c.eventual_reads += 1;
                c.half_rru += per4k * factor;
            }
        };
        let seen = |c: &mut Capacity, bytes: usize| {
            c.largest_item_bytes = c.largest_item_bytes.max(bytes);
            bytes
        };
        for ex in exchanges {
            let consistent = ex.request["ConsistentRead"].as_bool().unwrap_or(false);
            match ex.op.as_str() {
                "GetItem" => {
                    let b = seen(&mut c, larger(&key_of(&ex.request["Key"]), before, after));
                    read(&mut c, b, consistent, 1);
                }
                "Query" | "Scan" => {
                    // Billed on the items read (before any filter), summed, then rounded.
                    let items = ex.response["Items"].as_array().cloned().unwrap_or_default();
                    let mut total = 0;
                    for item in &items {
                        let b = seen(&mut c, larger(&key_of(item), before, after));
                        total += b;
                    }
                    read(&mut c, total, consistent, 1);
                }
                "BatchGetItem" => {
                    if let Some(tables) = ex.request["RequestItems"].as_object() {
                        for t in tables.values() {
                            let consistent = t["ConsistentRead"].as_bool().unwrap_or(false);
                            for k in t["Keys"].as_array().cloned().unwrap_or_default() {
                                let b = seen(&mut c, larger(&key_of(&k), before, after));
                                read(&mut c, b, consistent, 1);
                            }
                        }
                    }
                }
                "PutItem" => {
                    let b = seen(&mut c, larger(&key_of(&ex.request["Item"]), before, after));
                    c.wru += units(b, 1024);
                }
                "UpdateItem" | "DeleteItem" => {
                    let b = seen(&mut c, larger(&key_of(&ex.request["Key"]), before, after));
                    c.wru += units(b, 1024);
                }
                "BatchWriteItem" => {
                    if let Some(tables) = ex.request["RequestItems"].as_object() {
                        for reqs in tables.values() {
                            for r in reqs.as_array().cloned().unwrap_or_default() {
                                let key = if r["PutRequest"].is_object() {
                                    key_of(&r["PutRequest"]["Item"])
                                } else {
                                    key_of(&r["DeleteRequest"]["Key"])
                                };
                                let b = seen(&mut c, larger(&key, before, after));
                                c.wru += units(b, 1024);
                            }
                        }
                    }
                }
                "TransactWriteItems" => {
                    // Every item of a transaction, a ConditionCheck included: 2 per KB.
                    for item in ex.request["TransactItems"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                    {
                        let key = if item["Put"].is_object() {
                            key_of(&item["Put"]["Item"])
                        } else {
                            let action = ["Update", "Delete", "ConditionCheck"]
                                .into_iter()
                                .find(|a| item[*a].is_object())
                                .unwrap_or("Update");
                            key_of(&item[action]["Key"])
                        };
                        let b = seen(&mut c, larger(&key, before, after));
                        c.wru += 2 * units(b, 1024);
                        c.transact_items += 1;
                    }
                }
                "TransactGetItems" => {
                    for item in ex.request["TransactItems"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                    {
                        let b = seen(&mut c, larger(&key_of(&item["Get"]["Key"]), before, after));
                        read(&mut c, b, true, 2);
                    }
                }
                other => panic!("DynamoDB.{other}: no capacity rule in call_budget.rs"),
            }
        }
        c
    }

    /// Runs `op` counted, and records its calls and capacity under `name`.
    struct Recorder {
        meter: Meter,
        dynamodb: aws_sdk_dynamodb::Client,
        table: String,
        ops: Map<String, Value>,
    }

    impl Recorder {
        async fn record<T, F: std::future::Future<Output = T>>(
            &mut self,
            name: &str,
            what: &str,
            op: F,
        ) -> T {
            let before = sizes(&self.dynamodb, &self.table).await;
            self.meter.reset();
            let out = op.await;
            let calls = self.meter.log.calls();
            let depth = self.meter.log.sequential_depth();
            let exchanges = self.meter.exchanges.lock().unwrap().clone();
            let after = sizes(&self.dynamodb, &self.table).await;
            let c = capacity(&exchanges, &before, &after);
            let mut counted = BTreeMap::<String, u64>::new();
            for call in &calls {
                *counted.entry(call.clone()).or_default() += 1;
            }
            self.ops.insert(
                name.to_owned(),
                json!({
                    "what": what,
                    "calls": counted,
                    "roundTrips": depth,
                    "dynamodb": {
                        "readRequestUnits": c.half_rru as f64 / 2.0,
                        "writeRequestUnits": c.wru,
                        "stronglyConsistentReads": c.consistent_reads,
                        "eventuallyConsistentReads": c.eventual_reads,
                        "transactionItems": c.transact_items,
                        // Rounded up to the next KB: the unit writes are billed in.
                        "largestItemKB": c.largest_item_bytes.div_ceil(1024),
                    },
                }),
            );
            out
        }
    }

    fn search_wiring(env: &common::Env) -> SearchWiring {
        use workspace_store_aws::search_index::S3IndexObjects;
        let meta = Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table));
        SearchWiring {
            indexes: Arc::new(workspace_search::SharedIndexes::new(Arc::new(
                S3IndexObjects::new(env.clients.s3.clone(), &env.bucket),
            ))),
            feed: Arc::new(ChangeLogFeed {
                meta,
                clock: Arc::new(SystemClock),
            }),
            max_file_bytes: workspace_core::search::MAX_INDEXED_FILE_BYTES,
            max_scan_bytes: workspace_core::search::MAX_SCAN_BYTES,
            max_regex_millis: workspace_core::search::MAX_REGEX_MILLIS,
            max_catch_up_paths: workspace_core::search::MAX_CATCH_UP_PATHS,
        }
    }

    fn prose(i: usize, bytes: usize) -> String {
        let mut s = format!("# note {i}\n\nThe deploy checklist for service {i}. ");
        while s.len() < bytes {
            s.push_str("Agents write notes, plans and results here. ");
        }
        s.truncate(bytes);
        s
    }

    async fn mcp_call(ws: &workspace_mcp::Workspace<'_>, tool: &str, args: Value) -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}});
        match workspace_mcp::handle_payload(ws, msg.to_string().as_bytes()).await {
            workspace_mcp::Reply::Json(v) => {
                assert!(v["result"]["isError"] != json!(true), "{tool}: {v}");
                v
            }
            _ => panic!("{tool}: no JSON answer"),
        }
    }

    /// The file sizes of the inline-against-S3 table, KiB: the 1, 4, 16 and 64 KiB the
    /// cost page compares, and 2 and 3 around the default threshold.
    const LADDER_KIB: [usize; 6] = [1, 2, 3, 4, 16, 64];

    /// A clock 30 s further on at every reading.
    struct Stepping(std::sync::atomic::AtomicI64);
    impl workspace_core::ports::Clock for Stepping {
        fn now_ms(&self) -> i64 {
            self.0
                .fetch_add(30_000, std::sync::atomic::Ordering::Relaxed)
        }
    }

    #[tokio::test]
    async fn each_operations_calls_and_capacity_are_the_committed_ones() {
        let meter = Meter::default();
        let env = common::fresh(Some(SharedInterceptor::new(meter.clone()))).await;
        let plain = aws_sdk_dynamodb::Client::new(&common::sdk_config());
        // As the functions wire them: fn-put (files and secrets), fn-get, fn-search (files
        // and search), fn-mcp (files, secrets and search), fn-indexer (the same).
        let files = env.service_with_secrets(Limits::default());
        let searching = env
            .service_with_secrets(Limits::default())
            .with_search(search_wiring(&env));
        let indexer = env
            .service_with_secrets(Limits::default())
            .with_search(search_wiring(&env));
        let mut r = Recorder {
            meter: meter.clone(),
            dynamodb: plain,
            table: env.table.clone(),
            ops: Map::new(),
        };
        let me = who();
        // A workspace of 100 files of 1 KiB (the list's page), written uncounted, a day ago
        // and 30 s apart: a catch-up of the search index reads the change log from 10 s
        // (CHANGE_LOG_OVERLAP_MS) before the newest change it applied, and reads the head of
        // every path it finds there, so what it costs depends on how many paths changed in
        // those 10 s. Written a day ago and apart, they are not in the measured window.
        let past = WorkspaceService::new(
            Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table)),
            Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket)),
            Arc::new(FromCommittedState),
            Arc::new(Stepping(std::sync::atomic::AtomicI64::new(
                workspace_core::ports::Clock::now_ms(&SystemClock) - 24 * 3600 * 1000,
            ))),
            Arc::new(RandomIds),
            Limits::default(),
        )
        .with_secrets(Arc::new(DynamoSecrets::new(
            env.clients.dynamodb.clone(),
            &env.table,
        )));
        for i in 0..100 {
            past.put(
                &me,
                put(&format!("notes/n{i:03}.md"), &prose(i, 1024), None),
            )
            .await
            .unwrap();
        }
        // The container's first write reads the tenant's secrets (counted above); later
        // ones keep them.
        files.put(&me, put("warm.md", "warm", None)).await.unwrap();
        indexer.update_index(&me.scope).await.unwrap();

        let v1 = r
            .record(
                "put_1k",
                "PUT of 1 KiB over an existing file (fn-put; the container has the secrets)",
                files.put(&me, put("notes/n000.md", &prose(0, 1024), None)),
            )
            .await
            .unwrap();
        r.record(
            "put_100k",
            "PUT of 100 KiB over an existing file (fn-put)",
            files.put(&me, put("notes/n001.md", &prose(1, 100 * 1024), None)),
        )
        .await
        .unwrap();
        r.record(
            "put_new_1k",
            "PUT of 1 KiB creating a file (fn-put)",
            files.put(&me, put("notes/new.md", &prose(7, 1024), None)),
        )
        .await
        .unwrap();
        let path = FilePath::parse("notes/n000.md").unwrap();
        r.record(
            "get_1k",
            "GET of the latest version of a 1 KiB file (fn-get)",
            files.get(&me, &path, None),
        )
        .await
        .unwrap();
        r.record(
            "get_version",
            "GET of a past version (fn-get)",
            files.get(&me, &path, Some(1)),
        )
        .await
        .unwrap();
        let page = r
            .record(
                "list_100",
                "LIST, a page of 100 files (fn-list)",
                files.list(&me, &PathPrefix::default(), Some(100), None),
            )
            .await
            .unwrap();
        assert_eq!(page.files.len(), 100);
        r.record(
            "history",
            "history of a file with 2 versions (fn-list)",
            files.history(&me, &path, None, None),
        )
        .await
        .unwrap();
        // The indexer's batch after those writes: one catch-up of 3 changed paths and
        // one conditional store of the index object (and the superseded version deleted).
        let applied = r
            .record(
                "indexer_3_changes",
                "the indexer's work for one workspace after 3 writes (fn-indexer, one batch)",
                indexer.update_index(&me.scope),
            )
            .await
            .unwrap();
        assert_eq!(applied, 3);
        let q = || SearchRequest {
            q: "deploy checklist".into(),
            ..SearchRequest::default()
        };
        r.record(
            "search_cold",
            "keyword search, 100 files, an instance that has not loaded the index (fn-search)",
            searching.search(&me, &q()),
        )
        .await
        .unwrap();
        let hits = r
            .record(
                "search",
                "keyword search, 100 files, index current and loaded (fn-search)",
                searching.search(&me, &q()),
            )
            .await
            .unwrap();
        assert!(!hits.hits.is_empty());
        // Past the change log's overlap since the writes above, so the catch-ups below
        // re-read a fixed set of paths however fast this machine ran them.
        tokio::time::sleep(std::time::Duration::from_millis(
            workspace_core::search::CHANGE_LOG_OVERLAP_MS as u64 + 1000,
        ))
        .await;
        files
            .put(&me, put("notes/n002.md", &prose(2, 1024), None))
            .await
            .unwrap();
        r.record(
            "search_after_write",
            "keyword search right after a write the indexer has not applied (fn-search)",
            searching.search(&me, &q()),
        )
        .await
        .unwrap();
        let ws = workspace_mcp::Workspace {
            service: &searching,
            who: &me,
        };
        r.record(
            "mcp_read_file",
            "MCP read_file of a 1 KiB file (fn-mcp)",
            mcp_call(
                &ws,
                "read_file",
                json!({"path": "/workspace/notes/n003.md"}),
            ),
        )
        .await;
        r.record(
            "mcp_write_file",
            "MCP write_file of 1 KiB over an existing file (fn-mcp; it also catches its loaded index up)",
            mcp_call(
                &ws,
                "write_file",
                json!({"path": "/workspace/notes/n003.md", "content": prose(3, 1024)}),
            ),
        )
        .await;
        r.record(
            "delete",
            "DELETE of a file (fn-delete)",
            files.delete(&me, &FilePath::parse("notes/new.md").unwrap(), None),
        )
        .await
        .unwrap();
        drop(v1);

        // A fork of a workspace of 10 files, all 10 changed in the fork, merged back.
        let parent = Identity::read_write(Scope::parse("acme", "small").unwrap(), "alice");
        for i in 0..10 {
            files
                .put(&parent, put(&format!("f{i}.md"), &prose(i, 1024), None))
                .await
                .unwrap();
        }
        let fork = r
            .record(
                "fork_10",
                "create a fork of a workspace of 10 files (fn-workspaces)",
                files.create_fork(&parent, ForkRequest::default()),
            )
            .await
            .unwrap();
        let in_fork = Identity::read_write(
            Scope::new(parent.scope.tenant.clone(), fork.workspace.clone()),
            "alice",
        );
        for i in 0..10 {
            files
                .put(
                    &in_fork,
                    put(&format!("f{i}.md"), &prose(i + 50, 1024), None),
                )
                .await
                .unwrap();
        }
        let merged = r
            .record(
                "merge_10",
                "merge a fork's 10 changed files back (fn-workspaces)",
                files.merge_fork(
                    &parent,
                    fork.workspace.as_str(),
                    MergeRequest {
                        strategy: workspace_core::forks::three_way::Strategy::Fail,
                        resolutions: Default::default(),
                        dry_run: false,
                        discard_fork: false,
                        idempotency_key: None,
                    },
                ),
            )
            .await
            .unwrap();
        assert!(matches!(merged, MergeOutcome::Merged(ref m) if m.applied.len() == 10));

        // Small files inline against S3 (docs/cost.md, "Small files inline"): the same
        // writes and reads with every body in S3 (threshold 0, the build before inline
        // bodies), and a ladder of sizes, each written over a file of its own size (a head's
        // write units count the larger of its two images) with If-Match naming the head.
        let in_s3 = env
            .service_with_secrets(Limits::default())
            .with_inline_body_bytes(0);
        let all_inline = env
            .service_with_secrets(Limits::default())
            .with_inline_body_bytes(workspace_core::blob::inline::MAX_INLINE_BODY_BYTES);
        let current = files
            .get(&me, &FilePath::parse("notes/n000.md").unwrap(), None)
            .await
            .unwrap();
        let named = r
            .record(
                "put_1k_named",
                "PUT of 1 KiB over a file, If-Match naming the head (fn-put)",
                files.put(
                    &me,
                    put(
                        "notes/n000.md",
                        &prose(1, 1024),
                        Some(current.meta.etag.clone()),
                    ),
                ),
            )
            .await
            .unwrap();
        let s3_path = FilePath::parse("notes/n002.md").unwrap();
        let before = in_s3
            .put(&me, put("notes/n002.md", &prose(2, 1024), None))
            .await
            .unwrap();
        let before_version = before.meta.version;
        r.record(
            "put_1k_s3",
            "PUT of 1 KiB over a file, If-Match naming the head, body in S3 (fn-put, threshold 0)",
            in_s3.put(
                &me,
                put("notes/n002.md", &prose(3, 1024), Some(before.meta.etag)),
            ),
        )
        .await
        .unwrap();
        r.record(
            "get_1k_s3",
            "GET of a 1 KiB file with its body in S3 (fn-get)",
            in_s3.get(&me, &s3_path, None),
        )
        .await
        .unwrap();
        r.record(
            "get_version_s3",
            "GET of a past version with its body in S3 (fn-get)",
            // `before`, written with its body in S3 (the earlier versions are inline).
            in_s3.get(&me, &s3_path, Some(before_version)),
        )
        .await
        .unwrap();
        assert_eq!(named.meta.version, current.meta.version + 1);
        for kib in LADDER_KIB {
            let bytes = kib * 1024;
            for (svc, kind) in [(&all_inline, "inline"), (&in_s3, "s3")] {
                let name = format!("ladder/{kind}-{kib}k.md");
                let path = FilePath::parse(&name).unwrap();
                let first = svc
                    .put(&me, put(&name, &prose(kib, bytes), None))
                    .await
                    .unwrap();
                r.record(
                    &format!("{kind}_put_{kib}k"),
                    &format!("PUT of {kib} KiB over a file of {kib} KiB, If-Match naming the head, body {}", if kind == "s3" { "in S3" } else { "inline" }),
                    svc.put(&me, put(&name, &prose(kib + 1, bytes), Some(first.meta.etag))),
                )
                .await
                .unwrap();
                r.record(
                    &format!("{kind}_get_{kib}k"),
                    &format!(
                        "GET of a {kib} KiB file, body {}",
                        if kind == "s3" { "in S3" } else { "inline" }
                    ),
                    svc.get(&me, &path, None),
                )
                .await
                .unwrap();
            }
        }

        let got = json!({
            "about": "AWS calls and DynamoDB capacity per operation, counted on the emulator by \
                      shared/store-aws/tests/call_budget.rs; docs/cost.md is generated from this \
                      file by bench/cost.py. Read units: 1 per 4 KB strongly consistent, 0.5 \
                      eventually; write units: 1 per KB, 2 per KB for each item of a transaction.",
            "regenerate": REGENERATE,
            "operations": Value::Object(r.ops),
        });
        let file =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cost/calls.json");
        let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
        if std::env::var_os("UPDATE_COST_CALLS").is_some() {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &text).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&file).unwrap_or_default();
        let committed: Value = serde_json::from_str(&committed).unwrap_or(Value::Null);
        assert!(
            committed == got,
            "the AWS calls counted differ from bench/cost/calls.json (and so docs/cost.md).\n\
             Counted:\n{text}\nRegenerate with: {REGENERATE}"
        );
    }
}
