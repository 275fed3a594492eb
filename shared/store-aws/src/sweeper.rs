//! The orphan sweeper behind `functions/sweep`: deletes S3 body versions that no version
//! item (and no live merge plan, `workspace_core::forks::plan`) points to and that are
//! older than a grace period. Orphans arise when a body was
//! uploaded but its commit failed (a 409, a crash between the two writes); the grace
//! period keeps the sweeper away from uploads whose commit is still in flight.
//!
//! It also sweeps ended forks (`workspace_core::forks::sweep`): for every workspace it
//! finds in the bucket, the expired forks its base snapshots name, and for every fork it
//! finds there whose record has expired (or is gone), the fork's whole partition and every
//! S3 version under its prefix, then its base snapshot in the parent. Every fork leaves an
//! empty marker object under its prefix when it is created (`service/forks.rs`,
//! `mark_fork`): with small bodies kept inline in DynamoDB, neither a fork nor its parent
//! need have another key in the bucket. A fork whose marker was never stored is found
//! through its parent's base snapshots when the parent has keys.
//!
//! It also removes what two-step uploads left in the staging area
//! (`t/<tenant>/w/<workspace>/uploads/`) once older than `STAGED_MAX_AGE_MS`: uploads never
//! committed, and bytes a client sent twice.

use crate::aws_err;
use crate::dynamo::DynamoMeta;
use crate::items::{get_n, get_s, s};
use crate::layout;
use crate::paging::read_pages;
use crate::s3::VersionPages;
use crate::sessions::{DynamoSessions, S3Eraser};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use workspace_core::forks::plan::{bodies_named, MERGE_PLAN_KIND};
use workspace_core::model::{BodyRef, Millis};
use workspace_core::ports::BodyInventory;
use workspace_core::service::STAGED_MAX_AGE_MS;
use workspace_core::{FilePath, Result, Scope};
// The key layout is the service's; the sweeper only reads it back.

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub examined: usize,
    /// Orphaned and abandoned body versions deleted.
    pub deleted: usize,
    /// Ended forks (expired, or discarded and not yet erased) whose data was erased.
    pub forks_swept: usize,
}

pub struct Sweeper {
    pub s3: aws_sdk_s3::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub bucket: String,
    pub table: String,
}

/// Whether `key` is in a workspace's upload staging area.
fn is_staged_key(key: &str) -> bool {
    key.strip_prefix("t/")
        .and_then(|rest| rest.split_once("/w/"))
        .and_then(|(_, rest)| rest.split_once('/'))
        .is_some_and(|(_, rest)| rest.starts_with("uploads/"))
}

use workspace_core::service::sweep::file_of_body_key as parse_body_key;

impl Sweeper {
    /// The S3 version ids that version items of this path point to.
    async fn referenced(&self, scope: &Scope, path: &FilePath) -> Result<HashSet<String>> {
        let query = self
            .dynamodb
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND begins_with(sk, :ver)")
            .expression_attribute_values(":pk", s(layout::partition(scope)))
            .expression_attribute_values(":ver", s(format!("ver#{path}#")));
        let ids = read_pages(query, None, None, |item| {
            Ok(get_s(item, "bodyVersionId").ok())
        })
        .await?;
        Ok(ids.into_iter().collect())
    }

    /// The S3 version ids the live merge plans of a scope name (`forks::plan`): bodies
    /// uploaded for a merge too large for one transaction, which a retry with its
    /// `Idempotency-Key` still commits.
    async fn planned(&self, scope: &Scope, now: Millis) -> Result<HashSet<String>> {
        let query = self
            .dynamodb
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND begins_with(sk, :plan)")
            .expression_attribute_values(":pk", s(layout::partition(scope)))
            .expression_attribute_values(":plan", s(layout::record_sk(MERGE_PLAN_KIND, "")));
        let plans = read_pages(query, None, None, |item| {
            let live = get_n::<Millis>(item, "expiresAtMs").is_ok_and(|at| at > now);
            Ok(live.then(|| get_s(item, "value").ok()).flatten())
        })
        .await?;
        Ok(plans
            .iter()
            .flat_map(|value| bodies_named(value).into_iter().map(|b| b.version_id))
            .collect())
    }

    /// Deletes unreferenced body versions last modified before `now - grace`; a body a
    /// live merge plan names stays.
    pub async fn sweep(&self, now: Millis, grace_ms: Millis) -> Result<SweepReport> {
        let cutoff = now - grace_ms;
        let mut report = SweepReport::default();
        let mut scopes: BTreeSet<Scope> = BTreeSet::new();
        let mut cache: HashMap<String, HashSet<String>> = HashMap::new();
        let mut plans: HashMap<String, HashSet<String>> = HashMap::new();
        let mut pages = VersionPages::new(&self.s3, &self.bucket, "t/");
        while let Some(page) = pages.next().await? {
            let mut doomed = Vec::new();
            for v in page.versions() {
                let (Some(key), Some(id)) = (v.key(), v.version_id()) else {
                    continue;
                };
                report.examined += 1;
                if let Some(scope) = Scope::from_key_prefix(&scope_prefix(key)) {
                    scopes.insert(scope);
                }
                let modified = v
                    .last_modified()
                    .map_or(i64::MAX, |t| t.to_millis().unwrap_or(i64::MAX));
                if is_staged_key(key) {
                    if modified < now - STAGED_MAX_AGE_MS {
                        doomed.push((key.to_owned(), id.to_owned()));
                    }
                    continue;
                }
                if modified > cutoff {
                    continue;
                }
                let Some((scope, path)) = parse_body_key(key) else {
                    continue;
                };
                if !cache.contains_key(key) {
                    let ids = self.referenced(&scope, &path).await?;
                    cache.insert(key.to_owned(), ids);
                }
                if !cache.get(key).is_some_and(|ids| ids.contains(id)) {
                    // Not named by a version: unless a merge's plan names it (uploaded for
                    // a change the plan has still to commit; a retry commits it).
                    let scope_key = layout::partition(&scope);
                    if !plans.contains_key(&scope_key) {
                        let ids = self.planned(&scope, now).await?;
                        plans.insert(scope_key.clone(), ids);
                    }
                    if !plans.get(&scope_key).is_some_and(|ids| ids.contains(id)) {
                        doomed.push((key.to_owned(), id.to_owned()));
                    }
                }
            }
            for (key, id) in doomed {
                // One call per version: needs only s3:DeleteObjectVersion.
                self.s3
                    .delete_object()
                    .bucket(&self.bucket)
                    .key(key)
                    .version_id(id)
                    .send()
                    .await
                    .map_err(aws_err)?;
                report.deleted += 1;
            }
        }
        report.forks_swept = self.sweep_forks(&scopes, now).await?;
        Ok(report)
    }

    /// Sweeps the ended forks of the workspaces in `scopes`, and the forks among them
    /// that have ended; how many.
    async fn sweep_forks(&self, scopes: &BTreeSet<Scope>, now: Millis) -> Result<usize> {
        use workspace_core::forks::sweep::{sweep_expired_forks, sweep_fork};
        let meta = DynamoMeta::new(self.dynamodb.clone(), self.table.clone());
        // What a deleted workspace is erased with: the whole partition, every S3 version
        // (and delete marker) under the scope's prefix.
        let eraser = workspace_core::sessions::lifecycle::ScopeData {
            store: Arc::new(DynamoSessions::new(
                self.dynamodb.clone(),
                self.table.clone(),
            )),
            erasers: vec![Arc::new(S3Eraser::new(
                self.s3.clone(),
                self.bucket.clone(),
            ))],
        };
        let mut swept = 0;
        // The forks seen first (each deletes its base in the parent), then the parents'
        // remaining ended forks (those with no key in the bucket).
        let (forks, parents): (Vec<&Scope>, Vec<&Scope>) = scopes
            .iter()
            .partition(|s| s.workspace.fork_parent().is_some());
        for scope in forks {
            swept += usize::from(sweep_fork(&meta, &eraser, scope, now).await?);
        }
        for scope in parents {
            swept += sweep_expired_forks(&meta, &eraser, scope, now).await?;
        }
        Ok(swept)
    }
}

/// The scope prefix of an object key (`t/<tenant>/w/<workspace>/`), or an empty string.
fn scope_prefix(key: &str) -> String {
    let mut parts = key.splitn(5, '/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("t"), Some(tenant), Some("w"), Some(ws)) => format!("t/{tenant}/w/{ws}/"),
        _ => String::new(),
    }
}

#[async_trait::async_trait]
impl BodyInventory for Sweeper {
    async fn stored_bodies(&self) -> Result<Vec<BodyRef>> {
        let mut out = Vec::new();
        let mut pages = VersionPages::new(&self.s3, &self.bucket, "t/");
        while let Some(page) = pages.next().await? {
            for v in page.versions() {
                if let (Some(key), Some(id)) = (v.key(), v.version_id()) {
                    if !is_staged_key(key) {
                        out.push(BodyRef::stored(key.to_owned(), id.to_owned()));
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_keys_parse_back() {
        let (scope, path) = parse_body_key("t/acme/w/main/files/a/b.md").unwrap();
        assert_eq!(
            (scope.to_string(), path.as_str()),
            ("acme/main".to_owned(), "a/b.md")
        );
        assert!(parse_body_key("t/acme/w/main/other/x").is_none());
        assert!(parse_body_key("t/a#b/w/main/files/x").is_none());
        assert!(is_staged_key("t/acme/w/main/uploads/0a1b/bytes"));
        assert!(!is_staged_key("t/acme/w/main/files/uploads/x"));
        assert!(!is_staged_key("t/acme/w/uploads/files/x"));
    }
}
