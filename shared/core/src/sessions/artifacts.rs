//! Artifact uploads and the session views built from them. Every text stored here (file
//! artifact content, history messages, metadata strings) is redacted first (WSR-1).

use super::model::{ArtifactRecord, ArtifactType, HistoryMessage, SessionRecord, WorkspaceRecord};
use super::token::Position;
use super::{Caller, SessionService};
use crate::error::{Result, WorkspaceError};
use crate::model::BodyRef;
use crate::scope::{Scope, WorkspaceId};
use crate::service::WorkspaceService;
use serde_json::Value;

/// Longest session, task, step id, artifact name or content type.
pub const MAX_NAME_LEN: usize = 255;
/// Largest session page.
pub const MAX_SESSION_PAGE: usize = 100;
pub const DEFAULT_SESSION_PAGE: usize = 20;

/// An upload as the HTTP layer hands it over (already decoded from base64).
#[derive(Debug, Clone)]
pub struct Upload {
    pub session_id: String,
    pub task_id: Option<String>,
    pub step_id: Option<String>,
    pub artifact_type: ArtifactType,
    pub artifact_name: Option<String>,
    pub content_type: Option<String>,
    pub content: Option<Vec<u8>>,
    pub messages: Option<Vec<HistoryMessage>>,
    pub metadata: Option<Value>,
}

/// An artifact and its stored (redacted) bytes.
pub struct ArtifactContent {
    pub record: ArtifactRecord,
    pub bytes: Vec<u8>,
}

/// Session, task and step ids end up in storage keys: letters, digits, `.`, `_`, `:`, `-`.
pub fn check_name(what: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= MAX_NAME_LEN
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::validation(format!(
            "{what} must be 1-{MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit"
        )))
    }
}

fn check_text(what: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.len() > MAX_NAME_LEN || s.chars().any(char::is_control) {
        return Err(WorkspaceError::validation(format!(
            "{what} must be 1-{MAX_NAME_LEN} characters without control characters"
        )));
    }
    Ok(())
}

fn scope_of(w: &WorkspaceRecord) -> Result<Scope> {
    Scope::parse(&w.tenant, &w.workspace_id)
}

/// Redacts every string inside a JSON value (keys stay as they are).
async fn redact_json(
    files: &WorkspaceService,
    who: &crate::scope::Identity,
    v: Value,
) -> Result<Value> {
    Ok(match v {
        Value::String(s) => Value::String(files.redact_for(who, &s).await?.text),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(Box::pin(redact_json(files, who, i)).await?);
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, i) in map {
                out.insert(k, Box::pin(redact_json(files, who, i)).await?);
            }
            Value::Object(out)
        }
        other => other,
    })
}

impl SessionService {
    fn too_large(&self, size: usize) -> WorkspaceError {
        WorkspaceError::TooLarge {
            message: format!(
                "artifact is {size} bytes; WORKSPACE_MAX_ARTIFACT_BYTES is {}",
                self.limits.max_artifact_bytes
            ),
            limit: self.limits.max_artifact_bytes,
        }
    }

    fn over_limit(&self, size: usize) -> bool {
        u64::try_from(size).map_or(true, |s| s > self.limits.max_artifact_bytes)
    }

    /// Stores an artifact in the caller's workspace and bumps its lastActiveAt.
    pub async fn upload(
        &self,
        files: &WorkspaceService,
        caller: &Caller,
        workspace_id: &str,
        up: Upload,
    ) -> Result<ArtifactRecord> {
        let ws = self.get(caller, workspace_id).await?;
        let scope = scope_of(&ws)?;
        let who = caller.in_workspace(&scope.workspace);
        check_name("sessionId", &up.session_id)?;
        for (what, v) in [("taskId", &up.task_id), ("stepId", &up.step_id)] {
            if let Some(v) = v {
                check_name(what, v)?;
            }
        }
        if let Some(n) = &up.artifact_name {
            check_text("artifactName", n)?;
        }
        let metadata = match up.metadata {
            None | Some(Value::Null) => None,
            Some(m @ Value::Object(_)) => Some(redact_json(files, &who, m).await?.to_string()),
            Some(_) => return Err(WorkspaceError::validation("metadata must be a JSON object")),
        };
        let (bytes, content_type) = match up.artifact_type {
            ArtifactType::SessionHistory => {
                if up.content.is_some() {
                    return Err(WorkspaceError::validation(
                        "a session_history artifact carries messages, not contentBase64",
                    ));
                }
                let messages = up.messages.ok_or_else(|| {
                    WorkspaceError::validation("a session_history artifact needs messages")
                })?;
                let mut clean = Vec::with_capacity(messages.len());
                for m in messages {
                    check_text("message role", &m.role)?;
                    check_text("message timestamp", &m.timestamp)?;
                    check_text("message messageId", &m.message_id)?;
                    let content = files.redact_for(&who, &m.content).await?.text;
                    clean.push(HistoryMessage { content, ..m });
                }
                let bytes = serde_json::to_vec(&clean).map_err(WorkspaceError::internal)?;
                (bytes, "application/json".to_owned())
            }
            _ => {
                if up.messages.is_some() {
                    return Err(WorkspaceError::validation(
                        "only session_history artifacts carry messages",
                    ));
                }
                let raw = up.content.ok_or_else(|| {
                    WorkspaceError::validation("this artifact type needs contentBase64")
                })?;
                if self.over_limit(raw.len()) {
                    return Err(self.too_large(raw.len()));
                }
                // WSR-1 works on text: artifacts are text (tool output, diffs).
                let text = String::from_utf8(raw).map_err(|_| {
                    WorkspaceError::validation(
                        "artifact content must be UTF-8 text (it is redacted before storage)",
                    )
                })?;
                let ct = up.content_type.unwrap_or_else(|| "text/plain".to_owned());
                (files.redact_for(&who, &text).await?.text.into_bytes(), ct)
            }
        };
        let ct_ok = content_type.contains('/')
            && content_type.len() <= MAX_NAME_LEN
            && content_type
                .chars()
                .all(|c| c.is_ascii_graphic() || c == ' ');
        if !ct_ok {
            return Err(WorkspaceError::validation(
                "contentType must be a media type like text/plain",
            ));
        }
        if self.over_limit(bytes.len()) {
            return Err(self.too_large(bytes.len()));
        }
        let artifact_id = format!("art-{}", self.ids.new_id());
        let key = format!("{}artifacts/{artifact_id}", scope.key_prefix());
        let body = self.bodies.put(&key, bytes.clone(), &content_type).await?;
        let now = self.now();
        let rec = ArtifactRecord {
            artifact_id,
            session_id: up.session_id,
            task_id: up.task_id,
            step_id: up.step_id,
            artifact_type: up.artifact_type,
            artifact_name: up.artifact_name,
            content_type,
            size: bytes.len() as u64,
            metadata,
            body: body.clone(),
            created_at: now,
        };
        match self.store.put_artifact(&scope, &rec).await {
            Ok(replaced) => {
                if let Some(old) = replaced {
                    self.discard(&old.body).await;
                }
            }
            Err(e) => {
                self.discard(&body).await;
                return Err(e);
            }
        }
        if let Err(e) = self.store.touch_workspace(&ws, now).await {
            tracing::warn!(error = %e, "could not bump lastActiveAt");
        }
        Ok(rec)
    }

    pub(crate) async fn discard(&self, body: &BodyRef) {
        if let Err(e) = self.bodies.delete(body).await {
            tracing::warn!(error = %e, key = %body.key, "could not delete an artifact body");
        }
    }

    async fn scope_for(&self, caller: &Caller, workspace_id: &str) -> Result<Scope> {
        scope_of(&self.get(caller, workspace_id).await?)
    }

    pub async fn artifact(
        &self,
        caller: &Caller,
        workspace_id: &str,
        artifact_id: &str,
    ) -> Result<ArtifactContent> {
        let scope = self.scope_for(caller, workspace_id).await?;
        let not_found = || WorkspaceError::not_found(format!("no artifact {artifact_id}"));
        check_name("artifactId", artifact_id).map_err(|_| not_found())?;
        let record = self
            .store
            .artifact(&scope, artifact_id)
            .await?
            .ok_or_else(not_found)?;
        let bytes = self.bodies.get(&record.body).await?.ok_or_else(not_found)?;
        Ok(ArtifactContent { record, bytes })
    }

    /// The workspace's artifacts, oldest first, optionally of one session and/or type.
    pub async fn artifacts(
        &self,
        caller: &Caller,
        workspace_id: &str,
        session_id: Option<&str>,
        artifact_type: Option<ArtifactType>,
    ) -> Result<Vec<ArtifactRecord>> {
        let scope = self.scope_for(caller, workspace_id).await?;
        let mut all: Vec<_> = self
            .store
            .artifacts(&scope)
            .await?
            .into_iter()
            .filter(|a| session_id.is_none_or(|s| a.session_id == s))
            .filter(|a| artifact_type.is_none_or(|t| a.artifact_type == t))
            .collect();
        all.sort_by(|a, b| (a.created_at, &a.artifact_id).cmp(&(b.created_at, &b.artifact_id)));
        Ok(all)
    }

    fn session_binding(caller: &Caller, ws: &WorkspaceId) -> String {
        format!("sessions|{}|{}|{}", caller.tenant, caller.principal, ws)
    }

    /// One page of sessions, most recent first (lastTaskAt, then id), and the next token.
    /// The store returns the workspace's sessions and this sorts them: one Query per page
    /// on DynamoDB, fine for the thousands of sessions a workspace holds.
    pub async fn sessions(
        &self,
        caller: &Caller,
        workspace_id: &str,
        limit: Option<usize>,
        token: Option<&str>,
    ) -> Result<(Vec<SessionRecord>, Option<String>)> {
        let limit = crate::limits::page_limit(limit, DEFAULT_SESSION_PAGE, MAX_SESSION_PAGE)?;
        let scope = self.scope_for(caller, workspace_id).await?;
        let binding = Self::session_binding(caller, &scope.workspace);
        let after = token
            .map(|t| self.token_key.verify(&binding, t))
            .transpose()?;
        let mut all = self.store.sessions(&scope).await?;
        let order = |s: &SessionRecord| (std::cmp::Reverse(s.last_task_at), s.session_id.clone());
        all.sort_by_key(order);
        let start = match &after {
            Some(p) => {
                let key = (std::cmp::Reverse(p.last_task_at), p.session_id.clone());
                all.partition_point(|s| order(s) <= key)
            }
            None => 0,
        };
        let rest = &all[start.min(all.len())..];
        let page: Vec<_> = rest.iter().take(limit).cloned().collect();
        let next = (rest.len() > limit)
            .then(|| page.last())
            .flatten()
            .map(|s| {
                self.token_key.issue(
                    &binding,
                    &Position {
                        last_task_at: s.last_task_at,
                        session_id: s.session_id.clone(),
                    },
                )
            });
        Ok((page, next))
    }

    /// The session's current history snapshot.
    pub async fn history(
        &self,
        caller: &Caller,
        workspace_id: &str,
        session_id: &str,
    ) -> Result<(ArtifactRecord, Vec<HistoryMessage>)> {
        let scope = self.scope_for(caller, workspace_id).await?;
        let not_found =
            || WorkspaceError::not_found(format!("no history for session {session_id}"));
        check_name("sessionId", session_id).map_err(|_| not_found())?;
        let session = self
            .store
            .session(&scope, session_id)
            .await?
            .ok_or_else(not_found)?;
        let id = session.history.ok_or_else(not_found)?;
        let rec = self
            .store
            .artifact(&scope, &id)
            .await?
            .ok_or_else(not_found)?;
        let bytes = self.bodies.get(&rec.body).await?.ok_or_else(not_found)?;
        let messages = serde_json::from_slice(&bytes).map_err(WorkspaceError::internal)?;
        Ok((rec, messages))
    }

    pub async fn delete_session(
        &self,
        caller: &Caller,
        workspace_id: &str,
        session_id: &str,
    ) -> Result<()> {
        let scope = self.scope_for(caller, workspace_id).await?;
        let not_found = || WorkspaceError::not_found(format!("no session {session_id}"));
        check_name("sessionId", session_id).map_err(|_| not_found())?;
        if self.store.session(&scope, session_id).await?.is_none() {
            return Err(not_found());
        }
        for art in self.store.delete_session(&scope, session_id).await? {
            self.discard(&art.body).await;
        }
        Ok(())
    }
}
