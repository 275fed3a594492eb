//! The DynamoDB side of history and run snapshots: one Query for a path's version items,
//! pins written on the head under the same compare-and-swap a commit checks (see
//! `workspace_core::service::snapshots`), and snapshot records (`snap#<id>`, with
//! `expiresAt` for TTL).

use crate::aws_err;
use crate::dynamo::{head_condition, DynamoMeta};
use crate::items::{self, n, s};
use crate::keys;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnValue, TransactWriteItem, Update,
};
use std::collections::HashMap;
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::model::{BodyRef, Erasure, Pin, Snapshot, SnapshotInfo, VersionRecord};
use workspace_core::ports::{Expect, StoredRecord};
use workspace_core::{FilePath, Result, Scope};

impl DynamoMeta {
    pub(crate) async fn query_versions(
        &self,
        scope: &Scope,
        path: &FilePath,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<VersionRecord>> {
        let path = path.as_str();
        let hi = match before {
            Some(0) => return Ok(Vec::new()),
            Some(b) => b - 1,
            None => u64::MAX,
        };
        let mut out = Vec::new();
        let mut start = None;
        // One Query, newest first; a second only when DynamoDB's 1 MB page cut it short.
        loop {
            let res = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(keys::partition(scope)))
                .expression_attribute_values(":lo", s(keys::version_sk(path, 0)))
                .expression_attribute_values(":hi", s(keys::version_sk(path, hi)))
                .scan_index_forward(false)
                .limit(i32::try_from(limit - out.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(aws_err)?;
            for item in res.items() {
                out.push(items::version_from(item)?);
            }
            match res.last_evaluated_key {
                Some(k) if out.len() < limit => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    pub(crate) async fn update_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        let pk = keys::partition(scope);
        let rev = match expect {
            Expect::Absent => return Ok(false),
            Expect::Live { pin_rev, .. } | Expect::Deleted { pin_rev, .. } => pin_rev,
        };
        let (cond, values) = head_condition(expect);
        let values: HashMap<String, AttributeValue> = values
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .chain([
                (":pins".to_owned(), s(items::pins_json(&pins))),
                (":rev".to_owned(), n(rev + 1)),
            ])
            .collect();
        let head_key = keys::head_sk(path.as_str());
        const SET: &str = "SET pins = :pins, pinRev = :rev";
        match must_exist {
            // The head alone: its own version item cannot be pruned while it is the head.
            None => {
                let res = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .key("pk", s(pk))
                    .key("sk", s(head_key))
                    .update_expression(SET)
                    .condition_expression(cond)
                    .set_expression_attribute_values(Some(values))
                    .send()
                    .await;
                match res {
                    Ok(_) => Ok(true),
                    // A commit's transaction on the same head in flight is a moved head
                    // too: the caller re-reads and retries.
                    Err(e)
                        if e.as_service_error().is_some_and(|se| {
                            se.is_conditional_check_failed_exception()
                                || se.is_transaction_conflict_exception()
                        }) =>
                    {
                        Ok(false)
                    }
                    Err(e) => Err(aws_err(e)),
                }
            }
            // An older item: it must still be there when the pin lands.
            Some(seq) => {
                let check = ConditionCheck::builder()
                    .table_name(&self.table)
                    .key("pk", s(pk.clone()))
                    .key("sk", s(keys::version_sk(path.as_str(), seq)))
                    .condition_expression("attribute_exists(pk)")
                    .build()
                    .map_err(aws_err)?;
                let upd = Update::builder()
                    .table_name(&self.table)
                    .key("pk", s(pk))
                    .key("sk", s(head_key))
                    .update_expression(SET)
                    .condition_expression(cond)
                    .set_expression_attribute_values(Some(values))
                    .build()
                    .map_err(aws_err)?;
                let res = self
                    .client
                    .transact_write_items()
                    .transact_items(TransactWriteItem::builder().condition_check(check).build())
                    .transact_items(TransactWriteItem::builder().update(upd).build())
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
        }
    }

    pub(crate) async fn put_snapshot_item(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        let item = items::snapshot_item(
            scope,
            keys::partition(scope),
            keys::snapshot_sk(&snapshot.id),
            snapshot,
        )?;
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }

    pub(crate) async fn get_snapshot_item(
        &self,
        scope: &Scope,
        id: &str,
    ) -> Result<Option<Snapshot>> {
        self.get_item(keys::partition(scope), keys::snapshot_sk(id))
            .await?
            .map(|i| items::snapshot_from(&i))
            .transpose()
    }

    /// Erases a version item: one read (its body), then one transaction that marks the
    /// item erased (dropping its body reference) on condition that it exists and is not
    /// erased yet, and puts the change-log entry. The stream's MODIFY of the item announces
    /// the erase; the caller deletes the body (or, if it stops first, the sweeper does:
    /// no item names it any more).
    pub(crate) async fn erase_version_item(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
        erasure: &Erasure,
    ) -> Result<Option<Option<BodyRef>>> {
        let pk = keys::partition(scope);
        let sk = keys::version_sk(path.as_str(), seq);
        for _ in 0..3 {
            let Some(item) = self.get_item(pk.clone(), sk.clone()).await? else {
                return Ok(None);
            };
            let v = items::version_from(&item)?;
            if v.erased.is_some() {
                return Ok(Some(None));
            }
            let upd = Update::builder()
                .table_name(&self.table)
                .key("pk", s(pk.clone()))
                .key("sk", s(sk.clone()))
                .update_expression(
                    "SET erasedBy = :by, erasedAt = :at REMOVE bodyKey, bodyVersionId",
                )
                .condition_expression("attribute_exists(pk) AND attribute_not_exists(erasedAt)")
                .expression_attribute_values(":by", s(&erasure.by))
                .expression_attribute_values(":at", n(erasure.at))
                .build()
                .map_err(aws_err)?;
            let change = Change::of_erase(path, &v, erasure);
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(items::change_item(
                    scope,
                    pk.clone(),
                    keys::change_sk(&change.key),
                    &change,
                )))
                .build()
                .map_err(aws_err)?;
            let res = self
                .client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().update(upd).build())
                .transact_items(TransactWriteItem::builder().put(put).build())
                .send()
                .await;
            match res {
                Ok(_) => return Ok(Some(v.body)),
                // Pruned or erased in between: read again to say which.
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|se| se.is_transaction_canceled_exception()) => {}
                Err(e) => return Err(aws_err(e)),
            }
        }
        Err(workspace_core::WorkspaceError::internal(
            "the version item kept changing while it was erased",
        ))
    }

    /// One Query: the page's key range, newest first, the filters applied by DynamoDB
    /// (a filtered page may be short; `next_before` then still continues it).
    pub(crate) async fn list_change_items(
        &self,
        scope: &Scope,
        q: &ChangeQuery,
    ) -> Result<ChangePage> {
        let lo = keys::change_sk(q.from.as_deref().unwrap_or(""));
        // BETWEEN is inclusive: an entry at exactly `before` is skipped below.
        let hi = match q.upper() {
            Some(u) => keys::change_sk(u),
            None => format!("{}\u{10ffff}", keys::CHANGE_PREFIX),
        };
        if lo >= hi {
            return Ok(ChangePage::default());
        }
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
            .expression_attribute_values(":pk", s(keys::partition(scope)))
            .expression_attribute_values(":lo", s(&lo))
            .expression_attribute_values(":hi", s(&hi))
            .scan_index_forward(false)
            .limit(i32::try_from(q.limit + 1).unwrap_or(i32::MAX));
        let mut filters = Vec::new();
        if !q.prefix.is_empty() {
            filters.push("begins_with(#path, :prefix)");
            query = query
                .expression_attribute_names("#path", "path")
                .expression_attribute_values(":prefix", s(&q.prefix));
        }
        if let Some(p) = &q.principal {
            filters.push("principal = :principal");
            query = query.expression_attribute_values(":principal", s(p));
        }
        if !filters.is_empty() {
            query = query.filter_expression(filters.join(" AND "));
        }
        let res = query.send().await.map_err(aws_err)?;
        let mut page = ChangePage::default();
        for item in res.items() {
            let change = items::change_from(item)?;
            // Path globs are no DynamoDB filter: the caller's scope is applied here (a page
            // may then be short; its token is opaque, so it never shows a skipped path).
            if Some(change.key.as_str()) == q.before.as_deref() || !q.paths.can_read(&change.path) {
                continue;
            }
            if page.changes.len() == q.limit {
                page.next_before = page.changes.last().map(|c| c.key.clone());
                return Ok(page);
            }
            page.changes.push(change);
        }
        if res.last_evaluated_key.is_some() {
            // DynamoDB stopped at its limit: continue below the last key it read.
            let last = res
                .last_evaluated_key()
                .and_then(|k| k.get("sk"))
                .and_then(|v| v.as_s().ok())
                .and_then(|sk| sk.strip_prefix(keys::CHANGE_PREFIX))
                .map(str::to_owned);
            page.next_before = last.or_else(|| page.changes.last().map(|c| c.key.clone()));
        }
        Ok(page)
    }

    pub(crate) async fn put_record_item(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
        record: &StoredRecord,
    ) -> Result<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(keys::partition(scope)))
            .item("sk", s(keys::record_sk(kind, key)))
            .item("value", s(&record.value))
            .item("expiresAtMs", items::n(record.expires_at))
            .item("expiresAt", items::n(record.expires_at / 1000 + 1))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }

    pub(crate) async fn get_record_item(
        &self,
        scope: &Scope,
        kind: &str,
        key: &str,
    ) -> Result<Option<StoredRecord>> {
        self.get_item(keys::partition(scope), keys::record_sk(kind, key))
            .await?
            .map(|i| {
                Ok(StoredRecord {
                    value: items::get_s(&i, "value")?,
                    expires_at: items::get_n(&i, "expiresAtMs")?,
                })
            })
            .transpose()
    }

    /// Snapshot records by id, descending, without their file lists (projected away).
    pub(crate) async fn list_snapshot_items(
        &self,
        scope: &Scope,
        id_prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SnapshotInfo>> {
        let lo = keys::snapshot_sk(id_prefix);
        // BETWEEN is inclusive: `before` itself is skipped below.
        let hi = match before {
            Some(b) => keys::snapshot_sk(b),
            None => format!("{lo}\u{10ffff}"),
        };
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let res = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(keys::partition(scope)))
                .expression_attribute_values(":lo", s(&lo))
                .expression_attribute_values(":hi", s(&hi))
                .projection_expression("#id, createdAt, expiresAtMs, workflowId, #label, #keep")
                .expression_attribute_names("#label", "label")
                .expression_attribute_names("#keep", "keep")
                .expression_attribute_names("#id", "id")
                .scan_index_forward(false)
                .limit(i32::try_from(limit + 1 - out.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(aws_err)?;
            for item in res.items() {
                let info = items::snapshot_info_from(item)?;
                if Some(info.id.as_str()) != before && out.len() < limit {
                    out.push(info);
                }
            }
            match res.last_evaluated_key {
                Some(k) if out.len() < limit => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    pub(crate) async fn delete_snapshot_item(&self, scope: &Scope, id: &str) -> Result<bool> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(keys::partition(scope)))
            .key("sk", s(keys::snapshot_sk(id)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(aws_err)?;
        Ok(out.attributes.is_some())
    }
}
