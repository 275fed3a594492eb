//! The orphan sweeper behind `functions/sweep`: deletes S3 body versions that no version
//! item (and no live merge plan, `workspace_core::forks::plan`) points to and that are
//! older than a grace period. Orphans arise when a body was
//! uploaded but its commit failed (a 409, a crash between the two writes); the grace
//! period keeps the sweeper away from uploads whose commit is still in flight.
//!
//! It also removes what two-step uploads left in the staging area
//! (`t/<tenant>/w/<workspace>/uploads/`) once older than `STAGED_MAX_AGE_MS`: uploads never
//! committed, and bytes a client sent twice.

use crate::aws_err;
use crate::items::{get_n, get_s, s};
use crate::keys;
use std::collections::{HashMap, HashSet};
use workspace_core::forks::plan::{bodies_named, MERGE_PLAN_KIND};
use workspace_core::model::{BodyRef, Millis};
use workspace_core::ports::BodyInventory;
use workspace_core::service::STAGED_MAX_AGE_MS;
use workspace_core::{FilePath, Result, Scope};
// The key layout is the service's; the sweeper only reads it back.

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub examined: usize,
    pub deleted: usize,
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
        let mut ids = HashSet::new();
        let mut start = None;
        loop {
            let out = self
                .dynamodb
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND begins_with(sk, :ver)")
                .expression_attribute_values(":pk", s(keys::partition(scope)))
                .expression_attribute_values(":ver", s(format!("ver#{path}#")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(aws_err)?;
            for item in out.items() {
                if let Ok(id) = get_s(item, "bodyVersionId") {
                    ids.insert(id);
                }
            }
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => return Ok(ids),
            }
        }
    }

    /// The S3 version ids the live merge plans of a scope name (`forks::plan`): bodies
    /// uploaded for a merge too large for one transaction, which a retry with its
    /// `Idempotency-Key` still commits.
    async fn planned(&self, scope: &Scope, now: Millis) -> Result<HashSet<String>> {
        let mut ids = HashSet::new();
        let mut start = None;
        loop {
            let out = self
                .dynamodb
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND begins_with(sk, :plan)")
                .expression_attribute_values(":pk", s(keys::partition(scope)))
                .expression_attribute_values(":plan", s(keys::record_sk(MERGE_PLAN_KIND, "")))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(aws_err)?;
            for item in out.items() {
                let live = get_n::<Millis>(item, "expiresAtMs").is_ok_and(|at| at > now);
                if let (true, Ok(value)) = (live, get_s(item, "value")) {
                    ids.extend(bodies_named(&value).into_iter().map(|b| b.version_id));
                }
            }
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => return Ok(ids),
            }
        }
    }

    /// Deletes unreferenced body versions last modified before `now - grace`; a body a
    /// live merge plan names stays.
    pub async fn sweep(&self, now: Millis, grace_ms: Millis) -> Result<SweepReport> {
        let cutoff = now - grace_ms;
        let mut report = SweepReport::default();
        let mut cache: HashMap<String, HashSet<String>> = HashMap::new();
        let mut plans: HashMap<String, HashSet<String>> = HashMap::new();
        let (mut key_marker, mut version_marker) = (None, None);
        loop {
            let page = self
                .s3
                .list_object_versions()
                .bucket(&self.bucket)
                .prefix("t/")
                .set_key_marker(key_marker.take())
                .set_version_id_marker(version_marker.take())
                .send()
                .await
                .map_err(aws_err)?;
            let mut doomed = Vec::new();
            for v in page.versions() {
                let (Some(key), Some(id)) = (v.key(), v.version_id()) else {
                    continue;
                };
                report.examined += 1;
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
                    let scope_key = keys::partition(&scope);
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
            if page.is_truncated() == Some(true) {
                key_marker = page.next_key_marker().map(str::to_owned);
                version_marker = page.next_version_id_marker().map(str::to_owned);
            } else {
                return Ok(report);
            }
        }
    }
}

#[async_trait::async_trait]
impl BodyInventory for Sweeper {
    async fn stored_bodies(&self) -> Result<Vec<BodyRef>> {
        let mut out = Vec::new();
        let (mut key_marker, mut version_marker) = (None, None);
        loop {
            let page = self
                .s3
                .list_object_versions()
                .bucket(&self.bucket)
                .prefix("t/")
                .set_key_marker(key_marker.take())
                .set_version_id_marker(version_marker.take())
                .send()
                .await
                .map_err(aws_err)?;
            for v in page.versions() {
                if let (Some(key), Some(id)) = (v.key(), v.version_id()) {
                    if !is_staged_key(key) {
                        out.push(BodyRef {
                            key: key.to_owned(),
                            version_id: id.to_owned(),
                        });
                    }
                }
            }
            if page.is_truncated() == Some(true) {
                key_marker = page.next_key_marker().map(str::to_owned);
                version_marker = page.next_version_id_marker().map(str::to_owned);
            } else {
                return Ok(out);
            }
        }
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
