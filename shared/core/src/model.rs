//! What the store records: the head of each path, one item per committed version, and
//! idempotency records. Adapters persist these as they are; the service derives everything
//! else (etags, lineage, retention) from them.

use crate::path::FilePath;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// Where a body lives: in the body store, by key plus the store's own version id (an S3
/// VersionId on AWS), so a read always gets exactly the committed bytes; or, for a small
/// body, inline with its commit in the metadata store (`crate::blob::inline`: no body store
/// round trip at all), with an empty key and version id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyRef {
    pub key: String,
    pub version_id: String,
    /// The bytes themselves, for a body kept inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<InlineBody>,
}

impl BodyRef {
    /// A body in the body store.
    pub fn stored(key: impl Into<String>, version_id: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            version_id: version_id.into(),
            inline: None,
        }
    }

    /// A body kept inline with its commit.
    pub fn inline(bytes: Vec<u8>) -> Self {
        Self {
            key: String::new(),
            version_id: String::new(),
            inline: Some(InlineBody(bytes)),
        }
    }

    pub fn is_inline(&self) -> bool {
        self.inline.is_some()
    }
}

/// The bytes of an inline body; base64 where the record is JSON (the embedded store), a
/// binary attribute on DynamoDB.
#[derive(Clone, PartialEq, Eq)]
pub struct InlineBody(pub Vec<u8>);

impl std::fmt::Debug for InlineBody {
    // Never the content: a body must not reach a log line through a `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InlineBody({} bytes)", self.0.len())
    }
}

impl Serialize for InlineBody {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use base64::Engine;
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for InlineBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use base64::Engine;
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(InlineBody)
            .map_err(serde::de::Error::custom)
    }
}

/// The current state of one path. `seq` counts every commit to the path across lineages and
/// is the key of the newest version item; within one lineage versions and seqs advance
/// together, so version `n` of the live lineage is item `seq - (version - n)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub path: String,
    pub lineage: String,
    pub version: u64,
    pub seq: u64,
    pub etag: String,
    pub size: u64,
    pub content_type: String,
    pub updated_at: Millis,
    /// A tombstone: the path was deleted; the next write starts a new lineage.
    pub deleted: bool,
    /// The latest body and its digest, so reading the live file needs no version item
    /// (one metadata read, then the body). `None` for a tombstone.
    pub body: Option<BodyRef>,
    pub sha256: String,
    /// Snapshots' holds on version items of this path (see `service/snapshots.rs`): retention
    /// keeps a pinned item while its pin lives. Kept on the head so that every commit, which
    /// compare-and-swaps the head anyway, sees the pins it must respect.
    #[serde(default)]
    pub pins: Vec<Pin>,
    /// Bumped by every change of `pins`; part of the head's compare-and-swap, so a commit
    /// that read the head before a snapshot pinned it fails and re-reads.
    #[serde(default)]
    pub pin_rev: u64,
    /// Who wrote the live version (or the delete); empty in heads written before it was kept.
    #[serde(default)]
    pub principal: String,
    /// The scope's point revision the live version (or tombstone) was committed under
    /// ([`Points::rev`]): a snapshot taken at point `r` sees it when `point <= r`. 0 in
    /// heads written before points existed (every snapshot since sees them).
    #[serde(default)]
    pub point: u64,
}

/// A snapshot's hold on version item `seq` of a path, until `until` (or until the snapshot
/// is deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub seq: u64,
    pub snapshot: String,
    pub until: Millis,
    /// A hold set by the commit that superseded item `seq` (`service/points.rs`): the
    /// points `from..to` (item `seq` was committed under `from`, its successor under `to`)
    /// are the ones that can read it, so the hold lasts while one of them lives. `None`: a
    /// pin of a snapshot taken before points existed (`snapshot` names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(u64, u64)>,
}

/// A scope's live points in history: each snapshot and fork base taken since points
/// existed is one (`service/points.rs`). Every commit is checked against `rev`, and
/// records it as its version's point.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Points {
    /// Bumped by every change of the registry (a point taken or ended): 0 before the first.
    pub rev: u64,
    pub live: Vec<Point>,
}

/// One live point: snapshot `id` sees every version committed under a revision `<= rev`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    pub id: String,
    pub rev: u64,
    pub until: Millis,
}

/// A run snapshot: `{path → version}` of every live file at one instant (RFC 0059 §D).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub id: String,
    pub created_at: Millis,
    pub expires_at: Millis,
    /// Sorted by path.
    pub files: Vec<SnapshotFile>,
    /// Set on a run record's snapshot (`service/runs.rs`): the workflow the run is of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// Set on a run record's snapshot: the principal that started it (its owner with the
    /// scope the record is stored in; RFC 0048 `RunSnapshot.owner`). Runs recorded before
    /// owners were kept have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// A checkpoint's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Kept until deleted (`expires_at` is [`NEVER`]); its files hold their own copies of
    /// the bodies (`SnapshotFile::kept`), so no retention rule of any store can take them.
    #[serde(default)]
    pub keep: bool,
    /// The globs a path-scoped key took it through: it holds only paths those match, and a
    /// rollback to it touches no other path. Empty: the whole workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub covers: Vec<String>,
    /// A snapshot taken as a point in history (`service/points.rs`): `files` is empty and
    /// each file reads as its newest version committed at or before this point. `None`: a
    /// snapshot taken before points existed, whose `files` were pinned one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<u64>,
}

/// The expiry of what never expires.
pub const NEVER: Millis = Millis::MAX;

/// A snapshot record without its file list, as a listing returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub id: String,
    pub created_at: Millis,
    pub expires_at: Millis,
    pub workflow_id: Option<String>,
    /// A run's principal (see [`Snapshot::principal`]).
    pub principal: Option<String>,
    pub label: Option<String>,
    pub keep: bool,
}

impl Snapshot {
    pub fn info(&self) -> SnapshotInfo {
        SnapshotInfo {
            id: self.id.clone(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            workflow_id: self.workflow_id.clone(),
            principal: self.principal.clone(),
            label: self.label.clone(),
            keep: self.keep,
        }
    }
}

/// One pinned file of a snapshot: the version item `seq` holds its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    pub path: String,
    pub version: u64,
    pub seq: u64,
    pub etag: String,
    pub size: u64,
    pub content_type: String,
    pub updated_at: Millis,
    /// The content's SHA-256 (empty in records written before it was kept).
    #[serde(default)]
    pub sha256: String,
    /// A kept snapshot's own copy of the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<BodyRef>,
    /// The version was erased from history (with `force`): reads through the snapshot are
    /// 410.
    #[serde(default)]
    pub erased: bool,
    /// A fork's base only (`crate::forks`): the version's lineage and body, so a fork reads
    /// an inherited file from the record it already holds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lineage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyRef>,
}

impl SnapshotFile {
    /// Version item `v` of `path` as a snapshot's file (what a read at a point finds).
    pub fn of_version(path: &str, v: &VersionRecord) -> Self {
        Self {
            path: path.to_owned(),
            version: v.version,
            seq: v.seq,
            etag: v.etag.clone(),
            size: v.size,
            content_type: v.content_type.clone(),
            updated_at: v.updated_at,
            sha256: v.sha256.clone(),
            kept: None,
            erased: v.erased.is_some(),
            lineage: v.lineage.clone(),
            body: v.body.clone(),
        }
    }

    /// A live head as a snapshot's file.
    pub fn of_head(h: &Head) -> Self {
        Self {
            path: h.path.clone(),
            version: h.version,
            seq: h.seq,
            etag: h.etag.clone(),
            size: h.size,
            content_type: h.content_type.clone(),
            updated_at: h.updated_at,
            sha256: h.sha256.clone(),
            kept: None,
            erased: false,
            lineage: h.lineage.clone(),
            body: h.body.clone(),
        }
    }

    pub fn meta(&self) -> FileMeta {
        FileMeta {
            path: self.path.clone(),
            content_type: self.content_type.clone(),
            version: self.version,
            etag: self.etag.clone(),
            size: self.size,
            updated_at: self.updated_at,
            principal: String::new(),
            // An erased version's content hash is not shown either.
            sha256: if self.erased {
                String::new()
            } else {
                self.sha256.clone()
            },
        }
    }
}

impl Head {
    /// What a head is known to be from its etag alone ([`parse_etag`]): a live file of
    /// `lineage` at `version` and `seq`, holding no pins; nothing else of it is known.
    pub fn named(path: &str, lineage: &str, version: u64, seq: u64, etag: &str) -> Self {
        Self {
            path: path.to_owned(),
            lineage: lineage.to_owned(),
            version,
            seq,
            etag: etag.to_owned(),
            size: 0,
            content_type: String::new(),
            updated_at: 0,
            deleted: false,
            body: None,
            sha256: String::new(),
            pins: Vec::new(),
            pin_rev: 0,
            principal: String::new(),
            point: 0,
        }
    }

    /// The head of `path` whose live version (or tombstone) is `v`, with `pins` at
    /// revision `pin_rev` (what [`VersionRecord::of_head`] drops).
    pub fn of_version(path: String, v: VersionRecord, pins: Vec<Pin>, pin_rev: u64) -> Self {
        Self {
            path,
            lineage: v.lineage,
            version: v.version,
            seq: v.seq,
            etag: v.etag,
            size: v.size,
            content_type: v.content_type,
            updated_at: v.updated_at,
            deleted: v.deleted,
            body: v.body,
            sha256: v.sha256,
            pins,
            pin_rev,
            principal: v.principal,
            point: v.point,
        }
    }

    pub fn is_live(&self) -> bool {
        !self.deleted
    }

    /// Item seq of version `n` of this (live) lineage, if it can exist.
    pub fn seq_of_version(&self, n: u64) -> Option<u64> {
        if n == 0 || n > self.version {
            return None;
        }
        self.seq.checked_sub(self.version - n).filter(|s| *s >= 1)
    }

    pub fn meta(&self) -> FileMeta {
        FileMeta {
            path: self.path.clone(),
            content_type: self.content_type.clone(),
            version: self.version,
            etag: self.etag.clone(),
            size: self.size,
            updated_at: self.updated_at,
            sha256: self.sha256.clone(),
            principal: self.principal.clone(),
        }
    }
}

/// One committed version (or tombstone) of a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRecord {
    pub seq: u64,
    pub lineage: String,
    pub version: u64,
    pub etag: String,
    pub size: u64,
    pub sha256: String,
    pub content_type: String,
    /// `None` for a tombstone.
    pub body: Option<BodyRef>,
    pub updated_at: Millis,
    pub principal: String,
    pub deleted: bool,
    /// Set when the version was erased from history: its body is gone everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<Erasure>,
    /// Set when a fork's merge wrote the version (its event names the merge and the fork).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<MergeOrigin>,
    /// The point revision it was committed under (see [`Head::point`]).
    #[serde(default)]
    pub point: u64,
}

impl VersionRecord {
    /// The version item a commit writes beside its new `head`: the same facts (a fresh
    /// version is never erased), and the merge that wrote it, if one did.
    pub fn of_head(head: &Head, merge: Option<MergeOrigin>) -> Self {
        Self {
            seq: head.seq,
            lineage: head.lineage.clone(),
            version: head.version,
            etag: head.etag.clone(),
            size: head.size,
            sha256: head.sha256.clone(),
            content_type: head.content_type.clone(),
            body: head.body.clone(),
            updated_at: head.updated_at,
            principal: head.principal.clone(),
            deleted: head.deleted,
            erased: None,
            merge,
            point: head.point,
        }
    }
}

/// The merge that wrote a version, and the fork it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeOrigin {
    pub merge_id: String,
    pub fork_id: String,
}

/// Who erased a version from history, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Erasure {
    pub by: String,
    pub at: Millis,
}

/// Everything about a file but its content: what list rows and responses carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    pub path: String,
    pub content_type: String,
    pub version: u64,
    pub etag: String,
    pub size: u64,
    pub updated_at: Millis,
    /// SHA-256 of the stored bytes, hex (empty where a record written before it was kept
    /// does not say), so a client can check or compare content without reading it.
    #[serde(default)]
    pub sha256: String,
    /// Who wrote this version, where the record says (file reads and listings; empty where
    /// a record written before it was kept does not say).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub principal: String,
}

/// A remembered `Idempotency-Key`: a retry with the same key and the same request gets
/// `result` back without a second version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    pub key: String,
    pub fingerprint: String,
    pub result: FileMeta,
    pub created_at: Millis,
}

/// A file with its content, as a read or write returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    pub meta: FileMeta,
    pub content: Vec<u8>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePage {
    pub files: Vec<FileMeta>,
    /// The last path of this page when more follow.
    pub next_after: Option<FilePath>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// An etag: `"<version>-<digest>-<seq>-<lineage>"`. The digest covers the lineage id, so a
/// path re-created after a delete never gets an etag an earlier lineage had, even with the
/// same content. The seq and lineage make the etag name the head it was written as: a
/// write whose `If-Match` names the head plans its commit from the etag alone, with no read
/// (`service/write.rs`, [`parse_etag`]). Etags written before they carried them
/// (`"<version>-<digest>"`) still compare as before.
pub fn make_etag(lineage: &str, version: u64, seq: u64, content_sha256: &str) -> String {
    let digest = Sha256::digest(format!("{lineage}\n{version}\n{content_sha256}").as_bytes());
    format!(
        "\"{version}-{}-{seq}-{lineage}\"",
        &hex::encode(digest)[..20]
    )
}

/// What an etag [`make_etag`] wrote says of its head: (version, seq, lineage). `None` for
/// anything else (an etag of the previous form, a list, `*`). Trusted only together with
/// a commit conditioned on the head's etag being exactly this one.
pub fn parse_etag(etag: &str) -> Option<(u64, u64, &str)> {
    let inner = etag.strip_prefix('"')?.strip_suffix('"')?;
    let mut parts = inner.splitn(4, '-');
    let version = parts.next()?.parse().ok()?;
    let _digest = parts.next().filter(|d| d.len() == 20)?;
    let seq = parts.next()?.parse().ok()?;
    let lineage = parts.next().filter(|l| !l.is_empty() && !l.contains('"'))?;
    Some((version, seq, lineage))
}

/// An RFC 3339 timestamp (any offset) as Unix milliseconds; `None` if it is not one.
pub fn parse_time(s: &str) -> Option<Millis> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Millis::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// RFC 3339 UTC with milliseconds, as every timestamp on the wire is written.
pub fn format_time(ms: Millis) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let f = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&f).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_body_never_reaches_a_debug_line() {
        let body = BodyRef::inline(b"SECRET-CONTENT".to_vec());
        let shown = format!("{body:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("InlineBody(14 bytes)"), "{shown}");
    }

    #[test]
    fn etags_differ_across_lineages_and_versions() {
        let sha = sha256_hex(b"same");
        assert_ne!(make_etag("l1", 1, 1, &sha), make_etag("l2", 1, 1, &sha));
        assert_ne!(make_etag("l1", 1, 1, &sha), make_etag("l1", 2, 2, &sha));
        assert!(make_etag("l1", 3, 7, &sha).starts_with("\"3-"));
    }

    #[test]
    fn an_etag_names_its_head_and_nothing_else_parses() {
        let sha = sha256_hex(b"x");
        let lineage = "0123456789abcdef0123456789abcdef";
        let e = make_etag(lineage, 3, 17, &sha);
        assert_eq!(parse_etag(&e), Some((3, 17, lineage)));
        // A lineage of the test id sources, with dashes.
        assert_eq!(
            parse_etag(&make_etag("lin-1", 1, 1, &sha)),
            Some((1, 1, "lin-1"))
        );
        for other in [
            "\"3-0123456789abcdef0123\"",
            "*",
            "\"3-abc-17-l\"",
            "3-0123456789abcdef0123-17-l",
            "\"x-0123456789abcdef0123-17-l\"",
            "\"3-0123456789abcdef0123-17-\"",
            &format!("{e}, {e}"),
        ] {
            assert_eq!(parse_etag(other), None, "{other}");
        }
    }

    #[test]
    fn version_to_seq() {
        let h = Head {
            path: "a".into(),
            lineage: "l".into(),
            version: 3,
            seq: 10,
            etag: String::new(),
            size: 0,
            content_type: String::new(),
            updated_at: 0,
            deleted: false,
            principal: String::new(),
            point: 0,
            body: None,
            sha256: String::new(),
            pins: Vec::new(),
            pin_rev: 0,
        };
        assert_eq!(h.seq_of_version(3), Some(10));
        assert_eq!(h.seq_of_version(1), Some(8));
        assert_eq!(h.seq_of_version(0), None);
        assert_eq!(h.seq_of_version(4), None);
    }

    #[test]
    fn time_format() {
        assert_eq!(format_time(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
