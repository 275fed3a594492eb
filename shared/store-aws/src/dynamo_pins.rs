//! The DynamoDB side of history and run snapshots: one Query for a path's version items,
//! pins written on the head under the same compare-and-swap a commit checks (see
//! `workspace_core::service::snapshots`), and snapshot records (`snap#<id>`, with
//! `expiresAt` for TTL).

use crate::aws_err;
use crate::dynamo::{head_condition, DynamoMeta};
use crate::items::Item;
use crate::items::{self, n, s};
use crate::layout;
use crate::paging::read_pages;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, DeleteRequest, Put, PutRequest, ReturnValue, TransactWriteItem,
    Update, WriteRequest,
};
use std::collections::HashMap;
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::model::{
    BodyRef, Erasure, Pin, Points, Snapshot, SnapshotFile, SnapshotInfo, VersionRecord,
};
use workspace_core::ports::{Expect, StoredRecord};
use workspace_core::{FilePath, Result, Scope, WorkspaceError};

impl DynamoMeta {
    /// One strongly consistent Query of the scope's items whose sort keys run from `lo` to
    /// `hi` (both included), highest key first: the newest versions, changes or snapshots.
    fn newest_first(&self, scope: &Scope, lo: &str, hi: &str) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
            .expression_attribute_values(":pk", s(layout::partition(scope)))
            .expression_attribute_values(":lo", s(lo))
            .expression_attribute_values(":hi", s(hi))
            .scan_index_forward(false)
    }

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
        // One Query, newest first; a second only when DynamoDB's 1 MB page cut it short.
        let (lo, hi) = (layout::version_sk(path, 0), layout::version_sk(path, hi));
        let query = self.newest_first(scope, &lo, &hi);
        read_pages(query, None, Some(limit), |item| {
            items::version_from(item).map(Some)
        })
        .await
    }

    /// The point registry, read strongly consistently (revision 0 when never written).
    pub(crate) async fn get_points_item(&self, scope: &Scope) -> Result<Points> {
        match self
            .get_item(layout::partition(scope), layout::POINTS_LIST_SK.to_owned())
            .await?
        {
            Some(item) => items::points_from(&item),
            None => Ok(Points::default()),
        }
    }

    /// The registry replaced on condition of its revision (the revision item, and the list
    /// beside it), with the snapshot record and the fork record when given: one
    /// `TransactWriteItems` (a record too large for one item is refused: a point's record
    /// holds no files).
    pub(crate) async fn swap_points_item(
        &self,
        scope: &Scope,
        expect_rev: u64,
        points: &Points,
        with: workspace_core::ports::PointRecords<'_>,
    ) -> Result<bool> {
        let pk = layout::partition(scope);
        let item =
            items::points_rev_item(scope, pk.clone(), layout::POINTS_SK.to_owned(), points.rev);
        let list =
            items::points_item(scope, pk.clone(), layout::POINTS_LIST_SK.to_owned(), points)?;
        let list = Put::builder()
            .table_name(&self.table)
            .set_item(Some(list))
            .build()
            .map_err(aws_err)?;
        let mut put = Put::builder().table_name(&self.table).set_item(Some(item));
        put = if expect_rev == 0 {
            put.condition_expression("attribute_not_exists(pk)")
        } else {
            put.condition_expression("rev = :rev")
                .expression_attribute_values(":rev", n(expect_rev))
        };
        let mut ops = vec![
            TransactWriteItem::builder()
                .put(put.build().map_err(aws_err)?)
                .build(),
            TransactWriteItem::builder().put(list).build(),
        ];
        if let Some(snap) = with.snapshot {
            let record = items::snapshot_item(scope, pk, layout::snapshot_sk(&snap.id), snap)?;
            let record = Put::builder()
                .table_name(&self.table)
                .set_item(Some(record))
                .build()
                .map_err(aws_err)?;
            ops.push(TransactWriteItem::builder().put(record).build());
        }
        if let Some(r) = with.record {
            let item = items::record_item(r.scope, r.kind, r.key, r.record);
            let record = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .build()
                .map_err(aws_err)?;
            ops.push(TransactWriteItem::builder().put(record).build());
        }
        self.applied(ops).await
    }

    pub(crate) async fn update_pins(
        &self,
        scope: &Scope,
        path: &FilePath,
        expect: Expect,
        pins: Vec<Pin>,
        must_exist: Option<u64>,
    ) -> Result<bool> {
        let pk = layout::partition(scope);
        let rev = match expect {
            // Pins are set on a head read, never on one named by an etag.
            Expect::Absent | Expect::Tagged { .. } => return Ok(false),
            Expect::Live { pin_rev, .. } | Expect::Deleted { pin_rev, .. } => pin_rev,
        };
        let (cond, values) = head_condition(&expect);
        let values: HashMap<String, AttributeValue> = values
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .chain([
                (":pins".to_owned(), s(items::pins_json(&pins))),
                (":rev".to_owned(), n(rev + 1)),
            ])
            .collect();
        let head_key = layout::head_sk(path.as_str());
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
                    .key("sk", s(layout::version_sk(path.as_str(), seq)))
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
                self.applied(vec![
                    TransactWriteItem::builder().condition_check(check).build(),
                    TransactWriteItem::builder().update(upd).build(),
                ])
                .await
            }
        }
    }

    pub(crate) async fn put_snapshot_item(&self, scope: &Scope, snapshot: &Snapshot) -> Result<()> {
        let pk = layout::partition(scope);
        let files = serde_json::to_string(&snapshot.files).map_err(WorkspaceError::internal)?;
        let item = if files.len() <= MAX_INLINE_FILES_BYTES {
            items::snapshot_item(scope, pk, layout::snapshot_sk(&snapshot.id), snapshot)?
        } else {
            // Too large for one item: the parts first, then the record that names them, so
            // a reader who finds the record finds every part.
            let parts = split_files(&snapshot.files)?;
            let part_items: Vec<Item> = parts
                .into_iter()
                .enumerate()
                .map(|(i, json)| {
                    items::snapshot_part_item(
                        scope,
                        pk.clone(),
                        layout::snapshot_part_sk(&snapshot.id, i),
                        json,
                        snapshot,
                    )
                })
                .collect();
            let count = part_items.len();
            self.batch_write(
                part_items
                    .into_iter()
                    .map(|item| {
                        PutRequest::builder()
                            .set_item(Some(item))
                            .build()
                            .map(|p| WriteRequest::builder().put_request(p).build())
                            .map_err(aws_err)
                    })
                    .collect::<Result<_>>()?,
            )
            .await?;
            let header = Snapshot {
                files: Vec::new(),
                ..snapshot.clone()
            };
            let mut item =
                items::snapshot_item(scope, pk, layout::snapshot_sk(&snapshot.id), &header)?;
            item.insert("parts".into(), n(count));
            item
        };
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }

    /// `BatchWriteItem`s of `requests` on this table (`paging::batch_write`).
    async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<()> {
        crate::paging::batch_write(&self.client, &self.table, requests).await
    }

    pub(crate) async fn get_snapshot_item(
        &self,
        scope: &Scope,
        id: &str,
    ) -> Result<Option<Snapshot>> {
        let pk = layout::partition(scope);
        let Some(item) = self.get_item(pk.clone(), layout::snapshot_sk(id)).await? else {
            return Ok(None);
        };
        let mut snap = items::snapshot_from(&item)?;
        let parts = items::snapshot_parts(&item)?;
        if parts > 0 {
            // One Query of the parts, in order (a page per MB).
            let found = crate::dynamo::query_prefix(
                &self.client,
                &self.table,
                &pk,
                &layout::snapshot_parts_prefix(id),
            )
            .await?;
            if found.len() != parts {
                return Err(WorkspaceError::internal(format!(
                    "snapshot {id} names {parts} parts of its file list; {} are stored",
                    found.len()
                )));
            }
            for part in &found {
                let files: Vec<SnapshotFile> = serde_json::from_str(&items::get_s(part, "files")?)
                    .map_err(WorkspaceError::internal)?;
                snap.files.extend(files);
            }
        }
        Ok(Some(snap))
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
        let pk = layout::partition(scope);
        let sk = layout::version_sk(path.as_str(), seq);
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
                    "SET erasedBy = :by, erasedAt = :at REMOVE bodyKey, bodyVersionId, body",
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
                    layout::change_sk(&change.key),
                    &change,
                )))
                .build()
                .map_err(aws_err)?;
            let ops = vec![
                TransactWriteItem::builder().update(upd).build(),
                TransactWriteItem::builder().put(put).build(),
            ];
            if self.applied(ops).await? {
                return Ok(Some(v.body));
            }
            // Pruned or erased in between: read again to say which.
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
        let lo = layout::change_sk(q.from.as_deref().unwrap_or(""));
        // BETWEEN is inclusive: an entry at exactly `before` is skipped below.
        let hi = match q.upper() {
            Some(u) => layout::change_sk(u),
            None => format!("{}\u{10ffff}", layout::CHANGE_PREFIX),
        };
        if lo >= hi {
            return Ok(ChangePage::default());
        }
        let mut query = self
            .newest_first(scope, &lo, &hi)
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
                .and_then(|sk| sk.strip_prefix(layout::CHANGE_PREFIX))
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
            .set_item(Some(items::record_item(scope, kind, key, record)))
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
        self.get_item(layout::partition(scope), layout::record_sk(kind, key))
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
        let lo = layout::snapshot_sk(id_prefix);
        // BETWEEN is inclusive: `before` itself is skipped below.
        let hi = match before {
            Some(b) => layout::snapshot_sk(b),
            None => format!("{lo}\u{10ffff}"),
        };
        let query = self
            .newest_first(scope, &lo, &hi)
            .projection_expression(
                "#id, createdAt, expiresAtMs, workflowId, #principal, #label, #keep",
            )
            .expression_attribute_names("#principal", "principal")
            .expression_attribute_names("#label", "label")
            .expression_attribute_names("#keep", "keep")
            .expression_attribute_names("#id", "id");
        // `before` itself is in the range (BETWEEN is inclusive): read one more, drop it.
        let mut out = read_pages(query, None, Some(limit + 1), |item| {
            items::snapshot_info_from(item).map(Some)
        })
        .await?;
        out.retain(|info| Some(info.id.as_str()) != before);
        out.truncate(limit);
        Ok(out)
    }

    pub(crate) async fn delete_snapshot_item(&self, scope: &Scope, id: &str) -> Result<bool> {
        let pk = layout::partition(scope);
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(pk.clone()))
            .key("sk", s(layout::snapshot_sk(id)))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(aws_err)?;
        let Some(old) = out.attributes else {
            return Ok(false);
        };
        // Then its parts (left behind if this stops first: their TTL is the record's).
        let parts = items::snapshot_parts(&old)?;
        if parts > 0 {
            let requests = (0..parts)
                .map(|i| {
                    DeleteRequest::builder()
                        .key("pk", s(pk.clone()))
                        .key("sk", s(layout::snapshot_part_sk(id, i)))
                        .build()
                        .map(|d| WriteRequest::builder().delete_request(d).build())
                        .map_err(aws_err)
                })
                .collect::<Result<_>>()?;
            self.batch_write(requests).await?;
        }
        Ok(true)
    }
}

/// The largest file list kept in the snapshot record itself (JSON bytes; the item holds
/// 400 KB with its other fields): what every snapshot but a large fork base fits.
pub const MAX_INLINE_FILES_BYTES: usize = workspace_core::service::MAX_SNAPSHOT_RECORD_BYTES;
/// The most JSON bytes of files one part item holds.
pub const MAX_PART_FILES_BYTES: usize = 300_000;

/// A file list as the JSON arrays of its parts, in order, each at most
/// [`MAX_PART_FILES_BYTES`] (one file always fits: a path is at most 256 bytes).
pub fn split_files(files: &[SnapshotFile]) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut bytes = 2;
    for f in files {
        let json = serde_json::to_string(f).map_err(WorkspaceError::internal)?;
        if !current.is_empty() && bytes + json.len() + 1 > MAX_PART_FILES_BYTES {
            parts.push(format!("[{}]", current.join(",")));
            current.clear();
            bytes = 2;
        }
        bytes += json.len() + 1;
        current.push(json);
    }
    if !current.is_empty() {
        parts.push(format!("[{}]", current.join(",")));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(i: usize) -> SnapshotFile {
        SnapshotFile {
            path: format!("{}/{i:05}.md", "d".repeat(246)),
            version: 1,
            seq: 1,
            etag: format!("\"1-{}\"", "e".repeat(64)),
            size: 4,
            content_type: "text/markdown".to_owned(),
            updated_at: 1_700_000_000_000,
            sha256: "a".repeat(64),
            kept: None,
            erased: false,
            lineage: "0123456789abcdef0123456789abcdef".to_owned(),
            body: Some(BodyRef::stored(
                format!("t/acme/w/main/files/{}/{i:05}.md", "d".repeat(246)),
                "v".repeat(32),
            )),
        }
    }

    #[test]
    fn a_file_list_splits_into_parts_under_the_bound_in_order() {
        let files: Vec<SnapshotFile> = (0..1000).map(file).collect();
        let parts = split_files(&files).unwrap();
        assert!(parts.len() >= 3, "{}", parts.len());
        assert!(parts.iter().all(|p| p.len() <= MAX_PART_FILES_BYTES));
        let back: Vec<SnapshotFile> = parts
            .iter()
            .flat_map(|p| serde_json::from_str::<Vec<SnapshotFile>>(p).unwrap())
            .collect();
        assert_eq!(back, files);
        assert_eq!(split_files(&[]).unwrap(), Vec::<String>::new());
        // Part keys sort in part order, outside the range a snapshot listing reads.
        assert!(layout::snapshot_part_sk("x", 9) < layout::snapshot_part_sk("x", 10));
        assert!(!layout::snapshot_part_sk("fork-1", 0).starts_with(&layout::snapshot_sk("")));
    }
}
