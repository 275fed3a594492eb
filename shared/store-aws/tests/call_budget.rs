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
    let svc = env.service_with_secrets(Limits::default());
    let path = FilePath::parse("notes/a.md").unwrap();

    // The first PUT of a container: the tenant's registered secrets and their epoch (WSR-1:
    // the body is redacted before it is uploaded), then the body upload and the head read
    // side by side, then one transaction, which checks the epoch.
    log.reset();
    let v1 = svc
        .put(&who(), put("notes/a.md", "one", None))
        .await
        .unwrap();
    assert_eq!(
        log.calls(),
        [
            "DynamoDB.GetItem",
            "DynamoDB.Query",
            "DynamoDB.TransactWriteItems",
            "S3.PutObject"
        ]
    );
    assert_eq!(log.sequential_depth(), 3, "PUT waits for three round trips");

    // Every later PUT: the secrets are kept (the commit checks their epoch), so the body
    // upload and the head read, then the transaction: two round trips.
    log.reset();
    svc.put(&who(), put("notes/a.md", "two", Some(v1.meta.etag)))
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
    assert_eq!(page.versions.len(), 2);
    assert_eq!(log.calls(), ["DynamoDB.Query"]);

    // SNAPSHOT: one Query for the heads, one conditional UpdateItem per file (side by
    // side), one PutItem for the record.
    log.reset();
    let snap = svc.create_snapshot(&who()).await.unwrap();
    assert_eq!(
        log.calls(),
        ["DynamoDB.PutItem", "DynamoDB.Query", "DynamoDB.UpdateItem"]
    );
    assert_eq!(log.sequential_depth(), 3);

    // A read through it: the record, the pinned version item, the body.
    log.reset();
    let through = svc.get_in_snapshot(&who(), &snap.id, &path).await.unwrap();
    assert_eq!(through.content, b"two");
    assert_eq!(
        log.calls(),
        ["DynamoDB.GetItem", "DynamoDB.GetItem", "S3.GetObject"]
    );

    // A write to a pinned file costs what any write costs.
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
    .with_secrets(Arc::new(secrets.clone()));
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
