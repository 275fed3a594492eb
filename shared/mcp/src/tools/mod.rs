//! The tools: their published definitions (`defs.rs`), and their behaviour over
//! [`WorkspaceService`], the same service the HTTP routes call, so versions, events, quotas
//! and WSR-1 redaction are one code path. Every answer is text; a failure starts with
//! `Error:` and also sets `isError`.

mod args;
mod commit;
mod defs;
mod forks;
mod read;
mod search;
pub mod watch;
mod write;

pub use defs::{definitions, TOOL_NAMES};

use crate::paths::{resolve, Target};
use serde_json::{json, Map, Value};
use workspace_core::{Identity, WorkspaceError, WorkspaceService};

/// Who calls, on which service: the credential's workspace is the only one a tool sees.
pub struct Workspace<'a> {
    pub service: &'a WorkspaceService,
    pub who: &'a Identity,
}

/// A tool's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    /// `text` must already start with `Error:`.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }

    /// The `tools/call` result.
    pub fn to_result(&self) -> Value {
        json!({
            "content": [{ "type": "text", "text": self.text }],
            "isError": self.is_error,
        })
    }
}

/// Tool code returns `Err(output)` to stop early with an error answer.
type Outcome = Result<ToolOutput, ToolOutput>;

fn fail(msg: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("Error: {msg}"))
}

/// A path argument, resolved; `Err` is the refusal to answer.
fn target(shown: &str) -> Result<Target, ToolOutput> {
    resolve(shown).map_err(|e| ToolOutput::error(e.text(shown)))
}

/// A domain error as tool text. `shown` is the path as the caller wrote it.
fn from_domain(e: WorkspaceError, shown: &str) -> ToolOutput {
    match e {
        WorkspaceError::NotFound(_) => fail(format!("File not found: {shown}")),
        WorkspaceError::Conflict {
            current_version, ..
        } => version_conflict(shown, current_version, None),
        WorkspaceError::Forbidden(m) => fail(format!("Access denied. {m}")),
        WorkspaceError::Validation(m) => fail(format!("Invalid request: {m}")),
        WorkspaceError::TooLarge { message, .. } | WorkspaceError::Capability { message, .. } => {
            fail(message)
        }
        WorkspaceError::Unauthenticated(m)
        | WorkspaceError::NotProvided(m)
        | WorkspaceError::Unavailable(m) => fail(m),
        WorkspaceError::Internal(detail) => {
            tracing::error!(error = %detail, "tool call failed");
            fail("the workspace failed to handle this call; retry later")
        }
    }
}

/// The answer to a failed `expected_version` (or a write that lost a race): it names the
/// current version so the agent can re-read and retry.
fn version_conflict(shown: &str, current: u64, expected: Option<u64>) -> ToolOutput {
    let expected = expected.map_or_else(String::new, |e| format!(", not the expected {e}"));
    if current == 0 {
        fail(format!(
            "Version conflict on {shown}: the file does not exist (current version 0{expected}); read the workspace again and retry"
        ))
    } else {
        fail(format!(
            "Version conflict on {shown}: the current version is {current}{expected}; read the file again and retry"
        ))
    }
}

fn require_read(ws: &Workspace<'_>) -> Result<(), ToolOutput> {
    if ws.who.access.read {
        Ok(())
    } else {
        Err(fail(
            "Access denied. This credential may not read files: it needs the workspace:read scope",
        ))
    }
}

fn require_write(ws: &Workspace<'_>) -> Result<(), ToolOutput> {
    if ws.who.access.write {
        Ok(())
    } else {
        Err(fail(
            "Access denied. This credential may not change files: it needs the workspace:write scope",
        ))
    }
}

/// Claude's memory tool: its own answers (no `Error:` prefix: the reference texts).
async fn memory(ws: &Workspace<'_>, args: &Map<String, Value>) -> Outcome {
    use workspace_core::memory::{execute, MemoryCommand};
    let command = MemoryCommand::parse(&Value::Object(args.clone()))
        .map_err(|a| ToolOutput::error(a.content))?;
    require_read(ws)?;
    if command.changes() {
        require_write(ws)?;
    }
    let answer = execute(ws.service, ws.who, &command)
        .await
        .map_err(|e| from_domain(e, "/memories"))?;
    Ok(ToolOutput {
        text: answer.content,
        is_error: answer.is_error,
    })
}

/// Whether `name` is one of the tools.
pub fn exists(name: &str) -> bool {
    TOOL_NAMES.contains(&name)
}

/// Runs tool `name` (which must [`exist`](exists)) with its arguments.
pub async fn call(ws: &Workspace<'_>, name: &str, args: &Map<String, Value>) -> ToolOutput {
    call_until(ws, name, args, watch::payload_deadline()).await
}

/// [`call`], where a tool that waits ([`watch::NAME`]) answers by `deadline` at the latest:
/// the waits of one payload share one deadline, so a batch of them cannot add up.
pub async fn call_until(
    ws: &Workspace<'_>,
    name: &str,
    args: &Map<String, Value>,
    deadline: tokio::time::Instant,
) -> ToolOutput {
    let outcome = match name {
        "read_file" => read::read_file(ws, args).await,
        "list_directory" => read::list_directory(ws, args).await,
        "get_file_info" => read::get_file_info(ws, args).await,
        "search_files" => search::search_files(ws, args).await,
        "grep" => search::grep(ws, args).await,
        "search" => search::search(ws, args).await,
        "memory" => memory(ws, args).await,
        "write_file" => write::write_file(ws, args).await,
        "create_directory" => write::create_directory(ws, args).await,
        "delete_file" => write::delete_file(ws, args).await,
        "move_file" => write::move_file(ws, args).await,
        "edit_file" => write::edit_file(ws, args).await,
        commit::NAME => commit::commit(ws, args).await,
        "fork_workspace" => forks::fork_workspace(ws, args).await,
        "fork_diff" => forks::fork_diff(ws, args).await,
        "merge_fork" => forks::merge_fork(ws, args).await,
        "discard_fork" => forks::discard_fork(ws, args).await,
        watch::NAME => watch::wait_for_changes(ws, args, deadline).await,
        other => Err(fail(format!("Unknown tool: {other}"))),
    };
    outcome.unwrap_or_else(|e| e)
}
