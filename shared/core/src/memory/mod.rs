//! Claude's memory tool (`memory_20250818`) over the workspace: the model's commands on
//! `/memories/...` act on the workspace files under the memory prefix (`memories/` by
//! default), so memories have versions, history, snapshots, redaction and events like any
//! file, and every worker of a tenant sees the same ones.
//!
//! Answers are the reference implementation's texts (`text.rs`); `is_error` is set where it
//! raises a `ToolError`. Every edit is a read-modify-write guarded by the etag it read and
//! retried on a conflict, so concurrent edits of one file are never lost; a rename is a
//! create-if-absent of the destination, then a delete of the source guarded by its etag.
//! Stopped between the two, both paths hold the file; the rename run again finds the
//! destination holding exactly the source's bytes and finishes by deleting the source.

mod edit;
mod paths;
mod text;

pub use paths::{resolve, MemoryPath, DEFAULT_MEMORY_PREFIX, MEMORY_ROOT};

use crate::{Identity, WorkspaceError, WorkspaceService};
use serde::Deserialize;

/// The tool result: `content` goes back to the model as the `tool_result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryAnswer {
    pub content: String,
    pub is_error: bool,
}

impl MemoryAnswer {
    fn ok(content: String) -> Self {
        Self {
            content,
            is_error: false,
        }
    }

    fn error(content: String) -> Self {
        Self {
            content,
            is_error: true,
        }
    }
}

/// One tool call's `input`, as the model sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum MemoryCommand {
    View {
        path: String,
        #[serde(default)]
        view_range: Option<Vec<i64>>,
    },
    Create {
        path: String,
        file_text: String,
    },
    StrReplace {
        path: String,
        old_str: String,
        new_str: String,
    },
    Insert {
        path: String,
        insert_line: i64,
        insert_text: String,
    },
    Delete {
        path: String,
    },
    Rename {
        old_path: String,
        new_path: String,
    },
}

impl MemoryCommand {
    /// The command in a tool call's `input`, or the answer that says what is wrong with it.
    pub fn parse(input: &serde_json::Value) -> Result<Self, MemoryAnswer> {
        serde_json::from_value(input.clone()).map_err(|e| {
            MemoryAnswer::error(format!(
                "Invalid memory tool input: {e}. Commands: view {{path, view_range?}}, create {{path, file_text}}, str_replace {{path, old_str, new_str}}, insert {{path, insert_line, insert_text}}, delete {{path}}, rename {{old_path, new_path}}"
            ))
        })
    }

    /// Whether the command changes files (and so needs the write scope).
    pub fn changes(&self) -> bool {
        !matches!(self, Self::View { .. })
    }
}

/// Why a command stopped: the tool's own error text, or a domain error.
enum Fail {
    Tool(String),
    Domain(WorkspaceError),
}

impl From<WorkspaceError> for Fail {
    fn from(e: WorkspaceError) -> Self {
        Self::Domain(e)
    }
}

type Step<T> = std::result::Result<T, Fail>;

/// Runs `command` for `who` on `service`. Refusals a model can act on (a missing path, a
/// file over the size limit, a full workspace) are answers with `is_error`; `Err` is for
/// what the caller must handle (no scope, the store failing).
pub async fn execute(
    service: &WorkspaceService,
    who: &Identity,
    command: &MemoryCommand,
) -> crate::Result<MemoryAnswer> {
    let memory = edit::Memory {
        service,
        who,
        prefix: service.memory_prefix(),
    };
    let outcome = match command {
        MemoryCommand::View { path, view_range } => memory.view(path, view_range.as_deref()).await,
        MemoryCommand::Create { path, file_text } => memory.create(path, file_text).await,
        MemoryCommand::StrReplace {
            path,
            old_str,
            new_str,
        } => memory.str_replace(path, old_str, new_str).await,
        MemoryCommand::Insert {
            path,
            insert_line,
            insert_text,
        } => memory.insert(path, *insert_line, insert_text).await,
        MemoryCommand::Delete { path } => memory.delete(path).await,
        MemoryCommand::Rename { old_path, new_path } => memory.rename(old_path, new_path).await,
    };
    match outcome {
        Ok(text) => Ok(MemoryAnswer::ok(text)),
        Err(Fail::Tool(text)) => Ok(MemoryAnswer::error(text)),
        Err(Fail::Domain(e)) => match e {
            WorkspaceError::Forbidden(_)
            | WorkspaceError::Unauthenticated(_)
            | WorkspaceError::NotProvided(_)
            | WorkspaceError::Unavailable(_)
            | WorkspaceError::Internal(_) => Err(e),
            // A limit, a quota, a path the workspace refuses: the model can act on these.
            other => Ok(MemoryAnswer::error(other.to_string())),
        },
    }
}
