//! The rules of the file store, over the ports. Every write follows one protocol:
//!
//! 1. validate and bound the input (nothing is stored if this fails);
//! 2. write the body to the body store (an orphan until committed; deleted again on failure,
//!    and swept on AWS if the process dies first);
//! 3. read the head, check the client's preconditions against it, derive the next version
//!    (same lineage +1, or a new lineage at 1 after a delete or on first write);
//! 4. commit with compare-and-swap on the head seq. If someone else committed in between,
//!    go back to 3: the client's preconditions are judged against the new head, so of N
//!    writers carrying the same `If-Match` exactly one wins.

use crate::error::{Result, WorkspaceError};
use crate::limits::Limits;
use crate::model::{
    format_time, make_etag, sha256_hex, BodyRef, FileMeta, FilePage, Head, IdempotencyRecord,
    Millis, StoredFile, VersionRecord,
};
use crate::path::{FilePath, PathPrefix};
use crate::ports::{
    BodyStore, Clock, Commit, CommitOutcome, EventSink, Expect, IdSource, MetaStore, Operation,
    WorkspaceEvent,
};
use crate::redact::Redactor;
use crate::scope::{Identity, Scope};
use std::sync::Arc;

/// Longest accepted `If-Match` / `Idempotency-Key` value.
pub const MAX_HEADER_VALUE_LEN: usize = 255;
/// Longest accepted content type.
pub const MAX_CONTENT_TYPE_LEN: usize = 255;
/// Largest page of a listing.
pub const MAX_LIST_LIMIT: usize = 1000;
/// How long an idempotency key is remembered.
pub const IDEMPOTENCY_TTL_MS: Millis = 24 * 60 * 60 * 1000;
/// Compare-and-swap rounds before a write gives up under extreme contention.
const MAX_COMMIT_ATTEMPTS: usize = 200;

/// A write, as the HTTP layer hands it over (header values still unchecked).
#[derive(Debug, Clone, Default)]
pub struct PutRequest {
    pub path: Option<FilePath>,
    pub content: Vec<u8>,
    pub content_type: Option<String>,
    pub if_match: Option<String>,
    pub if_none_match_any: bool,
    pub idempotency_key: Option<String>,
}

enum PutOutcome {
    Stored(FileMeta),
    Replay(IdempotencyRecord),
}

pub struct WorkspaceService {
    redactor: Redactor,
    meta: Arc<dyn MetaStore>,
    bodies: Arc<dyn BodyStore>,
    events: Arc<dyn EventSink>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    limits: Limits,
}

/// The live head, if the path has one.
fn live(head: &Option<Head>) -> Option<&Head> {
    head.as_ref().filter(|h| h.is_live())
}

fn conflict(message: impl Into<String>, head: &Option<Head>) -> WorkspaceError {
    WorkspaceError::Conflict {
        message: message.into(),
        current_version: live(head).map_or(0, |h| h.version),
    }
}

pub fn check_header_value(name: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.len() > MAX_HEADER_VALUE_LEN {
        return Err(WorkspaceError::validation(format!(
            "{name} must be 1-{MAX_HEADER_VALUE_LEN} characters"
        )));
    }
    if !value.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return Err(WorkspaceError::validation(format!(
            "{name} must be printable ASCII"
        )));
    }
    Ok(())
}

fn check_if_match(if_match: Option<&str>, head: &Option<Head>) -> Result<()> {
    let Some(expected) = if_match else {
        return Ok(());
    };
    match live(head) {
        Some(_) if expected == "*" => Ok(()),
        Some(h) if h.etag == expected => Ok(()),
        Some(h) => Err(conflict(
            format!(
                "If-Match {expected} does not match the current etag {}; read the file again and retry",
                h.etag
            ),
            head,
        )),
        None => Err(conflict(
            format!("If-Match {expected} given but the file does not exist"),
            head,
        )),
    }
}

fn content_type_for(path: &FilePath, given: Option<String>) -> Result<String> {
    match given {
        Some(ct) => {
            let ok = !ct.is_empty()
                && ct.len() <= MAX_CONTENT_TYPE_LEN
                && ct.contains('/')
                && ct.chars().all(|c| c.is_ascii_graphic() || c == ' ');
            if ok {
                Ok(ct)
            } else {
                Err(WorkspaceError::validation(format!(
                    "contentType must be a media type like text/markdown (printable ASCII, at most {MAX_CONTENT_TYPE_LEN} characters)"
                )))
            }
        }
        None => Ok(mime_guess::from_path(path.as_str())
            .first()
            .map(|m| m.essence_str().to_owned())
            .unwrap_or_else(|| "text/plain".to_owned())),
    }
}

impl WorkspaceService {
    pub fn new(
        meta: Arc<dyn MetaStore>,
        bodies: Arc<dyn BodyStore>,
        events: Arc<dyn EventSink>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
        limits: Limits,
    ) -> Self {
        Self {
            redactor: Redactor::default(),
            meta,
            bodies,
            events,
            clock,
            ids,
            limits,
        }
    }

    /// Replaces the WSR-1 redactor (the default applies every structural rule).
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn body_key(scope: &Scope, path: &FilePath) -> String {
        format!("{}files/{}", scope.key_prefix(), path)
    }

    /// Reads the live file, or version `n` of its live lineage.
    pub async fn get(
        &self,
        scope: &Scope,
        path: &FilePath,
        version: Option<u64>,
    ) -> Result<StoredFile> {
        // The latest version is read from the head alone (head, then body: two round
        // trips); a past version needs its version item. A concurrent write may prune the
        // body between the reads; the retry then sees the newer head.
        for _ in 0..3 {
            let head = self.meta.head(scope, path).await?;
            let Some(h) = live(&head) else {
                return Err(WorkspaceError::not_found(format!("no file at {path}")));
            };
            let (meta, body) = match version {
                None => (h.meta(), h.body.clone()),
                Some(n) => {
                    let gone = || {
                        WorkspaceError::not_found(format!(
                            "version {n} of {path} does not exist or is no longer retained \
                             (current version {}; the last {} versions are kept)",
                            h.version, self.limits.max_versions
                        ))
                    };
                    let seq = h.seq_of_version(n).ok_or_else(gone)?;
                    let item = self.meta.version(scope, path, seq).await?;
                    let item = item
                        .filter(|v| v.lineage == h.lineage && !v.deleted)
                        .ok_or_else(gone)?;
                    let meta = FileMeta {
                        path: path.to_string(),
                        content_type: item.content_type,
                        version: item.version,
                        etag: item.etag,
                        size: item.size,
                        updated_at: item.updated_at,
                    };
                    (meta, item.body)
                }
            };
            let body =
                body.ok_or_else(|| WorkspaceError::internal("live version without a body"))?;
            match self.bodies.get(&body).await? {
                Some(content) => return Ok(StoredFile { meta, content }),
                None if version.is_some() => {
                    return Err(WorkspaceError::not_found(format!(
                        "version {} of {path} is no longer retained",
                        meta.version
                    )))
                }
                None => continue,
            }
        }
        Err(WorkspaceError::internal(format!(
            "{path} kept changing while being read"
        )))
    }

    /// Lists live files under `prefix`, sorted by path, a page at a time.
    pub async fn list(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        limit: Option<usize>,
        after: Option<&FilePath>,
    ) -> Result<FilePage> {
        let limit = match limit {
            None => MAX_LIST_LIMIT,
            Some(n) if (1..=MAX_LIST_LIMIT).contains(&n) => n,
            Some(_) => {
                return Err(WorkspaceError::validation(format!(
                    "limit must be between 1 and {MAX_LIST_LIMIT}"
                )))
            }
        };
        let mut heads = self.meta.list_live(scope, prefix, after, limit + 1).await?;
        let more = heads.len() > limit;
        heads.truncate(limit);
        let next_after = if more {
            heads.last().and_then(|h| FilePath::parse(&h.path).ok())
        } else {
            None
        };
        Ok(FilePage {
            files: heads.iter().map(Head::meta).collect(),
            next_after,
        })
    }

    /// Writes a new version (or the first version of a new lineage).
    pub async fn put(&self, who: &Identity, req: PutRequest) -> Result<StoredFile> {
        let scope = &who.scope;
        let path = req
            .path
            .clone()
            .ok_or_else(|| WorkspaceError::validation("path is required"))?;
        if let Some(v) = &req.if_match {
            check_header_value("If-Match", v)?;
        }
        if let Some(v) = &req.idempotency_key {
            check_header_value("Idempotency-Key", v)?;
        }
        let size = req.content.len() as u64;
        if size > self.limits.max_file_bytes {
            return Err(WorkspaceError::TooLarge {
                message: format!(
                    "content is {size} bytes; maxFileBytes is {}",
                    self.limits.max_file_bytes
                ),
                limit: self.limits.max_file_bytes,
            });
        }
        let content_type = content_type_for(&path, req.content_type.clone())?;
        // WSR-1: what is stored (and answered, and hashed) is the redacted text.
        let mut req = req;
        if let Ok(text) = std::str::from_utf8(&req.content) {
            let redacted = self.redactor.redact(text, &[]);
            if !redacted.hits.is_empty() {
                tracing::info!(rules = ?redacted.hits, %path, "secrets redacted before storing");
                req.content = redacted.text.into_bytes();
            }
        }
        let sha = sha256_hex(&req.content);
        let now = self.clock.now_ms();

        let fingerprint = sha256_hex(
            format!(
                "{path}\n{content_type}\n{sha}\n{:?}\n{}",
                req.if_match, req.if_none_match_any
            )
            .as_bytes(),
        );
        if let Some(key) = &req.idempotency_key {
            if let Some(rec) = self.meta.idempotency(scope, key).await? {
                if rec.created_at > now - IDEMPOTENCY_TTL_MS {
                    return self.replay(rec, &fingerprint, req.content);
                }
            }
        }

        // The body upload and the first head read do not depend on each other: run them
        // side by side so a write costs two sequential round trips, not three.
        let body_key = Self::body_key(scope, &path);
        let (body, head) = tokio::join!(
            self.bodies
                .put(&body_key, req.content.clone(), &content_type),
            self.meta.head(scope, &path)
        );
        let body = body?;
        let head = match head {
            Ok(h) => h,
            Err(e) => {
                self.discard_body(&body).await;
                return Err(e);
            }
        };
        let outcome = self
            .commit_put(
                who,
                &path,
                &req,
                &body,
                &content_type,
                &sha,
                &fingerprint,
                now,
                head,
            )
            .await;
        match outcome {
            Ok(PutOutcome::Stored(meta)) => Ok(StoredFile {
                meta,
                content: req.content,
            }),
            Ok(PutOutcome::Replay(rec)) => {
                self.discard_body(&body).await;
                self.replay(rec, &fingerprint, req.content)
            }
            Err(e) => {
                self.discard_body(&body).await;
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn commit_put(
        &self,
        who: &Identity,
        path: &FilePath,
        req: &PutRequest,
        body: &BodyRef,
        content_type: &str,
        sha: &str,
        fingerprint: &str,
        now: Millis,
        first_head: Option<Head>,
    ) -> Result<PutOutcome> {
        let mut prefetched = Some(first_head);
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let head = match prefetched.take() {
                Some(h) => h,
                None => self.meta.head(&who.scope, path).await?,
            };
            if req.if_none_match_any {
                if let Some(h) = live(&head) {
                    return Err(conflict(
                        format!(
                            "If-None-Match: * given but {path} exists (version {})",
                            h.version
                        ),
                        &head,
                    ));
                }
            }
            check_if_match(req.if_match.as_deref(), &head)?;

            let (lineage, version) = match live(&head) {
                Some(h) => (h.lineage.clone(), h.version + 1),
                None => (self.ids.new_id(), 1),
            };
            let seq = head.as_ref().map_or(1, |h| h.seq + 1);
            let etag = make_etag(&lineage, version, sha);
            let size = req.content.len() as u64;
            let meta = FileMeta {
                path: path.to_string(),
                content_type: content_type.to_owned(),
                version,
                etag: etag.clone(),
                size,
                updated_at: now,
            };
            let commit = Commit {
                scope: who.scope.clone(),
                path: path.clone(),
                expect: Expect::of(head.as_ref()),
                head: Head {
                    path: path.to_string(),
                    lineage: lineage.clone(),
                    version,
                    seq,
                    etag: etag.clone(),
                    size,
                    content_type: content_type.to_owned(),
                    updated_at: now,
                    deleted: false,
                    body: Some(body.clone()),
                    sha256: sha.to_owned(),
                },
                version: VersionRecord {
                    seq,
                    lineage,
                    version,
                    etag: etag.clone(),
                    size,
                    sha256: sha.to_owned(),
                    content_type: content_type.to_owned(),
                    body: Some(body.clone()),
                    updated_at: now,
                    principal: who.principal.clone(),
                    deleted: false,
                },
                live_delta: if live(&head).is_some() { 0 } else { 1 },
                max_files: self.limits.max_files,
                idempotency: req.idempotency_key.as_ref().map(|key| IdempotencyRecord {
                    key: key.clone(),
                    fingerprint: fingerprint.to_owned(),
                    result: meta.clone(),
                    created_at: now,
                }),
                idempotency_valid_after: now - IDEMPOTENCY_TTL_MS,
                retain_from_seq: self.retain_from(seq),
            };
            match self.meta.commit(commit).await? {
                CommitOutcome::Committed { pruned } => {
                    self.after_commit(who, &meta, Operation::Put, pruned).await;
                    return Ok(PutOutcome::Stored(meta));
                }
                CommitOutcome::HeadMoved => continue,
                CommitOutcome::TooManyFiles => {
                    return Err(WorkspaceError::TooLarge {
                        message: format!(
                            "the workspace already holds maxFiles = {} files; delete one first",
                            self.limits.max_files
                        ),
                        limit: self.limits.max_files,
                    })
                }
                CommitOutcome::KeyUsed(rec) => return Ok(PutOutcome::Replay(rec)),
            }
        }
        Err(WorkspaceError::internal(format!(
            "gave up writing {path} after {MAX_COMMIT_ATTEMPTS} concurrent commits"
        )))
    }

    /// Deletes the live file: writes a tombstone so the next write starts a new lineage.
    pub async fn delete(
        &self,
        who: &Identity,
        path: &FilePath,
        if_match: Option<&str>,
    ) -> Result<()> {
        if let Some(v) = if_match {
            check_header_value("If-Match", v)?;
        }
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let head = self.meta.head(&who.scope, path).await?;
            let Some(h) = live(&head) else {
                return Err(WorkspaceError::not_found(format!("no file at {path}")));
            };
            check_if_match(if_match, &head)?;
            let now = self.clock.now_ms();
            let seq = h.seq + 1;
            let version = h.version + 1;
            let etag = make_etag(&h.lineage, version, "deleted");
            let meta = FileMeta {
                path: path.to_string(),
                content_type: h.content_type.clone(),
                version,
                etag: etag.clone(),
                size: 0,
                updated_at: now,
            };
            let commit = Commit {
                scope: who.scope.clone(),
                path: path.clone(),
                expect: Expect::of(Some(h)),
                head: Head {
                    version,
                    seq,
                    etag: etag.clone(),
                    size: 0,
                    updated_at: now,
                    deleted: true,
                    body: None,
                    sha256: String::new(),
                    ..h.clone()
                },
                version: VersionRecord {
                    seq,
                    lineage: h.lineage.clone(),
                    version,
                    etag,
                    size: 0,
                    sha256: String::new(),
                    content_type: h.content_type.clone(),
                    body: None,
                    updated_at: now,
                    principal: who.principal.clone(),
                    deleted: true,
                },
                live_delta: -1,
                max_files: self.limits.max_files,
                idempotency: None,
                idempotency_valid_after: now,
                retain_from_seq: self.retain_from(seq),
            };
            match self.meta.commit(commit).await? {
                CommitOutcome::Committed { pruned } => {
                    self.after_commit(who, &meta, Operation::Delete, pruned)
                        .await;
                    return Ok(());
                }
                CommitOutcome::HeadMoved => continue,
                other => {
                    return Err(WorkspaceError::internal(format!(
                        "unexpected commit outcome for a delete: {other:?}"
                    )))
                }
            }
        }
        Err(WorkspaceError::internal(format!(
            "gave up deleting {path} after {MAX_COMMIT_ATTEMPTS} concurrent commits"
        )))
    }

    /// Oldest seq kept when `seq` is the newest: the last `max_versions` items survive.
    fn retain_from(&self, seq: u64) -> u64 {
        (seq + 1).saturating_sub(self.limits.max_versions).max(1)
    }

    /// Work after the commit point. Failures here are logged, never reported: the write is
    /// durable, and leftovers (pruned bodies) are only garbage.
    async fn after_commit(
        &self,
        who: &Identity,
        meta: &FileMeta,
        operation: Operation,
        pruned: Vec<BodyRef>,
    ) {
        for body in &pruned {
            self.discard_body(body).await;
        }
        let event = WorkspaceEvent {
            tenant: who.scope.tenant.to_string(),
            workspace: who.scope.workspace.to_string(),
            path: meta.path.clone(),
            version: meta.version,
            etag: meta.etag.clone(),
            operation,
            principal: who.principal.clone(),
            time: format_time(meta.updated_at),
        };
        if let Err(e) = self.events.publish(event).await {
            tracing::warn!(error = %e, path = %meta.path, "event publish failed after commit");
        }
    }

    async fn discard_body(&self, body: &BodyRef) {
        if let Err(e) = self.bodies.delete(body).await {
            tracing::warn!(error = %e, key = %body.key, "could not delete an uncommitted body");
        }
    }

    fn replay(
        &self,
        rec: IdempotencyRecord,
        fingerprint: &str,
        content: Vec<u8>,
    ) -> Result<StoredFile> {
        if rec.fingerprint != fingerprint {
            return Err(WorkspaceError::Conflict {
                message: format!(
                    "Idempotency-Key {} was already used for a different request; use a new key",
                    rec.key
                ),
                current_version: rec.result.version,
            });
        }
        Ok(StoredFile {
            meta: rec.result,
            content,
        })
    }
}
