//! `workspace.updated` on EventBridge, driven from committed state.
//!
//! The DynamoDB stream carries every committed item change. [`plan`] turns stream records
//! into work: an INSERT of a version item is a committed put or delete to announce; a
//! REMOVE of a version item is a pruned version whose S3 body is deleted now. A write that
//! failed its condition never reached the table, so it never yields an event. Delivery is
//! at least once: a crash after PutEvents but before the batch is acknowledged resends,
//! and consumers dedupe on the detail's `eventId`.

use crate::aws_err;
use async_trait::async_trait;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use serde_json::Value;
use std::collections::HashMap;
pub use workspace_core::events::{DETAIL_TYPE, SOURCE};
use workspace_core::model::{BodyRef, Erasure, MergeOrigin, VersionRecord};
use workspace_core::ports::{EventSink, WorkspaceEvent};
use workspace_core::{Result, Scope, WorkspaceError};

/// PutEvents takes at most 10 entries per call.
const MAX_ENTRIES: usize = 10;
/// Rounds of resending the entries PutEvents reported as failed.
const MAX_ROUNDS: usize = 4;

/// The attribute kinds our items use.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    S(String),
    N(String),
    Bool(bool),
}

pub type Image = HashMap<String, Attr>;

/// One stream record, in the shape both the Lambda event and the Streams API reduce to.
#[derive(Debug, Clone, Default)]
pub struct StreamRecord {
    /// `INSERT`, `MODIFY` or `REMOVE`.
    pub event_name: String,
    pub sequence_number: String,
    pub new_image: Option<Image>,
    pub old_image: Option<Image>,
}

/// What a record asks of the publisher.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    Announce(Box<WorkspaceEvent>),
    DeleteBody(BodyRef),
}

fn text(img: &Image, k: &str) -> Option<String> {
    match img.get(k)? {
        Attr::S(v) | Attr::N(v) => Some(v.clone()),
        Attr::Bool(_) => None,
    }
}

fn num<T: std::str::FromStr>(img: &Image, k: &str) -> Option<T> {
    text(img, k)?.parse().ok()
}

fn is_version(img: &Image) -> bool {
    text(img, "kind").as_deref() == Some("version")
}

/// A change-log entry of an erase (`Change::of_erase`).
fn is_erase_entry(img: &Image) -> bool {
    text(img, "kind").as_deref() == Some("change")
        && matches!(img.get("erased"), Some(Attr::Bool(true)))
}

/// The erase a change-log entry records, as its event.
fn erase_in(img: &Image, malformed: impl Fn(&str) -> WorkspaceError) -> Result<WorkspaceEvent> {
    let field = |k: &str| text(img, k).ok_or_else(|| malformed(k));
    let number = |k: &str| num::<u64>(img, k).ok_or_else(|| malformed(k));
    let erased = VersionRecord {
        seq: number("seq")?,
        lineage: String::new(),
        version: number("version")?,
        etag: field("etag")?,
        size: 0,
        sha256: String::new(),
        content_type: field("contentType")?,
        body: None,
        updated_at: 0,
        principal: String::new(),
        deleted: false,
        erased: None,
        merge: None,
        point: 0,
    };
    let by = Erasure {
        by: field("principal")?,
        at: num(img, "at").ok_or_else(|| malformed("at"))?,
    };
    let scope = Scope::parse(&field("tenant")?, &field("workspace")?)?;
    Ok(WorkspaceEvent::of_erase(
        &scope,
        &field("path")?,
        &erased,
        &by,
    ))
}

/// What an event says of a version item's image: the same derivation as the local
/// outbox's, from the item alone (no lineage, digest or body: an event carries none).
fn version_in(img: &Image, malformed: impl Fn(&str) -> WorkspaceError) -> Result<VersionRecord> {
    let field = |k: &str| text(img, k).ok_or_else(|| malformed(k));
    let number = |k: &str| num::<u64>(img, k).ok_or_else(|| malformed(k));
    Ok(VersionRecord {
        seq: number("seq")?,
        lineage: String::new(),
        version: number("version")?,
        etag: field("etag")?,
        size: number("size")?,
        sha256: String::new(),
        content_type: field("contentType")?,
        body: None,
        updated_at: num(img, "updatedAt").ok_or_else(|| malformed("updatedAt"))?,
        principal: field("principal")?,
        deleted: matches!(img.get("deleted"), Some(Attr::Bool(true))),
        erased: None,
        merge: match (text(img, "mergeId"), text(img, "forkId")) {
            (Some(merge_id), Some(fork_id)) => Some(MergeOrigin { merge_id, fork_id }),
            _ => None,
        },
        point: num(img, "point").unwrap_or(0),
    })
}

/// The work one record asks for, if any (heads, counters and idempotency records ask none).
pub fn plan(record: &StreamRecord) -> Result<Option<Work>> {
    let malformed = |what: &str| {
        WorkspaceError::internal(format!(
            "stream record {} lacks {what}",
            record.sequence_number
        ))
    };
    match record.event_name.as_str() {
        "INSERT" => {
            if let Some(img) = record.new_image.as_ref().filter(|i| is_erase_entry(i)) {
                return erase_in(img, malformed).map(|e| Some(Work::Announce(Box::new(e))));
            }
            let Some(img) = record.new_image.as_ref().filter(|i| is_version(i)) else {
                return Ok(None);
            };
            let field = |k: &str| text(img, k).ok_or_else(|| malformed(k));
            let record = version_in(img, malformed)?;
            Ok(Some(Work::Announce(Box::new(WorkspaceEvent::of_version(
                &field("tenant")?,
                &field("workspace")?,
                &field("path")?,
                &record,
            )))))
        }
        // An erase is announced from its change-log entry (inserted in the erase's own
        // transaction), never from the version item's MODIFY: that record's old image holds
        // the body the erase removed (inline, for a small file), and the event source's
        // filter keeps every MODIFY away from the publisher (template.yaml).
        "MODIFY" => Ok(None),
        "REMOVE" => {
            let Some(img) = record.old_image.as_ref().filter(|i| is_version(i)) else {
                return Ok(None);
            };
            match (text(img, "bodyKey"), text(img, "bodyVersionId")) {
                (Some(key), Some(version_id)) => {
                    Ok(Some(Work::DeleteBody(BodyRef::stored(key, version_id))))
                }
                _ => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// Reads an image in DynamoDB JSON (`{"path": {"S": "a.md"}, ...}`), as Lambda delivers it.
pub fn image_from_json(v: &Value) -> Option<Image> {
    let obj = v.as_object()?;
    let mut img = Image::new();
    for (k, attr) in obj {
        let a = attr.as_object()?;
        let parsed = if let Some(s) = a.get("S").and_then(Value::as_str) {
            Attr::S(s.to_owned())
        } else if let Some(n) = a.get("N").and_then(Value::as_str) {
            Attr::N(n.to_owned())
        } else if let Some(b) = a.get("BOOL").and_then(Value::as_bool) {
            Attr::Bool(b)
        } else {
            continue; // types our items never use
        };
        img.insert(k.clone(), parsed);
    }
    Some(img)
}

/// Reads the records of a DynamoDB stream Lambda event.
pub fn records_from_lambda_event(event: &Value) -> Vec<StreamRecord> {
    event["Records"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| StreamRecord {
                    event_name: r["eventName"].as_str().unwrap_or_default().to_owned(),
                    sequence_number: r["dynamodb"]["SequenceNumber"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    new_image: image_from_json(&r["dynamodb"]["NewImage"]),
                    old_image: image_from_json(&r["dynamodb"]["OldImage"]),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Publishes to one event bus, resending entries PutEvents reports as failed.
#[derive(Clone)]
pub struct EventBridgeSink {
    client: aws_sdk_eventbridge::Client,
    bus: String,
}

impl EventBridgeSink {
    pub fn new(client: aws_sdk_eventbridge::Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }

    fn entry(&self, e: &WorkspaceEvent) -> Result<PutEventsRequestEntry> {
        Ok(PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(DETAIL_TYPE)
            .detail(serde_json::to_string(e).map_err(WorkspaceError::internal)?)
            .build())
    }

    /// Sends every event; an error means some were not accepted after all resends (the
    /// caller reports the batch as failed so the stream delivers it again).
    pub async fn publish_all(&self, events: &[WorkspaceEvent]) -> Result<()> {
        for chunk in events.chunks(MAX_ENTRIES) {
            let mut pending: Vec<PutEventsRequestEntry> =
                chunk.iter().map(|e| self.entry(e)).collect::<Result<_>>()?;
            for round in 0.. {
                let out = self
                    .client
                    .put_events()
                    .set_entries(Some(pending.clone()))
                    .send()
                    .await
                    .map_err(aws_err)?;
                if out.failed_entry_count == 0 {
                    break;
                }
                // Entries answer in request order; an entry with an error code failed.
                pending = pending
                    .into_iter()
                    .zip(out.entries())
                    .filter(|(_, r)| r.error_code().is_some())
                    .map(|(e, _)| e)
                    .collect();
                tracing::warn!(
                    failed = pending.len(),
                    round,
                    "PutEvents partly failed; resending"
                );
                if round + 1 >= MAX_ROUNDS {
                    return Err(WorkspaceError::internal(format!(
                        "PutEvents still failing for {} entries after {MAX_ROUNDS} rounds",
                        pending.len()
                    )));
                }
                tokio::time::sleep(std::time::Duration::from_millis(50 << round)).await;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl EventSink for EventBridgeSink {
    async fn publish(&self, event: WorkspaceEvent) -> Result<()> {
        self.publish_all(std::slice::from_ref(&event)).await
    }
}
