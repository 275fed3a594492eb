//! Atomic multi-path commits: puts, deletes and moves that apply together or not at all
//! (`POST /v1/host/workspace/commits`, the MCP `commit` tool). A rename in a mount, an
//! editor's atomic save, or an agent's multi-file edit is one step no reader sees half of.
//!
//! The protocol is the write path's, for a batch (the merge's `CommitStore::commit_many`):
//! 1. check every operation (paths, scopes, sizes, that no path is named twice) and the
//!    whole against [`MAX_COMMIT_OPERATIONS`] and [`MAX_COMMIT_BYTES`];
//! 2. redact each put's content (WSR-1) and store its body, and a move's copy of its
//!    source (an orphan until committed: discarded when the commit fails, swept if the
//!    process dies);
//! 3. read every head and check each precondition (`ifMatch`, `ifNoneMatch: *`, a delete
//!    or a move of a file that exists): a failed one is a 409 naming the path and its
//!    current version, nothing applied;
//! 4. one `commit_many`: every change with its version, change-log row and event, or none.
//!    A head that moved meanwhile re-reads and re-checks (step 3); the tenant's secrets
//!    changing meanwhile redacts again (step 2). DynamoDB takes a batch of one
//!    `TransactWriteItems` (100 actions): a commit that does not fit is 413 with the limit.
//!
//! A move is a delete of `from` (its history stays readable) and a put of `to` with the
//! same bytes and content type, as a new version of `to`. An `Idempotency-Key` is recorded
//! with the batch's first change: a retry with the same request answers the recorded
//! outcome's versions again without applying anything; another request under the same key
//! is 409, as for a put.

use super::write::{NewContent, MAX_SECRETS_ROUNDS};
use super::*;
use crate::ports::BatchOutcome;

/// Most operations in one commit (a move counts once; it changes two paths).
pub const MAX_COMMIT_OPERATIONS: usize = 20;
/// Most bytes of content one commit carries, all its puts together (moves copy in the
/// store and count nothing here): 4 MiB, base64-encoded with its JSON still under Lambda's
/// 6 MB request payload, so the same commit is accepted locally and on AWS.
pub const MAX_COMMIT_BYTES: u64 = 4 * 1024 * 1024;

/// One operation of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOp {
    Put {
        path: FilePath,
        content: Vec<u8>,
        content_type: Option<String>,
        if_match: Option<String>,
        if_none_match_any: bool,
    },
    Delete {
        path: FilePath,
        if_match: Option<String>,
    },
    Move {
        from: FilePath,
        to: FilePath,
        /// Of `from`.
        if_match: Option<String>,
        /// `to` must not exist.
        if_none_match_any: bool,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitRequest {
    pub operations: Vec<CommitOp>,
    pub idempotency_key: Option<String>,
}

/// What one operation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Put(FileMeta),
    /// The tombstone's version (a delete is a version too).
    Delete {
        path: String,
        version: u64,
    },
    Move {
        from: String,
        from_version: u64,
        to: FileMeta,
    },
}

/// A commit's answer: each operation's result, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitAnswer {
    pub results: Vec<OpResult>,
    /// An `Idempotency-Key` retry: nothing was applied now.
    pub replayed: bool,
}

/// One path's change of the batch.
struct Change {
    path: FilePath,
    /// `None`: a delete (a tombstone).
    put: Option<PreparedPut>,
    if_match: Option<String>,
    if_none_match_any: bool,
    /// The operation it belongs to.
    op: usize,
}

struct PreparedPut {
    body: BodyRef,
    content_type: String,
    sha: String,
    size: u64,
    secrets: Option<SecretsEpoch>,
}

impl WorkspaceService {
    pub async fn commit_operations(
        &self,
        who: &Identity,
        req: CommitRequest,
    ) -> Result<CommitAnswer> {
        let fingerprint = check_request(who, &req, self.limits.max_file_bytes)?;
        if let Some(v) = &req.idempotency_key {
            check_header_value("Idempotency-Key", v)?;
        }
        let now = self.clock.now_ms();
        if let Some(rec) = self
            .recorded_key(&who.scope, req.idempotency_key.as_deref(), now)
            .await?
        {
            return self.replay_commit(who, &req, rec, &fingerprint).await;
        }
        for _ in 0..MAX_SECRETS_ROUNDS {
            let mut changes = self.prepare(who, &req).await?;
            let outcome = self
                .commit_prepared(who, &req, &mut changes, &fingerprint)
                .await;
            match outcome {
                Ok(Some(answer)) => return Ok(answer),
                // The tenant's secrets moved: redact and store again.
                Ok(None) => {
                    self.discard_prepared(&changes).await;
                    self.forget_secrets(&who.scope.tenant);
                }
                Err(e) => {
                    self.discard_prepared(&changes).await;
                    return match e {
                        Replay(rec) => self.replay_commit(who, &req, rec, &fingerprint).await,
                        Failed(e) => Err(e),
                    };
                }
            }
        }
        Err(WorkspaceError::internal(
            "the tenant's registered secrets changed during every attempt of this commit",
        ))
    }

    /// Step 2: each put redacted and its body stored; each move's source copied.
    async fn prepare(&self, who: &Identity, req: &CommitRequest) -> Result<Vec<Change>> {
        let mut changes: Vec<Change> = Vec::new();
        let result = async {
            for (op, o) in req.operations.iter().enumerate() {
                match o {
                    CommitOp::Put {
                        path,
                        content,
                        content_type,
                        if_match,
                        if_none_match_any,
                    } => {
                        let content_type = content_type_for(path, content_type.clone())?;
                        let (content, secrets) = self.redact_content(who, path, content).await?;
                        let put = self
                            .prepared(who, path, content, content_type, secrets)
                            .await?;
                        changes.push(Change {
                            path: path.clone(),
                            put: Some(put),
                            if_match: if_match.clone(),
                            if_none_match_any: *if_none_match_any,
                            op,
                        });
                    }
                    CommitOp::Delete { path, if_match } => changes.push(Change {
                        path: path.clone(),
                        put: None,
                        if_match: if_match.clone(),
                        if_none_match_any: false,
                        op,
                    }),
                    CommitOp::Move {
                        from,
                        to,
                        if_match,
                        if_none_match_any,
                    } => {
                        // The bytes as stored (already redacted when they were written).
                        let source = match self.get(who, from, None).await {
                            Ok(f) => f,
                            Err(WorkspaceError::NotFound(_)) => {
                                return Err(conflict(
                                    format!("move: there is no file at {from}"),
                                    &None,
                                ))
                            }
                            Err(e) => return Err(e),
                        };
                        let copy = self
                            .prepared(
                                who,
                                to,
                                source.content,
                                source.meta.content_type.clone(),
                                None,
                            )
                            .await?;
                        changes.push(Change {
                            path: from.clone(),
                            put: None,
                            if_match: if_match
                                .clone()
                                // Moved is what was read: a change since is a conflict.
                                .or_else(|| Some(source.meta.etag.clone())),
                            if_none_match_any: false,
                            op,
                        });
                        changes.push(Change {
                            path: to.clone(),
                            put: Some(copy),
                            if_match: None,
                            if_none_match_any: *if_none_match_any,
                            op,
                        });
                    }
                }
            }
            Ok(())
        }
        .await;
        match result {
            Ok(()) => Ok(changes),
            Err(e) => {
                self.discard_prepared(&changes).await;
                Err(e)
            }
        }
    }

    async fn prepared(
        &self,
        who: &Identity,
        path: &FilePath,
        content: Vec<u8>,
        content_type: String,
        secrets: Option<SecretsEpoch>,
    ) -> Result<PreparedPut> {
        let sha = sha256_hex(&content);
        let size = content.len() as u64;
        let body = self
            .bodies
            .put(&Self::body_key(&who.scope, path), content, &content_type)
            .await?;
        Ok(PreparedPut {
            body,
            content_type,
            sha,
            size,
            secrets,
        })
    }

    async fn discard_prepared(&self, changes: &[Change]) {
        for c in changes {
            if let Some(p) = &c.put {
                self.discard_body(&p.body).await;
            }
        }
    }

    /// Steps 3 and 4. `Ok(None)`: the secrets moved, nothing applied.
    async fn commit_prepared(
        &self,
        who: &Identity,
        req: &CommitRequest,
        changes: &mut [Change],
        fingerprint: &str,
    ) -> std::result::Result<Option<CommitAnswer>, Refusal> {
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let now = self.clock.now_ms();
            let mut heads = Vec::with_capacity(changes.len());
            for c in changes.iter() {
                heads.push(self.meta.head(&who.scope, &c.path).await?);
            }
            let points = self.points_for_commit(&who.scope).await?;
            let mut commits = Vec::with_capacity(changes.len());
            let mut metas: Vec<Option<FileMeta>> = Vec::with_capacity(changes.len());
            for (c, head) in changes.iter().zip(&heads) {
                check_if_match(c.if_match.as_deref(), head).map_err(|e| naming(&c.path, e))?;
                match &c.put {
                    Some(p) => {
                        if c.if_none_match_any {
                            if let Some(h) = live(head) {
                                return Err(Failed(conflict(
                                    format!(
                                        "{}: ifNoneMatch: * given but it exists (version {}); nothing of this commit was applied",
                                        c.path, h.version
                                    ),
                                    head,
                                )));
                            }
                        }
                        let (commit, meta) = self.put_commit(
                            who,
                            &c.path,
                            head.as_ref(),
                            None,
                            NewContent {
                                body: &p.body,
                                content_type: &p.content_type,
                                sha: &p.sha,
                                size: p.size,
                                secrets: p.secrets.clone(),
                                merge: None,
                            },
                            (now, &points),
                        );
                        commits.push(commit);
                        metas.push(Some(meta));
                    }
                    None => {
                        let h = live(head).ok_or_else(|| {
                            conflict(
                                format!(
                                    "{}: there is no file to delete or move; nothing of this commit was applied",
                                    c.path
                                ),
                                head,
                            )
                        })?;
                        commits.push(self.delete_commit(who, &c.path, h, (now, &points), None));
                        metas.push(None);
                    }
                }
            }
            // Deletions first: a new file's quota check counts them gone.
            let mut order: Vec<usize> = (0..commits.len()).collect();
            order.sort_by_key(|&i| changes[i].put.is_some());
            let mut batch: Vec<Commit> = Vec::with_capacity(commits.len());
            let mut slots: Vec<Option<Commit>> = commits.into_iter().map(Some).collect();
            for &i in &order {
                if let Some(c) = slots[i].take() {
                    batch.push(c);
                }
            }
            if let (Some(first), Some(key)) = (batch.first_mut(), &req.idempotency_key) {
                first.idempotency = Some(IdempotencyRecord {
                    key: key.clone(),
                    fingerprint: fingerprint.to_owned(),
                    result: FileMeta {
                        path: first.path.to_string(),
                        content_type: first.head.content_type.clone(),
                        version: first.head.version,
                        etag: first.head.etag.clone(),
                        size: first.head.size,
                        updated_at: now,
                        sha256: first.head.sha256.clone(),
                        principal: who.principal.clone(),
                    },
                    created_at: now,
                });
            }
            if !self.meta.fits_one_commit(&batch) {
                return Err(Failed(WorkspaceError::TooLarge {
                    message: format!(
                        "this commit's {} changes do not fit one transaction of the store (DynamoDB: 100 actions, 4 MB); send fewer operations per commit",
                        batch.len()
                    ),
                    limit: batch.len() as u64,
                }));
            }
            let records: Vec<(FilePath, VersionRecord)> = batch
                .iter()
                .map(|c| (c.path.clone(), c.version.clone()))
                .collect();
            match self.meta.commit_many(batch).await? {
                BatchOutcome::Committed { pruned } => {
                    self.after_batch(who, &records, pruned).await;
                    let versions: Vec<u64> = changes
                        .iter()
                        .zip(&heads)
                        .map(|(_, h)| h.as_ref().map_or(1, |h| h.version + 1))
                        .collect();
                    return Ok(Some(answer(req, changes, &metas, &versions)));
                }
                BatchOutcome::Refused { index, outcome } => {
                    let path = &records[index].0;
                    match outcome {
                        CommitOutcome::HeadMoved => continue,
                        CommitOutcome::PointsMoved => self.forget_points(&who.scope),
                        CommitOutcome::SecretsMoved => return Ok(None),
                        CommitOutcome::KeyUsed(rec) => return Err(Replay(rec)),
                        CommitOutcome::TooManyFiles => {
                            return Err(Failed(WorkspaceError::TooLarge {
                                message: format!(
                                    "the workspace already holds maxFiles = {} files; this commit would add {path}",
                                    self.limits.max_files
                                ),
                                limit: self.limits.max_files,
                            }))
                        }
                        CommitOutcome::Committed { .. } => {
                            return Err(Failed(WorkspaceError::internal(
                                "a refused batch reported a committed change",
                            )))
                        }
                    }
                }
            }
        }
        Err(Failed(WorkspaceError::internal(format!(
            "gave up after {MAX_COMMIT_ATTEMPTS} concurrent changes to this commit's paths"
        ))))
    }

    /// A retry of a recorded commit: the same request answers again (each path's current
    /// version, where the path still holds what the commit wrote), another one is refused.
    async fn replay_commit(
        &self,
        who: &Identity,
        req: &CommitRequest,
        rec: IdempotencyRecord,
        fingerprint: &str,
    ) -> Result<CommitAnswer> {
        if rec.fingerprint != fingerprint {
            return Err(super::write::key_reused(&rec));
        }
        let mut results = Vec::with_capacity(req.operations.len());
        for o in &req.operations {
            results.push(match o {
                CommitOp::Put { path, .. } => OpResult::Put(self.current_meta(who, path).await?),
                CommitOp::Delete { path, .. } => OpResult::Delete {
                    path: path.to_string(),
                    version: 0,
                },
                CommitOp::Move { from, to, .. } => OpResult::Move {
                    from: from.to_string(),
                    from_version: 0,
                    to: self.current_meta(who, to).await?,
                },
            });
        }
        Ok(CommitAnswer {
            results,
            replayed: true,
        })
    }
}

impl WorkspaceService {
    /// The live file at `path` as a listing shows it (a replay's answer).
    async fn current_meta(&self, who: &Identity, path: &FilePath) -> Result<FileMeta> {
        let head = self.meta.head(&who.scope, path).await?;
        live(&head)
            .map(Head::meta)
            .ok_or_else(|| WorkspaceError::not_found(format!("no file at {path}")))
    }
}

/// A refusal of one path's precondition, naming the path and that nothing was applied.
fn naming(path: &FilePath, e: WorkspaceError) -> WorkspaceError {
    match e {
        WorkspaceError::Conflict {
            message,
            current_version,
        } => WorkspaceError::Conflict {
            message: format!("{path}: {message}; nothing of this commit was applied"),
            current_version,
        },
        other => other,
    }
}

/// Why a commit attempt stopped.
enum Refusal {
    Failed(WorkspaceError),
    /// The key was recorded meanwhile (a concurrent retry).
    Replay(IdempotencyRecord),
}
use Refusal::{Failed, Replay};

impl From<WorkspaceError> for Refusal {
    fn from(e: WorkspaceError) -> Self {
        Failed(e)
    }
}

fn answer(
    req: &CommitRequest,
    changes: &[Change],
    metas: &[Option<FileMeta>],
    versions: &[u64],
) -> CommitAnswer {
    let mut results = Vec::with_capacity(req.operations.len());
    for (op, o) in req.operations.iter().enumerate() {
        let of_op: Vec<usize> = (0..changes.len())
            .filter(|&i| changes[i].op == op)
            .collect();
        results.push(match o {
            CommitOp::Put { .. } => OpResult::Put(
                metas[of_op[0]]
                    .clone()
                    .unwrap_or_else(|| unreachable!("a put's change has its meta")),
            ),
            CommitOp::Delete { path, .. } => OpResult::Delete {
                path: path.to_string(),
                version: versions[of_op[0]],
            },
            CommitOp::Move { from, .. } => OpResult::Move {
                from: from.to_string(),
                from_version: versions[of_op[0]],
                to: metas[of_op[1]]
                    .clone()
                    .unwrap_or_else(|| unreachable!("a move's second change is a put")),
            },
        });
    }
    CommitAnswer {
        results,
        replayed: false,
    }
}

/// Step 1: what the request alone decides; its fingerprint (for the idempotency key).
fn check_request(who: &Identity, req: &CommitRequest, max_file_bytes: u64) -> Result<String> {
    if req.operations.is_empty() {
        return Err(WorkspaceError::validation(
            "a commit needs at least one operation",
        ));
    }
    if req.operations.len() > MAX_COMMIT_OPERATIONS {
        return Err(WorkspaceError::TooLarge {
            message: format!(
                "{} operations; a commit holds at most {MAX_COMMIT_OPERATIONS}",
                req.operations.len()
            ),
            limit: MAX_COMMIT_OPERATIONS as u64,
        });
    }
    let mut named = std::collections::HashSet::new();
    let mut total: u64 = 0;
    let mut print = String::new();
    for o in &req.operations {
        let paths: Vec<&FilePath> = match o {
            CommitOp::Put { path, content, .. } => {
                let size = content.len() as u64;
                if size > max_file_bytes {
                    return Err(WorkspaceError::TooLarge {
                        message: format!(
                            "{path}: content is {size} bytes; maxFileBytes is {max_file_bytes}"
                        ),
                        limit: max_file_bytes,
                    });
                }
                total += size;
                vec![path]
            }
            CommitOp::Delete { path, .. } => vec![path],
            CommitOp::Move { from, to, .. } => vec![from, to],
        };
        for p in paths {
            who.paths.check_write(p)?;
            if !named.insert(p.as_str().to_owned()) {
                return Err(WorkspaceError::validation(format!(
                    "{p} is named by two operations of this commit; a commit changes each path once"
                )));
            }
        }
        for v in match o {
            CommitOp::Put { if_match, .. }
            | CommitOp::Delete { if_match, .. }
            | CommitOp::Move { if_match, .. } => if_match.iter(),
        } {
            check_header_value("ifMatch", v)?;
        }
        // The fingerprint names each put's content by its hash, not its bytes.
        let line = match o {
            CommitOp::Put {
                path,
                content,
                content_type,
                if_match,
                if_none_match_any,
            } => format!(
                "put {path} {} {content_type:?} {if_match:?} {if_none_match_any}",
                sha256_hex(content)
            ),
            other => format!("{other:?}"),
        };
        print.push_str(&line);
        print.push('\n');
    }
    if total > MAX_COMMIT_BYTES {
        return Err(WorkspaceError::TooLarge {
            message: format!(
                "this commit carries {total} bytes of content; at most {MAX_COMMIT_BYTES} per commit"
            ),
            limit: MAX_COMMIT_BYTES,
        });
    }
    Ok(sha256_hex(print.as_bytes()))
}
