//! The session service's store in the same redb file. Each operation is one write
//! transaction (redb has one writer at a time), so a local create and its path claim, an
//! artifact and its session, or an erase apply whole or not at all.
//!
//! Tables:
//! - `ws_records`:  `t/<tenant>/u/<sha256(user)>/w/<id>`   → WorkspaceRecord (JSON)
//! - `ws_claims`:   `t/<tenant>/u/<sha256(user)>/l/<sha256(localPath)>` → workspace id
//! - `artifacts`:   scope prefix + `a/<id>`                  → ArtifactRecord (JSON)
//! - `sessions`:    scope prefix + `s/<id>`                  → SessionRecord (JSON)

use super::{
    db_err, decode, encode, EmbeddedStore, BODIES, HEADS, IDEMPOTENCY, LIVE_COUNTS, SNAPSHOTS,
    VERSIONS,
};
use crate::capabilities::{BLOB_BYTES, BLOB_META, BLOB_SUPERSEDED, BLOB_SUPERSEDED_BYTES, CACHE};
use crate::staging::STAGED_FILES;
use crate::STAGED;
use async_trait::async_trait;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};
use workspace_core::model::{sha256_hex, Millis};
use workspace_core::sessions::model::{ArtifactRecord, SessionRecord, WorkspaceRecord};
use workspace_core::sessions::ports::{BodyEraser, Created, SessionStore};
use workspace_core::{Result, Scope, TenantId, WorkspaceId};

const WS_RECORDS: TableDefinition<&str, &[u8]> = TableDefinition::new("ws_records");
const WS_CLAIMS: TableDefinition<&str, &str> = TableDefinition::new("ws_claims");
const ARTIFACTS: TableDefinition<&str, &[u8]> = TableDefinition::new("artifacts");
const SESSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("sessions");

/// Creates this module's tables (called when the store opens).
pub(crate) fn create_tables(txn: &WriteTransaction) -> Result<()> {
    txn.open_table(WS_RECORDS).map_err(db_err)?;
    txn.open_table(WS_CLAIMS).map_err(db_err)?;
    txn.open_table(ARTIFACTS).map_err(db_err)?;
    txn.open_table(SESSIONS).map_err(db_err)?;
    Ok(())
}

fn user_prefix(tenant: &str, user: &str) -> String {
    format!("t/{tenant}/u/{}/", sha256_hex(user.as_bytes()))
}

fn record_key(rec: &WorkspaceRecord) -> String {
    format!(
        "{}w/{}",
        user_prefix(&rec.tenant, &rec.user),
        rec.workspace_id
    )
}

fn claim_key(rec: &WorkspaceRecord, path: &str) -> String {
    format!(
        "{}l/{}",
        user_prefix(&rec.tenant, &rec.user),
        sha256_hex(path.as_bytes())
    )
}

/// The first key after every key starting with `prefix` (which ends in `/`; `0` follows it).
fn prefix_end(prefix: &str) -> String {
    format!("{}0", &prefix[..prefix.len().saturating_sub(1)])
}

fn art_key(scope: &Scope, id: &str) -> String {
    format!("{}a/{id}", scope.key_prefix())
}

fn session_key(scope: &Scope, id: &str) -> String {
    format!("{}s/{id}", scope.key_prefix())
}

/// Every value in a table whose key starts with `prefix`.
fn values_under<T: serde::de::DeserializeOwned>(
    db: &redb::Database,
    def: TableDefinition<&str, &[u8]>,
    prefix: &str,
) -> Result<Vec<T>> {
    let txn = db.begin_read().map_err(db_err)?;
    let t = txn.open_table(def).map_err(db_err)?;
    let end = prefix_end(prefix);
    let mut out = Vec::new();
    for item in t.range(prefix..end.as_str()).map_err(db_err)? {
        let (_, v) = item.map_err(db_err)?;
        out.push(decode(v.value())?);
    }
    Ok(out)
}

/// Removes every key starting with `prefix` from a string-keyed table.
fn drain_str<V: redb::Value + 'static>(
    txn: &WriteTransaction,
    def: TableDefinition<&str, V>,
    prefix: &str,
) -> Result<u64> {
    drain_str_where(txn, def, prefix, |_| true)
}

/// Removes the keys starting with `prefix` whose value `doomed` picks; how many went.
pub(crate) fn drain_str_where<V: redb::Value + 'static>(
    txn: &WriteTransaction,
    def: TableDefinition<&str, V>,
    prefix: &str,
    mut doomed: impl FnMut(V::SelfType<'_>) -> bool,
) -> Result<u64> {
    let mut t = txn.open_table(def).map_err(db_err)?;
    let end = prefix_end(prefix);
    let gone = t
        .extract_from_if(prefix..end.as_str(), |_, v| doomed(v))
        .map_err(db_err)?;
    let mut n = 0;
    for item in gone {
        item.map_err(db_err)?;
        n += 1;
    }
    Ok(n)
}

/// Removes the keys whose first part starts with `prefix`; how many went.
fn drain_pairs(
    txn: &WriteTransaction,
    def: TableDefinition<(&str, &str), &[u8]>,
    prefix: &str,
) -> Result<u64> {
    let mut t = txn.open_table(def).map_err(db_err)?;
    let end = prefix_end(prefix);
    let gone = t
        .extract_from_if((prefix, "")..(end.as_str(), ""), |_, _| true)
        .map_err(db_err)?;
    let mut n = 0;
    for item in gone {
        item.map_err(db_err)?;
        n += 1;
    }
    Ok(n)
}

fn count_str<V: redb::Value + 'static>(
    db: &redb::Database,
    def: TableDefinition<&str, V>,
    prefix: &str,
) -> Result<u64> {
    let txn = db.begin_read().map_err(db_err)?;
    let t = txn.open_table(def).map_err(db_err)?;
    let end = prefix_end(prefix);
    Ok(t.range(prefix..end.as_str()).map_err(db_err)?.count() as u64)
}

#[async_trait]
impl SessionStore for EmbeddedStore {
    async fn create_workspace(&self, rec: &WorkspaceRecord) -> Result<Created> {
        let rec = rec.clone();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut records = txn.open_table(WS_RECORDS).map_err(db_err)?;
                if let Some(path) = &rec.local_path {
                    let mut claims = txn.open_table(WS_CLAIMS).map_err(db_err)?;
                    let ck = claim_key(&rec, path);
                    let existing_id = claims
                        .get(ck.as_str())
                        .map_err(db_err)?
                        .map(|v| v.value().to_owned());
                    if let Some(id) = existing_id {
                        let key = format!("{}w/{id}", user_prefix(&rec.tenant, &rec.user));
                        if let Some(v) = records.get(key.as_str()).map_err(db_err)? {
                            return Ok(Created::Existing(decode(v.value())?));
                        }
                    }
                    claims
                        .insert(ck.as_str(), rec.workspace_id.as_str())
                        .map_err(db_err)?;
                }
                records
                    .insert(record_key(&rec).as_str(), encode(&rec)?.as_slice())
                    .map_err(db_err)?;
            }
            txn.commit().map_err(db_err)?;
            Ok(Created::New)
        })
        .await
    }

    async fn workspace(
        &self,
        tenant: &TenantId,
        user: &str,
        id: &WorkspaceId,
    ) -> Result<Option<WorkspaceRecord>> {
        let key = format!("{}w/{id}", user_prefix(tenant.as_str(), user));
        self.get_small_json(WS_RECORDS, &key)
    }

    async fn list_workspaces(
        &self,
        tenant: &TenantId,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<WorkspaceRecord>> {
        let prefix = format!("{}w/", user_prefix(tenant.as_str(), user));
        let after = after.map(str::to_owned);
        self.blocking(move |db| {
            let all: Vec<WorkspaceRecord> = values_under(db, WS_RECORDS, &prefix)?;
            Ok(all
                .into_iter()
                .filter(|w| after.as_deref().is_none_or(|a| w.workspace_id.as_str() > a))
                .take(limit)
                .collect())
        })
        .await
    }

    async fn all_workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(WS_RECORDS).map_err(db_err)?;
            let mut out = Vec::new();
            for item in t.iter().map_err(db_err)? {
                let (_, v) = item.map_err(db_err)?;
                out.push(decode(v.value())?);
            }
            Ok(out)
        })
        .await
    }

    async fn touch_workspace(&self, rec: &WorkspaceRecord, at: Millis) -> Result<()> {
        let key = record_key(rec);
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut t = txn.open_table(WS_RECORDS).map_err(db_err)?;
                let current: Option<WorkspaceRecord> = match t.get(key.as_str()).map_err(db_err)? {
                    Some(v) => Some(decode(v.value())?),
                    None => None,
                };
                if let Some(mut w) = current {
                    w.last_active_at = w.last_active_at.max(at);
                    t.insert(key.as_str(), encode(&w)?.as_slice())
                        .map_err(db_err)?;
                }
            }
            txn.commit().map_err(db_err)
        })
        .await
    }

    async fn remove_workspace(&self, rec: &WorkspaceRecord) -> Result<()> {
        let rec = rec.clone();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            {
                let mut t = txn.open_table(WS_RECORDS).map_err(db_err)?;
                t.remove(record_key(&rec).as_str()).map_err(db_err)?;
                if let Some(path) = &rec.local_path {
                    let mut c = txn.open_table(WS_CLAIMS).map_err(db_err)?;
                    c.remove(claim_key(&rec, path).as_str()).map_err(db_err)?;
                }
            }
            txn.commit().map_err(db_err)
        })
        .await
    }

    async fn put_artifact(
        &self,
        scope: &Scope,
        art: &ArtifactRecord,
    ) -> Result<Option<ArtifactRecord>> {
        let (scope, art) = (scope.clone(), art.clone());
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            let replaced = {
                let mut sessions = txn.open_table(SESSIONS).map_err(db_err)?;
                let mut arts = txn.open_table(ARTIFACTS).map_err(db_err)?;
                let sk = session_key(&scope, &art.session_id);
                let prev: Option<SessionRecord> = match sessions.get(sk.as_str()).map_err(db_err)? {
                    Some(v) => Some(decode(v.value())?),
                    None => None,
                };
                let (session, replaced) = SessionRecord::with_artifact(prev, &art);
                sessions
                    .insert(sk.as_str(), encode(&session)?.as_slice())
                    .map_err(db_err)?;
                arts.insert(
                    art_key(&scope, &art.artifact_id).as_str(),
                    encode(&art)?.as_slice(),
                )
                .map_err(db_err)?;
                let mut old = None;
                if let Some(id) = replaced {
                    if let Some(v) = arts.remove(art_key(&scope, &id).as_str()).map_err(db_err)? {
                        old = Some(decode::<ArtifactRecord>(v.value())?);
                    }
                }
                old
            };
            txn.commit().map_err(db_err)?;
            Ok(replaced)
        })
        .await
    }

    async fn artifact(&self, scope: &Scope, id: &str) -> Result<Option<ArtifactRecord>> {
        let key = art_key(scope, id);
        self.get_json(ARTIFACTS, key).await
    }

    async fn artifacts(&self, scope: &Scope) -> Result<Vec<ArtifactRecord>> {
        let prefix = format!("{}a/", scope.key_prefix());
        self.blocking(move |db| values_under(db, ARTIFACTS, &prefix))
            .await
    }

    async fn session(&self, scope: &Scope, id: &str) -> Result<Option<SessionRecord>> {
        let key = session_key(scope, id);
        self.get_json(SESSIONS, key).await
    }

    async fn sessions(&self, scope: &Scope) -> Result<Vec<SessionRecord>> {
        let prefix = format!("{}s/", scope.key_prefix());
        self.blocking(move |db| values_under(db, SESSIONS, &prefix))
            .await
    }

    async fn delete_session(&self, scope: &Scope, id: &str) -> Result<Vec<ArtifactRecord>> {
        let (scope, id) = (scope.clone(), id.to_owned());
        self.blocking(move |db| {
            let prefix = format!("{}a/", scope.key_prefix());
            let all: Vec<ArtifactRecord> = values_under(db, ARTIFACTS, &prefix)?;
            let txn = db.begin_write().map_err(db_err)?;
            let mut gone = Vec::new();
            {
                let mut sessions = txn.open_table(SESSIONS).map_err(db_err)?;
                sessions
                    .remove(session_key(&scope, &id).as_str())
                    .map_err(db_err)?;
                let mut arts = txn.open_table(ARTIFACTS).map_err(db_err)?;
                for a in all.into_iter().filter(|a| a.session_id == id) {
                    arts.remove(art_key(&scope, &a.artifact_id).as_str())
                        .map_err(db_err)?;
                    gone.push(a);
                }
            }
            txn.commit().map_err(db_err)?;
            Ok(gone)
        })
        .await
    }

    async fn erase_scope(&self, scope: &Scope) -> Result<u64> {
        let prefix = scope.key_prefix();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            let mut n = drain_str(&txn, HEADS, &prefix)?;
            n += drain_str(&txn, IDEMPOTENCY, &prefix)?;
            n += drain_str(&txn, LIVE_COUNTS, &prefix)?;
            n += drain_str(&txn, ARTIFACTS, &prefix)?;
            n += drain_str(&txn, SESSIONS, &prefix)?;
            n += drain_str(&txn, SNAPSHOTS, &prefix)?;
            n += drain_str(&txn, crate::POINTS, &prefix)?;
            n += drain_str(&txn, crate::RECORDS, &prefix)?;
            n += drain_str(&txn, crate::changes::CHANGES, &prefix)?;
            n += crate::outbox::erase_under(&txn, &prefix)?;
            {
                let mut t = txn.open_table(VERSIONS).map_err(db_err)?;
                let end = prefix_end(&prefix);
                let gone = t
                    .extract_from_if((prefix.as_str(), 0)..(end.as_str(), 0), |_, _| true)
                    .map_err(db_err)?;
                for item in gone {
                    item.map_err(db_err)?;
                    n += 1;
                }
            }
            txn.commit().map_err(db_err)?;
            Ok(n)
        })
        .await
    }

    async fn items_under(&self, scope: &Scope) -> Result<u64> {
        let prefix = scope.key_prefix();
        self.blocking(move |db| {
            let mut n = count_str(db, HEADS, &prefix)?;
            n += count_str(db, IDEMPOTENCY, &prefix)?;
            n += count_str(db, LIVE_COUNTS, &prefix)?;
            n += count_str(db, ARTIFACTS, &prefix)?;
            n += count_str(db, SESSIONS, &prefix)?;
            n += count_str(db, SNAPSHOTS, &prefix)?;
            n += count_str(db, crate::POINTS, &prefix)?;
            n += count_str(db, crate::RECORDS, &prefix)?;
            n += count_str(db, crate::changes::CHANGES, &prefix)?;
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(VERSIONS).map_err(db_err)?;
            let end = prefix_end(&prefix);
            n += t
                .range((prefix.as_str(), 0)..(end.as_str(), 0))
                .map_err(db_err)?
                .count() as u64;
            Ok(n)
        })
        .await
    }
}

#[async_trait]
impl BodyEraser for EmbeddedStore {
    async fn erase_prefix(&self, prefix: &str) -> Result<u64> {
        let prefix = prefix.to_owned();
        let dir = self.staging.clone();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            let mut n = 0;
            // The RFC 0019 data of the workspace lives in the same file.
            for table in [BODIES, BLOB_SUPERSEDED, BLOB_SUPERSEDED_BYTES] {
                n += drain_pairs(&txn, table, &prefix)?;
            }
            for table in [CACHE, BLOB_META, BLOB_BYTES, STAGED] {
                n += drain_str(&txn, table, &prefix)?;
            }
            let files = crate::staging::drain_files(&txn, &prefix, |_| true)?;
            txn.commit().map_err(db_err)?;
            n += files.len() as u64;
            crate::staging::unlink(&dir, files);
            Ok(n)
        })
        .await
    }

    async fn count_prefix(&self, prefix: &str) -> Result<u64> {
        let prefix = prefix.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let end = prefix_end(&prefix);
            let mut n = 0;
            for table in [BODIES, BLOB_SUPERSEDED, BLOB_SUPERSEDED_BYTES] {
                n += txn
                    .open_table(table)
                    .map_err(db_err)?
                    .range((prefix.as_str(), "")..(end.as_str(), ""))
                    .map_err(db_err)?
                    .count() as u64;
            }
            for table in [CACHE, BLOB_META, BLOB_BYTES, STAGED, STAGED_FILES] {
                n += count_str(db, table, &prefix)?;
            }
            Ok(n)
        })
        .await
    }
}
