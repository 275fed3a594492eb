//! Metadata and the commit decision in one DynamoDB table (`pk`, `sk`).
//!
//! Commit protocol (one `TransactWriteItems`, all or nothing):
//! 1. put the head, conditioned on the head the service saw (absent, live at seq s, or a
//!    tombstone at seq s): a concurrent commit makes this fail → `HeadMoved`;
//! 2. put the version item;
//! 3. when a live file appears, add 1 to the workspace counter on condition it is below
//!    `maxFiles` (→ `TooManyFiles`); a delete subtracts 1;
//! 4. put the idempotency record unless a live one exists (→ `KeyUsed`);
//! 5. delete the version item that falls out of the retention window, unless the new
//!    head's pins name it (a live snapshot holds it), and the items `Commit::released`
//!    lets go (pins that ended). Their S3 bodies are removed off the request path by the
//!    stream publisher, which sees the REMOVE with the old image (so `pruned` is always
//!    empty here); a kept item therefore keeps its body.
//!
//! Pins (run snapshots) change the head with `set_pins`, under the same compare-and-swap
//! on (`seq`, `pinRev`) that step 1 checks; see `workspace_core::service::snapshots` for
//! why a pin and a pruning commit can never both succeed on stale state.
//!
//! Failure interleavings: the S3 body is written before this commit; if the commit fails
//! or the process dies between the two, the body is an orphan no version item points to,
//! which the service deletes at once when it can and the sweeper deletes otherwise.

pub(crate) use crate::aws_err;
use crate::items::{self, n, s, Item};
use crate::keys;
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::model::{Head, IdempotencyRecord, Pin, Snapshot, SnapshotInfo, VersionRecord};
use workspace_core::ports::{Commit, CommitOutcome, Expect, MetaStore, StoredRecord};
use workspace_core::{FilePath, PathPrefix, Result, Scope, WorkspaceError};

/// How long an idempotency record lives before DynamoDB TTL may remove it (seconds).
const IDEMPOTENCY_TTL_SECS: i64 = 2 * 24 * 60 * 60;

/// One item of any of our `pk`/`sk` tables, read strongly consistently.
pub(crate) async fn get_consistent(
    client: &Client,
    table: &str,
    pk: String,
    sk: String,
) -> Result<Option<Item>> {
    let out = client
        .get_item()
        .table_name(table)
        .key("pk", s(pk))
        .key("sk", s(sk))
        .consistent_read(true)
        .send()
        .await
        .map_err(aws_err)?;
    Ok(out.item)
}

/// Every item of a partition whose sort key starts with `prefix` (the whole partition
/// when it is empty), read strongly consistently, all pages.
pub(crate) async fn query_prefix(
    client: &Client,
    table: &str,
    pk: &str,
    prefix: &str,
) -> Result<Vec<Item>> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let mut q = client
            .query()
            .table_name(table)
            .consistent_read(true)
            .expression_attribute_values(":pk", s(pk))
            .set_exclusive_start_key(start);
        // DynamoDB refuses an empty begins_with: no prefix means the whole partition.
        q = if prefix.is_empty() {
            q.key_condition_expression("pk = :pk")
        } else {
            q.key_condition_expression("pk = :pk AND begins_with(sk, :p)")
                .expression_attribute_values(":p", s(prefix))
        };
        let res = q.send().await.map_err(aws_err)?;
        out.extend(res.items().iter().cloned());
        match res.last_evaluated_key {
            Some(k) => start = Some(k),
            None => return Ok(out),
        }
    }
}

#[derive(Clone)]
pub struct DynamoMeta {
    pub(crate) client: Client,
    pub(crate) table: String,
}

impl DynamoMeta {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub(crate) async fn get_item(&self, pk: String, sk: String) -> Result<Option<Item>> {
        get_consistent(&self.client, &self.table, pk, sk).await
    }

    fn put(&self, item: Item) -> Result<Put> {
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .build()
            .map_err(aws_err)
    }
}

pub(crate) fn head_condition(expect: Expect) -> (String, Vec<(&'static str, AttributeValue)>) {
    let (seq, pin_rev, deleted) = match expect {
        Expect::Absent => return ("attribute_not_exists(pk)".into(), vec![]),
        Expect::Live { seq, pin_rev } => (seq, pin_rev, false),
        Expect::Deleted { seq, pin_rev } => (seq, pin_rev, true),
    };
    // Items written before pins existed have no pinRev: that is revision 0.
    let rev = if pin_rev == 0 {
        "(attribute_not_exists(pinRev) OR pinRev = :expected_rev)"
    } else {
        "pinRev = :expected_rev"
    };
    (
        format!("seq = :expected_seq AND deleted = :deleted AND {rev}"),
        vec![
            (":expected_seq", n(seq)),
            (":expected_rev", n(pin_rev)),
            (":deleted", AttributeValue::Bool(deleted)),
        ],
    )
}

/// Which part of a transaction a cancellation reason points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Head,
    Version,
    /// The change-log entry (unconditional: its key is new with its version item).
    Change,
    Count,
    Idempotency,
    Prune,
    SecretsEpoch,
}

impl DynamoMeta {
    /// Heads under `prefix` after `after`, sorted by path; tombstones only when asked.
    async fn heads_in(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
        tombstones: bool,
    ) -> Result<Vec<Head>> {
        let pk = keys::partition(scope);
        let mut start: Option<Item> = after.map(|a| {
            Item::from([
                ("pk".to_owned(), s(pk.clone())),
                ("sk".to_owned(), s(keys::head_sk(a.as_str()))),
            ])
        });
        let mut values = std::collections::HashMap::from([
            (":pk".to_owned(), s(pk.clone())),
            (":prefix".to_owned(), s(keys::head_sk(prefix.as_str()))),
        ]);
        if !tombstones {
            values.insert(":false".to_owned(), AttributeValue::Bool(false));
        }
        let mut out = Vec::new();
        // Tombstones (unless wanted) are filtered after DynamoDB applies `Limit`, so a page can come back
        // short: keep reading until the page is full or the range is exhausted.
        loop {
            let res = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .set_filter_expression((!tombstones).then(|| "deleted = :false".to_owned()))
                .set_expression_attribute_values(Some(values.clone()))
                .limit(i32::try_from(limit - out.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(aws_err)?;
            for item in res.items() {
                out.push(items::head_from(item)?);
            }
            match res.last_evaluated_key {
                Some(k) if out.len() < limit => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl MetaStore for DynamoMeta {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        self.get_item(keys::partition(scope), keys::head_sk(path.as_str()))
            .await?
            .map(|i| items::head_from(&i))
            .transpose()
    }

    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>> {
        self.get_item(keys::partition(scope), keys::version_sk(path.as_str(), seq))
            .await?
            .map(|i| items::version_from(&i))
            .transpose()
    }

    async fn list_live(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads_in(scope, prefix, after, limit, false).await
    }

    async fn list_heads(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
    ) -> Result<Vec<Head>> {
        self.heads_in(scope, prefix, after, limit, true).await
    }

    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.get_item(keys::partition(scope), keys::idempotency_sk(key))
            .await?
            .map(|i| items::idempotency_from(&i))
            .transpose()
    }

    async fn live_count(&self, scope: &Scope) -> Result<u64> {
        Ok(self
            .get_item(keys::partition(scope), keys::COUNT_SK.to_owned())
            .await?
            .and_then(|i| items::get_n(&i, "live").ok())
            .unwrap_or(0))
    }

    async fn commit(&self, c: Commit) -> Result<CommitOutcome> {
        let pk = keys::partition(&c.scope);
        let path = c.path.as_str();
        let mut parts = Vec::new();
        let mut ops = Vec::new();

        let (cond, values) = head_condition(c.expect);
        let mut put = self.put(items::head_item(
            &c.scope,
            pk.clone(),
            keys::head_sk(path),
            &c.head,
        ))?;
        put.condition_expression = Some(cond);
        if !values.is_empty() {
            put.expression_attribute_values =
                Some(values.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
        }
        ops.push(TransactWriteItem::builder().put(put).build());
        parts.push(Part::Head);

        let version = items::version_item(
            &c.scope,
            pk.clone(),
            keys::version_sk(path, c.version.seq),
            path,
            &c.version,
        );
        ops.push(TransactWriteItem::builder().put(self.put(version)?).build());
        parts.push(Part::Version);

        let change = Change::of_commit(&c.path, &c.version);
        let change =
            items::change_item(&c.scope, pk.clone(), keys::change_sk(&change.key), &change);
        ops.push(TransactWriteItem::builder().put(self.put(change)?).build());
        parts.push(Part::Change);

        if c.live_delta != 0 {
            let mut upd = Update::builder()
                .table_name(&self.table)
                .key("pk", s(pk.clone()))
                .key("sk", s(keys::COUNT_SK))
                .update_expression("ADD live :delta")
                .expression_attribute_values(":delta", n(c.live_delta));
            if c.live_delta > 0 {
                upd = upd
                    .condition_expression("attribute_not_exists(live) OR live < :max")
                    .expression_attribute_values(":max", n(c.max_files));
            }
            ops.push(
                TransactWriteItem::builder()
                    .update(upd.build().map_err(aws_err)?)
                    .build(),
            );
            parts.push(Part::Count);
        }

        if let Some(rec) = &c.idempotency {
            let expires = rec.created_at / 1000 + IDEMPOTENCY_TTL_SECS;
            let item = items::idempotency_item(
                &c.scope,
                pk.clone(),
                keys::idempotency_sk(&rec.key),
                rec,
                expires,
            )?;
            let mut put = self.put(item)?;
            put.condition_expression =
                Some("attribute_not_exists(pk) OR createdAt <= :valid_after".into());
            put.expression_attribute_values =
                Some([(":valid_after".to_owned(), n(c.idempotency_valid_after))].into());
            ops.push(TransactWriteItem::builder().put(put).build());
            parts.push(Part::Idempotency);
        }

        let pinned = |seq: u64| c.head.pins.iter().any(|p| p.seq == seq);
        let mut doomed: Vec<u64> = c.released.clone();
        if c.retain_from_seq > 1 && !pinned(c.retain_from_seq - 1) {
            doomed.push(c.retain_from_seq - 1);
        }
        doomed.sort_unstable();
        doomed.dedup();
        for seq in doomed {
            let del = Delete::builder()
                .table_name(&self.table)
                .key("pk", s(pk.clone()))
                .key("sk", s(keys::version_sk(path, seq)))
                .build()
                .map_err(aws_err)?;
            ops.push(TransactWriteItem::builder().delete(del).build());
            parts.push(Part::Prune);
        }

        // The content was redacted with the tenant's secrets as of this epoch: a secret
        // registered since fails the commit (see `secrets_table.rs`).
        if let Some(at) = &c.secrets_epoch {
            let check = ConditionCheck::builder()
                .table_name(&self.table)
                .key("pk", s(keys::secrets_partition(&at.tenant)))
                .key("sk", s(crate::secrets_table::EPOCH_SK));
            let check = if at.epoch == 0 {
                check.condition_expression("attribute_not_exists(epoch)")
            } else {
                check
                    .condition_expression("epoch = :epoch")
                    .expression_attribute_values(":epoch", n(at.epoch))
            };
            ops.push(
                TransactWriteItem::builder()
                    .condition_check(check.build().map_err(aws_err)?)
                    .build(),
            );
            parts.push(Part::SecretsEpoch);
        }

        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(ops))
            .send()
            .await;
        match res {
            Ok(_) => Ok(CommitOutcome::Committed { pruned: Vec::new() }),
            Err(SdkError::ServiceError(e)) => match e.err() {
                TransactWriteItemsError::TransactionCanceledException(tc) => {
                    let failed: Vec<(Part, &str)> = tc
                        .cancellation_reasons()
                        .iter()
                        .zip(&parts)
                        .filter_map(|(r, p)| r.code().filter(|c| *c != "None").map(|c| (*p, c)))
                        .collect();
                    let is = |part: Part| {
                        failed
                            .iter()
                            .any(|(p, code)| *p == part && *code == "ConditionalCheckFailed")
                    };
                    if is(Part::SecretsEpoch) {
                        Ok(CommitOutcome::SecretsMoved)
                    } else if is(Part::Head)
                        || failed.iter().any(|(_, c)| *c == "TransactionConflict")
                    {
                        Ok(CommitOutcome::HeadMoved)
                    } else if is(Part::Idempotency) {
                        let key = c.idempotency.as_ref().map(|r| r.key.as_str()).unwrap_or("");
                        match self.idempotency(&c.scope, key).await? {
                            Some(rec) => Ok(CommitOutcome::KeyUsed(rec)),
                            None => Ok(CommitOutcome::HeadMoved),
                        }
                    } else if is(Part::Count) {
                        Ok(CommitOutcome::TooManyFiles)
                    } else {
                        Err(WorkspaceError::internal(format!(
                            "transaction cancelled: {failed:?}"
                        )))
                    }
                }
                other => Err(WorkspaceError::internal(format!(
                    "TransactWriteItems: {other}"
                ))),
            },
            Err(e) => Err(aws_err(e)),
        }
    }

    async fn list_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        self.query_versions(scope, path, before, limit).await
    }

    async fn set_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        self.update_pins(scope, path, expect, pins, must_exist)
            .await
    }

    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        self.put_snapshot_item(scope, snapshot).await
    }

    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>> {
        self.get_snapshot_item(scope, id).await
    }

    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool> {
        self.delete_snapshot_item(scope, id).await
    }

    async fn erase_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &workspace_core::model::Erasure,
    ) -> Result<Option<Option<workspace_core::model::BodyRef>>> {
        self.erase_version_item(scope, path, seq, erasure).await
    }

    async fn list_changes(&self, scope: &Scope, q: &ChangeQuery) -> Result<ChangePage> {
        self.list_change_items(scope, q).await
    }

    async fn put_record(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        self.put_record_item(scope, kind, key, record).await
    }

    async fn record(&self, scope: &Scope, kind: &str, key: &str) -> Result<Option<StoredRecord>> {
        self.get_record_item(scope, kind, key).await
    }

    async fn list_snapshots(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        self.list_snapshot_items(scope, id_prefix, before, limit)
            .await
    }
}
