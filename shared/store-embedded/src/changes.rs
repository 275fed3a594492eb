//! The change log (core `changes`): every commit adds its entry inside its own write
//! transaction (`append`, called by `apply_in`), keyed `<scope prefix><change key>`, so a
//! page is a backwards range read. A few expired entries of the scope go with each commit,
//! which keeps the table within the retention window without a job of its own.

use super::{db_err, decode, encode, EmbeddedStore};
use redb::{ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};
use workspace_core::changes::{Change, ChangePage, ChangeQuery};
use workspace_core::{Result, Scope};

pub(crate) const CHANGES: TableDefinition<&str, &[u8]> = TableDefinition::new("changes");
/// Expired entries dropped per commit (more than one commit adds, so the log shrinks).
const PRUNE_PER_COMMIT: usize = 2;

pub(crate) fn create_tables(txn: &WriteTransaction) -> Result<()> {
    txn.open_table(CHANGES).map_err(db_err)?;
    Ok(())
}

/// Adds `change` in the caller's transaction (the commit's).
pub(crate) fn append(txn: &WriteTransaction, scope: &Scope, change: &Change) -> Result<()> {
    let prefix = scope.key_prefix();
    let mut t = txn.open_table(CHANGES).map_err(db_err)?;
    let end = format!("{prefix}\u{10ffff}");
    let expired: Vec<String> = t
        .range(prefix.as_str()..end.as_str())
        .map_err(db_err)?
        .take(PRUNE_PER_COMMIT)
        .filter_map(|e| e.ok())
        .filter(|(_, v)| decode::<Change>(v.value()).is_ok_and(|c| c.expires_at <= change.at))
        .map(|(k, _)| k.value().to_owned())
        .collect();
    for k in expired {
        t.remove(k.as_str()).map_err(db_err)?;
    }
    let key = format!("{prefix}{}", change.key);
    t.insert(key.as_str(), encode(change)?.as_slice())
        .map_err(db_err)?;
    Ok(())
}

impl EmbeddedStore {
    pub(crate) async fn list_changes_in(
        &self,
        scope: &Scope,
        q: &ChangeQuery,
    ) -> Result<ChangePage> {
        let prefix = scope.key_prefix();
        let lo = format!("{prefix}{}", q.from.as_deref().unwrap_or(""));
        let hi = match q.upper() {
            Some(u) => format!("{prefix}{u}"),
            None => format!("{prefix}\u{10ffff}"),
        };
        let q = q.clone();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(CHANGES).map_err(db_err)?;
            let mut page = ChangePage::default();
            if lo >= hi {
                return Ok(page);
            }
            for entry in t.range(lo.as_str()..hi.as_str()).map_err(db_err)?.rev() {
                let (_, v) = entry.map_err(db_err)?;
                let change: Change = decode(v.value())?;
                if !q.admits(&change) {
                    continue;
                }
                if page.changes.len() == q.limit {
                    page.next_before = page.changes.last().map(|c| c.key.clone());
                    break;
                }
                page.changes.push(change);
            }
            Ok(page)
        })
        .await
    }
}
