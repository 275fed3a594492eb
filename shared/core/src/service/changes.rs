//! The change log of a workspace, newest first (see `crate::changes`).

use super::*;
use crate::changes::{key_at, ChangePage, ChangeQuery, MAX_CHANGES_PAGE};

/// Which changes to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeFilter {
    /// At or after this instant.
    pub since: Option<Millis>,
    /// Before this instant.
    pub until: Option<Millis>,
    pub principal: Option<String>,
    pub prefix: PathPrefix,
}

impl WorkspaceService {
    /// Now, on the clock change-log entries are stamped with (`Change::at`): what a reader
    /// of the log measures "recent" against (the MCP `wait_for_changes` tool).
    pub fn now_ms(&self) -> Millis {
        self.clock.now_ms()
    }

    /// A page of the scope's committed changes, newest first; `before` (a change key from
    /// the previous page) continues.
    pub async fn changes(
        &self,
        who: &Identity,
        filter: &ChangeFilter,
        limit: Option<usize>,
        before: Option<String>,
    ) -> Result<ChangePage> {
        let limit = crate::limits::page_limit(limit, MAX_CHANGES_PAGE, MAX_CHANGES_PAGE)?;
        if let Some(p) = &filter.principal {
            check_header_value("principal", p)?;
        }
        let query = ChangeQuery {
            from: filter.since.map(key_at),
            to: filter.until.map(key_at),
            before,
            prefix: filter.prefix.as_str().to_owned(),
            principal: filter.principal.clone(),
            paths: who.paths.clone(),
            limit,
        };
        let mut page = self.meta.list_changes(&who.scope, &query).await?;
        let now = self.clock.now_ms();
        page.changes.retain(|c| c.expires_at > now);
        Ok(page)
    }
}
