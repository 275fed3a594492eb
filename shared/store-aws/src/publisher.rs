//! The stream consumer behind `functions/publish`: announces committed changes and deletes
//! the S3 bodies of pruned versions. It reports the records it could not finish so the
//! stream delivers them again (Lambda's `ReportBatchItemFailures`): nothing is dropped,
//! and a retried record may announce twice (consumers dedupe on `eventId`).
//!
//! Crash points, in the order a batch meets them: each `S3.DeleteObject` of a pruned body,
//! then each `EventBridge.PutEvents` of up to ten announcements. At each, refused, answered
//! with the answer lost, or the function dying there (the whole batch comes again), the
//! redelivery announces every committed change and prunes every body, with nothing else
//! announced (`tests/publisher_faults.rs`).

use crate::events::{plan, EventBridgeSink, StreamRecord, Work};
use crate::s3::S3Bodies;
use workspace_core::ports::{Bodies, WorkspaceEvent};

pub struct Publisher {
    pub sink: EventBridgeSink,
    pub bodies: S3Bodies,
}

impl Publisher {
    /// Handles a batch in stream order. Returns the sequence numbers to hand back as
    /// failed: the first record that could not be finished and every record after it.
    pub async fn process(&self, records: &[StreamRecord]) -> Vec<String> {
        let mut first_failure = records.len();
        let mut announcements: Vec<(usize, WorkspaceEvent)> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            match plan(r) {
                Ok(Some(Work::Announce(e))) => announcements.push((i, *e)),
                Ok(Some(Work::DeleteBody(body))) => {
                    if let Err(e) = self.bodies.delete(&body).await {
                        tracing::warn!(error = %e, key = %body.key, "pruned body not deleted yet");
                        first_failure = first_failure.min(i);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    // A malformed record would fail forever; log it loudly and move on
                    // rather than block the shard.
                    tracing::error!(error = %e, "skipping a stream record that cannot be read");
                }
            }
        }
        for chunk in announcements.chunks(10) {
            let events: Vec<WorkspaceEvent> = chunk.iter().map(|(_, e)| e.clone()).collect();
            if let Err(e) = self.sink.publish_all(&events).await {
                tracing::warn!(error = %e, "workspace.updated not delivered yet");
                first_failure = first_failure.min(chunk[0].0);
                break;
            }
        }
        records[first_failure.min(records.len())..]
            .iter()
            .map(|r| r.sequence_number.clone())
            .collect()
    }
}
