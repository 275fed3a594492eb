//! Two-step uploads: files larger than one request can carry (Lambda's payload cap).
//!
//! 1. [`WorkspaceService::start_upload`] checks the declaration (path, size up to
//!    `maxUploadBytes`, SHA-256, content type), keeps it in the body store's staging area at
//!    `<scope>uploads/<id>/declared`, and answers a URL for the bytes: an S3 presigned PUT
//!    on AWS (content length and type signed), elsewhere a URL this process signs and
//!    serves itself (`local_urls.rs`).
//! 2. The client PUTs the bytes to that URL; they wait at `<scope>uploads/<id>/bytes`.
//! 3. [`WorkspaceService::commit_upload`] reads both, checks the size, the SHA-256 and that
//!    the bytes arrived before the URL expired, then stores them through the same steps as
//!    an inline put (redaction, If-Match, lineage, quotas, idempotency, events). A refused
//!    commit changes no file; a commit refused by a precondition (409, 413) keeps the upload
//!    so the client can retry without sending the bytes again.
//!
//! Uploads never committed are removed once older than [`STAGED_MAX_AGE_MS`]: on the local
//! stores when the next upload of the workspace starts, on AWS by the hourly sweeper.

use super::*;
use crate::blob::{LocalPresign, PresignMethod, PresignSpec, PresignedUrl};
use serde::{Deserialize, Serialize};

/// Default lifetime of an upload URL (`WORKSPACE_UPLOAD_URL_SECONDS`).
pub const DEFAULT_UPLOAD_URL_SECONDS: u64 = 900;
/// Longest upload URL lifetime a deployment may configure.
pub const MAX_UPLOAD_URL_SECONDS: u64 = 12 * 60 * 60;
/// How long after its URL expired an upload can still be committed.
pub const COMMIT_WINDOW_MS: Millis = 60 * 60 * 1000;
/// Clock difference tolerated between this process and the store that timestamps the bytes.
pub const LATE_UPLOAD_TOLERANCE_MS: Millis = 5 * 60 * 1000;
/// Age after which a staged upload is garbage: longer than any URL plus its commit window.
pub const STAGED_MAX_AGE_MS: Millis = 24 * 60 * 60 * 1000;
/// Largest declaration record (it holds a path, a digest and a media type).
const MAX_DECLARATION_BYTES: u64 = 4096;

/// `POST /v1/host/workspace/uploads`, as the HTTP layer hands it over.
#[derive(Debug, Clone)]
pub struct UploadRequest {
    pub path: FilePath,
    pub size: u64,
    pub sha256: String,
    pub content_type: Option<String>,
}

/// What a started upload answers: its id and where to send the bytes.
#[derive(Debug, Clone)]
pub struct UploadTicket {
    pub upload_id: String,
    pub url: PresignedUrl,
}

/// The commit of an upload: `PUT files/{path}` with `{"uploadId"}` and the usual headers.
#[derive(Debug, Clone, Default)]
pub struct UploadCommit {
    pub upload_id: String,
    pub if_match: Option<String>,
    pub if_none_match_any: bool,
    pub idempotency_key: Option<String>,
}

/// What the client declared, kept until the commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Declaration {
    path: String,
    size: u64,
    sha256: String,
    content_type: String,
    created_at: Millis,
    /// When the upload URL stops working.
    expires_at: Millis,
}

fn uploads_prefix(scope: &Scope) -> String {
    format!("{}uploads/", scope.key_prefix())
}

fn declared_key(scope: &Scope, id: &str) -> String {
    format!("{}{id}/declared", uploads_prefix(scope))
}

pub(super) fn bytes_key(scope: &Scope, id: &str) -> String {
    format!("{}{id}/bytes", uploads_prefix(scope))
}

/// Ids this service issues: 1-64 of `a-z 0-9 -`. Anything else names no upload (and
/// could not be placed in a storage key safely).
pub(super) fn is_upload_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

pub(super) fn unknown_upload() -> WorkspaceError {
    WorkspaceError::not_found(
        "no such upload in this workspace (unknown, already committed, or expired); start one with POST /v1/host/workspace/uploads",
    )
}

fn check_sha256(sha: &str) -> Result<String> {
    if sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(sha.to_ascii_lowercase())
    } else {
        Err(WorkspaceError::validation(
            "sha256 must be the SHA-256 of the bytes as 64 hex digits",
        ))
    }
}

impl WorkspaceService {
    /// Where uploads get URLs when the body store cannot presign (the local server).
    pub fn with_upload_signer(mut self, signer: LocalPresign) -> Self {
        self.upload_signer = Some(signer);
        self
    }

    /// How long an upload URL works (`WORKSPACE_UPLOAD_URL_SECONDS`).
    pub fn with_upload_url_seconds(mut self, seconds: u64) -> Self {
        self.upload_url_seconds = seconds.clamp(1, MAX_UPLOAD_URL_SECONDS);
        self
    }

    /// Whether this process signs and serves upload and download URLs itself.
    pub fn signs_urls(&self) -> bool {
        self.upload_signer.is_some()
    }

    /// Step 1: checks the declaration and answers the URL the bytes go to.
    pub async fn start_upload(&self, who: &Identity, req: UploadRequest) -> Result<UploadTicket> {
        who.paths.check_write(&req.path)?;
        let max = self.limits.max_upload_bytes;
        if req.size > max {
            return Err(WorkspaceError::TooLarge {
                message: format!("size is {} bytes; maxUploadBytes is {max}", req.size),
                limit: max,
            });
        }
        let sha256 = check_sha256(&req.sha256)?;
        let content_type = content_type_for(&req.path, req.content_type)?;
        let now = self.clock.now_ms();
        let scope = &who.scope;
        // Leftovers of this workspace's abandoned uploads go first (a no-op where a
        // scheduled sweeper does it). Failing to prune never fails the upload.
        if let Err(e) = self
            .staging
            .prune_staged(&uploads_prefix(scope), now - STAGED_MAX_AGE_MS)
            .await
        {
            tracing::warn!(error = %e, "could not prune abandoned uploads");
        }
        let id = self.ids.new_id();
        let spec = PresignSpec {
            method: PresignMethod::Put,
            expires_in_seconds: self.upload_url_seconds,
            version_id: None,
            content_length: Some(req.size),
            content_type: Some(content_type.clone()),
            now,
        };
        let url = match self
            .staging
            .presign_staged_put(&bytes_key(scope, &id), &spec)
            .await?
        {
            Some(url) => url,
            None => self.local_upload_url(scope, &id, &spec)?,
        };
        let declaration = Declaration {
            path: req.path.to_string(),
            size: req.size,
            sha256,
            content_type,
            created_at: now,
            expires_at: url.expires_at,
        };
        let json = serde_json::to_vec(&declaration).map_err(WorkspaceError::internal)?;
        self.staging
            .put_staged(&declared_key(scope, &id), json, now)
            .await?;
        Ok(UploadTicket { upload_id: id, url })
    }

    pub(super) async fn declaration(&self, scope: &Scope, id: &str) -> Result<Option<Declaration>> {
        let Some(staged) = self
            .staging
            .get_staged(&declared_key(scope, id), MAX_DECLARATION_BYTES)
            .await?
        else {
            return Ok(None);
        };
        let bytes = staged
            .bytes
            .ok_or_else(|| WorkspaceError::internal("an upload declaration is oversized"))?;
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            WorkspaceError::internal(format!("an upload declaration is unreadable: {e}"))
        })
    }

    /// Removes an upload's staged bytes (and its declaration, when `all`). Failures are
    /// logged: leftovers are only garbage, pruned later.
    async fn discard_upload(&self, scope: &Scope, id: &str, all: bool) {
        let (bytes, declared) = (bytes_key(scope, id), declared_key(scope, id));
        let (a, b) = tokio::join!(self.staging.delete_staged(&bytes), async {
            if all {
                self.staging.delete_staged(&declared).await
            } else {
                Ok(())
            }
        });
        for e in [a, b].into_iter().filter_map(Result::err) {
            tracing::warn!(error = %e, "could not remove a staged upload");
        }
    }

    /// Step 3: verifies the uploaded bytes against the declaration and commits them to
    /// `path` under the inline put's rules. Answers the new version's metadata.
    pub async fn commit_upload(
        &self,
        who: &Identity,
        path: &FilePath,
        req: UploadCommit,
    ) -> Result<FileMeta> {
        who.paths.check_write(path)?;
        if let Some(v) = &req.if_match {
            check_header_value("If-Match", v)?;
        }
        if let Some(v) = &req.idempotency_key {
            check_header_value("Idempotency-Key", v)?;
        }
        let scope = &who.scope;
        let id = req.upload_id.as_str();
        let fingerprint = sha256_hex(
            format!(
                "upload\n{path}\n{id}\n{:?}\n{}",
                req.if_match, req.if_none_match_any
            )
            .as_bytes(),
        );
        let now = self.clock.now_ms();
        // A retry of a commit that succeeded finds its key before the (removed) upload.
        if let Some(rec) = self
            .recorded_key(scope, req.idempotency_key.as_deref(), now)
            .await?
        {
            return self.replay(rec, &fingerprint, Vec::new()).map(|f| f.meta);
        }
        if !is_upload_id(id) {
            return Err(unknown_upload());
        }
        // The declaration and the bytes are read side by side (one round trip, not two);
        // the bytes only up to the upload limit until the declaration names their size.
        let staged_key = bytes_key(scope, id);
        let (decl, staged) = tokio::join!(
            self.declaration(scope, id),
            self.staging
                .get_staged(&staged_key, self.limits.max_upload_bytes)
        );
        let decl = decl?.ok_or_else(unknown_upload)?;
        if now >= decl.expires_at.saturating_add(COMMIT_WINDOW_MS) {
            self.discard_upload(scope, id, true).await;
            return Err(WorkspaceError::validation(format!(
                "upload {id} expired at {}; start a new upload",
                format_time(decl.expires_at.saturating_add(COMMIT_WINDOW_MS))
            )));
        }
        if decl.path != path.as_str() {
            return Err(WorkspaceError::validation(format!(
                "upload {id} was declared for {}, not {path}",
                decl.path
            )));
        }
        let staged = staged?.ok_or_else(|| {
            WorkspaceError::validation(format!(
                "no bytes were uploaded for upload {id}: PUT them to its URL first"
            ))
        })?;
        let refused = |message: String| async move {
            // Wrong bytes are never kept; the URL (while valid) takes the right ones.
            self.discard_upload(scope, id, false).await;
            Err(WorkspaceError::validation(message))
        };
        if staged.stored_at > decl.expires_at.saturating_add(LATE_UPLOAD_TOLERANCE_MS) {
            self.discard_upload(scope, id, false).await;
            return Err(WorkspaceError::Forbidden(format!(
                "the bytes of upload {id} arrived after its URL expired at {}; start a new upload",
                format_time(decl.expires_at)
            )));
        }
        let bytes = match staged.bytes {
            Some(b) if b.len() as u64 == decl.size => b,
            _ => {
                return refused(format!(
                    "{} bytes were uploaded but the declared size is {}; nothing was committed",
                    staged.size, decl.size
                ))
                .await
            }
        };
        let actual = sha256_hex(&bytes);
        if actual != decl.sha256 {
            return refused(format!(
                "the uploaded bytes have SHA-256 {actual}, not the declared {}; nothing was committed",
                decl.sha256
            ))
            .await;
        }
        let put = PutRequest {
            merge: None,
            path: Some(path.clone()),
            content: bytes,
            content_type: Some(decl.content_type.clone()),
            if_match: req.if_match,
            if_none_match_any: req.if_none_match_any,
            idempotency_key: req.idempotency_key,
        };
        let stored = self
            .redact_and_store(who, path, put, &decl.content_type, |_| fingerprint.clone())
            .await?;
        self.discard_upload(scope, id, true).await;
        Ok(stored.meta)
    }
}
