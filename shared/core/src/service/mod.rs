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
//! 5. after the commit: delete the bodies of version items it pruned, announce the change.
//!
//! Crash points, and what recovers each (every one is broken in turn, failed or killed
//! before or after the call, by `workspace_contract::faults` on every backend):
//!
//! | The process stops … | Left behind | Recovered by |
//! |---|---|---|
//! | before the body is stored (step 2) | nothing | — |
//! | after the body is stored, before the commit (2-4) | a body no version names | the sweeper (`sweep`: at start locally, hourly on AWS with a grace period) |
//! | during the commit (4) | the commit is all or nothing (one redb transaction, one DynamoDB `TransactWriteItems`) | — |
//! | after the commit, before its answer (4-5) | a committed, unacknowledged change; the client's retry with the same `Idempotency-Key` replays it | — |
//! | before pruned bodies are deleted (5) | bodies no version names | the sweeper (on AWS the stream publisher deletes them on the item's REMOVE) |
//! | before the event (5) | nothing: on AWS events come from the table's stream, and locally the store's outbox receives the event in the commit itself (redb: the same write transaction, `outbox.rs`; memory: under the commit's lock), so a committed change is always announced and an uncommitted one never. The event sink only wakes the event streams and webhooks, which read the outbox (a stream resumes from `Last-Event-ID`, a webhook from its stored cursor, after a restart too) | — |
//!
//! An upload commit adds, before step 2, reading the staged bytes, and after step 5,
//! removing them (left behind: a staged object, removed after `STAGED_MAX_AGE_MS` by
//! `prune_staged` or the sweeper). A restore is a read of the old version, then a write.
//! A snapshot pins each head by compare-and-swap and writes its record last, so a stopped
//! snapshot leaves pins without a record, which end at their `until` like any other.

use crate::error::{Result, WorkspaceError};
use crate::limits::Limits;
use crate::model::{
    format_time, make_etag, sha256_hex, BodyRef, FileMeta, FilePage, Head, IdempotencyRecord,
    MergeOrigin, Millis, Pin, StoredFile, VersionRecord,
};
use crate::path::{FilePath, PathPrefix};
use crate::ports::{
    Bodies, BodyStore, Clock, Commit, CommitOutcome, EventSink, Expect, IdSource, MetaPorts,
    MetaStore, SecretsEpoch, Staging, WorkspaceEvent,
};
use crate::redact::{Redacted, Redactor, RegisteredSecret};
use crate::scope::{Identity, Scope, TenantId};
use crate::secrets::{NoSecrets, SecretStore};
use std::sync::Arc;

mod changes;
pub mod commits;
mod downloads;
mod erase;
mod forks;
mod history;
mod local_urls;
mod pins;
mod points;
mod read;
mod restore;
mod runs;
mod search;
mod snapshots;
pub mod sweep;
mod uploads;
mod write;

pub use changes::ChangeFilter;
pub use downloads::FileRead;
pub use forks::{
    Applied, ConflictReport, Fork, ForkCounts, ForkDiffPage, ForkRequest, MergeOutcome,
    MergeReport, MergeRequest, MAX_FORKS_PAGE, MAX_FORK_DIFF_PAGE, MAX_RESOLUTIONS,
};
pub use history::{Diff, VersionPage};
pub use local_urls::{SIGNED_BODY_PREFIX, SIGNED_UPLOAD_PREFIX};
pub use restore::{RestoreReport, RestoreRequest, Since, MAX_RESTORE_GLOBS};
pub use runs::{RunPage, MAX_RUNS_PAGE, MAX_WORKFLOW_ID_LEN, RUN_ID_PREFIX};
pub use search::{
    IndexRefresher, IndexReport, PassageSpan, Scores, SearchHit, SearchPage, SearchRequest,
    SearchWiring, Semantic,
};
pub use snapshots::{
    SnapshotOptions, DEFAULT_SNAPSHOT_TTL_MS, MAX_SNAPSHOTS_PAGE, MAX_SNAPSHOT_RECORD_BYTES,
    SNAPSHOT_ANSWER_FILES, SNAPSHOT_ID_PREFIX,
};
pub use uploads::{
    UploadCommit, UploadRequest, UploadTicket, COMMIT_WINDOW_MS, DEFAULT_UPLOAD_URL_SECONDS,
    LATE_UPLOAD_TOLERANCE_MS, MAX_UPLOAD_URL_SECONDS, STAGED_MAX_AGE_MS,
};

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
/// Pinned version items one commit releases at most (each is one more delete in the
/// DynamoDB transaction, which takes 100 items); the rest go with the next commits.
const MAX_RELEASED_PER_COMMIT: usize = 20;

/// A write, as the HTTP layer hands it over (header values still unchecked).
#[derive(Debug, Clone, Default)]
pub struct PutRequest {
    pub path: Option<FilePath>,
    pub content: Vec<u8>,
    pub content_type: Option<String>,
    pub if_match: Option<String>,
    pub if_none_match_any: bool,
    pub idempotency_key: Option<String>,
    /// Set by a fork's merge only: the version records it (and so does its event).
    pub merge: Option<MergeOrigin>,
}

pub struct WorkspaceService {
    redactor: Redactor,
    secrets: Arc<dyn SecretStore>,
    /// The store as every rule reads it: through a fork to its base (`crate::forks`).
    meta: Arc<dyn MetaStore>,
    /// The same store, typed, for the fork bookkeeping.
    forks: Arc<crate::forks::ForkAwareMeta>,
    /// File bodies, small ones inline with their commit (`crate::blob::inline`), and the
    /// staging area of two-step uploads (one store, two ports).
    bodies: Arc<crate::blob::inline::InlineBodies>,
    staging: Arc<dyn Staging>,
    events: Arc<dyn EventSink>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    limits: Limits,
    snapshot_ttl_ms: Millis,
    fork_ttl_ms: Millis,
    fork_max_ttl_ms: Millis,
    /// Erases a discarded fork's data.
    scope_eraser: Option<Arc<dyn crate::ports::ScopeEraser>>,
    /// Signs upload URLs when the body store cannot presign (the local server).
    upload_signer: Option<crate::blob::LocalPresign>,
    upload_url_seconds: u64,
    /// Signs the paging tokens of file and version listings (random unless configured:
    /// then tokens only verify in the process that issued them).
    token_key: crate::sessions::token::TokenKey,
    /// Tenants' registered secrets kept between writes, with their epoch, where the secret
    /// store keeps one (every commit checks the epoch, so a stale entry is never used).
    secrets_cache:
        std::sync::Mutex<std::collections::HashMap<TenantId, (Vec<RegisteredSecret>, u64)>>,
    /// Scopes' point registries kept between commits (`points.rs`; every commit checks the
    /// revision, so a stale entry is never used).
    points_cache: std::sync::Mutex<std::collections::HashMap<Scope, crate::model::Points>>,
    /// Where the memory tool's `/memories` lives in the workspace (`crate::memory`).
    memory_prefix: String,
    /// The text indexes `search` answers from (`crate::search`), where configured.
    search: Option<SearchWiring>,
    /// The embedding model of search by meaning, or why there is none.
    semantic: search::Semantic,
    /// Where commits hand their scope for the index to catch up after they answer (the
    /// local server, [`IndexRefresher`]); without it, before they answer.
    index_refresh_queue: Option<tokio::sync::mpsc::Sender<Scope>>,
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

/// A file listing's page size: `MAX_LIST_LIMIT` when not given.
fn list_limit(limit: Option<usize>) -> Result<usize> {
    crate::limits::page_limit(limit, MAX_LIST_LIMIT, MAX_LIST_LIMIT)
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

/// The members of an `If-Match` value: `*` or entity tags separated by commas (RFC 9110
/// §13.1.1; repeated header lines arrive joined into one list). Commas inside a quoted tag
/// do not separate; empty members are skipped, as the list syntax allows.
fn etag_list(value: &str) -> Vec<&str> {
    let mut members = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in value.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                members.push(value[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    members.push(value[start..].trim());
    members.retain(|m| !m.is_empty());
    members
}

/// `If-Match`: the write goes ahead when any listed tag is the current etag (strong
/// comparison, byte for byte), or the list holds `*` and the file exists.
fn check_if_match(if_match: Option<&str>, head: &Option<Head>) -> Result<()> {
    let Some(expected) = if_match else {
        return Ok(());
    };
    let members = etag_list(expected);
    match live(head) {
        Some(h) if members.iter().any(|m| *m == "*" || *m == h.etag) => Ok(()),
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
        let staging = bodies.clone();
        Self::wired(
            MetaPorts::of_store(meta),
            bodies,
            staging,
            events,
            clock,
            ids,
            limits,
        )
    }

    /// A service over ports wired one by one: a Lambda function plugs in only those its
    /// routes reach (`MetaPorts::reads_of`, `NoBodies`), so it links no other adapter code.
    pub fn wired(
        meta: MetaPorts,
        bodies: Arc<dyn Bodies>,
        staging: Arc<dyn Staging>,
        events: Arc<dyn EventSink>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdSource>,
        limits: Limits,
    ) -> Self {
        let forks = Arc::new(crate::forks::ForkAwareMeta::new(meta, clock.clone()));
        Self {
            redactor: Redactor::default(),
            secrets: Arc::new(NoSecrets),
            meta: forks.clone(),
            forks,
            bodies: Arc::new(crate::blob::inline::InlineBodies::new(
                bodies,
                crate::blob::inline::DEFAULT_INLINE_BODY_BYTES.min(limits.max_file_bytes),
            )),
            staging,
            events,
            clock,
            ids,
            limits,
            snapshot_ttl_ms: DEFAULT_SNAPSHOT_TTL_MS,
            fork_ttl_ms: crate::forks::DEFAULT_FORK_TTL_MS,
            fork_max_ttl_ms: crate::forks::MAX_FORK_TTL_MS,
            scope_eraser: None,
            upload_signer: None,
            upload_url_seconds: DEFAULT_UPLOAD_URL_SECONDS,
            token_key: crate::sessions::token::TokenKey::random(),
            secrets_cache: std::sync::Mutex::default(),
            points_cache: std::sync::Mutex::default(),
            memory_prefix: crate::memory::DEFAULT_MEMORY_PREFIX.to_owned(),
            search: None,
            semantic: search::Semantic::default(),
            index_refresh_queue: None,
        }
    }

    /// Bodies of at most `bytes` are kept inline with their commit, never in the body
    /// store (`WORKSPACE_INLINE_BODY_BYTES`; 0 turns it off; at most
    /// [`crate::blob::inline::MAX_INLINE_BODY_BYTES`], and never above `maxFileBytes`).
    pub fn with_inline_body_bytes(mut self, bytes: u64) -> Self {
        let store = self.bodies.store().clone();
        self.bodies = Arc::new(crate::blob::inline::InlineBodies::new(
            store,
            bytes.min(self.limits.max_file_bytes),
        ));
        self
    }

    pub fn inline_body_bytes(&self) -> u64 {
        self.bodies.max_bytes()
    }

    /// Where the memory tool keeps `/memories` (`WORKSPACE_MEMORY_PREFIX`, default
    /// `memories`).
    pub fn with_memory_prefix(mut self, prefix: FilePath) -> Self {
        self.memory_prefix = prefix.as_str().to_owned();
        self
    }

    pub fn memory_prefix(&self) -> &str {
        &self.memory_prefix
    }

    /// The key paging tokens are signed with; every process of a deployment needs the same
    /// (`WORKSPACE_SESSION_TOKEN_KEY`).
    pub fn with_token_key(mut self, key: crate::sessions::token::TokenKey) -> Self {
        self.token_key = key;
        self
    }

    pub fn token_key(&self) -> &crate::sessions::token::TokenKey {
        &self.token_key
    }

    /// How long a run snapshot lives (`WORKSPACE_SNAPSHOT_TTL_SECONDS`, default 7 days).
    pub fn with_snapshot_ttl_ms(mut self, ttl_ms: Millis) -> Self {
        self.snapshot_ttl_ms = ttl_ms.max(1);
        self
    }

    pub fn snapshot_ttl_ms(&self) -> Millis {
        self.snapshot_ttl_ms
    }

    /// Replaces the WSR-1 redactor (the default applies every structural rule).
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// Where committed changes are announced from the request path (default: nowhere but
    /// the log, for deployments whose events come from committed state).
    pub fn with_event_sink(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// Where the tenants' registered secrets are read from (default: none registered).
    pub fn with_secrets(mut self, secrets: Arc<dyn SecretStore>) -> Self {
        self.secrets = secrets;
        self
    }

    /// WSR-1 for any text about to be stored by `who`: the tenant's registered secrets
    /// (read now, so one registered a moment ago counts), then the structural rules. Every
    /// write path that stores text goes through here.
    pub async fn redact_for(&self, who: &Identity, text: &str) -> Result<Redacted> {
        let registered: Vec<_> = self
            .secrets
            .secrets_of(&who.scope.tenant)
            .await?
            .iter()
            .map(|s| s.as_registered())
            .collect();
        Ok(self.redactor.redact(text, &registered))
    }

    /// The registered secrets a commit's content is redacted with: kept from an earlier
    /// write where the store keeps an epoch (returned for the commit to check), else read
    /// now.
    async fn secrets_for_commit(
        &self,
        tenant: &TenantId,
    ) -> Result<(Vec<RegisteredSecret>, Option<SecretsEpoch>)> {
        let epoch_of = |epoch| {
            Some(SecretsEpoch {
                tenant: tenant.clone(),
                epoch,
            })
        };
        let kept = self
            .secrets_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tenant)
            .cloned();
        if let Some((registered, epoch)) = kept {
            return Ok((registered, epoch_of(epoch)));
        }
        let as_registered = |records: Vec<crate::secrets::SecretRecord>| -> Vec<RegisteredSecret> {
            records.iter().map(|s| s.as_registered()).collect()
        };
        match self.secrets.secrets_at(tenant).await? {
            Some((records, epoch)) => {
                let registered = as_registered(records);
                self.secrets_cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tenant.clone(), (registered.clone(), epoch));
                Ok((registered, epoch_of(epoch)))
            }
            None => Ok((as_registered(self.secrets.secrets_of(tenant).await?), None)),
        }
    }

    /// Drops the tenant's kept secrets: a commit found their epoch moved.
    fn forget_secrets(&self, tenant: &TenantId) {
        self.secrets_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant);
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn body_key(scope: &Scope, path: &FilePath) -> String {
        sweep::body_key(scope, path)
    }

    /// Oldest seq kept when `seq` is the newest (`pins::Window::oldest_kept`).
    fn retain_from(&self, seq: u64) -> u64 {
        pins::Window {
            max_versions: self.limits.max_versions,
        }
        .oldest_kept(seq)
    }

    /// The pins a commit planned under `points` that writes item `seq` over `head`
    /// carries forward, and the seqs it releases. It holds the version it supersedes while
    /// a live point can read it (`points::hold_for`) and recomputes its earlier holds
    /// from the registry. A pin that ended (its snapshot expired or was deleted) is
    /// dropped; the item it held is released when it is below the retention window and no
    /// live pin holds it. At most [`MAX_RELEASED_PER_COMMIT`] are released at once; the
    /// rest keep their ended pins until a later commit.
    fn carry_pins(
        &self,
        head: Option<&Head>,
        seq: u64,
        now: Millis,
        points: &crate::model::Points,
    ) -> (Vec<Pin>, Vec<u64>) {
        let Some(h) = head else {
            return (Vec::new(), Vec::new());
        };
        let retain_from = self.retain_from(seq);
        let mut pins = points::refresh_holds(&h.pins, points, now);
        pins.extend(points::hold_for(points, h, now));
        let (live, ended): (Vec<Pin>, Vec<Pin>) = pins.into_iter().partition(|p| p.until > now);
        let mut kept = live.clone();
        let mut released: Vec<u64> = Vec::new();
        for pin in ended {
            let held = live.iter().any(|p| p.seq == pin.seq);
            if pin.seq >= retain_from || held || released.contains(&pin.seq) {
                continue;
            }
            if released.len() < MAX_RELEASED_PER_COMMIT {
                released.push(pin.seq);
            } else {
                kept.push(pin);
            }
        }
        (kept, released)
    }

    /// Work after the commit point. Failures here are logged, never reported: the write is
    /// durable, and leftovers (pruned bodies) are only garbage.
    /// Step 5: the bodies the commit pruned go, and the change is announced (where
    /// events come from committed state, the sink only logs or wakes their deliverers).
    async fn after_commit(
        &self,
        who: &Identity,
        path: &FilePath,
        record: &VersionRecord,
        pruned: Vec<BodyRef>,
    ) {
        for body in &pruned {
            self.discard_body(body).await;
        }
        let event = WorkspaceEvent::scope_of(&who.scope, path.as_str(), record);
        if let Err(e) = self.events.publish(event).await {
            tracing::warn!(error = %e, path = %path, "event publish failed after commit");
        }
        self.index_after_commit(&who.scope).await;
    }

    /// Stores a body for `path` and reads its head side by side: they do not depend on
    /// each other, so a write costs two sequential round trips, not three. The body is
    /// deleted again if the head cannot be read.
    async fn store_beside_head(
        &self,
        scope: &Scope,
        path: &FilePath,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<(BodyRef, Option<Head>)> {
        let key = Self::body_key(scope, path);
        // The point registry too, where this process has not kept it yet (the commit
        // plans under it), so a first write waits for no extra round trip.
        let (body, head, points) = tokio::join!(
            self.bodies.put(&key, bytes, content_type),
            self.meta.head(scope, path),
            self.points_for_commit(scope)
        );
        let body = body?;
        match head.and_then(|h| points.map(|_| h)) {
            Ok(head) => Ok((body, head)),
            Err(e) => {
                self.discard_body(&body).await;
                Err(e)
            }
        }
    }

    async fn discard_body(&self, body: &BodyRef) {
        if let Err(e) = self.bodies.delete(body).await {
            tracing::warn!(error = %e, key = %body.key, "could not delete an uncommitted body");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::etag_list;

    #[test]
    fn if_match_is_a_list_of_tags() {
        assert_eq!(etag_list(r#""1-a""#), [r#""1-a""#]);
        assert_eq!(etag_list(r#""1-a", "2-b""#), [r#""1-a""#, r#""2-b""#]);
        assert_eq!(etag_list(r#""1-a",,"2-b" ,"#), [r#""1-a""#, r#""2-b""#]);
        assert_eq!(etag_list(r#""x,y", *"#), [r#""x,y""#, "*"]);
        assert!(etag_list(" , ").is_empty());
    }
}
