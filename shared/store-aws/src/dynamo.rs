//! Metadata and the commit decision in one DynamoDB table (`pk`, `sk`).
//!
//! Commit protocol (one `TransactWriteItems`, all or nothing; a batch of commits,
//! `commit_many`, is one transaction of all their actions):
//! 1. put the head, conditioned on the head the service saw (absent, live at seq s, or a
//!    tombstone at seq s): a concurrent commit makes this fail → `HeadMoved`;
//! 2. put the version item;
//! 3. when a live file appears, add 1 to the workspace counter on condition it is below
//!    `maxFiles` (→ `TooManyFiles`); a delete subtracts 1 (a batch: one update of the
//!    counter, its deltas added up, on condition that each commit adding a file finds the
//!    counter below its `maxFiles` as the commits before it leave it);
//! 4. put the idempotency record unless a live one exists (→ `KeyUsed`);
//! 5. delete the version item that falls out of the retention window, unless the new
//!    head's pins name it (a live snapshot holds it), and the items `Commit::released`
//!    lets go (pins that ended). Their S3 bodies are removed off the request path by the
//!    stream publisher, which sees the REMOVE with the old image (so `pruned` is always
//!    empty here); a kept item therefore keeps its body.
//!
//! Actions per commit: head, version item and change-log entry (3), the counter when the
//! number of live files changes (one per batch and scope), the idempotency record when a
//! key is given, one delete per pruned or released version item, and the secrets-epoch
//! check when the content was redacted (one per batch and tenant). A batch fits when its
//! actions are at most 100 and about 4 MB ([`MAX_TRANSACTION_ACTIONS`],
//! `CommitStore::fits_one_commit`).
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
use crate::layout;
use crate::paging::read_pages;
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, ConditionCheck, Delete, Put, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::model::{
    Head, IdempotencyRecord, Pin, Points, Snapshot, SnapshotInfo, VersionRecord,
};
use workspace_core::ports::{
    check_batch, BatchOutcome, Commit, CommitOutcome, CommitStore, Expect, HeadStore, HistoryStore,
    RecordStore, ScopeItemStore, SnapshotStore, StoredRecord,
};
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
    let q = client
        .query()
        .table_name(table)
        .consistent_read(true)
        .expression_attribute_values(":pk", s(pk));
    // DynamoDB refuses an empty begins_with: no prefix means the whole partition.
    let q = if prefix.is_empty() {
        q.key_condition_expression("pk = :pk")
    } else {
        q.key_condition_expression("pk = :pk AND begins_with(sk, :p)")
            .expression_attribute_values(":p", s(prefix))
    };
    read_pages(q, None, None, |item| Ok(Some(item.clone()))).await
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

    /// Runs `ops` as one `TransactWriteItems`: whether it applied, `false` when DynamoDB
    /// cancelled it (a condition failed, or another transaction was on an item).
    pub(crate) async fn applied(&self, ops: Vec<TransactWriteItem>) -> Result<bool> {
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(ops))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_transaction_canceled_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(aws_err(e)),
        }
    }

    fn put(&self, item: Item) -> Result<Put> {
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .build()
            .map_err(aws_err)
    }
}

/// The condition that the point registry is at revision `rev` (0: never written).
pub(crate) fn points_condition(
    check: aws_sdk_dynamodb::types::builders::ConditionCheckBuilder,
    rev: u64,
) -> aws_sdk_dynamodb::types::builders::ConditionCheckBuilder {
    if rev == 0 {
        check.condition_expression("attribute_not_exists(pk)")
    } else {
        check
            .condition_expression("rev = :rev")
            .expression_attribute_values(":rev", n(rev))
    }
}

pub(crate) fn head_condition(expect: &Expect) -> (String, Vec<(&'static str, AttributeValue)>) {
    let (seq, pin_rev, deleted) = match *expect {
        Expect::Absent => return ("attribute_not_exists(pk)".into(), vec![]),
        // Pins are stored only when there are some (`items::head_item`).
        Expect::Tagged { ref etag } => {
            return (
                "etag = :expected_etag AND deleted = :deleted AND attribute_not_exists(pins)"
                    .into(),
                vec![
                    (":expected_etag", s(etag)),
                    (":deleted", AttributeValue::Bool(false)),
                ],
            )
        }
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
    /// The scope's point registry, at the revision the commit was planned under.
    Points,
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
        let pk = layout::partition(scope);
        let start: Option<Item> = after.map(|a| {
            Item::from([
                ("pk".to_owned(), s(pk.clone())),
                ("sk".to_owned(), s(layout::head_sk(a.as_str()))),
            ])
        });
        let mut values = std::collections::HashMap::from([
            (":pk".to_owned(), s(pk.clone())),
            (":prefix".to_owned(), s(layout::head_sk(prefix.as_str()))),
        ]);
        if !tombstones {
            values.insert(":false".to_owned(), AttributeValue::Bool(false));
        }
        // Tombstones (unless wanted) are filtered after DynamoDB applies `Limit`, so a page
        // can come back short: `read_pages` reads on until the page is full.
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .set_filter_expression((!tombstones).then(|| "deleted = :false".to_owned()))
            .set_expression_attribute_values(Some(values));
        read_pages(query, start, Some(limit), |item| {
            items::head_from(item).map(Some)
        })
        .await
    }
}

/// The most actions one `TransactWriteItems` takes, and the most bytes (DynamoDB's
/// documented limits).
pub const MAX_TRANSACTION_ACTIONS: usize = 100;
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

/// About how many bytes an attribute value weighs (DynamoDB's item-size rules: names and
/// values by length; a little more than it counts, never less).
fn value_bytes(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(x) | AttributeValue::N(x) => x.len(),
        AttributeValue::Ss(xs) | AttributeValue::Ns(xs) => xs.iter().map(|x| x.len() + 1).sum(),
        AttributeValue::M(m) => m.iter().map(|(k, v)| k.len() + value_bytes(v) + 3).sum(),
        AttributeValue::L(l) => l.iter().map(|v| value_bytes(v) + 1).sum(),
        // An inline body: at up to 64 KiB a file, these are what fill a transaction.
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bs(bs) => bs.iter().map(|b| b.as_ref().len() + 1).sum(),
        _ => 8,
    }
}

fn item_bytes(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_bytes(v)).sum()
}

/// One action's weight in a transaction: its item (a put) or the values its expressions
/// carry (an update, a condition check, a delete), beside its key and expressions.
fn action_bytes(op: &TransactWriteItem) -> usize {
    const SMALL: usize = 1024;
    let values = |v: Option<&std::collections::HashMap<String, AttributeValue>>| {
        v.map_or(0, |v| v.iter().map(|(k, v)| k.len() + value_bytes(v)).sum())
    };
    SMALL
        + match (op.put(), op.update(), op.condition_check(), op.delete()) {
            (Some(p), ..) => item_bytes(p.item()) + values(p.expression_attribute_values()),
            (_, Some(u), ..) => values(u.expression_attribute_values()),
            (_, _, Some(c), _) => values(c.expression_attribute_values()),
            (_, _, _, Some(d)) => values(d.expression_attribute_values()),
            _ => 0,
        }
}

/// The actions of one `TransactWriteItems`, each with the commit and the part of it that
/// it is (so a cancellation reason, which DynamoDB gives per action, names a commit).
#[derive(Default)]
struct Transaction {
    ops: Vec<TransactWriteItem>,
    parts: Vec<(usize, Part)>,
}

impl Transaction {
    fn push(&mut self, commit: usize, part: Part, op: TransactWriteItem) {
        self.ops.push(op);
        self.parts.push((commit, part));
    }

    /// Whether DynamoDB takes it in one call (at most 100 actions, about 4 MB).
    fn fits(&self) -> bool {
        self.ops.len() <= MAX_TRANSACTION_ACTIONS
            && self.ops.iter().map(action_bytes).sum::<usize>() <= MAX_TRANSACTION_BYTES
    }
}

/// The first commit of a batch redacted under another secrets epoch than an earlier commit
/// of the same tenant: one of the two is stale, so the batch cannot hold.
fn mixed_secrets_epochs(commits: &[Commit]) -> Option<usize> {
    commits.iter().enumerate().find_map(|(i, c)| {
        let at = c.secrets_epoch.as_ref()?;
        commits[..i]
            .iter()
            .filter_map(|e| e.secrets_epoch.as_ref())
            .any(|e| e.tenant == at.tenant && e.epoch != at.epoch)
            .then_some(i)
    })
}

/// Why DynamoDB cancelled a transaction, read from its reasons (one per action, in the
/// order of `parts`): the commit it refuses and what the service is told. A failed
/// idempotency condition is only `KeyTaken` here: the caller reads the record that holds
/// the key.
fn refusal(reasons: &[CancellationReason], parts: &[(usize, Part)]) -> Result<(usize, Refusal)> {
    let failed: Vec<((usize, Part), &str)> = reasons
        .iter()
        .zip(parts)
        .filter_map(|(r, p)| r.code().filter(|c| *c != "None").map(|c| (*p, c)))
        .collect();
    let find = |part: Part| {
        failed
            .iter()
            .find(|((_, p), code)| *p == part && *code == "ConditionalCheckFailed")
            .map(|((i, _), _)| *i)
    };
    let conflict = failed
        .iter()
        .find(|(_, c)| *c == "TransactionConflict")
        .map(|((i, _), _)| *i);
    if let Some(i) = find(Part::Points) {
        Ok((i, Refusal::Outcome(CommitOutcome::PointsMoved)))
    } else if let Some(i) = find(Part::SecretsEpoch) {
        Ok((i, Refusal::Outcome(CommitOutcome::SecretsMoved)))
    } else if let Some(i) = find(Part::Head).or(conflict) {
        Ok((i, Refusal::Outcome(CommitOutcome::HeadMoved)))
    } else if let Some(i) = find(Part::Idempotency) {
        Ok((i, Refusal::KeyTaken))
    } else if let Some(i) = find(Part::Count) {
        Ok((i, Refusal::Outcome(CommitOutcome::TooManyFiles)))
    } else {
        Err(WorkspaceError::internal(format!(
            "transaction cancelled: {failed:?}"
        )))
    }
}

/// What a cancelled transaction tells one commit.
enum Refusal {
    Outcome(CommitOutcome),
    /// Its idempotency key is held by a live record (or was, a moment ago).
    KeyTaken,
}

impl DynamoMeta {
    /// The one transaction that applies `commits` (each the parts of one commit, in order;
    /// the live-file counter and the secrets epoch checked once for all). The caller has
    /// refused a batch of mixed secrets epochs (`mixed_secrets_epochs`).
    fn transaction(&self, commits: &[Commit]) -> Result<Transaction> {
        let mut tx = Transaction::default();
        for (i, c) in commits.iter().enumerate() {
            self.commit_actions(i, c, &mut tx)?;
        }
        self.count_updates(commits, &mut tx)?;
        self.secrets_checks(commits, &mut tx)?;
        self.points_checks(commits, &mut tx)?;
        Ok(tx)
    }

    /// Each scope's point registry is still at the revision its commits were planned
    /// under (→ `PointsMoved`): one check per scope, owned by its first commit. A commit
    /// never waits for a snapshot, and a snapshot never for a commit: whichever lands
    /// second sees the other (`workspace_core::service::points`).
    fn points_checks(&self, commits: &[Commit], tx: &mut Transaction) -> Result<()> {
        let mut checked: Vec<&Scope> = Vec::new();
        for (i, c) in commits.iter().enumerate() {
            if checked.contains(&&c.scope) {
                continue;
            }
            checked.push(&c.scope);
            let check = ConditionCheck::builder()
                .table_name(&self.table)
                .key("pk", s(layout::partition(&c.scope)))
                .key("sk", s(layout::POINTS_SK));
            let check = points_condition(check, c.points_rev);
            let check = TransactWriteItem::builder()
                .condition_check(check.build().map_err(aws_err)?)
                .build();
            tx.push(i, Part::Points, check);
        }
        Ok(())
    }

    /// Steps 1, 2, 4 and 5 of the protocol for commit `i`, and its change-log entry.
    fn commit_actions(&self, i: usize, c: &Commit, tx: &mut Transaction) -> Result<()> {
        let pk = layout::partition(&c.scope);
        let path = c.path.as_str();

        // 1. The head, conditioned on the head the service saw (→ `HeadMoved`).
        let (cond, values) = head_condition(&c.expect);
        let mut put = self.put(items::head_item(
            &c.scope,
            pk.clone(),
            layout::head_sk(path),
            &c.head,
        ))?;
        put.condition_expression = Some(cond);
        if !values.is_empty() {
            put.expression_attribute_values =
                Some(values.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
        }
        tx.push(i, Part::Head, TransactWriteItem::builder().put(put).build());

        // 2. The version item, and the change-log entry beside it.
        let version = items::version_item(
            &c.scope,
            pk.clone(),
            layout::version_sk(path, c.version.seq),
            path,
            &c.version,
        );
        let version = TransactWriteItem::builder().put(self.put(version)?).build();
        tx.push(i, Part::Version, version);
        let change = Change::of_commit(&c.path, &c.version);
        let change = items::change_item(
            &c.scope,
            pk.clone(),
            layout::change_sk(&change.key),
            &change,
        );
        let change = TransactWriteItem::builder().put(self.put(change)?).build();
        tx.push(i, Part::Change, change);

        // 4. The idempotency record, unless a live one exists (→ `KeyUsed`).
        if let Some(rec) = &c.idempotency {
            let expires = rec.created_at / 1000 + IDEMPOTENCY_TTL_SECS;
            let item = items::idempotency_item(
                &c.scope,
                pk.clone(),
                layout::idempotency_sk(&rec.key),
                rec,
                expires,
            )?;
            let mut put = self.put(item)?;
            put.condition_expression =
                Some("attribute_not_exists(pk) OR createdAt <= :valid_after".into());
            put.expression_attribute_values =
                Some([(":valid_after".to_owned(), n(c.idempotency_valid_after))].into());
            tx.push(
                i,
                Part::Idempotency,
                TransactWriteItem::builder().put(put).build(),
            );
        }

        // 5. The version item that falls out of the retention window unless the new head's
        // pins name it, and the items `released` lets go.
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
                .key("sk", s(layout::version_sk(path, seq)))
                .build()
                .map_err(aws_err)?;
            tx.push(
                i,
                Part::Prune,
                TransactWriteItem::builder().delete(del).build(),
            );
        }
        Ok(())
    }

    /// Step 3 of the protocol: each scope's live-file counter, once; the commits' deltas
    /// added up, on condition that every commit adding a file finds the scope below its
    /// `max_files` as the commits before it leave the counter (live + before < max, for
    /// each) (→ `TooManyFiles`).
    fn count_updates(&self, commits: &[Commit], tx: &mut Transaction) -> Result<()> {
        let mut scopes: Vec<&Scope> = Vec::new();
        for c in commits {
            if !scopes.contains(&&c.scope) {
                scopes.push(&c.scope);
            }
        }
        for scope in scopes {
            let mut delta: i64 = 0;
            let mut limit: Option<i128> = None;
            let mut first = None;
            for (i, c) in commits
                .iter()
                .enumerate()
                .filter(|(_, c)| &c.scope == scope)
            {
                if c.live_delta > 0 {
                    let most = i128::from(c.max_files) - 1 - i128::from(delta);
                    limit = Some(limit.map_or(most, |l: i128| l.min(most)));
                    first.get_or_insert(i);
                }
                delta += c.live_delta;
                if c.live_delta != 0 {
                    first.get_or_insert(i);
                }
            }
            let Some(owner) = first else {
                continue;
            };
            let mut upd = Update::builder()
                .table_name(&self.table)
                .key("pk", s(layout::partition(scope)))
                .key("sk", s(layout::COUNT_SK))
                .update_expression("ADD live :delta")
                .expression_attribute_values(":delta", n(delta));
            if let Some(limit) = limit {
                upd = upd
                    .condition_expression("attribute_not_exists(live) OR live <= :most")
                    .expression_attribute_values(":most", n(limit));
            }
            let upd = TransactWriteItem::builder()
                .update(upd.build().map_err(aws_err)?)
                .build();
            tx.push(owner, Part::Count, upd);
        }
        Ok(())
    }

    /// The content was redacted with the tenant's secrets as of an epoch: a secret
    /// registered since fails the commit (see `secrets_table.rs`, → `SecretsMoved`). One
    /// check per tenant, owned by its first commit that names an epoch.
    fn secrets_checks(&self, commits: &[Commit], tx: &mut Transaction) -> Result<()> {
        let mut checked: Vec<&workspace_core::ports::SecretsEpoch> = Vec::new();
        for (i, c) in commits.iter().enumerate() {
            let Some(at) = &c.secrets_epoch else {
                continue;
            };
            if checked.iter().any(|e| e.tenant == at.tenant) {
                continue;
            }
            checked.push(at);
            let check = ConditionCheck::builder()
                .table_name(&self.table)
                .key("pk", s(layout::secrets_partition(&at.tenant)))
                .key("sk", s(crate::secrets_table::EPOCH_SK));
            let check = if at.epoch == 0 {
                check.condition_expression("attribute_not_exists(epoch)")
            } else {
                check
                    .condition_expression("epoch = :epoch")
                    .expression_attribute_values(":epoch", n(at.epoch))
            };
            let check = TransactWriteItem::builder()
                .condition_check(check.build().map_err(aws_err)?)
                .build();
            tx.push(i, Part::SecretsEpoch, check);
        }
        Ok(())
    }

    /// Runs the transaction of `commits` (`commit` is a batch of one) and tells what
    /// happened.
    async fn transact(&self, commits: &[Commit]) -> Result<BatchOutcome> {
        if let Some(index) = mixed_secrets_epochs(commits) {
            let outcome = CommitOutcome::SecretsMoved;
            return Ok(BatchOutcome::Refused { index, outcome });
        }
        let tx = self.transaction(commits)?;
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(tx.ops))
            .send()
            .await;
        let reasons = match res {
            Ok(_) => return Ok(BatchOutcome::Committed { pruned: Vec::new() }),
            Err(SdkError::ServiceError(e)) => match e.err() {
                TransactWriteItemsError::TransactionCanceledException(tc) => {
                    tc.cancellation_reasons().to_vec()
                }
                other => {
                    return Err(WorkspaceError::internal(format!(
                        "TransactWriteItems: {other}"
                    )))
                }
            },
            Err(e) => return Err(aws_err(e)),
        };
        let (index, outcome) = match refusal(&reasons, &tx.parts)? {
            (i, Refusal::Outcome(outcome)) => (i, outcome),
            (i, Refusal::KeyTaken) => {
                let c = &commits[i];
                let key = c.idempotency.as_ref().map(|r| r.key.as_str()).unwrap_or("");
                match self.idempotency(&c.scope, key).await? {
                    Some(rec) => (i, CommitOutcome::KeyUsed(rec)),
                    None => (i, CommitOutcome::HeadMoved),
                }
            }
        };
        Ok(BatchOutcome::Refused { index, outcome })
    }
}

#[async_trait]
impl HeadStore for DynamoMeta {
    async fn head(&self, scope: &Scope, path: &FilePath) -> Result<Option<Head>> {
        self.get_item(layout::partition(scope), layout::head_sk(path.as_str()))
            .await?
            .map(|i| items::head_from(&i))
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

    async fn live_count(&self, scope: &Scope) -> Result<u64> {
        Ok(self
            .get_item(layout::partition(scope), layout::COUNT_SK.to_owned())
            .await?
            .and_then(|i| items::get_n(&i, "live").ok())
            .unwrap_or(0))
    }
}

#[async_trait]
impl CommitStore for DynamoMeta {
    async fn idempotency(&self, scope: &Scope, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.get_item(layout::partition(scope), layout::idempotency_sk(key))
            .await?
            .map(|i| items::idempotency_from(&i))
            .transpose()
    }

    async fn commit(&self, c: Commit) -> Result<CommitOutcome> {
        match self.transact(std::slice::from_ref(&c)).await? {
            BatchOutcome::Committed { pruned } => Ok(CommitOutcome::Committed { pruned }),
            BatchOutcome::Refused { outcome, .. } => Ok(outcome),
        }
    }

    /// One `TransactWriteItems` for the whole batch (see the module notes).
    async fn commit_many(&self, commits: Vec<Commit>) -> Result<BatchOutcome> {
        check_batch(&commits)?;
        if commits.is_empty() {
            return Ok(BatchOutcome::Committed { pruned: Vec::new() });
        }
        if !self.fits_one_commit(&commits) {
            return Err(WorkspaceError::internal(format!(
                "a batch of {} commits is more than one TransactWriteItems takes",
                commits.len()
            )));
        }
        self.transact(&commits).await
    }

    fn fits_one_commit(&self, commits: &[Commit]) -> bool {
        mixed_secrets_epochs(commits).is_none()
            && self.transaction(commits).is_ok_and(|tx| tx.fits())
    }
}

#[async_trait]
impl HistoryStore for DynamoMeta {
    async fn version(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Option<VersionRecord>> {
        self.get_item(
            layout::partition(scope),
            layout::version_sk(path.as_str(), seq),
        )
        .await?
        .map(|i| items::version_from(&i))
        .transpose()
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
}

#[async_trait]
impl SnapshotStore for DynamoMeta {
    async fn put_snapshot(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        self.put_snapshot_item(scope, snapshot).await
    }

    async fn snapshot(&self, scope: &Scope, id: &str) -> Result<Option<Snapshot>> {
        self.get_snapshot_item(scope, id).await
    }

    async fn delete_snapshot(&self, scope: &Scope, id: &str) -> Result<bool> {
        self.delete_snapshot_item(scope, id).await
    }

    async fn points(&self, scope: &Scope) -> Result<Points> {
        self.get_points_item(scope).await
    }

    async fn swap_points(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: workspace_core::ports::PointRecords<'_>,
    ) -> Result<bool> {
        self.swap_points_item(scope, expect_rev, points, with).await
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

#[async_trait]
impl RecordStore for DynamoMeta {
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
}

#[async_trait]
impl ScopeItemStore for DynamoMeta {
    /// One Query of the scope's partition (a page per MB), then `BatchWriteItem` deletes,
    /// 25 items a call.
    async fn erase_scope_items(&self, scope: &Scope) -> Result<u64> {
        use workspace_core::sessions::ports::SessionStore;
        crate::sessions::DynamoSessions::new(self.client.clone(), self.table.clone())
            .erase_scope(scope)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::primitives::Blob;
    use aws_sdk_dynamodb::types::Put;

    /// A version item's put as a commit makes it, with its body inline or in S3.
    fn put(i: usize, body: Option<usize>) -> TransactWriteItem {
        let mut item = Item::from([
            ("pk".to_owned(), s("t#tenant#w#workspace")),
            ("sk".to_owned(), s(format!("v#notes/{i}.md#{i:020}"))),
        ]);
        match body {
            Some(len) => item.insert(
                items::INLINE_BODY.to_owned(),
                AttributeValue::B(Blob::new(vec![b'x'; len])),
            ),
            None => item.insert("bodyKey".to_owned(), s("k".repeat(200))),
        };
        let put = Put::builder()
            .table_name("t")
            .set_item(Some(item))
            .build()
            .unwrap();
        TransactWriteItem::builder().put(put).build()
    }

    fn transaction(ops: impl IntoIterator<Item = TransactWriteItem>) -> Transaction {
        let mut tx = Transaction::default();
        for (i, op) in ops.into_iter().enumerate() {
            tx.push(i, Part::Version, op);
        }
        tx
    }

    #[test]
    fn inline_bodies_count_toward_the_four_megabytes() {
        // 80 actions of 64 KiB inline bodies are 5 MiB: DynamoDB would refuse them, so the
        // batch must go to the durable plan.
        assert!(!transaction((0..80).map(|i| put(i, Some(64 * 1024)))).fits());
        // The same actions with their bodies in S3 weigh a few hundred bytes each.
        assert!(transaction((0..80).map(|i| put(i, None))).fits());
        // At the 2 KiB default the 100 actions bind first.
        assert!(transaction((0..100).map(|i| put(i, Some(2048)))).fits());
        assert!(!transaction((0..101).map(|i| put(i, Some(2048)))).fits());
    }

    #[test]
    fn an_update_weighs_the_values_it_writes() {
        let update = |len: usize| {
            let u = aws_sdk_dynamodb::types::Update::builder()
                .table_name("t")
                .key("pk", s("p"))
                .key("sk", s("h"))
                .update_expression("SET body = :b")
                .expression_attribute_values(":b", AttributeValue::B(Blob::new(vec![0; len])))
                .build()
                .unwrap();
            TransactWriteItem::builder().update(u).build()
        };
        assert!(action_bytes(&update(64 * 1024)) > 64 * 1024);
        assert!(!transaction((0..70).map(|_| update(64 * 1024))).fits());
    }
}
