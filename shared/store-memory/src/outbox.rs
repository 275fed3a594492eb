//! The outbox of `workspace.updated` in memory: appended by `MemoryMeta::commit` while it
//! holds the commit's lock, so a change and its event appear together.

use crate::MemoryMeta;
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use workspace_core::events::{DeliveryCursor, EventLog, Recorded, Since, WorkspaceEvent};
use workspace_core::model::Millis;
use workspace_core::{Result, Scope, WorkspaceError};

#[derive(Default)]
pub(crate) struct MemoryOutbox {
    /// The next position (positions count up from 1).
    next: u64,
    events: BTreeMap<u64, (Scope, Recorded)>,
    cursors: HashMap<String, DeliveryCursor>,
}

impl MemoryOutbox {
    pub(crate) fn append(&mut self, scope: &Scope, event: WorkspaceEvent, now: Millis) {
        let position = self.next.max(1);
        self.next = position + 1;
        self.events.insert(
            position,
            (
                scope.clone(),
                Recorded {
                    position,
                    recorded_at: now,
                    event,
                },
            ),
        );
    }
}

impl MemoryMeta {
    /// Drops the events of a deleted or purged workspace; how many went.
    pub(crate) fn erase_events_of(&self, scope: &Scope) -> Result<u64> {
        let mut outbox = self.outbox()?;
        let before = outbox.events.len();
        outbox.events.retain(|_, (s, _)| s != scope);
        Ok((before - outbox.events.len()) as u64)
    }

    fn outbox(&self) -> Result<std::sync::MutexGuard<'_, MemoryOutbox>> {
        self.outbox
            .lock()
            .map_err(|_| WorkspaceError::internal("memory store lock poisoned"))
    }
}

#[async_trait]
impl EventLog for MemoryMeta {
    async fn since(&self, scope: Option<&Scope>, after: u64, limit: usize) -> Result<Since> {
        let outbox = self.outbox()?;
        let oldest = outbox
            .events
            .keys()
            .next()
            .copied()
            .unwrap_or(outbox.next.max(1));
        if after > 0 && after + 1 < oldest {
            return Ok(Since::Expired { oldest });
        }
        Ok(Since::Events(
            outbox
                .events
                .range(after + 1..)
                .filter(|(_, (s, _))| scope.is_none_or(|want| want == s))
                .take(limit)
                .map(|(_, (_, r))| r.clone())
                .collect(),
        ))
    }

    async fn last_position(&self) -> Result<u64> {
        Ok(self.outbox()?.next.max(1) - 1)
    }

    async fn prune(&self, cutoff: Millis) -> Result<u64> {
        let mut outbox = self.outbox()?;
        let before = outbox.events.len();
        outbox.events.retain(|_, (_, r)| r.recorded_at >= cutoff);
        Ok((before - outbox.events.len()) as u64)
    }

    async fn cursor(&self, name: &str) -> Result<Option<DeliveryCursor>> {
        Ok(self.outbox()?.cursors.get(name).cloned())
    }

    async fn set_cursor(&self, name: &str, cursor: &DeliveryCursor) -> Result<()> {
        self.outbox()?
            .cursors
            .insert(name.to_owned(), cursor.clone());
        Ok(())
    }
}
