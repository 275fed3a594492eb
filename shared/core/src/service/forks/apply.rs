//! Applying a merge (or a rebase) to its target, all or nothing where the store can.
//!
//! Every change goes through the write path's rules (the caller's path scope, the size
//! bound, the content type, WSR-1 redaction with the secrets epoch checked at the commit,
//! the caller as principal, history and retention with the pins carried, the file quota,
//! events and change-log entries naming the merge), and each is conditional on the target
//! head the merge compared (`expected`: its etag, or no live file).
//!
//! 1. **Prepare.** Each put's content is redacted and its body uploaded (an orphan until
//!    committed: discarded when the merge fails, swept if the process dies), each path's
//!    head is read and must still be what the merge compared (else 409 naming the path,
//!    nothing applied).
//! 2. **One commit** (`CommitStore::commit_many`) when the store takes the whole batch
//!    (memory and redb always; DynamoDB when it fits one `TransactWriteItems`): every
//!    change lands or none does. A head that moved only by a pin is read again and the
//!    batch retried; one whose file changed is a 409 naming it, nothing applied.
//! 3. **A durable plan** otherwise: the plan ([`crate::forks::plan`]) is recorded first,
//!    then applied in batches that each fit one commit. A retry with the same
//!    `Idempotency-Key` reads the plan and finishes it: each change's head tells whether
//!    it is applied (`done`), still to apply (`expected`), or was changed by someone else
//!    (then its history tells whether this merge applied it first). Between batches
//!    readers see the batches applied so far. A path changed by another writer while the
//!    plan runs stops it with a 409 (the batches before stay applied) and ends the plan,
//!    so merging again compares anew: what was applied compares equal on both sides.

use super::*;
use crate::forks::plan::{MergePlan, Planned, PlannedPut, MAX_PLAN_BYTES, MERGE_PLAN_KIND};
use crate::ports::BatchOutcome;

/// Rounds of redact-and-commit when the tenant's registered secrets keep changing.
const MAX_SECRETS_ROUNDS: usize = 5;
/// Versions of a path searched for a change a stopped merge applied before someone else
/// wrote over it.
const HISTORY_LOOKBACK: usize = 100;

/// Where a merge keeps its plan if it needs one, and what the plan must carry besides
/// the changes.
pub(super) struct PlanSlot {
    /// The record key: the `Idempotency-Key`, else the merge id.
    pub key: String,
    pub merge_id: String,
    pub fingerprint: String,
    pub align: Vec<(String, Option<Head>)>,
}

/// How far a planned change got, judged by the target's head.
enum Progress {
    Pending,
    Done(Applied),
    Moved,
}

fn progress(p: &Planned, head: Option<&Head>) -> Progress {
    if let Some(h) = head.filter(|h| h.etag == p.done) {
        return Progress::Done(applied_line(p, h.version, &h.etag));
    }
    match (&p.expected, head.filter(|h| h.is_live())) {
        (None, None) => Progress::Pending,
        (Some(e), Some(h)) if h.etag == *e => Progress::Pending,
        _ => Progress::Moved,
    }
}

/// The report line of a change committed as `version` with `etag`: a put names the version
/// it made; a delete names the version it ended (the tombstone is the next one of the
/// lineage, see `delete_commit`) and no etag, as the deleted file has no content left.
fn applied_line(p: &Planned, version: u64, etag: &str) -> Applied {
    match &p.put {
        Some(_) => Applied {
            path: p.path.clone(),
            operation: "put".to_owned(),
            version: Some(version),
            etag: Some(etag.to_owned()),
        },
        None => Applied {
            path: p.path.clone(),
            operation: "delete".to_owned(),
            version: Some(version.saturating_sub(1)),
            etag: None,
        },
    }
}

fn current_version(head: Option<&Head>) -> u64 {
    head.filter(|h| h.is_live()).map_or(0, |h| h.version)
}

/// What a batch commit did.
enum Committed {
    /// Applied (or found applied): the report lines, in the changes' order.
    Applied(Vec<Applied>),
    /// The tenant's secrets changed since the content was redacted; nothing changed.
    SecretsMoved,
}

impl WorkspaceService {
    /// Applies `ops` to the target `who` names (each with the target state compared), as
    /// the module notes say; the report lines in `ops`' order, and whether a plan was
    /// recorded (for the caller to end once the merge is complete).
    pub(super) async fn apply_merge(
        &self,
        who: &Identity,
        ops: Vec<(ParentOp, Option<FileState>)>,
        origin: &MergeOrigin,
        slot: PlanSlot,
    ) -> Result<(Vec<Applied>, bool)> {
        if ops.is_empty() {
            return Ok((Vec::new(), false));
        }
        for _ in 0..MAX_SECRETS_ROUNDS {
            let (planned, heads) = self
                .prepare_changes(who, &ops)
                .await
                .map_err(nothing_applied)?;
            let fits = {
                let now = self.clock.now_ms();
                let points = self.points_for_commit(&who.scope).await?;
                let mut commits = Vec::with_capacity(planned.len());
                for (p, h) in planned.iter().zip(&heads) {
                    commits.push(self.commit_of(who, p, h.as_ref(), origin, (now, &points))?);
                }
                self.meta.fits_one_commit(&commits)
            };
            if fits {
                match self
                    .commit_changes(who, &planned, heads, origin, false)
                    .await
                {
                    Ok(Committed::Applied(lines)) => return Ok((lines, false)),
                    Ok(Committed::SecretsMoved) => {
                        self.discard_planned(&planned).await;
                        self.forget_secrets(&who.scope.tenant);
                        continue;
                    }
                    Err(e) => {
                        self.discard_planned(&planned).await;
                        return Err(nothing_applied(e));
                    }
                }
            }
            // More than one commit takes: the plan first, then its batches.
            let plan = MergePlan {
                merge_id: slot.merge_id.clone(),
                fork_id: origin.fork_id.clone(),
                fingerprint: slot.fingerprint.clone(),
                changes: planned,
                align: slot.align.clone(),
            };
            if let Err(e) = self.put_plan(&who.scope, &slot.key, &plan).await {
                self.discard_planned(&plan.changes).await;
                return Err(e);
            }
            let lines = self.run_plan(who, &slot.key, plan, Some(heads)).await?;
            return Ok((lines, true));
        }
        Err(WorkspaceError::internal(format!(
            "the tenant's registered secrets changed {MAX_SECRETS_ROUNDS} times during one merge"
        )))
    }

    /// The plan a merge recorded under `key` in `target` and has not finished, if its
    /// request is this one (`fingerprint`); 409 if the key was used for another merge.
    pub(super) async fn open_plan(
        &self,
        target: &Scope,
        key: &str,
        fingerprint: &str,
    ) -> Result<Option<MergePlan>> {
        let now = self.clock.now_ms();
        let Some(rec) = self
            .meta
            .record(target, MERGE_PLAN_KIND, key)
            .await?
            .filter(|r| r.expires_at > now)
        else {
            return Ok(None);
        };
        let plan: MergePlan = serde_json::from_str(&rec.value).map_err(WorkspaceError::internal)?;
        if plan.fingerprint != fingerprint {
            return Err(WorkspaceError::Conflict {
                message: format!(
                    "Idempotency-Key {key} was already used for a different merge; use a new key"
                ),
                current_version: 0,
            });
        }
        Ok(Some(plan))
    }

    /// Ends the plan recorded under `key` (its merge finished, or can no longer finish).
    pub(super) async fn end_plan(&self, target: &Scope, key: &str) {
        let gone = StoredRecord {
            value: "{}".to_owned(),
            expires_at: 0,
        };
        if let Err(e) = self
            .meta
            .put_record(target, MERGE_PLAN_KIND, key, &gone)
            .await
        {
            tracing::warn!(error = %e, "merge plan not ended; it expires");
        }
    }

    async fn put_plan(&self, target: &Scope, key: &str, plan: &MergePlan) -> Result<()> {
        let value = serde_json::to_string(plan).map_err(WorkspaceError::internal)?;
        if value.len() > MAX_PLAN_BYTES {
            return Err(WorkspaceError::TooLarge {
                message: format!(
                    "a merge of {} changes is too large to apply in batches (its plan is {} \
                     bytes; at most {MAX_PLAN_BYTES}); merge fewer changes at once",
                    plan.changes.len(),
                    value.len()
                ),
                limit: MAX_PLAN_BYTES as u64,
            });
        }
        self.meta
            .put_record(
                target,
                MERGE_PLAN_KIND,
                key,
                &StoredRecord {
                    value,
                    expires_at: self.clock.now_ms().saturating_add(IDEMPOTENCY_TTL_MS),
                },
            )
            .await
    }

    /// Applies a recorded plan batch by batch (`heads`: the targets' heads as just read,
    /// else they are read now); the report lines of every change.
    pub(super) async fn run_plan(
        &self,
        who: &Identity,
        key: &str,
        mut plan: MergePlan,
        heads: Option<Vec<Option<Head>>>,
    ) -> Result<Vec<Applied>> {
        let origin = MergeOrigin {
            merge_id: plan.merge_id.clone(),
            fork_id: plan.fork_id.clone(),
        };
        let mut heads = match heads {
            Some(h) => h,
            None => self.heads_of(who, &plan.changes).await?,
        };
        let n = plan.changes.len();
        let mut lines = Vec::with_capacity(n);
        let mut start = 0;
        while start < n {
            let end = self
                .batch_end(who, &plan.changes, &heads, start, &origin)
                .await?;
            let mut rounds = 0;
            loop {
                let batch = &plan.changes[start..end];
                let committed = self
                    .commit_changes(who, batch, heads[start..end].to_vec(), &origin, true)
                    .await;
                match committed {
                    Ok(Committed::Applied(done)) => {
                        lines.extend(done);
                        break;
                    }
                    Ok(Committed::SecretsMoved) if rounds < MAX_SECRETS_ROUNDS => {
                        rounds += 1;
                        self.forget_secrets(&who.scope.tenant);
                        let replaced = self
                            .redact_again(who, &mut plan.changes[start..end], &heads[start..end])
                            .await?;
                        // The plan names the new bodies before anything commits them.
                        self.put_plan(&who.scope, key, &plan).await?;
                        for body in &replaced {
                            self.discard_body(body).await;
                        }
                        let fresh = self.heads_of(who, &plan.changes[start..end]).await?;
                        heads.splice(start..end, fresh);
                    }
                    Ok(Committed::SecretsMoved) => {
                        return Err(WorkspaceError::internal(format!(
                            "the tenant's registered secrets changed {MAX_SECRETS_ROUNDS} times during one merge"
                        )))
                    }
                    Err(WorkspaceError::Conflict {
                        message,
                        current_version,
                    }) => {
                        // Someone else changed a path the plan had still to apply: the
                        // plan cannot finish. Merging again compares anew.
                        self.end_plan(&who.scope, key).await;
                        let before = lines.len();
                        return Err(WorkspaceError::Conflict {
                            message: format!(
                                "{message}. A merge of {n} changes is applied in batches: \
                                 the {before} before this batch are applied and stay. Merge \
                                 again to carry the rest"
                            ),
                            current_version,
                        });
                    }
                    Err(e) => return Err(e),
                }
            }
            start = end;
        }
        Ok(lines)
    }

    /// The end of the batch that starts at `start`: as many changes as one commit takes.
    async fn batch_end(
        &self,
        who: &Identity,
        changes: &[Planned],
        heads: &[Option<Head>],
        start: usize,
        origin: &MergeOrigin,
    ) -> Result<usize> {
        let now = self.clock.now_ms();
        let points = self.points_for_commit(&who.scope).await?;
        let mut commits = Vec::new();
        for (p, h) in changes.iter().zip(heads).skip(start) {
            // A change already applied (or not applicable) weighs nothing.
            if matches!(progress(p, h.as_ref()), Progress::Pending) {
                commits.push(Some(self.commit_of(
                    who,
                    p,
                    h.as_ref(),
                    origin,
                    (now, &points),
                )?));
            } else {
                commits.push(None);
            }
        }
        let fits = |k: usize| {
            let batch: Vec<Commit> = commits[..k].iter().flatten().cloned().collect();
            self.meta.fits_one_commit(&batch)
        };
        // The longest prefix that fits (at least one change), by doubling then halving.
        let total = commits.len();
        let (mut lo, mut hi) = (1, 1);
        while hi < total && fits(hi.min(total)) {
            lo = hi;
            hi = (hi * 2).min(total);
        }
        if hi == total && fits(total) {
            return Ok(start + total);
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(start + lo)
    }

    /// Reads every change's target head, one by one.
    async fn heads_of(&self, who: &Identity, changes: &[Planned]) -> Result<Vec<Option<Head>>> {
        let mut out = Vec::with_capacity(changes.len());
        for p in changes {
            out.push(
                self.meta
                    .head(&who.scope, &FilePath::parse(&p.path)?)
                    .await?,
            );
        }
        Ok(out)
    }

    /// Each op redacted, uploaded and checked against the target head (see the module
    /// notes); on any failure the bodies uploaded so far are discarded.
    async fn prepare_changes(
        &self,
        who: &Identity,
        ops: &[(ParentOp, Option<FileState>)],
    ) -> Result<(Vec<Planned>, Vec<Option<Head>>)> {
        let mut planned = Vec::with_capacity(ops.len());
        let mut heads = Vec::with_capacity(ops.len());
        for (op, expected) in ops {
            match self.prepare_one(who, op, expected.as_ref()).await {
                Ok((p, h)) => {
                    planned.push(p);
                    heads.push(h);
                }
                Err(e) => {
                    self.discard_planned(&planned).await;
                    return Err(e);
                }
            }
        }
        Ok((planned, heads))
    }

    async fn prepare_one(
        &self,
        who: &Identity,
        op: &ParentOp,
        expected: Option<&FileState>,
    ) -> Result<(Planned, Option<Head>)> {
        let expected = expected.map(|s| s.etag.clone());
        match op {
            ParentOp::Put {
                path,
                content,
                content_type,
            } => {
                let fp = FilePath::parse(path)?;
                who.paths.check_write(&fp)?;
                let limit = self.limits.max_upload_bytes.max(self.limits.max_file_bytes);
                let size = content.len() as u64;
                if size > limit {
                    return Err(WorkspaceError::TooLarge {
                        message: format!("{path} is {size} bytes; maxUploadBytes is {limit}"),
                        limit,
                    });
                }
                let content_type = content_type_for(&fp, Some(content_type.clone()))?;
                let (content, secrets) = self.redact_content(who, &fp, content).await?;
                let sha = sha256_hex(&content);
                let size = content.len() as u64;
                let (body, head) = self
                    .store_beside_head(&who.scope, &fp, content, &content_type)
                    .await?;
                let (lineage, version) = match head.as_ref().filter(|h| h.is_live()) {
                    Some(h) => (h.lineage.clone(), h.version + 1),
                    None => (self.ids.new_id(), 1),
                };
                let seq = head.as_ref().map_or(1, |h| h.seq + 1);
                let planned = Planned {
                    path: path.clone(),
                    expected,
                    done: make_etag(&lineage, version, seq, &sha),
                    put: Some(PlannedPut {
                        body,
                        sha256: sha,
                        content_type,
                        size,
                        lineage,
                        version,
                        secrets_epoch: secrets.map(|s| s.epoch),
                    }),
                };
                if !matches!(progress(&planned, head.as_ref()), Progress::Pending) {
                    self.discard_planned(std::slice::from_ref(&planned)).await;
                    return Err(moved(path, head.as_ref()));
                }
                Ok((planned, head))
            }
            ParentOp::Delete { path } => {
                let fp = FilePath::parse(path)?;
                who.paths.check_write(&fp)?;
                let head = self.meta.head(&who.scope, &fp).await?;
                let done = match head.as_ref().filter(|h| h.is_live()) {
                    Some(h) => make_etag(&h.lineage, h.version + 1, h.seq + 1, "deleted"),
                    None => return Err(moved(path, head.as_ref())),
                };
                let planned = Planned {
                    path: path.clone(),
                    expected,
                    done,
                    put: None,
                };
                if !matches!(progress(&planned, head.as_ref()), Progress::Pending) {
                    return Err(moved(path, head.as_ref()));
                }
                Ok((planned, head))
            }
        }
    }

    /// The commit that applies `p` over `head` (which `progress` found pending).
    fn commit_of(
        &self,
        who: &Identity,
        p: &Planned,
        head: Option<&Head>,
        origin: &MergeOrigin,
        at: (Millis, &crate::model::Points),
    ) -> Result<Commit> {
        let path = FilePath::parse(&p.path)?;
        Ok(match &p.put {
            Some(w) => {
                self.put_commit(
                    who,
                    &path,
                    head,
                    Some(w.lineage.clone()),
                    super::super::write::NewContent {
                        body: &w.body,
                        content_type: &w.content_type,
                        sha: &w.sha256,
                        size: w.size,
                        secrets: w.secrets_epoch.map(|epoch| SecretsEpoch {
                            tenant: who.scope.tenant.clone(),
                            epoch,
                        }),
                        merge: Some(origin.clone()),
                    },
                    at,
                )
                .0
            }
            None => {
                let h = head
                    .filter(|h| h.is_live())
                    .ok_or_else(|| moved(&p.path, head))?;
                self.delete_commit(who, &path, h, at, Some(origin))
            }
        })
    }

    /// Commits the pending ones of `changes` in one batch, reading the heads again while
    /// only pins move them; `in_plan`: a change someone else wrote over may have been
    /// applied by an earlier run of the plan (its history tells).
    async fn commit_changes(
        &self,
        who: &Identity,
        changes: &[Planned],
        mut heads: Vec<Option<Head>>,
        origin: &MergeOrigin,
        in_plan: bool,
    ) -> Result<Committed> {
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let now = self.clock.now_ms();
            let mut lines: Vec<Option<Applied>> = vec![None; changes.len()];
            let mut todo = Vec::new();
            for (i, (p, h)) in changes.iter().zip(&heads).enumerate() {
                match progress(p, h.as_ref()) {
                    Progress::Pending => todo.push(i),
                    Progress::Done(line) => lines[i] = Some(line),
                    Progress::Moved => match self.applied_before(who, p, in_plan).await? {
                        Some(line) => lines[i] = Some(line),
                        None => return Err(moved(&p.path, h.as_ref())),
                    },
                }
            }
            if todo.is_empty() {
                return Ok(Committed::Applied(lines.into_iter().flatten().collect()));
            }
            // Deletions first: a quota check of a new file counts them gone.
            todo.sort_by_key(|&i| changes[i].put.is_some());
            let points = self.points_for_commit(&who.scope).await?;
            let mut commits = Vec::with_capacity(todo.len());
            for &i in &todo {
                commits.push(self.commit_of(
                    who,
                    &changes[i],
                    heads[i].as_ref(),
                    origin,
                    (now, &points),
                )?);
            }
            let records: Vec<(FilePath, VersionRecord)> = commits
                .iter()
                .map(|c| (c.path.clone(), c.version.clone()))
                .collect();
            match self.meta.commit_many(commits).await? {
                BatchOutcome::Committed { pruned } => {
                    for (&i, (_, v)) in todo.iter().zip(&records) {
                        lines[i] = Some(applied_line(&changes[i], v.version, &v.etag));
                    }
                    self.after_batch(who, &records, pruned).await;
                    return Ok(Committed::Applied(lines.into_iter().flatten().collect()));
                }
                BatchOutcome::Refused { outcome, .. } => match outcome {
                    CommitOutcome::HeadMoved => heads = self.heads_of(who, changes).await?,
                    CommitOutcome::PointsMoved => self.forget_points(&who.scope),
                    CommitOutcome::SecretsMoved => return Ok(Committed::SecretsMoved),
                    CommitOutcome::TooManyFiles => {
                        return Err(WorkspaceError::TooLarge {
                            message: format!(
                                "the merge would leave more than maxFiles = {} files; delete \
                                 some first",
                                self.limits.max_files
                            ),
                            limit: self.limits.max_files,
                        })
                    }
                    other => {
                        return Err(WorkspaceError::internal(format!(
                            "unexpected commit outcome for a merge: {other:?}"
                        )))
                    }
                },
            }
        }
        Err(WorkspaceError::internal(format!(
            "gave up merging after {MAX_COMMIT_ATTEMPTS} concurrent commits"
        )))
    }

    /// The report line of a change a run of its plan applied before someone else wrote
    /// over it (its version is in the path's history), if one did.
    async fn applied_before(
        &self,
        who: &Identity,
        p: &Planned,
        in_plan: bool,
    ) -> Result<Option<Applied>> {
        if !in_plan {
            return Ok(None);
        }
        let path = FilePath::parse(&p.path)?;
        let versions = self
            .meta
            .list_versions(&who.scope, &path, None, HISTORY_LOOKBACK)
            .await?;
        Ok(versions
            .iter()
            .find(|v| v.etag == p.done)
            .map(|v| applied_line(p, v.version, &v.etag)))
    }

    /// Redacts the pending puts of `changes` again with the tenant's secrets as they are
    /// now, uploading a new body where the content changed; the bodies replaced.
    async fn redact_again(
        &self,
        who: &Identity,
        changes: &mut [Planned],
        heads: &[Option<Head>],
    ) -> Result<Vec<BodyRef>> {
        let mut replaced = Vec::new();
        for (p, h) in changes.iter_mut().zip(heads) {
            if !matches!(progress(p, h.as_ref()), Progress::Pending) {
                continue;
            }
            let path = FilePath::parse(&p.path)?;
            let Some(w) = p.put.as_mut() else {
                continue;
            };
            let stored = self.bytes_of(Some(&w.body), &p.path).await?;
            let (content, secrets) = self.redact_content(who, &path, &stored).await?;
            w.secrets_epoch = secrets.map(|s| s.epoch);
            let sha = sha256_hex(&content);
            if sha == w.sha256 {
                continue;
            }
            let key = Self::body_key(&who.scope, &path);
            let body = self
                .bodies
                .put(&key, content.clone(), &w.content_type)
                .await?;
            replaced.push(std::mem::replace(&mut w.body, body));
            w.size = content.len() as u64;
            // The same commit (seq) with other content: the seq the planned etag names.
            let seq = crate::model::parse_etag(&p.done).map_or(0, |(_, seq, _)| seq);
            p.done = make_etag(&w.lineage, w.version, seq, &sha);
            w.sha256 = sha;
        }
        Ok(replaced)
    }

    /// Discards the bodies uploaded for changes that will not commit.
    async fn discard_planned(&self, changes: &[Planned]) {
        for p in changes {
            if let Some(w) = &p.put {
                self.discard_body(&w.body).await;
            }
        }
    }

    /// Step 5 of the write protocol for a batch: the bodies it pruned go, each change is
    /// announced, and the index catches up once.
    pub(in crate::service) async fn after_batch(
        &self,
        who: &Identity,
        records: &[(FilePath, VersionRecord)],
        pruned: Vec<BodyRef>,
    ) {
        for body in &pruned {
            self.discard_body(body).await;
        }
        for (path, record) in records {
            let event = WorkspaceEvent::scope_of(&who.scope, path.as_str(), record);
            if let Err(e) = self.events.publish(event).await {
                tracing::warn!(error = %e, path = %path, "event publish failed after commit");
            }
        }
        self.index_after_commit(&who.scope).await;
    }
}

/// A conflict of a merge that applied nothing, saying so.
fn nothing_applied(e: WorkspaceError) -> WorkspaceError {
    match e {
        WorkspaceError::Conflict {
            message,
            current_version,
        } => WorkspaceError::Conflict {
            message: format!(
                "{message}. Nothing of this merge was applied; merge again to compare anew"
            ),
            current_version,
        },
        other => other,
    }
}

/// A path whose target head is no longer what the merge compared.
fn moved(path: &str, head: Option<&Head>) -> WorkspaceError {
    WorkspaceError::Conflict {
        message: format!(
            "{path} changed after the merge compared it; nothing of it was overwritten"
        ),
        current_version: current_version(head),
    }
}
