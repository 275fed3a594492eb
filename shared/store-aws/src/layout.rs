//! The storage key layout: every DynamoDB key and S3 key this adapter builds (API keys are
//! `keys_table`). All partition keys start with the tenant id followed by `#`, and all S3
//! keys with `t/<tenant>/`, so IAM can pin a role to one tenant (`dynamodb:LeadingKeys`, S3
//! prefix ARNs) and tenant `acme` can never address `acme-evil` (ids cannot contain `#` or
//! `/`).

use workspace_core::{Scope, TenantId};

/// Partition key of everything in one workspace.
pub fn partition(scope: &Scope) -> String {
    format!("{}#{}", scope.tenant, scope.workspace)
}

/// Partition of a tenant's registered secrets. Workspace ids start with a letter or digit,
/// so `<tenant>##secrets` is never a workspace's partition, yet it still starts with
/// `<tenant>#` (covered by the same `dynamodb:LeadingKeys` pin).
pub fn secrets_partition(tenant: &TenantId) -> String {
    format!("{tenant}##secrets")
}

/// Sort key of a path's head item.
pub fn head_sk(path: &str) -> String {
    format!("{HEAD_PREFIX}{path}")
}

pub const HEAD_PREFIX: &str = "head#";

/// Sort key of version item `seq` of a path; the zero-padded seq keeps items in order.
pub fn version_sk(path: &str, seq: u64) -> String {
    format!("ver#{path}#{seq:020}")
}

/// Sort key of a snapshot record.
/// A change-log entry: `chg#<change key>` (time first, so a page is one Query).
pub const CHANGE_PREFIX: &str = "chg#";

pub fn change_sk(key: &str) -> String {
    format!("{CHANGE_PREFIX}{key}")
}

/// A service's small record (`RecordStore::put_record`).
pub fn record_sk(kind: &str, key: &str) -> String {
    format!("rec#{kind}#{key}")
}

pub fn snapshot_sk(id: &str) -> String {
    format!("snap#{id}")
}

/// What the parts of a snapshot's file list start with: not `snap#`, so a listing of
/// snapshot records (a range of `snap#<id>`) never reads one.
pub fn snapshot_parts_prefix(id: &str) -> String {
    format!("snapfiles#{id}#")
}

/// Sort key of part `i` of a snapshot's file list (a list too large for one item).
pub fn snapshot_part_sk(id: &str, i: usize) -> String {
    format!("{}{i:05}", snapshot_parts_prefix(id))
}

pub fn idempotency_sk(key: &str) -> String {
    format!("idem#{key}")
}

/// Sort key of the workspace's point registry revision (snapshots and fork bases as
/// points): a tiny item every commit's `ConditionCheck` names, so a commit's write units do
/// not grow with the number of live points.
pub const POINTS_SK: &str = "points";

/// Sort key of the registry's live points (with the same revision), written with the
/// revision item in one transaction and read instead of it.
pub const POINTS_LIST_SK: &str = "points#live";

/// Sort key of the workspace's live-file counter.
pub const COUNT_SK: &str = "count";

/// Where a file's bodies live in S3 (one key, many S3 versions): the one layout the domain's
/// sweep also parses back.
pub use workspace_core::service::sweep::body_key;

#[cfg(test)]
mod tests {
    use super::*;
    use workspace_core::FilePath;

    #[test]
    fn sibling_tenants_never_share_a_key_prefix() {
        let a = Scope::parse("acme", "main").unwrap();
        let b = Scope::parse("acme-evil", "main").unwrap();
        let pa = partition(&a);
        let pb = partition(&b);
        assert!(pa.starts_with("acme#") && !pb.starts_with("acme#"));
        assert_ne!(pa, pb);
        let p = FilePath::parse("x").unwrap();
        assert!(!body_key(&b, &p).starts_with(&a.key_prefix()));
    }
}
