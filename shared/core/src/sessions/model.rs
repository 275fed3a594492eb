//! What the session service records: workspaces (owned by one user of one tenant),
//! artifacts uploaded by agent sessions, and per-session summaries.

use crate::error::{Result, WorkspaceError};
use crate::model::{BodyRef, Millis};
use serde::{Deserialize, Serialize};

/// `local` workspaces belong to a folder on one device (idempotent on the folder),
/// `general` ones to a chat, `cloud` ones live only in the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceKind {
    Local,
    General,
    Cloud,
}

impl WorkspaceKind {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "local" => Ok(Self::Local),
            "general" => Ok(Self::General),
            "cloud" => Ok(Self::Cloud),
            _ => Err(WorkspaceError::validation(
                "workspaceScope must be one of local, general, cloud",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::General => "general",
            Self::Cloud => "cloud",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceRecord {
    pub tenant: String,
    /// The credential principal that created it; only it sees the workspace.
    pub user: String,
    pub workspace_id: String,
    pub kind: WorkspaceKind,
    pub local_path: Option<String>,
    pub created_at: Millis,
    pub last_active_at: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactType {
    ToolOutput,
    FileDiff,
    SessionHistory,
}

impl ArtifactType {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "tool_output" => Ok(Self::ToolOutput),
            "file_diff" => Ok(Self::FileDiff),
            "session_history" => Ok(Self::SessionHistory),
            _ => Err(WorkspaceError::validation(
                "artifactType must be one of tool_output, file_diff, session_history",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolOutput => "tool_output",
            Self::FileDiff => "file_diff",
            Self::SessionHistory => "session_history",
        }
    }
}

/// One uploaded artifact; its (redacted) bytes live in the body store at `body`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    pub artifact_id: String,
    pub session_id: String,
    pub task_id: Option<String>,
    pub step_id: Option<String>,
    pub artifact_type: ArtifactType,
    pub artifact_name: Option<String>,
    pub content_type: String,
    pub size: u64,
    /// Client metadata (a JSON object, redacted), as JSON text.
    pub metadata: Option<String>,
    pub body: BodyRef,
    pub created_at: Millis,
}

/// A session as the list shows it, kept up to date by every upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub session_id: String,
    pub created_at: Millis,
    pub last_task_at: Millis,
    /// Distinct task ids seen in the session's uploads.
    pub task_ids: Vec<String>,
    /// The one current session_history artifact.
    pub history: Option<String>,
}

/// One message of a session history (what a desktop agent app shows when it reopens a
/// session on another device).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryMessage {
    pub role: String,
    pub content: String,
    pub timestamp: String,
    pub message_id: String,
}

impl SessionRecord {
    /// The session once `art` is uploaded (created if new, lastTaskAt moved forward, task
    /// id counted), and the id of the history artifact `art` replaces, if any.
    pub fn with_artifact(prev: Option<Self>, art: &ArtifactRecord) -> (Self, Option<String>) {
        let mut s = prev.unwrap_or_else(|| Self {
            session_id: art.session_id.clone(),
            created_at: art.created_at,
            last_task_at: art.created_at,
            task_ids: Vec::new(),
            history: None,
        });
        s.last_task_at = s.last_task_at.max(art.created_at);
        if let Some(t) = &art.task_id {
            if !s.task_ids.contains(t) {
                s.task_ids.push(t.clone());
            }
        }
        let mut replaced = None;
        if art.artifact_type == ArtifactType::SessionHistory {
            replaced = s.history.replace(art.artifact_id.clone());
        }
        (s, replaced)
    }
}
