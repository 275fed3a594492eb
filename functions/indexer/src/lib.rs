//! The indexer: keeps each workspace's search index object (`workspace_store_aws::
//! search_index`) current. An EventBridge rule sends every `workspace.updated` to an SQS
//! queue; this function takes them in batches and, for each workspace in a batch, runs one
//! catch-up of that workspace's index from the change log and stores it conditionally
//! (`WorkspaceService::update_index`).
//!
//! Why a standard queue and not FIFO: an EventBridge rule sets one fixed message group id
//! on an SQS target, so a FIFO queue would put every workspace in one group. Nothing here
//! needs order: the indexer never applies an event as a delta, it catches up from the
//! change log, so a redelivered, late or reordered event finds nothing left to apply; and
//! two indexers racing on one workspace cannot lose an update, because each store is
//! conditional on the object it read (the loser starts again from the winner's).

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use std::collections::BTreeMap;
use workspace_core::events::WorkspaceEvent;
use workspace_core::{Scope, WorkspaceService};

pub struct Indexer {
    files: WorkspaceService,
}

/// The workspace a queued message's event names (`None`: not a `workspace.updated`).
pub fn scope_of(body: &str) -> Option<Scope> {
    let event: EventBridgeEvent<WorkspaceEvent> = serde_json::from_str(body).ok()?;
    Scope::parse(&event.detail.tenant, &event.detail.workspace).ok()
}

impl Indexer {
    /// `files` must carry the shared search wiring (`Aws::search`).
    pub fn new(files: WorkspaceService) -> Indexer {
        Indexer { files }
    }

    /// One batch: one catch-up per workspace it names; the messages of a workspace whose
    /// catch-up failed are reported back, so SQS delivers them again (and, past the
    /// queue's receive limit, to its dead-letter queue).
    pub async fn on_batch(&self, batch: &SqsEvent) -> SqsBatchResponse {
        let mut by_scope: BTreeMap<String, (Scope, Vec<String>)> = BTreeMap::new();
        for m in &batch.records {
            let id = m.message_id.clone().unwrap_or_default();
            match m.body.as_deref().and_then(scope_of) {
                Some(scope) => by_scope
                    .entry(scope.key_prefix())
                    .or_insert_with(|| (scope, Vec::new()))
                    .1
                    .push(id),
                // Retrying a message that is not an event would never succeed.
                None => tracing::warn!(message = %id, "not a workspace.updated event; dropped"),
            }
        }
        let mut failed = Vec::new();
        for (key, (scope, ids)) in by_scope {
            match self.files.update_index(&scope).await {
                Ok(applied) => tracing::info!(workspace = %key, applied, "index current"),
                Err(e) => {
                    tracing::warn!(workspace = %key, error = %e, "index not updated; retried");
                    failed.extend(ids);
                }
            }
        }
        let mut response = SqsBatchResponse::default();
        response.batch_item_failures = failed
            .into_iter()
            .map(|id| {
                let mut f = BatchItemFailure::default();
                f.item_identifier = id;
                f
            })
            .collect();
        response
    }
}
