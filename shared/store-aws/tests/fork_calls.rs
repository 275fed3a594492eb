//! AWS calls of fork creation and of a merge, counted on the emulator with an SDK
//! interceptor: creating a fork copies no body (no S3 call) and costs one pin per live file
//! of the parent; a merge's cost grows by a fixed number of calls per merged file.

use std::sync::Arc;
use workspace_core::forks::three_way::Strategy;
use workspace_core::ports::{FromCommittedState, RandomIds, SystemClock};
use workspace_core::service::{ForkRequest, MergeOutcome, MergeRequest};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Scope, WorkspaceService};
use workspace_store_aws::calls::CallLog;
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoMeta, S3Bodies};

fn put(path: &str, content: &str) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        ..PutRequest::default()
    }
}

fn count(calls: &[String], name: &str) -> usize {
    calls.iter().filter(|c| c.as_str() == name).count()
}

/// Calls of (fork creation, a merge of `n` changed files) in a workspace of `n` files.
async fn measure(n: usize) -> (Vec<String>, Vec<String>) {
    measure_with(n, None).await
}

/// [`measure`], the merge under `Idempotency-Key` `key` when given.
async fn measure_with(n: usize, key: Option<&str>) -> (Vec<String>, Vec<String>) {
    let log = CallLog::default();
    let env = common::fresh(Some(log.interceptor())).await;
    let svc = WorkspaceService::new(
        Arc::new(DynamoMeta::new(env.clients.dynamodb.clone(), &env.table)),
        Arc::new(S3Bodies::new(env.clients.s3.clone(), &env.bucket)),
        Arc::new(FromCommittedState),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
    .with_secrets(Arc::new(DynamoSecrets::new(
        env.clients.dynamodb.clone(),
        &env.table,
    )));
    let parent = Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice");
    for i in 0..n {
        svc.put(&parent, put(&format!("f{i}.md"), "base"))
            .await
            .unwrap();
    }
    log.reset();
    let fork = svc
        .create_fork(&parent, ForkRequest::default())
        .await
        .unwrap();
    let created = log.calls();
    let in_fork = Identity::read_write(
        Scope::new(parent.scope.tenant.clone(), fork.workspace.clone()),
        "alice",
    );
    for i in 0..n {
        svc.put(&in_fork, put(&format!("f{i}.md"), "fork"))
            .await
            .unwrap();
    }
    log.reset();
    let merged = svc
        .merge_fork(
            &parent,
            fork.workspace.as_str(),
            MergeRequest {
                strategy: Strategy::Fail,
                resolutions: Default::default(),
                dry_run: false,
                discard_fork: false,
                idempotency_key: key.map(str::to_owned),
            },
        )
        .await
        .unwrap();
    assert!(matches!(merged, MergeOutcome::Merged(ref r) if r.applied.len() == n));
    (created, log.calls())
}

#[tokio::test]
async fn forks_copy_no_body_and_merges_cost_a_fixed_number_of_calls_per_file() {
    let (created2, merged2) = measure(2).await;
    let (created4, merged4) = measure(4).await;
    // Creating a fork: the fork record, the parent's heads listed, one pin per live file,
    // the base snapshot record. No S3 call.
    for (created, n) in [(&created2, 2), (&created4, 4)] {
        assert_eq!(
            (
                count(created, "DynamoDB.PutItem"),
                count(created, "DynamoDB.Query"),
                count(created, "DynamoDB.UpdateItem"),
            ),
            (2, 1, n),
            "{created:?}"
        );
        assert_eq!(created.len(), 3 + n, "{created:?}");
        assert!(created.iter().all(|c| !c.starts_with("S3.")), "{created:?}");
    }
    // A merge: per merged file, one read of the fork's body and one upload to the parent
    // (and a fixed number of metadata calls, the same for every file).
    let per_file = (merged4.len() - merged2.len()) / 2;
    assert_eq!(
        merged4.len() - merged2.len(),
        2 * per_file,
        "{merged2:?}\n{merged4:?}"
    );
    assert_eq!(
        count(&merged4, "S3.GetObject") - count(&merged2, "S3.GetObject"),
        2
    );
    assert_eq!(
        count(&merged4, "S3.PutObject") - count(&merged2, "S3.PutObject"),
        2
    );
    // ... and all of them in one transaction, whatever their number (while it fits).
    for merged in [&merged2, &merged4] {
        assert_eq!(
            count(merged, "DynamoDB.TransactWriteItems"),
            1,
            "{merged:?}"
        );
    }
    println!(
        "fork of n files: {} calls (n=2), {} (n=4); merge of n files: {} calls (n=2), {} (n=4), {per_file} per file",
        created2.len(),
        created4.len(),
        merged2.len(),
        merged4.len()
    );
}

/// A merge of more changes than one `TransactWriteItems` takes (100 actions: 3 per changed
/// file, and the secrets check): its plan is recorded first (one `PutItem`), the changes go
/// in as few transactions as hold them, and the plan is ended once the report is recorded
/// (one more `PutItem`); per file the calls are those of a small merge.
#[tokio::test]
async fn a_merge_over_one_transaction_records_its_plan_and_commits_in_batches() {
    let (_, small) = measure_with(2, Some("small")).await;
    let (_, large) = measure_with(40, Some("large")).await;
    // 40 files: 120 actions and the secrets check, in two transactions.
    assert_eq!(count(&large, "DynamoDB.TransactWriteItems"), 2, "{large:?}");
    assert_eq!(count(&small, "DynamoDB.TransactWriteItems"), 1);
    // The plan, and its end: two more PutItem than a merge in one transaction needs.
    let puts = |calls: &[String]| count(calls, "DynamoDB.PutItem");
    assert_eq!(puts(&large) - puts(&small), 2, "{small:?}\n{large:?}");
    assert_eq!(
        count(&large, "S3.PutObject") - count(&small, "S3.PutObject"),
        38
    );
    println!(
        "merge of 2 files: {} calls; of 40 files (plan, 2 transactions): {} calls",
        small.len(),
        large.len()
    );
}
