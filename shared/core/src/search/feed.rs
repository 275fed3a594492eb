//! What changed in a workspace since a position: the paths an index must look at again to
//! be current. Both feeds only ever name paths; the index reads each path's head as it is
//! now, so applying a path twice, late or out of order changes nothing (the same rule the
//! example subscriber in `functions/index` follows).

use crate::changes::{key_at, ChangeQuery, MAX_CHANGES_PAGE};
use crate::error::{Result, WorkspaceError};
use crate::events::{EventLog, Since};
use crate::model::Millis;
use crate::ports::{Clock, HistoryStore};
use crate::scope::Scope;
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Paths changed after a position, and the position after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedPage {
    pub paths: BTreeSet<String>,
    pub cursor: String,
    /// More changes follow `cursor`.
    pub more: bool,
}

#[async_trait]
pub trait ChangeFeed: Send + Sync {
    /// The position now: an index built from the store after reading it is current to it.
    async fn position(&self, scope: &Scope) -> Result<String>;
    /// Paths of `scope` changed after `cursor`, at most about `limit`; `None` when the feed
    /// no longer reaches back to `cursor` (the index is then rebuilt).
    async fn since(&self, scope: &Scope, cursor: &str, limit: usize) -> Result<Option<FeedPage>>;
}

/// The embedded store's outbox: every commit appends its event in the same transaction, at
/// a position that only grows, so "after position p" misses nothing and repeats nothing.
pub struct OutboxFeed(pub Arc<dyn EventLog>);

fn position_of(cursor: &str) -> Result<u64> {
    cursor
        .parse()
        .map_err(|_| WorkspaceError::internal(format!("bad outbox cursor '{cursor}'")))
}

#[async_trait]
impl ChangeFeed for OutboxFeed {
    async fn position(&self, _: &Scope) -> Result<String> {
        Ok(self.0.last_position().await?.to_string())
    }

    async fn since(&self, scope: &Scope, cursor: &str, limit: usize) -> Result<Option<FeedPage>> {
        let after = position_of(cursor)?;
        match self.0.since(Some(scope), after, limit).await? {
            Since::Expired { .. } => Ok(None),
            Since::Events(events) => {
                let last = events.last().map_or(after, |e| e.position);
                Ok(Some(FeedPage {
                    more: events.len() >= limit,
                    paths: events.into_iter().map(|e| e.event.path).collect(),
                    cursor: last.to_string(),
                }))
            }
        }
    }
}

/// The change log (`crate::changes`), where a store keeps no outbox (DynamoDB). Its keys
/// are commit times taken by the committing process just before its commit, so a change
/// can land with a time a little before one already seen: the feed reads back
/// [`CHANGE_LOG_OVERLAP_MS`] before its cursor every time (re-applying a path is harmless).
pub struct ChangeLogFeed {
    pub meta: Arc<dyn HistoryStore>,
    pub clock: Arc<dyn Clock>,
}

/// How far before its cursor the change-log feed reads again.
pub const CHANGE_LOG_OVERLAP_MS: Millis = 10_000;

#[async_trait]
impl ChangeFeed for ChangeLogFeed {
    async fn position(&self, _: &Scope) -> Result<String> {
        Ok(self.clock.now_ms().to_string())
    }

    async fn since(&self, scope: &Scope, cursor: &str, limit: usize) -> Result<Option<FeedPage>> {
        let at: Millis = cursor
            .parse()
            .map_err(|_| WorkspaceError::internal(format!("bad change-log cursor '{cursor}'")))?;
        let now = self.clock.now_ms();
        // Entries live 90 days; a cursor older than that cannot be caught up from.
        if now.saturating_sub(at) > crate::changes::CHANGE_RETENTION_MS / 2 {
            return Ok(None);
        }
        let mut query = ChangeQuery {
            from: Some(key_at(at.saturating_sub(CHANGE_LOG_OVERLAP_MS))),
            to: None,
            before: None,
            prefix: String::new(),
            principal: None,
            paths: Default::default(),
            limit: MAX_CHANGES_PAGE,
        };
        let mut paths = BTreeSet::new();
        let mut newest = at;
        loop {
            let page = self.meta.list_changes(scope, &query).await?;
            for c in &page.changes {
                newest = newest.max(c.at);
                paths.insert(c.path.clone());
            }
            if paths.len() > limit {
                // Too far behind to catch up path by path: rebuild.
                return Ok(None);
            }
            match page.next_before {
                Some(next) => query.before = Some(next),
                None => break,
            }
        }
        // Never move the cursor past now: a commit stamped before now may still land.
        Ok(Some(FeedPage {
            paths,
            cursor: newest.min(now).to_string(),
            more: false,
        }))
    }
}
