//! Writes: put (with preconditions, idempotency and redaction) and delete, both through the
//! compare-and-swap commit loop described in the module root.

use super::*;
use crate::model::Points;

enum PutOutcome {
    Stored(FileMeta),
    Replay(IdempotencyRecord),
    /// The tenant's registered secrets changed after the content was redacted.
    SecretsMoved,
}

/// What [`WorkspaceService::store`] did.
pub(super) enum Stored {
    File(StoredFile),
    /// Nothing: the secrets the content was redacted with changed; redact again.
    SecretsMoved,
}

/// Rounds of redact-and-store when the tenant's registered secrets keep changing.
pub(super) const MAX_SECRETS_ROUNDS: usize = 5;

/// What a new version holds: its body (stored already), content type, SHA-256 and size,
/// and where it came from.
pub(super) struct NewContent<'a> {
    pub body: &'a BodyRef,
    pub content_type: &'a str,
    pub sha: &'a str,
    pub size: u64,
    /// The epoch of the secrets the content was redacted with, where the store keeps one.
    pub secrets: Option<SecretsEpoch>,
    pub merge: Option<MergeOrigin>,
}

impl WorkspaceService {
    /// The commit that writes `new` over `head` by `who` at `now` (no idempotency record):
    /// the next version of the live lineage, or version 1 of `lineage` (a fresh one when
    /// `None`) where no live file is; and the file as it will read.
    pub(super) fn put_commit(
        &self,
        who: &Identity,
        path: &FilePath,
        head: Option<&Head>,
        lineage: Option<String>,
        new: NewContent<'_>,
        (now, points): (Millis, &Points),
    ) -> (Commit, FileMeta) {
        let live_head = head.filter(|h| h.is_live());
        let (lineage, version) = match live_head {
            Some(h) => (h.lineage.clone(), h.version + 1),
            None => (lineage.unwrap_or_else(|| self.ids.new_id()), 1),
        };
        let seq = head.map_or(1, |h| h.seq + 1);
        let (pins, released) = self.carry_pins(head, seq, now, points);
        let pin_rev = head.map_or(0, |h| h.pin_rev);
        let etag = make_etag(&lineage, version, seq, new.sha);
        let meta = FileMeta {
            path: path.to_string(),
            content_type: new.content_type.to_owned(),
            version,
            etag: etag.clone(),
            size: new.size,
            updated_at: now,
            sha256: new.sha.to_owned(),
            principal: who.principal.clone(),
        };
        let new_head = Head {
            path: path.to_string(),
            lineage,
            version,
            seq,
            etag,
            size: new.size,
            content_type: new.content_type.to_owned(),
            updated_at: now,
            deleted: false,
            body: Some(new.body.clone()),
            sha256: new.sha.to_owned(),
            pins,
            pin_rev,
            principal: who.principal.clone(),
            point: points.rev,
        };
        let commit = Commit {
            scope: who.scope.clone(),
            path: path.clone(),
            expect: Expect::of(head),
            version: VersionRecord::of_head(&new_head, new.merge),
            head: new_head,
            live_delta: if live_head.is_some() { 0 } else { 1 },
            max_files: self.limits.max_files,
            idempotency: None,
            idempotency_valid_after: now - IDEMPOTENCY_TTL_MS,
            retain_from_seq: self.retain_from(seq),
            released,
            secrets_epoch: new.secrets,
            points_rev: points.rev,
        };
        (commit, meta)
    }

    /// The commit that deletes the live file `h` by `who` at `now`: a tombstone, the next
    /// version of its lineage.
    pub(super) fn delete_commit(
        &self,
        who: &Identity,
        path: &FilePath,
        h: &Head,
        (now, points): (Millis, &Points),
        merge: Option<&MergeOrigin>,
    ) -> Commit {
        let seq = h.seq + 1;
        let version = h.version + 1;
        let (pins, released) = self.carry_pins(Some(h), seq, now, points);
        let etag = make_etag(&h.lineage, version, seq, "deleted");
        let tombstone = Head {
            version,
            seq,
            etag,
            size: 0,
            updated_at: now,
            deleted: true,
            body: None,
            sha256: String::new(),
            pins,
            principal: who.principal.clone(),
            point: points.rev,
            ..h.clone()
        };
        Commit {
            scope: who.scope.clone(),
            path: path.clone(),
            expect: Expect::of(Some(h)),
            version: VersionRecord::of_head(&tombstone, merge.cloned()),
            head: tombstone,
            live_delta: -1,
            max_files: self.limits.max_files,
            idempotency: None,
            idempotency_valid_after: now,
            retain_from_seq: self.retain_from(seq),
            released,
            // A tombstone stores no content: nothing to redact.
            secrets_epoch: None,
            points_rev: points.rev,
        }
    }
}

/// The head a put's first commit is planned from.
enum Prefetched {
    /// Read from the store (beside the body upload).
    Read(Option<Head>),
    /// Named by the request's precondition ([`WorkspaceService::named_head`]), not read.
    Named(Named),
}

/// A head a precondition names: `None` for `If-None-Match: *`.
struct Named {
    head: Option<Head>,
}

/// A put's body, already stored, and what its commit records of it.
struct UploadedBody<'a> {
    body: &'a BodyRef,
    content_type: &'a str,
    sha: &'a str,
    /// The request's fingerprint, recorded with its `Idempotency-Key`.
    fingerprint: &'a str,
    /// The secrets in force when the content was redacted (`None`: nothing to redact).
    secrets: Option<SecretsEpoch>,
}

impl WorkspaceService {
    /// Writes a new version (or the first version of a new lineage).
    pub async fn put(&self, who: &Identity, req: PutRequest) -> Result<StoredFile> {
        self.put_within(who, (self.limits.max_file_bytes, "maxFileBytes"), req)
            .await
    }

    /// [`Self::put`] with content bounded by `limit` (a restore may write what an upload
    /// wrote).
    pub(super) async fn put_within(
        &self,
        who: &Identity,
        limit: (u64, &str),
        req: PutRequest,
    ) -> Result<StoredFile> {
        let path = req
            .path
            .clone()
            .ok_or_else(|| WorkspaceError::validation("path is required"))?;
        who.paths.check_write(&path)?;
        if let Some(v) = &req.if_match {
            check_header_value("If-Match", v)?;
        }
        if let Some(v) = &req.idempotency_key {
            check_header_value("Idempotency-Key", v)?;
        }
        let size = req.content.len() as u64;
        let (limit, name) = limit;
        if size > limit {
            return Err(WorkspaceError::TooLarge {
                message: format!("content is {size} bytes; {name} is {limit}"),
                limit,
            });
        }
        let content_type = content_type_for(&path, req.content_type.clone())?;
        let (if_match, if_none) = (req.if_match.clone(), req.if_none_match_any);
        let fingerprint = |sha: &str| {
            sha256_hex(format!("{path}\n{content_type}\n{sha}\n{if_match:?}\n{if_none}").as_bytes())
        };
        self.redact_and_store(who, &path, req, &content_type, fingerprint)
            .await
    }

    /// Steps 1-4 for content as the client sent it: WSR-1 redaction, then [`Self::store`].
    /// Where the secret store keeps an epoch, the tenant's secrets are kept between writes
    /// and the commit checks the epoch; if a secret was registered or removed in between,
    /// the commit changes nothing, and this reads the secrets again and starts over, so a
    /// registered secret is never stored in plain text.
    pub(super) async fn redact_and_store(
        &self,
        who: &Identity,
        path: &FilePath,
        req: PutRequest,
        content_type: &str,
        fingerprint_of: impl Fn(&str) -> String,
    ) -> Result<StoredFile> {
        // Every write of content funnels through here (put, restore, upload commit).
        who.paths.check_write(path)?;
        for _ in 0..MAX_SECRETS_ROUNDS {
            let (content, secrets) = self.redact_content(who, path, &req.content).await?;
            let sha = sha256_hex(&content);
            let attempt = PutRequest {
                content,
                ..req.clone()
            };
            let stored = self
                .store(
                    who,
                    path,
                    attempt,
                    content_type,
                    &sha,
                    &fingerprint_of(&sha),
                    secrets,
                )
                .await?;
            match stored {
                Stored::File(f) => return Ok(f),
                Stored::SecretsMoved => self.forget_secrets(&who.scope.tenant),
            }
        }
        Err(WorkspaceError::internal(format!(
            "the tenant's registered secrets changed {MAX_SECRETS_ROUNDS} times during one write of {path}"
        )))
    }

    /// WSR-1 for a body about to be stored: UTF-8 text is stored (and answered, and
    /// hashed) redacted, with the epoch of the secrets used where there is one; other bytes
    /// as they are.
    pub(super) async fn redact_content(
        &self,
        who: &Identity,
        path: &FilePath,
        content: &[u8],
    ) -> Result<(Vec<u8>, Option<SecretsEpoch>)> {
        let Ok(text) = std::str::from_utf8(content) else {
            return Ok((content.to_vec(), None));
        };
        let (registered, epoch) = self.secrets_for_commit(&who.scope.tenant).await?;
        let redacted = self.redactor.redact(text, &registered);
        if redacted.hits.is_empty() {
            return Ok((content.to_vec(), epoch));
        }
        tracing::info!(rules = ?redacted.hits, %path, "secrets redacted before storing");
        Ok((redacted.text.into_bytes(), epoch))
    }

    /// Steps 2-4 of the write protocol for content already checked and redacted: the
    /// idempotency replay, the body upload, and the commit loop. `fingerprint` tells a
    /// retry of this request from another request under the same key.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn store(
        &self,
        who: &Identity,
        path: &FilePath,
        req: PutRequest,
        content_type: &str,
        sha: &str,
        fingerprint: &str,
        secrets: Option<SecretsEpoch>,
    ) -> Result<Stored> {
        let scope = &who.scope;
        let path = path.clone();
        let content_type = content_type.to_owned();
        let now = self.clock.now_ms();
        if let Some(rec) = self
            .recorded_key(scope, req.idempotency_key.as_deref(), now)
            .await?
        {
            return self.replay(rec, fingerprint, req.content).map(Stored::File);
        }

        let (body, head) = match self.named_head(scope, &path, &req) {
            // The precondition names the head: no read before the commit.
            Some(named) => {
                let key = Self::body_key(scope, &path);
                let body = self
                    .bodies
                    .put(&key, req.content.clone(), &content_type)
                    .await?;
                (body, Prefetched::Named(named))
            }
            None => {
                let (body, head) = self
                    .store_beside_head(scope, &path, req.content.clone(), &content_type)
                    .await?;
                (body, Prefetched::Read(head))
            }
        };
        let uploaded = UploadedBody {
            body: &body,
            content_type: &content_type,
            sha,
            fingerprint,
            secrets,
        };
        let outcome = self
            .commit_put(who, &path, &req, &uploaded, now, head)
            .await;
        match outcome {
            Ok(PutOutcome::Stored(meta)) => Ok(Stored::File(StoredFile {
                meta,
                content: req.content,
            })),
            Ok(PutOutcome::Replay(rec)) => {
                self.discard_body(&body).await;
                self.replay(rec, fingerprint, req.content).map(Stored::File)
            }
            Ok(PutOutcome::SecretsMoved) => {
                self.discard_body(&body).await;
                Ok(Stored::SecretsMoved)
            }
            Err(e) => {
                self.discard_body(&body).await;
                Err(e)
            }
        }
    }

    /// The head a write's precondition names, where the commit may be planned from it
    /// alone, with no read: `If-None-Match: *` names no head (the path was never written),
    /// and an `If-Match` of one etag of the current form names a live head without pins
    /// (its version, seq and lineage, `parse_etag`), conditioned on exactly that etag
    /// ([`Expect::Tagged`]). Only under a registry this process keeps (the commit checks
    /// its revision), and for `If-Match` only when no point is live (a superseded version
    /// would need a hold, decided from the head). Anything else reads the head first, and
    /// so does the retry of a named commit the store refused.
    fn named_head(&self, scope: &Scope, path: &FilePath, req: &PutRequest) -> Option<Named> {
        if scope.workspace.fork_parent().is_some() || req.merge.is_some() {
            return None; // a fork's file may be inherited from its base: read it
        }
        let points = self.kept_points(scope)?;
        if req.if_none_match_any {
            return Some(Named { head: None });
        }
        let etag = req.if_match.as_deref()?;
        let (version, seq, lineage) = crate::model::parse_etag(etag)?;
        if !points.live.is_empty() {
            return None;
        }
        Some(Named {
            head: Some(Head::named(path.as_str(), lineage, version, seq, etag)),
        })
    }

    async fn commit_put(
        &self,
        who: &Identity,
        path: &FilePath,
        req: &PutRequest,
        uploaded: &UploadedBody<'_>,
        now: Millis,
        first_head: Prefetched,
    ) -> Result<PutOutcome> {
        let UploadedBody {
            body,
            content_type,
            sha,
            fingerprint,
            secrets,
        } = uploaded;
        let mut prefetched = Some(first_head);
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            // Stamped when the commit is tried, not when the write began (its upload may
            // have taken a while): a change-log entry is never much older than its commit
            // (what a fork's diff relies on, `service/forks.rs`).
            let now = self.clock.now_ms().max(now);
            let (head, named) = match prefetched.take() {
                Some(Prefetched::Read(h)) => (h, false),
                Some(Prefetched::Named(n)) => (n.head, true),
                None => (self.meta.head(&who.scope, path).await?, false),
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
            let points = self.points_for_commit(&who.scope).await?;
            let (mut commit, meta) = self.put_commit(
                who,
                path,
                head.as_ref(),
                None,
                NewContent {
                    body,
                    content_type,
                    sha,
                    size: req.content.len() as u64,
                    secrets: secrets.clone(),
                    merge: req.merge.clone(),
                },
                (now, &points),
            );
            if named {
                commit.expect = match &head {
                    Some(h) => Expect::Tagged {
                        etag: h.etag.clone(),
                    },
                    None => Expect::Absent,
                };
            }
            commit.idempotency = req.idempotency_key.as_ref().map(|key| IdempotencyRecord {
                key: key.clone(),
                fingerprint: (*fingerprint).to_owned(),
                result: meta.clone(),
                created_at: now,
            });
            let record = commit.version.clone();
            match self.meta.commit(commit).await? {
                CommitOutcome::Committed { pruned } => {
                    self.after_commit(who, path, &record, pruned).await;
                    return Ok(PutOutcome::Stored(meta));
                }
                CommitOutcome::SecretsMoved => return Ok(PutOutcome::SecretsMoved),
                CommitOutcome::HeadMoved => continue,
                CommitOutcome::PointsMoved => self.forget_points(&who.scope),
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
        self.delete_as(who, path, if_match, None).await
    }

    /// [`Self::delete`], by the merge `merge` when given (the tombstone records it).
    pub(super) async fn delete_as(
        &self,
        who: &Identity,
        path: &FilePath,
        if_match: Option<&str>,
        merge: Option<&MergeOrigin>,
    ) -> Result<()> {
        who.paths.check_write(path)?;
        if let Some(v) = if_match {
            check_header_value("If-Match", v)?;
        }
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let head = self.meta.head(&who.scope, path).await?;
            let Some(h) = live(&head) else {
                return Err(WorkspaceError::not_found(format!("no file at {path}")));
            };
            check_if_match(if_match, &head)?;
            let points = self.points_for_commit(&who.scope).await?;
            let commit = self.delete_commit(who, path, h, (self.clock.now_ms(), &points), merge);
            let record = commit.version.clone();
            match self.meta.commit(commit).await? {
                CommitOutcome::Committed { pruned } => {
                    self.after_commit(who, path, &record, pruned).await;
                    return Ok(());
                }
                CommitOutcome::HeadMoved => continue,
                CommitOutcome::PointsMoved => self.forget_points(&who.scope),
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

    /// The live record of an idempotency key, if one was given and is recorded.
    pub(super) async fn recorded_key(
        &self,
        scope: &Scope,
        key: Option<&str>,
        now: Millis,
    ) -> Result<Option<IdempotencyRecord>> {
        let Some(key) = key else {
            return Ok(None);
        };
        Ok(self
            .meta
            .idempotency(scope, key)
            .await?
            .filter(|rec| rec.created_at > now - IDEMPOTENCY_TTL_MS))
    }

    pub(super) fn replay(
        &self,
        rec: IdempotencyRecord,
        fingerprint: &str,
        content: Vec<u8>,
    ) -> Result<StoredFile> {
        if rec.fingerprint != fingerprint {
            return Err(key_reused(&rec));
        }
        Ok(StoredFile {
            meta: rec.result,
            content,
        })
    }
}

/// The refusal of an `Idempotency-Key` recorded for another request (a put's or a
/// commit's).
pub(super) fn key_reused(rec: &IdempotencyRecord) -> WorkspaceError {
    WorkspaceError::Conflict {
        message: format!(
            "Idempotency-Key {} was already used for a different request; use a new key",
            rec.key
        ),
        current_version: rec.result.version,
    }
}
