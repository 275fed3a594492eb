//! The model as DynamoDB items, and back. Attribute names are camelCase and the same on
//! head and version items, so the stream publisher reads either.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use workspace_core::changes::Change;
use workspace_core::model::{
    BodyRef, Erasure, Head, IdempotencyRecord, MergeOrigin, Pin, Points, Snapshot, SnapshotInfo,
    VersionRecord,
};
use workspace_core::ports::StoredRecord;
use workspace_core::{Result, Scope, WorkspaceError};

pub type Item = HashMap<String, AttributeValue>;

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn bad(what: &str) -> WorkspaceError {
    WorkspaceError::internal(format!("DynamoDB item has no valid '{what}'"))
}

pub fn get_s(item: &Item, k: &str) -> Result<String> {
    item.get(k)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .ok_or_else(|| bad(k))
}

pub fn get_n<T: std::str::FromStr>(item: &Item, k: &str) -> Result<T> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad(k))
}

pub fn get_bool(item: &Item, k: &str) -> Result<bool> {
    item.get(k)
        .and_then(|v| v.as_bool().ok())
        .copied()
        .ok_or_else(|| bad(k))
}

/// Where a version's body is: `bodyKey` and `bodyVersionId` (S3), or `body` (the bytes,
/// inline: a small file's body is kept with its commit, `workspace_core::blob::inline`).
fn body_attrs(item: &mut Item, body: &Option<BodyRef>) {
    match body {
        Some(BodyRef {
            inline: Some(bytes),
            ..
        }) => {
            item.insert(
                INLINE_BODY.into(),
                AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(bytes.0.clone())),
            );
        }
        Some(b) => {
            item.insert("bodyKey".into(), s(&b.key));
            item.insert("bodyVersionId".into(), s(&b.version_id));
        }
        None => {}
    }
}

/// The attribute an inline body's bytes are kept in.
pub const INLINE_BODY: &str = "body";

fn get_body(item: &Item) -> Result<Option<BodyRef>> {
    if let Some(v) = item.get(INLINE_BODY) {
        let bytes = v.as_b().map_err(|_| bad(INLINE_BODY))?;
        return Ok(Some(BodyRef::inline(bytes.as_ref().to_vec())));
    }
    match (item.get("bodyKey"), item.get("bodyVersionId")) {
        (Some(_), Some(_)) => Ok(Some(BodyRef::stored(
            get_s(item, "bodyKey")?,
            get_s(item, "bodyVersionId")?,
        ))),
        _ => Ok(None),
    }
}

fn scope_attrs(item: &mut Item, scope: &Scope, pk: String, sk: String, kind: &str) {
    item.insert("pk".into(), s(pk));
    item.insert("sk".into(), s(sk));
    item.insert("kind".into(), s(kind));
    item.insert("tenant".into(), s(scope.tenant.as_str()));
    item.insert("workspace".into(), s(scope.workspace.as_str()));
}

pub fn head_item(scope: &Scope, pk: String, sk: String, h: &Head) -> Item {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "head");
    item.insert("path".into(), s(&h.path));
    file_attrs(&mut item, &VersionRecord::of_head(h, None));
    if !h.pins.is_empty() {
        item.insert("pins".into(), s(pins_json(&h.pins)));
    }
    if h.pin_rev > 0 {
        item.insert("pinRev".into(), n(h.pin_rev));
    }
    if !h.principal.is_empty() {
        item.insert("principal".into(), s(&h.principal));
    }
    item
}

/// The facts a head and a version item share, under the same attribute names (but
/// `principal`, which a head leaves out when it is empty).
fn file_attrs(item: &mut Item, v: &VersionRecord) {
    item.insert("lineage".into(), s(&v.lineage));
    item.insert("version".into(), n(v.version));
    item.insert("seq".into(), n(v.seq));
    item.insert("etag".into(), s(&v.etag));
    item.insert("size".into(), n(v.size));
    item.insert("sha256".into(), s(&v.sha256));
    item.insert("contentType".into(), s(&v.content_type));
    item.insert("updatedAt".into(), n(v.updated_at));
    item.insert("deleted".into(), AttributeValue::Bool(v.deleted));
    // Absent on items written before points existed: read as 0.
    if v.point > 0 {
        item.insert("point".into(), n(v.point));
    }
    body_attrs(item, &v.body);
}

/// Whether an item may lack `sha256` and `principal` (read as empty): heads written before
/// they were kept do; a version item never does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    Head,
    Version,
}

/// The facts [`file_attrs`] writes (and `principal`), as a version record that is neither
/// erased nor merged.
fn file_from(item: &Item, kind: Written) -> Result<VersionRecord> {
    let optional = |k: &str| match kind {
        Written::Head => Ok(get_s(item, k).unwrap_or_default()),
        Written::Version => get_s(item, k),
    };
    Ok(VersionRecord {
        seq: get_n(item, "seq")?,
        lineage: get_s(item, "lineage")?,
        version: get_n(item, "version")?,
        etag: get_s(item, "etag")?,
        size: get_n(item, "size")?,
        sha256: optional("sha256")?,
        content_type: get_s(item, "contentType")?,
        body: get_body(item)?,
        updated_at: get_n(item, "updatedAt")?,
        principal: optional("principal")?,
        deleted: get_bool(item, "deleted")?,
        erased: None,
        merge: None,
        point: match item.get("point") {
            Some(_) => get_n(item, "point")?,
            None => 0,
        },
    })
}

/// A head's pins as one JSON string attribute (read and written whole, under the head's
/// compare-and-swap).
pub fn pins_json(pins: &[Pin]) -> String {
    serde_json::to_string(pins).unwrap_or_else(|_| "[]".to_owned())
}

pub fn head_from(item: &Item) -> Result<Head> {
    let pins = match item.get("pins") {
        Some(_) => serde_json::from_str(&get_s(item, "pins")?).map_err(|_| bad("pins"))?,
        None => Vec::new(),
    };
    let pin_rev = get_n(item, "pinRev").unwrap_or(0);
    let file = file_from(item, Written::Head)?;
    Ok(Head::of_version(get_s(item, "path")?, file, pins, pin_rev))
}

pub fn version_item(scope: &Scope, pk: String, sk: String, path: &str, v: &VersionRecord) -> Item {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "version");
    item.insert("path".into(), s(path));
    file_attrs(&mut item, v);
    item.insert("principal".into(), s(&v.principal));
    if let Some(m) = &v.merge {
        item.insert("mergeId".into(), s(&m.merge_id));
        item.insert("forkId".into(), s(&m.fork_id));
    }
    item
}

pub fn version_from(item: &Item) -> Result<VersionRecord> {
    Ok(VersionRecord {
        erased: match item.get("erasedAt") {
            Some(_) => Some(Erasure {
                by: get_s(item, "erasedBy")?,
                at: get_n(item, "erasedAt")?,
            }),
            None => None,
        },
        merge: match (item.get("mergeId"), item.get("forkId")) {
            (Some(_), Some(_)) => Some(MergeOrigin {
                merge_id: get_s(item, "mergeId")?,
                fork_id: get_s(item, "forkId")?,
            }),
            _ => None,
        },
        ..file_from(item, Written::Version)?
    })
}

/// Idempotency records carry `expiresAt` (seconds) for DynamoDB TTL; the service still
/// judges age itself, since TTL deletes lazily.
pub fn idempotency_item(
    scope: &Scope,
    pk: String,
    sk: String,
    r: &IdempotencyRecord,
    expires_at_secs: i64,
) -> Result<Item> {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "idempotency");
    item.insert("key".into(), s(&r.key));
    item.insert("fingerprint".into(), s(&r.fingerprint));
    item.insert(
        "result".into(),
        s(serde_json::to_string(&r.result).map_err(WorkspaceError::internal)?),
    );
    item.insert("createdAt".into(), n(r.created_at));
    item.insert("expiresAt".into(), n(expires_at_secs));
    Ok(item)
}

pub fn idempotency_from(item: &Item) -> Result<IdempotencyRecord> {
    Ok(IdempotencyRecord {
        key: get_s(item, "key")?,
        fingerprint: get_s(item, "fingerprint")?,
        result: serde_json::from_str(&get_s(item, "result")?).map_err(WorkspaceError::internal)?,
        created_at: get_n(item, "createdAt")?,
    })
}

/// A snapshot record. `expiresAt` (seconds) lets DynamoDB TTL remove it eventually; the
/// service judges expiry itself from `expiresAtMs`. The file list is one JSON attribute
/// when it fits the item (400 KB); a larger one (a fork's base of a thousand files with
/// long paths) is split over part items ([`snapshot_part_item`]) and the record says how
/// many (`parts`, with an empty `files`).
pub fn snapshot_item(scope: &Scope, pk: String, sk: String, snap: &Snapshot) -> Result<Item> {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "snapshot");
    item.insert("id".into(), s(&snap.id));
    item.insert("createdAt".into(), n(snap.created_at));
    item.insert("expiresAtMs".into(), n(snap.expires_at));
    // A kept snapshot has no TTL attribute: DynamoDB never removes it.
    if !snap.keep {
        item.insert("expiresAt".into(), n(snap.expires_at / 1000 + 1));
    }
    item.insert(
        "files".into(),
        s(serde_json::to_string(&snap.files).map_err(WorkspaceError::internal)?),
    );
    if let Some(w) = &snap.workflow_id {
        item.insert("workflowId".into(), s(w));
    }
    if let Some(p) = &snap.principal {
        item.insert("principal".into(), s(p));
    }
    if let Some(l) = &snap.label {
        item.insert("label".into(), s(l));
    }
    if snap.keep {
        item.insert("keep".into(), AttributeValue::Bool(true));
    }
    if !snap.covers.is_empty() {
        item.insert("covers".into(), AttributeValue::Ss(snap.covers.clone()));
    }
    if let Some(point) = snap.point {
        item.insert("point".into(), n(point));
    }
    Ok(item)
}

/// A service's small record (`RecordStore::put_record`), with its TTL.
pub fn record_item(scope: &Scope, kind: &str, key: &str, record: &StoredRecord) -> Item {
    let mut item = Item::new();
    item.insert("pk".into(), s(crate::layout::partition(scope)));
    item.insert("sk".into(), s(crate::layout::record_sk(kind, key)));
    item.insert("value".into(), s(&record.value));
    item.insert("expiresAtMs".into(), n(record.expires_at));
    item.insert("expiresAt".into(), n(record.expires_at / 1000 + 1));
    item
}

/// The point registry's revision item: the revision alone (what commits check).
pub fn points_rev_item(scope: &Scope, pk: String, sk: String, rev: u64) -> Item {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "pointsRev");
    item.insert("rev".into(), n(rev));
    item
}

/// The point registry's list item: its revision, and the live points as one JSON attribute
/// (bounded by `MAX_LIVE_POINTS`: about 220 KB at most, below the 400 KB an item holds).
pub fn points_item(scope: &Scope, pk: String, sk: String, points: &Points) -> Result<Item> {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "points");
    item.insert("rev".into(), n(points.rev));
    item.insert(
        "live".into(),
        s(serde_json::to_string(&points.live).map_err(WorkspaceError::internal)?),
    );
    Ok(item)
}

pub fn points_from(item: &Item) -> Result<Points> {
    Ok(Points {
        rev: get_n(item, "rev")?,
        live: serde_json::from_str(&get_s(item, "live")?).map_err(|_| bad("live"))?,
    })
}

/// Part of a snapshot's file list (`files`: a JSON array of some of its files, in path
/// order), with the snapshot's TTL.
pub fn snapshot_part_item(
    scope: &Scope,
    pk: String,
    sk: String,
    files_json: String,
    snap: &Snapshot,
) -> Item {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "snapshotPart");
    item.insert("files".into(), s(files_json));
    if !snap.keep {
        item.insert("expiresAt".into(), n(snap.expires_at / 1000 + 1));
    }
    item
}

/// How many part items hold a snapshot record's file list (0: it is inline).
pub fn snapshot_parts(item: &Item) -> Result<usize> {
    match item.get("parts") {
        None => Ok(0),
        Some(_) => get_n(item, "parts"),
    }
}

/// A snapshot record's fields but its file list (what a listing projects).
pub fn snapshot_info_from(item: &Item) -> Result<SnapshotInfo> {
    Ok(SnapshotInfo {
        id: get_s(item, "id")?,
        created_at: get_n(item, "createdAt")?,
        expires_at: get_n(item, "expiresAtMs")?,
        workflow_id: opt_s(item, "workflowId")?,
        principal: opt_s(item, "principal")?,
        label: opt_s(item, "label")?,
        keep: item.contains_key("keep") && get_bool(item, "keep")?,
    })
}

pub fn snapshot_from(item: &Item) -> Result<Snapshot> {
    Ok(Snapshot {
        id: get_s(item, "id")?,
        created_at: get_n(item, "createdAt")?,
        expires_at: get_n(item, "expiresAtMs")?,
        files: serde_json::from_str(&get_s(item, "files")?).map_err(|_| bad("files"))?,
        workflow_id: opt_s(item, "workflowId")?,
        principal: opt_s(item, "principal")?,
        label: opt_s(item, "label")?,
        keep: item.contains_key("keep") && get_bool(item, "keep")?,
        covers: match item.get("covers") {
            Some(v) => v.as_ss().map_err(|_| bad("covers"))?.clone(),
            None => Vec::new(),
        },
        point: match item.get("point") {
            Some(_) => Some(get_n(item, "point")?),
            None => None,
        },
    })
}

fn opt_s(item: &Item, k: &str) -> Result<Option<String>> {
    item.get(k).map(|_| get_s(item, k)).transpose()
}

/// A change-log entry; DynamoDB's TTL removes it after `expires_at`.
pub fn change_item(scope: &Scope, pk: String, sk: String, c: &Change) -> Item {
    let mut item = Item::new();
    scope_attrs(&mut item, scope, pk, sk, "change");
    item.insert("key".into(), s(&c.key));
    item.insert("path".into(), s(&c.path));
    item.insert("seq".into(), n(c.seq));
    item.insert("version".into(), n(c.version));
    item.insert("etag".into(), s(&c.etag));
    item.insert("deleted".into(), AttributeValue::Bool(c.deleted));
    if c.erased {
        item.insert("erased".into(), AttributeValue::Bool(true));
    }
    item.insert("principal".into(), s(&c.principal));
    item.insert("at".into(), n(c.at));
    item.insert("size".into(), n(c.size));
    item.insert("contentType".into(), s(&c.content_type));
    item.insert("expiresAtMs".into(), n(c.expires_at));
    item.insert("expiresAt".into(), n(c.expires_at / 1000 + 1));
    item
}

pub fn change_from(item: &Item) -> Result<Change> {
    Ok(Change {
        key: get_s(item, "key")?,
        path: get_s(item, "path")?,
        seq: get_n(item, "seq")?,
        version: get_n(item, "version")?,
        etag: get_s(item, "etag")?,
        deleted: get_bool(item, "deleted")?,
        erased: item.contains_key("erased") && get_bool(item, "erased")?,
        principal: get_s(item, "principal")?,
        at: get_n(item, "at")?,
        size: get_n(item, "size")?,
        content_type: get_s(item, "contentType")?,
        expires_at: get_n(item, "expiresAtMs")?,
    })
}
