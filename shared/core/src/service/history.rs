//! Version history, restore and diff. History lists the version items the store still
//! holds (the retention window plus items a live snapshot pins), so it shows exactly what
//! `?version=N`, restore and diff can reach. Restore is an ordinary put of old content:
//! preconditions, quotas, redaction, events and idempotency are the put's own.

use super::*;

/// Largest page of a history listing (also the default).
pub const MAX_HISTORY_LIMIT: usize = 100;

/// One page of a path's history, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionPage {
    pub versions: Vec<VersionRecord>,
    /// The seq to continue below when more follow.
    pub next_before: Option<u64>,
}

/// A unified diff between two versions of one lineage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub from: FileMeta,
    pub to: FileMeta,
    /// Unified diff text (`--- a/...`, `+++ b/...`, hunks); empty when the contents are equal.
    pub text: String,
    /// Either side is not UTF-8 text; `text` then only says whether they differ.
    pub binary: bool,
}

fn meta_of(path: &FilePath, item: &VersionRecord) -> FileMeta {
    FileMeta {
        path: path.to_string(),
        content_type: item.content_type.clone(),
        version: item.version,
        etag: item.etag.clone(),
        size: item.size,
        updated_at: item.updated_at,
        sha256: item.sha256.clone(),
        principal: item.principal.clone(),
    }
}

impl WorkspaceService {
    /// The retained versions of a path (every lineage, tombstones included), newest first.
    /// A path never written (in this scope) is 404.
    pub async fn history(
        &self,
        who: &Identity,
        path: &FilePath,
        limit: Option<usize>,
        before: Option<u64>,
    ) -> Result<VersionPage> {
        who.paths.check_read(path)?;
        let scope = &who.scope;
        let limit = crate::limits::page_limit(limit, MAX_HISTORY_LIMIT, MAX_HISTORY_LIMIT)?;
        let mut versions = self
            .meta
            .list_versions(scope, path, before, limit + 1)
            .await?;
        if versions.is_empty() && before.is_none() {
            return Err(WorkspaceError::not_found(format!("no file at {path}")));
        }
        let more = versions.len() > limit;
        versions.truncate(limit);
        let next_before = if more {
            versions.last().map(|v| v.seq)
        } else {
            None
        };
        Ok(VersionPage {
            versions,
            next_before,
        })
    }

    /// Version `n` of the path's current lineage (the live file's, or the one a delete
    /// just ended) with its content. Tombstones and pruned versions are 404.
    async fn lineage_version(
        &self,
        scope: &Scope,
        path: &FilePath,
        n: u64,
        limit: (u64, &str),
    ) -> Result<(VersionRecord, Vec<u8>)> {
        let head = self.meta.head(scope, path).await?;
        let h = head.ok_or_else(|| WorkspaceError::not_found(format!("no file at {path}")))?;
        let gone = || {
            WorkspaceError::not_found(format!(
                "version {n} of {path} does not exist or is no longer retained; \
                 GET /v1/host/workspace/versions/{path} lists what is"
            ))
        };
        let seq = h.seq_of_version(n).ok_or_else(gone)?;
        let item = self
            .meta
            .version(scope, path, seq)
            .await?
            .filter(|v| v.lineage == h.lineage && !v.deleted)
            .ok_or_else(gone)?;
        if let Some(by) = &item.erased {
            return Err(super::erase::erased(path, n, by));
        }
        // The caller holds the version in memory: bounded by its own limit.
        let (limit, name) = limit;
        if item.size > limit {
            return Err(WorkspaceError::TooLarge {
                message: format!(
                    "version {n} of {path} is {} bytes, over {name} = {limit}",
                    item.size
                ),
                limit,
            });
        }
        let body = item.body.clone().ok_or_else(gone)?;
        let content = self.bodies.get(&body).await?.ok_or_else(gone)?;
        Ok((item, content))
    }

    /// Writes version `n`'s content as a new version, through the ordinary put (so
    /// `If-Match`, quotas, redaction and events apply as to any write). After a delete
    /// this brings the file back as version 1 of a new lineage.
    pub async fn restore(
        &self,
        who: &Identity,
        path: &FilePath,
        n: u64,
        if_match: Option<String>,
        idempotency_key: Option<String>,
    ) -> Result<StoredFile> {
        who.paths.check_write(path)?;
        if let Some(v) = &if_match {
            check_header_value("If-Match", v)?;
        }
        // Any version a put or an upload could write can be restored.
        let limits = self.limits;
        let limit = if limits.max_upload_bytes > limits.max_file_bytes {
            (limits.max_upload_bytes, "maxUploadBytes")
        } else {
            (limits.max_file_bytes, "maxFileBytes")
        };
        let (item, content) = self.lineage_version(&who.scope, path, n, limit).await?;
        self.put_within(
            who,
            limit,
            PutRequest {
                merge: None,
                path: Some(path.clone()),
                content,
                content_type: Some(item.content_type),
                if_match,
                if_none_match_any: false,
                idempotency_key,
            },
        )
        .await
    }

    /// A unified diff from version `from` to version `to` (default: the latest) of the
    /// current lineage.
    pub async fn diff(
        &self,
        who: &Identity,
        path: &FilePath,
        from: u64,
        to: Option<u64>,
    ) -> Result<Diff> {
        who.paths.check_read(path)?;
        let scope = &who.scope;
        let to = match to {
            Some(n) => n,
            None => {
                let head = self.meta.head(scope, path).await?;
                live(&head)
                    .map(|h| h.version)
                    .ok_or_else(|| WorkspaceError::not_found(format!("no file at {path}")))?
            }
        };
        // A diff is answered inline: versions up to maxFileBytes.
        let diff_limit = (self.limits.max_file_bytes, "maxFileBytes");
        let ((a, a_bytes), (b, b_bytes)) = tokio::try_join!(
            self.lineage_version(scope, path, from, diff_limit),
            self.lineage_version(scope, path, to, diff_limit)
        )?;
        let (old_name, new_name) = (
            format!("a/{path}@{}", a.version),
            format!("b/{path}@{}", b.version),
        );
        let (text, binary) = match (std::str::from_utf8(&a_bytes), std::str::from_utf8(&b_bytes)) {
            (Ok(old), Ok(new)) => (
                similar::TextDiff::from_lines(old, new)
                    .unified_diff()
                    .context_radius(3)
                    .header(&old_name, &new_name)
                    .to_string(),
                false,
            ),
            _ if a_bytes == b_bytes => (String::new(), true),
            _ => (
                format!("Binary files {old_name} and {new_name} differ\n"),
                true,
            ),
        };
        Ok(Diff {
            from: meta_of(path, &a),
            to: meta_of(path, &b),
            text,
            binary,
        })
    }
}
