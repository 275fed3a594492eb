//! `workspace.updated`: the event every committed change is announced with, and its
//! EventBridge envelope (the published contract: `schemas/workspace-updated.schema.json`).
//!
//! The event is derived from the version item a commit writes, and nothing else, so every
//! way it is delivered says the same: on AWS the stream publisher reads the item from the
//! table's stream; locally the store writes it to a durable outbox in the commit's own
//! transaction (`EventLog`), from which the SSE route and webhooks deliver it.

use crate::error::Result;
use crate::model::{format_time, sha256_hex, Erasure, Millis, VersionRecord};
use crate::scope::Scope;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The envelope's `source`.
pub const SOURCE: &str = "agent-workspace";
/// The envelope's `detail-type`.
pub const DETAIL_TYPE: &str = "workspace.updated";

/// A committed change, as announced on `workspace.updated`. Never carries content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceEvent {
    /// The same on every delivery of this change: subscribers dedupe on it.
    pub event_id: String,
    pub tenant: String,
    pub workspace: String,
    pub path: String,
    /// The file's version after the change (a delete's tombstone has one too).
    pub version: u64,
    /// The path's change counter: grows by one with every change of the path, across
    /// deletes (where `version` starts again at 1); order a path's events by it.
    pub sequence: u64,
    pub etag: String,
    pub operation: Operation,
    pub principal: String,
    /// When the change committed (RFC 3339, milliseconds, UTC).
    pub time: String,
    /// Bytes of the new content (0 for a delete).
    pub size: u64,
    pub content_type: String,
    /// The fork merge that made the change, and the fork it came from (only then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Put,
    Delete,
    /// A past version was erased from history (its body is gone).
    Erase,
}

/// A change's event id: a digest of where and which change it is (the path's sequence is
/// unique per change), so every redelivery and every channel carries the same id.
pub fn event_id(tenant: &str, workspace: &str, path: &str, sequence: u64) -> String {
    let digest = sha256_hex(format!("{tenant}\n{workspace}\n{path}\n{sequence}").as_bytes());
    digest[..32].to_owned()
}

impl WorkspaceEvent {
    /// The event of the commit that wrote version item `v` of `path`.
    pub fn of_version(
        tenant: &str,
        workspace: &str,
        path: &str,
        v: &VersionRecord,
    ) -> WorkspaceEvent {
        WorkspaceEvent {
            event_id: event_id(tenant, workspace, path, v.seq),
            tenant: tenant.to_owned(),
            workspace: workspace.to_owned(),
            path: path.to_owned(),
            version: v.version,
            sequence: v.seq,
            etag: v.etag.clone(),
            operation: if v.deleted {
                Operation::Delete
            } else {
                Operation::Put
            },
            principal: v.principal.clone(),
            time: format_time(v.updated_at),
            size: v.size,
            content_type: v.content_type.clone(),
            merge_id: v.merge.as_ref().map(|m| m.merge_id.clone()),
            fork_id: v.merge.as_ref().map(|m| m.fork_id.clone()),
        }
    }

    /// The event of erasing version item `v` of `path`: its own id (not the put's).
    pub fn of_erase(scope: &Scope, path: &str, v: &VersionRecord, by: &Erasure) -> WorkspaceEvent {
        let (tenant, workspace) = (scope.tenant.as_str(), scope.workspace.as_str());
        WorkspaceEvent {
            event_id: event_id(tenant, workspace, &format!("{path}\nerase"), v.seq),
            tenant: tenant.to_owned(),
            workspace: workspace.to_owned(),
            path: path.to_owned(),
            version: v.version,
            sequence: v.seq,
            etag: v.etag.clone(),
            operation: Operation::Erase,
            principal: by.by.clone(),
            time: format_time(by.at),
            size: 0,
            content_type: v.content_type.clone(),
            merge_id: None,
            fork_id: None,
        }
    }

    pub fn scope_of(scope: &Scope, path: &str, v: &VersionRecord) -> WorkspaceEvent {
        Self::of_version(scope.tenant.as_str(), scope.workspace.as_str(), path, v)
    }

    /// The whole EventBridge envelope, as the local server delivers it (on AWS EventBridge
    /// writes the envelope itself: its `id`, `account` and `region` are AWS's own).
    pub fn envelope(&self) -> Value {
        json!({
            "version": "0",
            "id": self.event_id,
            "detail-type": DETAIL_TYPE,
            "source": SOURCE,
            "account": "000000000000",
            "time": self.time.get(..19).map_or_else(|| self.time.clone(), |t| format!("{t}Z")),
            "region": "local",
            "resources": [],
            "detail": self,
        })
    }
}

/// Where committed changes are announced.
#[async_trait]
pub trait EventSink: Send + Sync {
    async fn publish(&self, event: WorkspaceEvent) -> Result<()>;
}

/// The sink of deployments whose events come from committed state itself, not from the
/// request path: on AWS the table's stream drives the publisher (`functions/publish`);
/// locally the store's outbox. Publishing here only logs the change.
pub struct FromCommittedState;

#[async_trait]
impl EventSink for FromCommittedState {
    async fn publish(&self, event: WorkspaceEvent) -> Result<()> {
        tracing::debug!(
            target: "workspace.updated",
            tenant = %event.tenant,
            workspace = %event.workspace,
            path = %event.path,
            version = event.version,
            operation = ?event.operation,
            "committed"
        );
        Ok(())
    }
}

/// One event in the outbox: its position (the outbox's own counter, the SSE `id`) and when
/// it was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    pub position: u64,
    pub recorded_at: Millis,
    pub event: WorkspaceEvent,
}

/// What an outbox read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// The events after the position asked for, oldest first (possibly none yet).
    Events(Vec<Recorded>),
    /// Events after that position were already dropped by retention; the oldest kept
    /// one is at `oldest`.
    Expired { oldest: u64 },
}

/// The durable outbox of a store that commits locally: every commit appends its event in
/// the same transaction, so an acknowledged change always has its event and a change that
/// did not commit never has one.
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Events after `after` (0: from the start), of `scope` only when given, at most
    /// `limit`.
    async fn since(&self, scope: Option<&Scope>, after: u64, limit: usize) -> Result<Since>;
    /// The position of the newest event (0 when there is none).
    async fn last_position(&self) -> Result<u64>;
    /// Drops events recorded before `cutoff`; how many went.
    async fn prune(&self, cutoff: Millis) -> Result<u64>;
    /// How far the deliverer `name` (a webhook target) got, durably.
    async fn cursor(&self, name: &str) -> Result<Option<DeliveryCursor>>;
    async fn set_cursor(&self, name: &str, cursor: &DeliveryCursor) -> Result<()>;
}

/// A deliverer's progress through the outbox, kept with it so it survives restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryCursor {
    /// Every event up to this position is delivered.
    pub delivered: u64,
    /// Failed attempts at the next event, in a row.
    pub failures: u32,
    pub last_error: Option<String>,
    pub last_attempt_at: Option<Millis>,
    pub last_delivered_at: Option<Millis>,
}
