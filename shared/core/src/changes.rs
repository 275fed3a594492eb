//! The workspace's change log: one entry per committed change (a put, a delete; a restore
//! or rollback is a put), written by the store in the same atomic commit as the change
//! itself, so the log never misses or invents one. Entries are keyed by time, so "newest
//! first, between these instants" is one range read on every backend (on DynamoDB one
//! Query per page, in the workspace's own partition).

use crate::model::{format_time, Erasure, Millis, VersionRecord};
use crate::path::FilePath;
use crate::path_scope::PathScope;
use serde::{Deserialize, Serialize};

/// How long an entry is kept (DynamoDB's TTL removes it after; the local stores drop a few
/// expired entries with each commit).
pub const CHANGE_RETENTION_MS: Millis = 90 * 24 * 60 * 60 * 1000;
/// Largest page of the change log, and its default.
pub const MAX_CHANGES_PAGE: usize = 100;

/// One committed change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Its place in the log: `<ms, 13 digits>#<path>#<seq, 20 digits>`; keys sort by time.
    pub key: String,
    pub path: String,
    pub seq: u64,
    pub version: u64,
    pub etag: String,
    pub deleted: bool,
    /// An erase of a past version (`principal` and `at` are the eraser's).
    #[serde(default)]
    pub erased: bool,
    pub principal: String,
    pub at: Millis,
    pub size: u64,
    pub content_type: String,
    pub expires_at: Millis,
}

/// The key of the change at `at` of `path`'s commit `seq`.
pub fn change_key(at: Millis, path: &str, seq: u64) -> String {
    format!("{:013}#{path}#{seq:020}", at.max(0))
}

/// The first key at or after instant `at` (`at` itself included).
pub fn key_at(at: Millis) -> String {
    format!("{:013}", at.max(0))
}

impl Change {
    /// The entry a commit of `path` writing version item `v` adds.
    pub fn of_commit(path: &FilePath, v: &VersionRecord) -> Change {
        Change {
            key: change_key(v.updated_at, path.as_str(), v.seq),
            path: path.as_str().to_owned(),
            seq: v.seq,
            version: v.version,
            etag: v.etag.clone(),
            deleted: v.deleted,
            erased: false,
            principal: v.principal.clone(),
            at: v.updated_at,
            size: v.size,
            content_type: v.content_type.clone(),
            expires_at: v.updated_at.saturating_add(CHANGE_RETENTION_MS),
        }
    }

    /// The entry an erase of `path`'s version item `v` adds.
    pub fn of_erase(path: &FilePath, v: &VersionRecord, by: &Erasure) -> Change {
        Change {
            // Its own key: never the key of the put that wrote the version.
            key: format!("{}#erase", change_key(by.at, path.as_str(), v.seq)),
            path: path.as_str().to_owned(),
            seq: v.seq,
            version: v.version,
            etag: v.etag.clone(),
            deleted: false,
            erased: true,
            principal: by.by.clone(),
            at: by.at,
            size: 0,
            content_type: v.content_type.clone(),
            expires_at: by.at.saturating_add(CHANGE_RETENTION_MS),
        }
    }

    pub fn operation(&self) -> &'static str {
        match (self.erased, self.deleted) {
            (true, _) => "erase",
            (false, true) => "delete",
            (false, false) => "put",
        }
    }

    pub fn time(&self) -> String {
        format_time(self.at)
    }
}

/// Which changes a page holds: keys in `[from, to)`, newest first, below `before` when
/// given; of paths under `prefix` the caller may read (`paths`), by `principal` when given;
/// `limit` at most.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub before: Option<String>,
    pub prefix: String,
    pub principal: Option<String>,
    pub paths: PathScope,
    pub limit: usize,
}

impl ChangeQuery {
    /// Whether `c` passes the filters (the key range aside).
    pub fn admits(&self, c: &Change) -> bool {
        c.path.starts_with(&self.prefix)
            && self.principal.as_ref().is_none_or(|p| *p == c.principal)
            && self.paths.can_read(&c.path)
    }

    /// The exclusive upper key a store reads below: `before`, else `to`, else everything.
    pub fn upper(&self) -> Option<&str> {
        match (&self.before, &self.to) {
            (Some(b), Some(t)) => Some(if b < t { b } else { t }),
            (Some(b), None) => Some(b),
            (None, Some(t)) => Some(t),
            (None, None) => None,
        }
    }
}

/// A page of the log: the changes, and the key to continue below when more may follow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangePage {
    pub changes: Vec<Change>,
    pub next_before: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_time_then_path_and_seq() {
        assert!(change_key(999, "z", 9) < change_key(1000, "a", 1));
        assert!(change_key(1000, "a", 2) < change_key(1000, "a", 10));
        assert!(key_at(1000) <= change_key(1000, "a", 1));
        assert!(change_key(999, "z", 1) < key_at(1000));
    }
}
