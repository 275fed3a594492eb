//! Forks: a private copy of a workspace for a sub-agent, made without copying a body.
//!
//! A fork is a workspace of its own (`<parent>~<16 hex>`, see `scope::WorkspaceId`) that
//! starts as its parent was at one instant, its **base**:
//!
//! - the base is a snapshot of the parent (`service/snapshots.rs`), taken with each file's
//!   lineage and body: its pins keep the parent's versions and bodies for as long as the
//!   fork lives, whatever the parent writes or prunes meanwhile. Creating a fork is one pin
//!   per live file of the parent, the snapshot record, and the fork record: no body moves;
//! - the fork's own writes and deletions are ordinary heads and versions in the fork's
//!   scope; a read sees the fork's own head (a tombstone hides the parent's file), else the
//!   base's version of the parent ([`ForkAwareMeta`], which every service reads through,
//!   so every route works on a fork unchanged);
//! - [`three_way`] compares base, fork and parent by content identity (the stored SHA-256
//!   and content type, never the bytes), and the service's merge applies the fork's
//!   changes to the parent through the ordinary write path, each conditional on the parent
//!   head it compared against (`service/forks.rs`).
//!
//! Where things are kept: the fork record in the fork's own scope (a record of kind
//! [`FORK_RECORD_KIND`]), the base snapshot in the parent's scope under an id starting
//! [`BASE_ID_PREFIX`] (so the parent's forks are listed as a range of its snapshots, newest
//! first), its pins on the parent's heads. An expired fork is swept with all of its own
//! data and its base ([`sweep`]).

mod meta;
pub mod plan;
pub mod sweep;
pub mod text;
pub mod three_way;

pub use meta::{version_at, Base, ForkAwareMeta, INHERITED_PIN_REV};

use crate::model::Millis;
use serde::{Deserialize, Serialize};

/// The fork record's kind and key in the fork's scope (`RecordStore::put_record`).
pub const FORK_RECORD_KIND: &str = "fork";
pub const FORK_RECORD_KEY: &str = "fork";
/// What a fork's base snapshot id starts with, in the parent's scope.
pub const BASE_ID_PREFIX: &str = "fork-";
/// Default life of a fork: 7 days.
pub const DEFAULT_FORK_TTL_MS: Millis = 7 * 24 * 60 * 60 * 1000;
/// Longest life of a fork: 30 days. On AWS the bodies of overwritten versions are S3
/// noncurrent versions, which the bucket's lifecycle removes after 30 days.
pub const MAX_FORK_TTL_MS: Millis = 30 * 24 * 60 * 60 * 1000;

/// Largest fork base (its file list as JSON, with each file's lineage and body): on
/// DynamoDB a list over one item (about 350 KB) is split over part items of at most
/// 300 KB, written with one `BatchWriteItem` (25 parts) and read back with one `Query`
/// (a page per MB). About 7,000 files with the longest paths (256 bytes), far more with
/// short ones; `WORKSPACE_MAX_FILES` defaults to 1,000.
pub const MAX_FORK_BASE_BYTES: usize = 7_000_000;

/// What the fork's own scope records about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRecord {
    /// The base snapshot, in the parent's scope.
    pub base_snapshot: String,
    pub base_created_at: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub created_at: Millis,
    pub expires_at: Millis,
    /// Bumped each time the base moves (a merge): the base snapshot's id carries it.
    #[serde(default)]
    pub generation: u64,
    /// How many live files the base holds (a base taken as a point, whose record does not
    /// list them): what the fork's file quota counts its inherited files from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_files: Option<u64>,
}

/// The id of a fork's base snapshot: creation time first, so the parent's forks list
/// newest first as a range of snapshot ids.
pub fn base_snapshot_id(created_at: Millis, suffix: &str, generation: u64) -> String {
    format!("{BASE_ID_PREFIX}{created_at:013}-{suffix}-{generation}")
}

/// When the fork a base snapshot id names was created.
pub fn created_of_base(id: &str) -> Option<Millis> {
    let rest = id.strip_prefix(BASE_ID_PREFIX)?;
    let (created, _) = rest.split_once('-')?;
    created.parse().ok()
}

/// The fork suffix a base snapshot id names.
pub fn suffix_of_base(id: &str) -> Option<&str> {
    let rest = id.strip_prefix(BASE_ID_PREFIX)?;
    let (_, rest) = rest.split_once('-')?;
    let (suffix, _) = rest.split_once('-')?;
    Some(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_ids_name_their_fork_and_sort_by_creation() {
        let a = base_snapshot_id(1_700_000_000_000, "0123456789abcdef", 0);
        let b = base_snapshot_id(1_700_000_000_001, "fedcba9876543210", 3);
        assert!(a < b);
        assert_eq!(suffix_of_base(&a), Some("0123456789abcdef"));
        assert_eq!(suffix_of_base(&b), Some("fedcba9876543210"));
        assert_eq!(suffix_of_base("s0000000000001-x"), None);
        assert_eq!(created_of_base(&b), Some(1_700_000_000_001));
    }
}
