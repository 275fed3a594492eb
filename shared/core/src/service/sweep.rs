//! Bodies no version item names: what a write leaves when its process dies after storing
//! the body (step 2 of the write protocol) and before its commit (step 4) or before the
//! clean-up of a failed one. They are invisible (nothing points to them) and only cost
//! space; the sweeper removes them.
//!
//! On AWS the scheduled `sweep` function does it with a grace period for writes in flight
//! (`workspace_store_aws::sweeper`). The local server runs [`sweep_unreferenced_bodies`] at
//! start, before it serves a request, when no write can be in flight.

use crate::error::Result;
use crate::model::BodyRef;
use crate::path::FilePath;
use crate::ports::{Bodies, BodyInventory, HistoryStore};
use crate::scope::Scope;
use std::collections::{BTreeMap, HashSet};

/// Where the bodies of a file's versions are stored: `t/<tenant>/w/<workspace>/files/<path>`.
pub fn body_key(scope: &Scope, path: &FilePath) -> String {
    format!("{}files/{}", scope.key_prefix(), path)
}

/// A body key back into its scope and path; `None` for keys that are not file bodies.
pub fn file_of_body_key(key: &str) -> Option<(Scope, FilePath)> {
    let rest = key.strip_prefix("t/")?;
    let (tenant, rest) = rest.split_once("/w/")?;
    let (workspace, path) = rest.split_once("/files/")?;
    Some((
        Scope::parse(tenant, workspace).ok()?,
        FilePath::parse(path).ok()?,
    ))
}

/// The body version ids the retained version items of a path name.
pub async fn referenced_bodies(
    meta: &dyn HistoryStore,
    scope: &Scope,
    path: &FilePath,
) -> Result<HashSet<String>> {
    let mut ids = HashSet::new();
    let mut before = None;
    loop {
        let page = meta.list_versions(scope, path, before, 1000).await?;
        let Some(last) = page.last() else {
            return Ok(ids);
        };
        before = Some(last.seq);
        ids.extend(
            page.into_iter()
                .filter_map(|v| v.body.map(|b| b.version_id)),
        );
    }
}

/// Removes every stored body no retained version item names; how many went. Only safe
/// when no write is in flight (a body stored but not yet committed looks the same).
pub async fn sweep_unreferenced_bodies(
    meta: &dyn HistoryStore,
    bodies: &dyn Bodies,
    inventory: &dyn BodyInventory,
) -> Result<u64> {
    let mut by_key: BTreeMap<String, Vec<BodyRef>> = BTreeMap::new();
    for body in inventory.stored_bodies().await? {
        by_key.entry(body.key.clone()).or_default().push(body);
    }
    let mut removed = 0;
    for (key, stored) in by_key {
        let Some((scope, path)) = file_of_body_key(&key) else {
            continue;
        };
        let named = referenced_bodies(meta, &scope, &path).await?;
        for body in stored {
            if !named.contains(&body.version_id) {
                bodies.delete(&body).await?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}
