//! The three-way comparison of a fork, its parent and their base, and what a merge does
//! with each path. Pure: decided on each side's recorded identity (SHA-256 and content
//! type of the stored bytes), never on fetched content.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One side's file at a path (absent paths have none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    pub version: u64,
    pub etag: String,
    pub sha256: String,
    pub content_type: String,
    pub size: u64,
}

impl FileState {
    /// The same bytes under the same content type. Records written before the digest was
    /// kept compare by etag.
    pub fn same_content(&self, other: &Self) -> bool {
        if self.sha256.is_empty() || other.sha256.is_empty() {
            return self.etag == other.etag;
        }
        self.sha256 == other.sha256 && self.content_type == other.content_type
    }
}

fn same(a: Option<&FileState>, b: Option<&FileState>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_content(b),
        _ => false,
    }
}

/// What one side did to a path since the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Added,
    Modified,
    Deleted,
    Unchanged,
}

pub fn change(base: Option<&FileState>, now: Option<&FileState>) -> Change {
    match (base, now) {
        (None, None) => Change::Unchanged,
        (None, Some(_)) => Change::Added,
        (Some(_), None) => Change::Deleted,
        (Some(b), Some(n)) if b.same_content(n) => Change::Unchanged,
        _ => Change::Modified,
    }
}

/// One path changed on at least one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathDiff {
    pub path: String,
    pub base: Option<FileState>,
    pub fork: Option<FileState>,
    pub parent: Option<FileState>,
    pub fork_change: Change,
    pub parent_change: Change,
    /// Both sides changed it, to different results (both deleting it, or both writing the
    /// same bytes, is no conflict).
    pub conflict: bool,
}

/// Every path changed on at least one side, in path order.
pub fn diff(
    base: &BTreeMap<String, FileState>,
    fork: &BTreeMap<String, FileState>,
    parent: &BTreeMap<String, FileState>,
) -> Vec<PathDiff> {
    let paths: BTreeSet<&String> = base
        .keys()
        .chain(fork.keys())
        .chain(parent.keys())
        .collect();
    paths
        .into_iter()
        .filter_map(|p| {
            let (b, f, q) = (base.get(p), fork.get(p), parent.get(p));
            let (fork_change, parent_change) = (change(b, f), change(b, q));
            if fork_change == Change::Unchanged && parent_change == Change::Unchanged {
                return None;
            }
            let conflict = fork_change != Change::Unchanged
                && parent_change != Change::Unchanged
                && !same(f, q);
            Some(PathDiff {
                path: p.clone(),
                base: b.cloned(),
                fork: f.cloned(),
                parent: q.cloned(),
                fork_change,
                parent_change,
                conflict,
            })
        })
        .collect()
}

/// How a merge settles paths both sides changed differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Any such path fails the merge.
    Fail,
    ForkWins,
    ParentWins,
    /// Text changed on both sides is merged line by line; what does not merge cleanly
    /// (or is binary, or was deleted on one side) stays a conflict.
    ThreeWay,
}

impl Strategy {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "fail" => Self::Fail,
            "fork-wins" => Self::ForkWins,
            "parent-wins" => Self::ParentWins,
            "three-way" => Self::ThreeWay,
            _ => return None,
        })
    }
}

/// A caller's decision for one path; wins over the strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Fork,
    Parent,
    Content(Vec<u8>),
}

/// How a resolution is written in JSON (the API's and the MCP tool's).
pub const RESOLUTION_SHAPE: &str =
    r#""fork", "parent", {"content": "<text>"} or {"contentBase64": "<base64>"}"#;

impl Resolution {
    /// A resolution as a request writes it ([`RESOLUTION_SHAPE`]); `Err` says what is
    /// wrong with it.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        use base64::Engine;
        use serde_json::Value;
        let bad = || format!("must be {RESOLUTION_SHAPE}");
        match v {
            Value::String(s) if s == "fork" => Ok(Self::Fork),
            Value::String(s) if s == "parent" => Ok(Self::Parent),
            Value::Object(o) if o.len() == 1 => match (o.get("content"), o.get("contentBase64")) {
                (Some(Value::String(t)), None) => Ok(Self::Content(t.clone().into_bytes())),
                (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map(Self::Content)
                    .map_err(|e| format!("contentBase64 is not base64: {e}")),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// What a merge does at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The parent takes the fork's state (its bytes, or its deletion).
    TakeFork,
    /// The parent keeps what it has.
    KeepParent,
    /// The parent takes these bytes.
    Write(Vec<u8>),
    /// Merge the texts of base, parent and fork line by line.
    MergeText,
    Conflict,
}

pub fn decide(d: &PathDiff, strategy: Strategy, resolution: Option<&Resolution>) -> Decision {
    match resolution {
        Some(Resolution::Fork) => return Decision::TakeFork,
        Some(Resolution::Parent) => return Decision::KeepParent,
        Some(Resolution::Content(bytes)) => return Decision::Write(bytes.clone()),
        None => {}
    }
    if d.fork_change == Change::Unchanged || !d.conflict && d.parent_change != Change::Unchanged {
        return Decision::KeepParent;
    }
    if d.parent_change == Change::Unchanged {
        return Decision::TakeFork;
    }
    match strategy {
        Strategy::Fail => Decision::Conflict,
        Strategy::ForkWins => Decision::TakeFork,
        Strategy::ParentWins => Decision::KeepParent,
        Strategy::ThreeWay if d.fork.is_some() && d.parent.is_some() => Decision::MergeText,
        Strategy::ThreeWay => Decision::Conflict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(sha: &str) -> FileState {
        FileState {
            version: 1,
            etag: format!("e-{sha}"),
            sha256: sha.to_owned(),
            content_type: "text/plain".to_owned(),
            size: 1,
        }
    }

    fn map(entries: &[(&str, &str)]) -> BTreeMap<String, FileState> {
        entries
            .iter()
            .map(|(p, sha)| (p.to_string(), file(sha)))
            .collect()
    }

    #[test]
    fn every_state_of_a_path_is_told_apart() {
        let base = map(&[
            ("same", "a"),
            ("fork-mod", "a"),
            ("parent-mod", "a"),
            ("both-mod", "a"),
            ("both-same", "a"),
            ("fork-del", "a"),
            ("both-del", "a"),
            ("mod-del", "a"),
        ]);
        let fork = map(&[
            ("same", "a"),
            ("fork-mod", "b"),
            ("parent-mod", "a"),
            ("both-mod", "b"),
            ("both-same", "b"),
            ("parent-del-only", "x"),
            ("mod-del", "b"),
            ("fork-add", "n"),
        ]);
        let parent = map(&[
            ("same", "a"),
            ("fork-mod", "a"),
            ("parent-mod", "c"),
            ("both-mod", "c"),
            ("both-same", "b"),
            ("fork-del", "a"),
            ("mod-del", "a"),
            ("parent-add", "n"),
        ]);
        let mut base = base;
        base.insert("parent-del-only".into(), file("x"));
        // mod-del: the fork modified it, the parent deleted it.
        let mut parent = parent;
        parent.remove("mod-del");
        let d = diff(&base, &fork, &parent);
        let got: Vec<(&str, Change, Change, bool)> = d
            .iter()
            .map(|d| (d.path.as_str(), d.fork_change, d.parent_change, d.conflict))
            .collect();
        use Change::*;
        assert_eq!(
            got,
            vec![
                ("both-del", Deleted, Deleted, false),
                ("both-mod", Modified, Modified, true),
                ("both-same", Modified, Modified, false),
                ("fork-add", Added, Unchanged, false),
                ("fork-del", Deleted, Unchanged, false),
                ("fork-mod", Modified, Unchanged, false),
                ("mod-del", Modified, Deleted, true),
                ("parent-add", Unchanged, Added, false),
                ("parent-del-only", Unchanged, Deleted, false),
                ("parent-mod", Unchanged, Modified, false),
            ]
        );
        assert!(d.iter().all(|x| x.path != "same"));
    }

    #[test]
    fn identical_writes_on_both_sides_are_no_conflict() {
        let base = map(&[("p", "a")]);
        let fork = map(&[("p", "b")]);
        let parent = map(&[("p", "b")]);
        let d = diff(&base, &fork, &parent);
        assert_eq!(d.len(), 1);
        assert!(!d[0].conflict);
        assert_eq!(decide(&d[0], Strategy::Fail, None), Decision::KeepParent);
    }

    #[test]
    fn strategies_and_resolutions_decide_conflicts_only_as_told() {
        let base = map(&[("p", "a"), ("q", "a"), ("r", "a")]);
        let fork = map(&[("p", "b"), ("r", "b")]);
        let parent = map(&[("p", "c"), ("q", "a"), ("r", "a")]);
        let d = diff(&base, &fork, &parent);
        let (p, q, r) = (&d[0], &d[1], &d[2]);
        assert!(p.conflict && !q.conflict && !r.conflict);
        assert_eq!(decide(p, Strategy::Fail, None), Decision::Conflict);
        assert_eq!(decide(p, Strategy::ForkWins, None), Decision::TakeFork);
        assert_eq!(decide(p, Strategy::ParentWins, None), Decision::KeepParent);
        assert_eq!(decide(p, Strategy::ThreeWay, None), Decision::MergeText);
        assert_eq!(
            decide(p, Strategy::Fail, Some(&Resolution::Content(b"x".to_vec()))),
            Decision::Write(b"x".to_vec())
        );
        assert_eq!(
            decide(p, Strategy::Fail, Some(&Resolution::Parent)),
            Decision::KeepParent
        );
        // q: deleted in the fork only; r: modified in the fork only. Both apply under
        // every strategy.
        for s in [Strategy::Fail, Strategy::ParentWins, Strategy::ThreeWay] {
            assert_eq!(decide(q, s, None), Decision::TakeFork);
            assert_eq!(decide(r, s, None), Decision::TakeFork);
        }
    }

    #[test]
    fn resolutions_read_as_written() {
        use serde_json::json;
        assert_eq!(Resolution::from_json(&json!("fork")), Ok(Resolution::Fork));
        assert_eq!(
            Resolution::from_json(&json!("parent")),
            Ok(Resolution::Parent)
        );
        assert_eq!(
            Resolution::from_json(&json!({"content": "x"})),
            Ok(Resolution::Content(b"x".to_vec()))
        );
        assert_eq!(
            Resolution::from_json(&json!({"contentBase64": "/wA="})),
            Ok(Resolution::Content(vec![0xff, 0]))
        );
        for bad in [
            json!("both"),
            json!({}),
            json!({"content": 1}),
            json!({"contentBase64": "!"}),
            json!({"content": "a", "contentBase64": "YQ=="}),
            json!(3),
        ] {
            assert!(Resolution::from_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn modify_against_delete_never_merges_as_text() {
        let base = map(&[("p", "a")]);
        let fork = map(&[("p", "b")]);
        let parent = map(&[]);
        let d = diff(&base, &fork, &parent);
        assert!(d[0].conflict);
        assert_eq!(decide(&d[0], Strategy::ThreeWay, None), Decision::Conflict);
    }
}
