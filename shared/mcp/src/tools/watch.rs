//! wait_for_changes: a long poll of the workspace change log (`WorkspaceService::changes`,
//! the log behind `GET /v1/host/workspace/changes`), so an MCP client can wait for changes
//! on every transport this server speaks.
//!
//! Why a tool and not notifications: `POST /mcp` is stateless Streamable HTTP (no
//! `Mcp-Session-Id`, no `GET /mcp` stream), so between two requests there is no channel to
//! push a notification on, and none can be kept: on Lambda the process that answered is
//! frozen or gone once the response is sent. The only MCP notification that announces
//! changed data, `notifications/resources/updated`, also needs resources and
//! `resources/subscribe`, which this server does not implement (it serves tools). A tool
//! call that answers when something changed is request/response, so it runs unchanged on
//! Lambda, on the local server and on stdio (where `workspace-local mcp` runs waits beside
//! the other calls, so a waiting client can still read and write meanwhile).
//!
//! The cursor. The log is ordered by the time a change carries, which a writer stamps
//! before its body is stored and its commit lands; so a change can become visible after
//! a change stamped later (two writers racing, a slow upload). A cursor is therefore not a
//! single position: it is a floor time (every change stamped before it counts as seen) and
//! the short hashes of the changes at or after the floor already reported. Each answer
//! moves the floor to [`LATE_COMMIT_MS`] before the time of the read, so a change that
//! commits up to that long after its own time is still reported, once.
//!
//! Bounds: a call waits at most [`MAX_TIMEOUT_SECONDS`] (under the 29 s Lambda and 30 s
//! HTTP API limits), and at most until its payload's deadline when it is one of a batch;
//! it reads the log every [`POLL_MAX_MS`] at most (sooner at first) and holds nothing but
//! its own call between reads; each read is at most [`MAX_WINDOW_PAGES`] pages.

use super::args::{self, Args};
use super::{fail, from_domain, require_read, Outcome, ToolOutput, Workspace};
use crate::paths::MOUNT;
use crate::tree::is_marker;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;
use workspace_core::changes::{Change, MAX_CHANGES_PAGE};
use workspace_core::model::{format_time, parse_time, Millis};
use workspace_core::service::ChangeFilter;
use workspace_core::{PathPrefix, WorkspaceError};

/// The tool's name.
pub const NAME: &str = "wait_for_changes";
/// How long a call waits when `timeout_seconds` is not given.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 20;
/// The longest a call waits: under the HTTP API's 30 s integration limit and the `mcp`
/// Lambda function's 29 s timeout, with room for the reads around the wait.
pub const MAX_TIMEOUT_SECONDS: u64 = 25;
/// How long after its own time a change may commit and still be reported.
pub const LATE_COMMIT_MS: Millis = 10_000;
/// Most changes one answer lists (the rest wait for the next call).
pub const MAX_REPORTED: usize = 100;
/// Most change-log pages one read of the log takes.
pub const MAX_WINDOW_PAGES: usize = 10;
/// Most reported changes a cursor remembers (the oldest are forgotten first).
pub const MAX_SEEN: usize = 200;
/// The first pause between reads of the log, and the longest (it doubles up to it).
pub const POLL_MIN_MS: u64 = 100;
pub const POLL_MAX_MS: u64 = 500;

const CURSOR_TAG: &str = "w1";
/// Hex digits of one remembered change's hash (40 bits).
const HASH_HEX: usize = 10;

/// When the waits of one payload (a message, or a whole batch) must have answered.
pub fn payload_deadline() -> Instant {
    Instant::now() + Duration::from_secs(MAX_TIMEOUT_SECONDS)
}

/// Where a caller is in the change log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// Every change stamped before this was seen.
    pub floor: Millis,
    /// The hashes of the changes stamped at or after `floor` that were seen.
    pub seen: BTreeSet<u64>,
}

/// A change's short hash: FNV-1a over its log key, 40 bits.
fn hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h & ((1 << (HASH_HEX * 4)) - 1)
}

impl Cursor {
    pub fn encode(&self) -> String {
        let mut s = format!("{CURSOR_TAG}.{}.", self.floor);
        for h in &self.seen {
            let _ = write!(s, "{h:0width$x}", width = HASH_HEX);
        }
        s
    }

    /// A cursor this tool answered, or `None`.
    pub fn decode(s: &str) -> Option<Cursor> {
        let mut parts = s.split('.');
        let (tag, floor, hashes) = (parts.next()?, parts.next()?, parts.next()?);
        if tag != CURSOR_TAG || parts.next().is_some() {
            return None;
        }
        let floor: Millis = floor.parse().ok().filter(|f| *f >= 0)?;
        // [`MAX_SEEN`] is the aim; a read's changes are the hard bound.
        let most = MAX_WINDOW_PAGES * MAX_CHANGES_PAGE;
        if hashes.len() % HASH_HEX != 0 || hashes.len() / HASH_HEX > most {
            return None;
        }
        let seen = (0..hashes.len() / HASH_HEX)
            .map(|i| {
                let h = hashes.get(i * HASH_HEX..(i + 1) * HASH_HEX)?;
                h.bytes()
                    .all(|b| b.is_ascii_hexdigit())
                    .then(|| u64::from_str_radix(h, 16).ok())?
            })
            .collect::<Option<BTreeSet<u64>>>()?;
        Some(Cursor { floor, seen })
    }

    fn has_seen(&self, c: &Change) -> bool {
        self.seen.contains(&hash(&c.key))
    }
}

/// What one read of the log tells: the changes to report, and the cursor after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// New changes, oldest first (at most [`MAX_REPORTED`]).
    pub report: Vec<Change>,
    /// More new changes than were reported.
    pub more: bool,
    /// The read could not reach back to the cursor: changes stamped before this instant
    /// (and at or after the cursor's floor) were not looked at.
    pub skipped_before: Option<Millis>,
    pub next: Cursor,
}

/// The step from `cursor`, given the log read at `now`: `window` holds the changes stamped
/// at or after `cursor.floor` (any order); `complete` is false when the read stopped before
/// the oldest of them.
pub fn step(cursor: &Cursor, mut window: Vec<Change>, complete: bool, now: Millis) -> Step {
    window.retain(|c| c.at >= cursor.floor);
    window.sort_by(|a, b| a.key.cmp(&b.key));
    let mut floor = cursor.floor;
    let mut skipped_before = None;
    if !complete {
        // Only the newest part was read; the oldest instant read may be partly unread.
        if let Some(oldest) = window.first().map(|c| c.at) {
            window.retain(|c| c.at > oldest);
            floor = floor.max(oldest.saturating_add(1));
            skipped_before = Some(floor);
        }
    }
    let fresh: Vec<&Change> = window.iter().filter(|c| !cursor.has_seen(c)).collect();
    let report: Vec<Change> = fresh
        .iter()
        .take(MAX_REPORTED)
        .map(|c| (*c).clone())
        .collect();
    let first_unreported = fresh.get(MAX_REPORTED).map(|c| c.at);
    // Forget what is older than the late-commit allowance, never past a change not yet
    // reported (it is newer than every reported one: the log is in time order).
    let mut next_floor = floor.max(now.saturating_sub(LATE_COMMIT_MS));
    if let Some(at) = first_unreported {
        next_floor = next_floor.min(at);
    }
    let reported: BTreeSet<&str> = report.iter().map(|c| c.key.as_str()).collect();
    let mut kept: Vec<&Change> = window
        .iter()
        .filter(|c| c.at >= next_floor && (cursor.has_seen(c) || reported.contains(c.key.as_str())))
        .collect();
    if kept.len() > MAX_SEEN {
        let cut = kept[kept.len() - MAX_SEEN].at;
        next_floor = next_floor.max(cut.min(first_unreported.unwrap_or(Millis::MAX)));
        kept.retain(|c| c.at >= next_floor);
    }
    Step {
        report,
        more: first_unreported.is_some(),
        skipped_before,
        next: Cursor {
            floor: next_floor,
            seen: kept.iter().map(|c| hash(&c.key)).collect(),
        },
    }
}

/// The caller's changes stamped at or after `floor` under `prefix`, newest first, and
/// whether the read reached the oldest of them.
async fn read_window(
    ws: &Workspace<'_>,
    floor: Millis,
    prefix: &PathPrefix,
) -> Result<(Vec<Change>, bool), WorkspaceError> {
    let filter = ChangeFilter {
        since: Some(floor),
        until: None,
        principal: None,
        prefix: prefix.clone(),
    };
    let mut changes = Vec::new();
    let mut before = None;
    for _ in 0..MAX_WINDOW_PAGES {
        let page = ws
            .service
            .changes(ws.who, &filter, Some(MAX_CHANGES_PAGE), before)
            .await?;
        changes.extend(page.changes);
        match page.next_before {
            Some(b) => before = Some(b),
            None => return Ok((changes, true)),
        }
    }
    Ok((changes, false))
}

/// One line of the answer per change.
fn line(c: &Change) -> String {
    let mut s = format!(
        "{} {} {} version {} by {}",
        c.time(),
        c.operation(),
        c.path,
        c.version,
        c.principal
    );
    if c.operation() == "put" {
        let _ = write!(s, " ({} bytes, etag {})", c.size, c.etag);
        if is_marker(&c.path) {
            s.push_str(" [directory marker]");
        }
    }
    s
}

fn since_error() -> ToolOutput {
    fail(
        "Parameter 'since' must be a cursor answered by wait_for_changes, or an RFC 3339 time like 2026-01-31T12:00:00Z",
    )
}

pub async fn wait_for_changes(ws: &Workspace<'_>, a: &Args, deadline: Instant) -> Outcome {
    require_read(ws)?;
    let since = args::opt_string(a, "since")?;
    let prefix = args::opt_string(a, "prefix")?.unwrap_or("");
    let timeout = args::opt_count(a, "timeout_seconds")?.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    if timeout > MAX_TIMEOUT_SECONDS {
        return Err(fail(format!(
            "Parameter 'timeout_seconds' must be at most {MAX_TIMEOUT_SECONDS}; call again to wait longer"
        )));
    }
    let rel = if prefix == MOUNT {
        ""
    } else {
        prefix.strip_prefix("/workspace/").unwrap_or(prefix)
    };
    let prefix = PathPrefix::parse(rel).map_err(|e| fail(format!("Invalid prefix: {e}")))?;
    let domain = |e| from_domain(e, prefix.as_str());
    let started = Instant::now();
    let deadline = deadline.min(started + Duration::from_secs(timeout));
    // What "No changes within N s" says: the wait asked for, or what the payload left.
    let waits = (deadline - started).as_secs_f64().round();

    let mut cursor = match since.map(str::trim) {
        Some(s) if s.starts_with(CURSOR_TAG) => Cursor::decode(s).ok_or_else(since_error)?,
        Some(s) => Cursor {
            floor: parse_time(s).ok_or_else(since_error)?,
            seen: BTreeSet::new(),
        },
        None => {
            // From now: what the log holds now counts as seen; a change that commits from
            // now on is reported, even one whose time is up to LATE_COMMIT_MS earlier.
            let now = ws.service.now_ms();
            let floor = now.saturating_sub(LATE_COMMIT_MS);
            let (window, complete) = read_window(ws, floor, &prefix).await.map_err(domain)?;
            let all = Cursor {
                floor,
                seen: window.iter().map(|c| hash(&c.key)).collect(),
            };
            step(&all, window, complete, now).next
        }
    };
    let mut pause = Duration::from_millis(POLL_MIN_MS);
    loop {
        let now = ws.service.now_ms();
        let (window, complete) = read_window(ws, cursor.floor, &prefix)
            .await
            .map_err(domain)?;
        let found = step(&cursor, window, complete, now);
        let left = deadline.saturating_duration_since(Instant::now());
        if !found.report.is_empty() || found.skipped_before.is_some() || left.is_zero() {
            return Ok(answer(&found, waits));
        }
        cursor = found.next;
        tokio::time::sleep(pause.min(left)).await;
        pause = (pause * 2).min(Duration::from_millis(POLL_MAX_MS));
    }
}

fn answer(found: &Step, waited_seconds: f64) -> ToolOutput {
    let mut text = if found.report.is_empty() {
        format!("No changes within {waited_seconds} s.\n")
    } else {
        let mut t = format!("{} change(s), oldest first:\n", found.report.len());
        for c in &found.report {
            t.push_str(&line(c));
            t.push('\n');
        }
        t
    };
    if found.more {
        text.push_str("More changes are waiting: call again with this cursor.\n");
    }
    if let Some(t) = found.skipped_before {
        let _ = writeln!(
            text,
            "Changes before {} were not read (too many since the cursor): list them with GET /v1/host/workspace/changes?until={}",
            format_time(t),
            format_time(t)
        );
    }
    let _ = write!(
        text,
        "Cursor: {}\nPass it as 'since' to wait for the changes after these.",
        found.next.encode()
    );
    ToolOutput::ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use workspace_core::changes::change_key;

    fn change(at: Millis, path: &str, seq: u64) -> Change {
        Change {
            key: change_key(at, path, seq),
            path: path.to_owned(),
            seq,
            version: seq,
            etag: format!("\"{seq}-x\""),
            deleted: false,
            erased: false,
            principal: "p".to_owned(),
            at,
            size: 1,
            content_type: "text/plain".to_owned(),
            expires_at: Millis::MAX,
        }
    }

    fn paths(s: &Step) -> Vec<&str> {
        s.report.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        let c = Cursor {
            floor: 1_764_000_000_000,
            seen: [hash("a"), hash("b")].into_iter().collect(),
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c.clone()));
        let empty = Cursor {
            floor: 5,
            seen: BTreeSet::new(),
        };
        assert_eq!(empty.encode(), "w1.5.");
        assert_eq!(Cursor::decode("w1.5."), Some(empty));
        for bad in [
            "",
            "w1",
            "w1.5",
            "w2.5.",
            "w1.-5.",
            "w1.5.abc",
            "w1.5.zzzzzzzzzz",
            "w1.5..x",
            "w1.x.",
        ] {
            assert_eq!(Cursor::decode(bad), None, "{bad}");
        }
        let too_many = format!(
            "w1.5.{}",
            "0123456789".repeat(MAX_WINDOW_PAGES * MAX_CHANGES_PAGE + 1)
        );
        assert_eq!(Cursor::decode(&too_many), None);
    }

    #[test]
    fn a_change_is_reported_once_even_when_it_commits_late() {
        let start = Cursor {
            floor: 1_000,
            seen: BTreeSet::new(),
        };
        let a = change(1_500, "a", 1);
        let first = step(&start, vec![a.clone()], true, 2_000);
        assert_eq!(paths(&first), ["a"]);
        // Read again: nothing new.
        let again = step(&first.next, vec![a.clone()], true, 2_100);
        assert!(again.report.is_empty());
        // `b` is stamped before `a` but becomes visible only now: still reported, once.
        let b = change(1_400, "b", 1);
        let late = step(&again.next, vec![b.clone(), a.clone()], true, 2_200);
        assert_eq!(paths(&late), ["b"]);
        let after = step(&late.next, vec![a, b], true, 2_300);
        assert!(after.report.is_empty());
    }

    #[test]
    fn the_floor_follows_the_clock_and_forgets_what_is_old() {
        let start = Cursor {
            floor: 0,
            seen: BTreeSet::new(),
        };
        let s = step(&start, vec![change(1_000, "a", 1)], true, 60_000);
        assert_eq!(paths(&s), ["a"]);
        assert_eq!(s.next.floor, 60_000 - LATE_COMMIT_MS);
        // `a` is older than the new floor: not remembered, not needed.
        assert!(s.next.seen.is_empty());
    }

    #[test]
    fn a_long_backlog_is_answered_in_order_across_calls() {
        let start = Cursor {
            floor: 0,
            seen: BTreeSet::new(),
        };
        let all: Vec<Change> = (0..250)
            .map(|i| change(1_000 + i, &format!("f{i:03}"), 1))
            .collect();
        let mut cursor = start;
        let mut got = Vec::new();
        for _ in 0..4 {
            let s = step(&cursor, all.clone(), true, 1_000_000);
            assert_eq!(s.more, got.len() + s.report.len() < all.len());
            got.extend(s.report.iter().map(|c| c.path.clone()));
            cursor = s.next;
            assert!(cursor.seen.len() <= MAX_SEEN);
        }
        let want: Vec<String> = all.iter().map(|c| c.path.clone()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_read_that_stops_short_says_what_it_skipped() {
        let start = Cursor {
            floor: 0,
            seen: BTreeSet::new(),
        };
        let read = vec![
            change(5_000, "x", 1),
            change(5_000, "y", 1),
            change(6_000, "z", 1),
        ];
        let s = step(&start, read, false, 7_000);
        assert_eq!(paths(&s), ["z"]);
        assert_eq!(s.skipped_before, Some(5_001));
    }
}
