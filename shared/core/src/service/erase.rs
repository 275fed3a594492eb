//! Erasing a version from history (`workspace:admin`): the version's body is removed from
//! the store (the S3 object version, the redb row) and its item stays as a tombstone naming
//! who erased it and when, so history shows the hole; reads of it are 410 `gone`. The live
//! version cannot be erased (write a new one first). A version a live snapshot holds is
//! refused with the snapshots' ids unless `force`, which also marks it erased in those
//! snapshots (reads through them are 410 too) and removes a kept snapshot's copy.
//!
//! Order: for each holding snapshot, its kept copy is deleted, then its record marked;
//! then the item is erased (one atomic store call, with its change-log entry and, locally,
//! its event), then the body is deleted. A kept copy's delete that fails fails the erase
//! (500) with that snapshot and the item as they were, and running the erase again finishes it
//! (deleting a copy already gone is no error); meanwhile reads of that file through the kept
//! snapshot may fail. Stopped after the item's erase, the body is an orphan no item names,
//! which the sweeper removes.

use super::*;
use crate::capability::CapabilityCode;
use crate::model::{Erasure, SnapshotFile};

/// The 410 of reading an erased version.
pub(super) fn erased(path: &FilePath, version: u64, by: &Erasure) -> WorkspaceError {
    CapabilityCode::VersionErased.error(format!(
        "version {version} of {path} was erased from history by {} at {}",
        by.by,
        format_time(by.at)
    ))
}

impl WorkspaceService {
    /// Erases version `n` of the live file at `path`.
    pub async fn erase_version(
        &self,
        who: &Identity,
        path: &FilePath,
        n: u64,
        force: bool,
    ) -> Result<()> {
        who.paths.check_write(path)?;
        let scope = &who.scope;
        let head = self.meta.head(scope, path).await?;
        let h = live(&head)
            .ok_or_else(|| WorkspaceError::not_found(format!("no file at {path}")))?
            .clone();
        let missing = || {
            WorkspaceError::not_found(format!(
                "version {n} of {path} does not exist or is no longer retained"
            ))
        };
        if n == h.version {
            return Err(conflict(
                format!("version {n} is the live version of {path}: write a new version first, then erase this one"),
                &head,
            ));
        }
        let seq = h.seq_of_version(n).ok_or_else(missing)?;
        let item = self
            .meta
            .version(scope, path, seq)
            .await?
            .filter(|v| v.lineage == h.lineage && !v.deleted)
            .ok_or_else(missing)?;
        if let Some(by) = &item.erased {
            return Err(erased(path, n, by));
        }
        let mut holders = self.snapshots_holding(scope, path, seq).await?;
        holders.extend(self.points_holding(scope, &h, seq).await?);
        if !holders.is_empty() && !force {
            return Err(conflict(
                format!(
                    "version {n} of {path} is held by snapshot(s) {}; delete them, or erase with ?force=true (reads of it through them are then 410)",
                    holders.join(", ")
                ),
                &head,
            ));
        }
        for id in &holders {
            self.mark_erased_in_snapshot(scope, id, path, seq).await?;
        }
        let erasure = Erasure {
            by: who.principal.clone(),
            at: self.clock.now_ms(),
        };
        match self.meta.erase_version(scope, path, seq, &erasure).await? {
            None => Err(missing()),
            Some(body) => {
                if let Some(body) = body {
                    if let Err(e) = self.bodies.delete(&body).await {
                        tracing::warn!(error = %e, key = %body.key, "erased body not deleted; the sweeper removes it");
                    }
                }
                Ok(())
            }
        }
    }

    /// Ids of the live snapshots whose files name item `seq` of `path`.
    async fn snapshots_holding(
        &self,
        scope: &Scope,
        path: &FilePath,
        seq: u64,
    ) -> Result<Vec<String>> {
        let now = self.clock.now_ms();
        let mut out = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let page = self
                .meta
                .list_snapshots(scope, "", before.as_deref(), 100)
                .await?;
            let done = page.len() < 100;
            before = page.last().map(|s| s.id.clone());
            for info in page.into_iter().filter(|s| s.expires_at > now) {
                let Some(snap) = self.meta.snapshot(scope, &info.id).await? else {
                    continue;
                };
                if snap
                    .files
                    .iter()
                    .any(|f| f.path == path.as_str() && f.seq == seq && !f.erased)
                {
                    out.push(snap.id);
                }
            }
            if done {
                return Ok(out);
            }
        }
    }

    /// Ids of the live points (snapshots and fork bases taken as points) that read item
    /// `seq` of the file `h` is the head of: those its hold names (`points.rs`). Their
    /// reads of it are 410 once the item is erased; nothing in them needs marking.
    async fn points_holding(&self, scope: &Scope, h: &Head, seq: u64) -> Result<Vec<String>> {
        let spans: Vec<(u64, u64)> = h
            .pins
            .iter()
            .filter(|p| p.seq == seq)
            .filter_map(|p| p.span)
            .collect();
        if spans.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock.now_ms();
        let points = self.meta.points(scope).await?;
        Ok(points
            .live
            .into_iter()
            .filter(|p| p.until > now && spans.iter().any(|(a, b)| p.rev >= *a && p.rev < *b))
            .map(|p| p.id)
            .collect())
    }

    async fn mark_erased_in_snapshot(
        &self,
        scope: &Scope,
        id: &str,
        path: &FilePath,
        seq: u64,
    ) -> Result<()> {
        let Some(mut snap) = self.meta.snapshot(scope, id).await? else {
            return Ok(());
        };
        let mut copies = Vec::new();
        for f in snap
            .files
            .iter_mut()
            .filter(|f| f.path == path.as_str() && f.seq == seq)
        {
            f.erased = true;
            // A fork base's record may hold the body itself (inline): it goes too.
            f.body = None;
            copies.extend(f.kept.take());
        }
        // The copies go before the record stops naming them: a delete that fails fails the
        // erase with the record (and the version item) as they were, so running the erase
        // again finds this snapshot again and deletes what is left. Marked first, a copy
        // whose delete failed would be named by nothing, outside `files/` where the sweeper
        // looks, and kept forever.
        for body in &copies {
            self.bodies.delete(body).await?;
        }
        self.meta.put_snapshot(scope, &snap).await
    }
}

/// A snapshot file's 410 when it was erased.
pub(super) fn check_not_erased(f: &SnapshotFile, id: &str) -> Result<()> {
    if f.erased {
        return Err(CapabilityCode::VersionErased.error(format!(
            "version {} of {} was erased from history; snapshot {id} no longer holds it",
            f.version, f.path
        )));
    }
    Ok(())
}
