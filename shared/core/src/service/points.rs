//! Snapshots and fork bases as points in history: taking one writes the scope's point
//! registry and the record, whatever the number of files; the commits that supersede a
//! version some live point can read hold it. The protocol and its failure interleavings
//! are in `docs/design.md` ("Snapshots and retention").
//!
//! - Every commit records the registry revision it was planned under as its version's
//!   `point`, and is conditioned on the registry still being at that revision
//!   (`Commit::points_rev`; `PointsMoved` otherwise, and the commit is planned again).
//! - Taking a point is one conditional swap of the registry (revision `r` to `r + 1`, the
//!   point `r` added) with the record in the same atomic step: every version committed
//!   before it has `point <= r`, every later one `point >= r + 1`.
//! - Reading path `p` at point `r` is the newest retained version of `p` with
//!   `point <= r` (a tombstone: absent then).
//! - A commit that supersedes version `v` (committed under `a`) while a live point
//!   `a <= r` exists adds a hold (`Pin::span = (a, now)`) to the new head, so retention
//!   keeps `v` while one of those points lives; each later commit of the path recomputes
//!   its holds from the registry, dropping those whose points all ended.

use super::*;
use crate::forks::INHERITED_PIN_REV;
use crate::model::{Point, Points, Snapshot, SnapshotFile};

/// Live points (snapshots and fork bases) one workspace holds at most: bounds the
/// registry item (about 100 bytes each; a DynamoDB item holds 400 KB) and the holds one
/// head can carry.
pub const MAX_LIVE_POINTS: usize = 2000;
/// Registries kept between commits by one process; past it the cache starts again.
const MAX_CACHED_REGISTRIES: usize = 4096;
/// Rounds of taking or ending a point while other points are taken or ended at once.
const POINT_ATTEMPTS: usize = 50;

/// The hold a commit planned under `points` adds for `head`, the version it supersedes:
/// while a live point can read it (one taken at or after the revision it was committed
/// under; every live point predates the commit).
pub(super) fn hold_for(points: &Points, head: &Head, now: Millis) -> Option<Pin> {
    if head.pin_rev == INHERITED_PIN_REV {
        // A fork's inherited file: its base point holds it in the parent.
        return None;
    }
    let span = (head.point, points.rev);
    let until = until_of(points, span, now)?;
    Some(Pin {
        seq: head.seq,
        snapshot: String::new(),
        until,
        span: Some(span),
    })
}

/// The latest end of the live points in `from..to`, if one lives.
fn until_of(points: &Points, (from, to): (u64, u64), now: Millis) -> Option<Millis> {
    points
        .live
        .iter()
        .filter(|p| p.until > now && p.rev >= from && p.rev < to)
        .map(|p| p.until)
        .max()
}

/// `pins` with each hold's end recomputed from the registry (0 when none of its points
/// lives any more: the next retention step releases it). Pins of snapshots taken before
/// points existed are kept as they are.
pub(super) fn refresh_holds(pins: &[Pin], points: &Points, now: Millis) -> Vec<Pin> {
    pins.iter()
        .map(|p| match p.span {
            Some(span) => Pin {
                until: until_of(points, span, now).unwrap_or(0),
                ..p.clone()
            },
            None => p.clone(),
        })
        .collect()
}

impl WorkspaceService {
    /// The registry a commit is planned under: kept from an earlier commit where possible
    /// (every commit is checked against its revision, so a stale one is never used).
    pub(super) async fn points_for_commit(&self, scope: &Scope) -> Result<Points> {
        let kept = self
            .points_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(scope)
            .cloned();
        if let Some(points) = kept {
            return Ok(points);
        }
        let points = self.meta.points(scope).await?;
        self.keep_points(scope, &points);
        Ok(points)
    }

    /// The registry this process keeps for `scope`, without reading it.
    pub(super) fn kept_points(&self, scope: &Scope) -> Option<Points> {
        self.points_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(scope)
            .cloned()
    }

    fn keep_points(&self, scope: &Scope, points: &Points) {
        let mut cache = self.points_cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CACHED_REGISTRIES {
            cache.clear();
        }
        cache.insert(scope.clone(), points.clone());
    }

    /// Drops the kept registry of `scope`: a commit found it moved.
    pub(super) fn forget_points(&self, scope: &Scope) {
        self.points_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(scope);
    }

    /// Takes a point for `snapshot` (its `point` is set here) and stores its record, in
    /// one atomic step: one registry swap, whatever the number of files.
    pub(super) async fn take_point(&self, scope: &Scope, snapshot: Snapshot) -> Result<Snapshot> {
        self.take_point_with(scope, snapshot, None, None).await
    }

    /// [`Self::take_point`], storing `record` in the same step (a fork's record), and at
    /// point `at` of a live snapshot (`(rev, id)`) instead of now when given: what that
    /// snapshot reads stays held while either lives.
    pub(super) async fn take_point_with(
        &self,
        scope: &Scope,
        mut snapshot: Snapshot,
        record: Option<crate::ports::ScopedRecord<'_>>,
        at: Option<(u64, &str)>,
    ) -> Result<Snapshot> {
        for _ in 0..POINT_ATTEMPTS {
            let now = self.clock.now_ms();
            let current = self.meta.points(scope).await?;
            if let Some((rev, id)) = at {
                if !current
                    .live
                    .iter()
                    .any(|p| p.id == id && p.rev == rev && p.until > now)
                {
                    return Err(WorkspaceError::not_found(format!(
                        "no snapshot {id} in this workspace (or it expired)"
                    )));
                }
            }
            let mut live: Vec<Point> = current
                .live
                .iter()
                .filter(|p| p.until > now)
                .cloned()
                .collect();
            if live.len() >= MAX_LIVE_POINTS {
                return Err(WorkspaceError::Conflict {
                    message: format!(
                        "this workspace already has {MAX_LIVE_POINTS} live snapshots and forks; \
                         delete or discard some first"
                    ),
                    current_version: 0,
                });
            }
            let rev = at.map_or(current.rev, |(rev, _)| rev);
            live.push(Point {
                id: snapshot.id.clone(),
                rev,
                until: snapshot.expires_at,
            });
            let next = Points {
                rev: current.rev + 1,
                live,
            };
            snapshot.point = Some(rev);
            let with = crate::ports::PointRecords {
                snapshot: Some(&snapshot),
                record,
            };
            if self
                .meta
                .swap_points(scope, current.rev, &next, with)
                .await?
            {
                self.keep_points(scope, &next);
                return Ok(snapshot);
            }
        }
        Err(WorkspaceError::internal(format!(
            "gave up taking a point in {scope} after {POINT_ATTEMPTS} concurrent changes"
        )))
    }

    /// Ends point `id` (its snapshot was deleted, or its fork discarded): the next commit
    /// of each path it held releases what only it held.
    pub(super) async fn end_point(&self, scope: &Scope, id: &str) -> Result<()> {
        for _ in 0..POINT_ATTEMPTS {
            let now = self.clock.now_ms();
            let current = self.meta.points(scope).await?;
            if !current.live.iter().any(|p| p.id == id) {
                return Ok(());
            }
            let next = Points {
                rev: current.rev + 1,
                live: current
                    .live
                    .iter()
                    .filter(|p| p.id != id && p.until > now)
                    .cloned()
                    .collect(),
            };
            if self
                .meta
                .swap_points(scope, current.rev, &next, Default::default())
                .await?
            {
                self.keep_points(scope, &next);
                return Ok(());
            }
        }
        Err(WorkspaceError::internal(format!(
            "gave up ending point {id} in {scope} after {POINT_ATTEMPTS} concurrent changes"
        )))
    }

    /// The version of `path` current at point `rev` of `scope` (a fork's own writes first,
    /// then its base), `None` when there was no file then. Reads the path's retained
    /// version items newest first: retention keeps at most `maxVersions` plus the held ones.
    pub(super) async fn file_at(
        &self,
        scope: &Scope,
        path: &FilePath,
        rev: u64,
    ) -> Result<Option<SnapshotFile>> {
        if let Some(v) = crate::forks::version_at(self.forks.stored(), scope, path, rev).await? {
            return Ok((!v.deleted).then(|| SnapshotFile::of_version(path.as_str(), &v)));
        }
        // Nothing of the fork's own then: what it inherited, if it is a fork.
        match self.forks.base(scope).await? {
            Some(base) => self.forks.base_file(&base, path).await,
            None => Ok(None),
        }
    }

    /// The files under `prefix` after `after` as they were at point `rev`, in path order,
    /// `limit` at most: the scope's heads, each changed since the point read at it (a
    /// page costs the live listing's page plus one history read per path changed since).
    pub(super) async fn list_at(
        &self,
        scope: &Scope,
        rev: u64,
        prefix: &PathPrefix,
        after: Option<&FilePath>,
        limit: usize,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<(Vec<SnapshotFile>, bool)> {
        let mut out = Vec::new();
        let mut cursor = after.cloned();
        loop {
            let page = self
                .meta
                .list_heads(scope, prefix, cursor.as_ref(), MAX_LIST_LIMIT)
                .await?;
            let done = page.len() < MAX_LIST_LIMIT;
            cursor = page.last().map(|h| FilePath::parse(&h.path)).transpose()?;
            for h in page {
                if !keep(&h.path) {
                    continue;
                }
                let file = if h.pin_rev == INHERITED_PIN_REV || h.point <= rev {
                    h.is_live().then(|| SnapshotFile::of_head(&h))
                } else {
                    self.file_at(scope, &FilePath::parse(&h.path)?, rev).await?
                };
                if let Some(f) = file {
                    if out.len() == limit {
                        return Ok((out, true));
                    }
                    out.push(f);
                }
            }
            if done || cursor.is_none() {
                return Ok((out, false));
            }
        }
    }

    /// Every file of point snapshot `snapshot` (`Snapshot::point`), for the operations
    /// that need them all (a rollback, a search through it, its record answered whole).
    pub(super) async fn files_at(
        &self,
        scope: &Scope,
        snapshot: &Snapshot,
    ) -> Result<Vec<SnapshotFile>> {
        let Some(rev) = snapshot.point else {
            return Ok(snapshot.files.clone());
        };
        let covers = snapshot_covers(snapshot)?;
        let keep = |p: &str| covers.as_ref().is_none_or(|c| c.can_read(p));
        let (files, _) = self
            .list_at(scope, rev, &PathPrefix::default(), None, usize::MAX, &keep)
            .await?;
        Ok(files)
    }
}

/// The globs a path-scoped snapshot was taken through, as a scope to test paths against
/// (`None`: the whole workspace).
pub(super) fn snapshot_covers(snapshot: &Snapshot) -> Result<Option<crate::PathScope>> {
    if snapshot.covers.is_empty() {
        return Ok(None);
    }
    crate::PathScope::new(Vec::new(), snapshot.covers.clone()).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(rev: u64, live: &[(u64, Millis)]) -> Points {
        Points {
            rev,
            live: live
                .iter()
                .map(|(r, until)| Point {
                    id: format!("p{r}"),
                    rev: *r,
                    until: *until,
                })
                .collect(),
        }
    }

    #[test]
    fn a_hold_lasts_as_long_as_the_latest_point_that_can_read_the_version() {
        let mut h = Head::of_version(
            "a".into(),
            VersionRecord::of_head(&blank(), None),
            vec![],
            0,
        );
        h.seq = 4;
        h.point = 2;
        // Points 1 (before the version), 2 and 3 (after it), one of them ended.
        let p = points(5, &[(1, 900), (2, 500), (3, 700), (4, 10)]);
        let pin = hold_for(&p, &h, 100).expect("points 2 and 3 read it");
        assert_eq!((pin.seq, pin.until, pin.span), (4, 700, Some((2, 5))));
        // Only point 1 (older than the version) lives: nothing reads it.
        assert!(hold_for(&points(5, &[(1, 900)]), &h, 100).is_none());
        // The registry moved on: the hold ends once its points have.
        let later = refresh_holds(
            std::slice::from_ref(&pin),
            &points(6, &[(1, 900), (2, 500)]),
            100,
        );
        assert_eq!(later[0].until, 500);
        let ended = refresh_holds(&[pin], &points(7, &[(1, 900)]), 100);
        assert_eq!(ended[0].until, 0);
    }

    fn blank() -> Head {
        Head::named("a", "l", 1, 1, "")
    }
}
