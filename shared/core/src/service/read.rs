//! Reads: the live file or a retained version, and paged listings.

use super::*;

impl WorkspaceService {
    /// Reads the live file, or version `n` of its live lineage, inline; a file over
    /// `maxFileBytes` is a 413 here (see [`Self::open`]).
    pub async fn get(
        &self,
        scope: &Scope,
        path: &FilePath,
        version: Option<u64>,
    ) -> Result<StoredFile> {
        self.read(scope, path, version, false).await?.inline()
    }

    /// Like [`Self::get`], but a file over `maxFileBytes` comes as a download URL.
    pub async fn open(
        &self,
        scope: &Scope,
        path: &FilePath,
        version: Option<u64>,
    ) -> Result<FileRead> {
        self.read(scope, path, version, true).await
    }

    async fn read(
        &self,
        scope: &Scope,
        path: &FilePath,
        version: Option<u64>,
        allow_download: bool,
    ) -> Result<FileRead> {
        // The latest version is read from the head alone (head, then body: two round
        // trips); a past version needs its version item. A concurrent write may prune the
        // body between the reads; the retry then sees the newer head.
        for _ in 0..3 {
            let (meta, body) = self.locate(scope, path, version).await?;
            let version_of_meta = meta.version;
            match self.deliver(meta, &body, allow_download).await? {
                Some(read) => return Ok(read),
                None if version.is_some() => {
                    return Err(WorkspaceError::not_found(format!(
                        "version {version_of_meta} of {path} is no longer retained"
                    )))
                }
                None => continue,
            }
        }
        Err(WorkspaceError::internal(format!(
            "{path} kept changing while being read"
        )))
    }

    /// The metadata and body of the live file, or of version `n` of its live lineage.
    async fn locate(
        &self,
        scope: &Scope,
        path: &FilePath,
        version: Option<u64>,
    ) -> Result<(FileMeta, BodyRef)> {
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
                if let Some(by) = &item.erased {
                    return Err(super::erase::erased(path, n, by));
                }
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
        let body = body.ok_or_else(|| WorkspaceError::internal("live version without a body"))?;
        Ok((meta, body))
    }

    /// Lists live files under `prefix`, sorted by path, a page at a time.
    pub async fn list(
        &self,
        scope: &Scope,
        prefix: &PathPrefix,
        limit: Option<usize>,
        after: Option<&FilePath>,
    ) -> Result<FilePage> {
        let limit = list_limit(limit)?;
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
}
