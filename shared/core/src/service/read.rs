//! Reads: the live file or a retained version, and paged listings.

use super::*;

impl WorkspaceService {
    /// Reads the live file, or version `n` of its live lineage, inline; a file over
    /// `maxFileBytes` is a 413 here (see [`Self::open`]).
    pub async fn get(
        &self,
        who: &Identity,
        path: &FilePath,
        version: Option<u64>,
    ) -> Result<StoredFile> {
        who.paths.check_read(path)?;
        self.read(&who.scope, path, version, false).await?.inline()
    }

    /// Like [`Self::get`], but a file over `maxFileBytes` comes as a download URL.
    pub async fn open(
        &self,
        who: &Identity,
        path: &FilePath,
        version: Option<u64>,
    ) -> Result<FileRead> {
        who.paths.check_read(path)?;
        self.read(&who.scope, path, version, true).await
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
                    sha256: item.sha256,
                    principal: item.principal,
                };
                (meta, item.body)
            }
        };
        let body = body.ok_or_else(|| WorkspaceError::internal("live version without a body"))?;
        Ok((meta, body))
    }

    /// Lists the live files under `prefix` the caller may read, sorted by path, a page at a
    /// time. For a path-scoped caller the store is read on past what it may not see (at
    /// most `maxFiles` heads in all), so a page is full unless the listing is done.
    pub async fn list(
        &self,
        who: &Identity,
        prefix: &PathPrefix,
        limit: Option<usize>,
        after: Option<&FilePath>,
    ) -> Result<FilePage> {
        let limit = list_limit(limit)?;
        let mut visible: Vec<Head> = Vec::new();
        let mut after = after.cloned();
        let more = loop {
            let heads = self
                .meta
                .list_live(&who.scope, prefix, after.as_ref(), limit + 1)
                .await?;
            let exhausted = heads.len() <= limit;
            after = heads.last().and_then(|h| FilePath::parse(&h.path).ok());
            visible.extend(heads.into_iter().filter(|h| who.paths.can_read(&h.path)));
            if visible.len() > limit {
                break true;
            }
            if exhausted || after.is_none() {
                break false;
            }
        };
        visible.truncate(limit);
        let next_after = if more {
            visible.last().and_then(|h| FilePath::parse(&h.path).ok())
        } else {
            None
        };
        Ok(FilePage {
            files: visible.iter().map(Head::meta).collect(),
            next_after,
        })
    }
}
