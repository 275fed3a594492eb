//! An example `workspace.updated` subscriber that does real work: it keeps an index file
//! (`memory/INDEX.md` by default) listing every file under a prefix, with its size,
//! version and last change.
//!
//! What makes a subscriber safe under EventBridge's delivery (at least once, in no
//! guaranteed order), and how this one does it:
//! - **Idempotent and order-free:** it never applies an event as a delta; it rebuilds the
//!   index from the workspace as it is now, and writes only when the text changes. A
//!   redelivered or late event finds the index already right and writes nothing.
//! - **No loop:** its own write to the index is an event too; it ignores events for the
//!   index path (and for paths outside its prefix).
//! - **Never loses a concurrent change:** it writes with `If-Match` on the index it read
//!   (or `If-None-Match: *` when there is none) and starts over on a 409.
//!
//! It reads and writes through the store's ports (`WorkspaceService`), so the same code runs
//! on DynamoDB + S3 in Lambda and on any backend in a test.

use serde::Serialize;
use workspace_core::events::WorkspaceEvent;
use workspace_core::{
    FilePath, Identity, PathPrefix, PutRequest, Scope, WorkspaceError, WorkspaceService,
};

/// Rounds of read-rebuild-write before giving up on a busy index (the event is then
/// retried by EventBridge).
const MAX_ROUNDS: usize = 10;

/// What one event led to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome", content = "detail")]
pub enum Outcome {
    /// Not this subscriber's: its own output, or outside its prefix.
    Ignored(String),
    /// The index already said what it must: nothing written.
    Unchanged,
    /// A new version of the index.
    Written { version: u64 },
}

pub struct IndexKeeper {
    files: WorkspaceService,
    prefix: PathPrefix,
    index: FilePath,
}

impl IndexKeeper {
    pub fn new(
        files: WorkspaceService,
        prefix: &str,
        index: &str,
    ) -> Result<IndexKeeper, WorkspaceError> {
        Ok(IndexKeeper {
            files,
            prefix: PathPrefix::parse(prefix)?,
            index: FilePath::parse(index)?,
        })
    }

    pub async fn on_event(&self, e: &WorkspaceEvent) -> Result<Outcome, WorkspaceError> {
        if e.path == self.index.as_str() {
            return Ok(Outcome::Ignored("the index itself".to_owned()));
        }
        if !e.path.starts_with(self.prefix.as_str()) {
            return Ok(Outcome::Ignored(format!(
                "outside {}",
                self.prefix.as_str()
            )));
        }
        let who = Identity::read_write(Scope::parse(&e.tenant, &e.workspace)?, "index-subscriber");
        for _ in 0..MAX_ROUNDS {
            let current = match self.files.get(&who, &self.index, None).await {
                Ok(f) => Some(f),
                Err(WorkspaceError::NotFound(_)) => None,
                Err(other) => return Err(other),
            };
            let text = self.render(&who).await?;
            if current
                .as_ref()
                .is_some_and(|f| f.content == text.as_bytes())
            {
                return Ok(Outcome::Unchanged);
            }
            let req = PutRequest {
                merge: None,
                path: Some(self.index.clone()),
                content: text.into_bytes(),
                content_type: Some("text/markdown".to_owned()),
                if_match: current.as_ref().map(|f| f.meta.etag.clone()),
                if_none_match_any: current.is_none(),
                idempotency_key: None,
            };
            match self.files.put(&who, req).await {
                Ok(stored) => {
                    return Ok(Outcome::Written {
                        version: stored.meta.version,
                    })
                }
                // Someone (another delivery, a person) changed the index: read it again.
                Err(WorkspaceError::Conflict { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(WorkspaceError::internal(format!(
            "{} kept changing under {MAX_ROUNDS} rounds; the event will be retried",
            self.index
        )))
    }

    /// The index text for the workspace as it is now.
    async fn render(&self, who: &Identity) -> Result<String, WorkspaceError> {
        let mut lines = vec![
            format!("# Index of {}", self.prefix.as_str()),
            String::new(),
            "Kept current by the index subscriber from workspace.updated events.".to_owned(),
            String::new(),
        ];
        let mut after: Option<FilePath> = None;
        loop {
            let page = self
                .files
                .list(who, &self.prefix, None, after.as_ref())
                .await?;
            for f in &page.files {
                if f.path != self.index.as_str() {
                    lines.push(format!(
                        "- [{}]({}): {} bytes, version {}",
                        f.path, f.path, f.size, f.version
                    ));
                }
            }
            match page.next_after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        lines.push(String::new());
        Ok(lines.join("\n"))
    }
}
