//! The pin protocol of run snapshots (see `snapshots.rs` for why it is safe): adding a
//! snapshot's pin to a head under the head's compare-and-swap, and ending it again.

use super::*;

/// Compare-and-swap rounds on one head before pinning gives up.
pub(super) const PIN_ATTEMPTS: usize = 50;

/// Retention arithmetic the pinning tasks need without the service.
#[derive(Clone, Copy)]
pub(super) struct Window {
    pub(super) max_versions: u64,
}

impl Window {
    /// The retention rule, the one place it is written: the oldest seq kept when `newest`
    /// is the newest is such that the last `max_versions` items survive.
    pub(super) fn oldest_kept(&self, newest: u64) -> u64 {
        (newest + 1).saturating_sub(self.max_versions).max(1)
    }

    fn retain_from(&self, head: &Head) -> u64 {
        self.oldest_kept(head.seq)
    }

    /// Whether version item `seq` can still exist under `head`.
    fn may_hold(&self, head: &Head, seq: u64) -> bool {
        seq >= self.retain_from(head) || head.pins.iter().any(|p| p.seq == seq)
    }

    /// `pins` without the ended ones nothing depends on, so a file that is never written
    /// again does not collect pins: an ended pin inside the retention window holds nothing,
    /// and below it one ended pin per seq is enough to have the next commit release it.
    fn tidy(&self, head: &Head, pins: Vec<Pin>, now: Millis) -> Vec<Pin> {
        let retain_from = self.retain_from(head);
        let mut out: Vec<Pin> = Vec::with_capacity(pins.len());
        for p in pins {
            let ended = p.until <= now;
            let dup = out.iter().any(|q| q.seq == p.seq && q.until <= now);
            if ended && (p.seq >= retain_from || dup) {
                continue;
            }
            out.push(p);
        }
        out
    }
}

/// Pins `listed.seq` for `id`. `None` when the file's listed version can no longer be held
/// (it was pruned by later writes before the pin landed): the caller then takes the file
/// at its current state instead.
pub(super) async fn pin_file(
    meta: Arc<dyn MetaStore>,
    scope: Scope,
    listed: Head,
    id: String,
    (now, until): (Millis, Millis),
    window: Window,
) -> Result<Option<Head>> {
    let path = FilePath::parse(&listed.path)?;
    let mut head = Some(listed.clone());
    for _ in 0..PIN_ATTEMPTS {
        let Some(h) = head.as_ref() else {
            return Ok(None);
        };
        if !window.may_hold(h, listed.seq) {
            return Ok(None);
        }
        let mut pins = window.tidy(h, h.pins.clone(), now);
        pins.push(Pin {
            seq: listed.seq,
            snapshot: id.clone(),
            until,
            span: None,
        });
        let must_exist = (h.seq != listed.seq).then_some(listed.seq);
        if meta
            .set_pins(&scope, &path, Expect::of(Some(h)), pins, must_exist)
            .await?
        {
            return Ok(Some(listed));
        }
        head = meta.head(&scope, &path).await?;
    }
    Err(WorkspaceError::internal(format!(
        "gave up pinning {path} after {PIN_ATTEMPTS} concurrent commits"
    )))
}

/// Sets `until = 0` on `id`'s pins of one path, so the next commit releases what they held.
pub(super) async fn end_pins(
    meta: Arc<dyn MetaStore>,
    scope: Scope,
    path: String,
    id: String,
    now: Millis,
    window: Window,
) -> Result<()> {
    let path = FilePath::parse(&path)?;
    for _ in 0..PIN_ATTEMPTS {
        let Some(h) = meta.head(&scope, &path).await? else {
            return Ok(());
        };
        if !h.pins.iter().any(|p| p.snapshot == id && p.until > 0) {
            return Ok(());
        }
        let pins = h
            .pins
            .iter()
            .cloned()
            .map(|p| {
                if p.snapshot == id {
                    Pin { until: 0, ..p }
                } else {
                    p
                }
            })
            .collect();
        let pins = window.tidy(&h, pins, now);
        if meta
            .set_pins(&scope, &path, Expect::of(Some(&h)), pins, None)
            .await?
        {
            return Ok(());
        }
    }
    Err(WorkspaceError::internal(format!(
        "gave up releasing pins of {path}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, pins: Vec<Pin>) -> Head {
        Head {
            path: "a".into(),
            lineage: "l".into(),
            version: seq,
            seq,
            etag: String::new(),
            size: 0,
            content_type: String::new(),
            updated_at: 0,
            deleted: false,
            body: None,
            sha256: String::new(),
            pins,
            pin_rev: 0,
            principal: String::new(),
            point: 0,
        }
    }

    fn pin(seq: u64, snapshot: &str, until: Millis) -> Pin {
        Pin {
            seq,
            snapshot: snapshot.into(),
            until,
            span: None,
        }
    }

    #[test]
    fn tidy_keeps_live_pins_and_one_ended_pin_per_seq_below_the_window() {
        let w = Window { max_versions: 3 };
        let pins = vec![
            pin(10, "live", 100),
            pin(10, "ended-in-window", 0),
            pin(2, "ended-a", 0),
            pin(2, "ended-b", 5),
            pin(1, "live-below", 100),
        ];
        let h = head(10, pins.clone());
        let kept = w.tidy(&h, pins, 50);
        assert_eq!(
            kept,
            vec![
                pin(10, "live", 100),
                pin(2, "ended-a", 0),
                pin(1, "live-below", 100)
            ]
        );
        assert!(w.may_hold(&h, 8) && w.may_hold(&h, 2) && !w.may_hold(&h, 3));
    }
}
