//! The durable outbox of `workspace.updated` (core `events::EventLog`): every commit
//! appends its event inside its own write transaction (`append`, called by `apply`), so
//! an acknowledged change always has its event and a refused or failed one never has.
//!
//! Tables:
//! - `outbox`:          position → Recorded (JSON); positions count up from 1, never reused
//! - `outbox_scoped`:   (scope prefix, position) → (), the index a workspace's reader walks
//! - `outbox_counter`:  "next" → the next position (kept when retention empties the outbox)
//! - `outbox_cursors`:  deliverer name → DeliveryCursor (JSON): how far a webhook got

use super::{db_err, decode, encode, EmbeddedStore};
use async_trait::async_trait;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};
use workspace_core::events::{DeliveryCursor, EventLog, Recorded, Since, WorkspaceEvent};
use workspace_core::model::Millis;
use workspace_core::{Result, Scope};

const OUTBOX: TableDefinition<u64, &[u8]> = TableDefinition::new("outbox");
const OUTBOX_SCOPED: TableDefinition<(&str, u64), ()> = TableDefinition::new("outbox_scoped");
const OUTBOX_COUNTER: TableDefinition<&str, u64> = TableDefinition::new("outbox_counter");
const OUTBOX_CURSORS: TableDefinition<&str, &[u8]> = TableDefinition::new("outbox_cursors");
const NEXT: &str = "next";

pub(crate) fn create_tables(txn: &WriteTransaction) -> Result<()> {
    txn.open_table(OUTBOX).map_err(db_err)?;
    txn.open_table(OUTBOX_SCOPED).map_err(db_err)?;
    txn.open_table(OUTBOX_COUNTER).map_err(db_err)?;
    txn.open_table(OUTBOX_CURSORS).map_err(db_err)?;
    Ok(())
}

/// Appends `event` in the caller's transaction (the commit's).
pub(crate) fn append(
    txn: &WriteTransaction,
    scope: &Scope,
    event: WorkspaceEvent,
    now: Millis,
) -> Result<()> {
    let mut counter = txn.open_table(OUTBOX_COUNTER).map_err(db_err)?;
    let position = counter.get(NEXT).map_err(db_err)?.map_or(1, |v| v.value());
    counter.insert(NEXT, position + 1).map_err(db_err)?;
    let recorded = Recorded {
        position,
        recorded_at: now,
        event,
    };
    txn.open_table(OUTBOX)
        .map_err(db_err)?
        .insert(position, encode(&recorded)?.as_slice())
        .map_err(db_err)?;
    txn.open_table(OUTBOX_SCOPED)
        .map_err(db_err)?
        .insert((scope.key_prefix().as_str(), position), ())
        .map_err(db_err)?;
    Ok(())
}

/// The position the next event gets (1 while none was ever recorded).
fn next_position(txn: &redb::ReadTransaction) -> Result<u64> {
    Ok(txn
        .open_table(OUTBOX_COUNTER)
        .map_err(db_err)?
        .get(NEXT)
        .map_err(db_err)?
        .map_or(1, |v| v.value()))
}

/// Drops the events of every scope under `prefix` (a deleted or purged workspace); how
/// many went.
pub(crate) fn erase_under(txn: &WriteTransaction, prefix: &str) -> Result<u64> {
    let mut scoped = txn.open_table(OUTBOX_SCOPED).map_err(db_err)?;
    let end = format!("{prefix}\u{10ffff}");
    let mut gone = Vec::new();
    for item in scoped
        .extract_from_if((prefix, 0)..(end.as_str(), 0), |_, _| true)
        .map_err(db_err)?
    {
        let (k, _) = item.map_err(db_err)?;
        gone.push(k.value().1);
    }
    let mut outbox = txn.open_table(OUTBOX).map_err(db_err)?;
    for p in &gone {
        outbox.remove(*p).map_err(db_err)?;
    }
    Ok(gone.len() as u64)
}

#[async_trait]
impl EventLog for EmbeddedStore {
    async fn since(&self, scope: Option<&Scope>, after: u64, limit: usize) -> Result<Since> {
        let prefix = scope.map(Scope::key_prefix);
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let outbox = txn.open_table(OUTBOX).map_err(db_err)?;
            let next = next_position(&txn)?;
            let oldest = match outbox.first().map_err(db_err)? {
                Some((k, _)) => k.value(),
                None => next,
            };
            if after > 0 && after + 1 < oldest {
                return Ok(Since::Expired { oldest });
            }
            let mut out = Vec::new();
            match prefix {
                Some(p) => {
                    let scoped = txn.open_table(OUTBOX_SCOPED).map_err(db_err)?;
                    let range = (p.as_str(), after + 1)..=(p.as_str(), u64::MAX);
                    for item in scoped.range(range).map_err(db_err)?.take(limit) {
                        let (k, _) = item.map_err(db_err)?;
                        if let Some(v) = outbox.get(k.value().1).map_err(db_err)? {
                            out.push(decode(v.value())?);
                        }
                    }
                }
                None => {
                    for item in outbox.range(after + 1..).map_err(db_err)?.take(limit) {
                        let (_, v) = item.map_err(db_err)?;
                        out.push(decode(v.value())?);
                    }
                }
            }
            Ok(Since::Events(out))
        })
        .await
    }

    async fn last_position(&self) -> Result<u64> {
        self.blocking(|db| {
            let txn = db.begin_read().map_err(db_err)?;
            let next = next_position(&txn)?;
            Ok(next - 1)
        })
        .await
    }

    async fn prune(&self, cutoff: Millis) -> Result<u64> {
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            let mut gone = Vec::new();
            {
                let outbox = txn.open_table(OUTBOX).map_err(db_err)?;
                // Positions follow commit order, so the old ones come first.
                for item in outbox.iter().map_err(db_err)? {
                    let (k, v) = item.map_err(db_err)?;
                    let r: Recorded = decode(v.value())?;
                    if r.recorded_at >= cutoff {
                        break;
                    }
                    gone.push((k.value(), r.event.tenant, r.event.workspace));
                }
            }
            {
                let mut outbox = txn.open_table(OUTBOX).map_err(db_err)?;
                let mut scoped = txn.open_table(OUTBOX_SCOPED).map_err(db_err)?;
                for (p, tenant, workspace) in &gone {
                    outbox.remove(*p).map_err(db_err)?;
                    if let Ok(scope) = Scope::parse(tenant, workspace) {
                        scoped
                            .remove((scope.key_prefix().as_str(), *p))
                            .map_err(db_err)?;
                    }
                }
            }
            txn.commit().map_err(db_err)?;
            Ok(gone.len() as u64)
        })
        .await
    }

    async fn cursor(&self, name: &str) -> Result<Option<DeliveryCursor>> {
        let name = name.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(db_err)?;
            let t = txn.open_table(OUTBOX_CURSORS).map_err(db_err)?;
            let found = t.get(name.as_str()).map_err(db_err)?;
            found.map(|v| decode(v.value())).transpose()
        })
        .await
    }

    async fn set_cursor(&self, name: &str, cursor: &DeliveryCursor) -> Result<()> {
        let name = name.to_owned();
        let value = encode(cursor)?;
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(db_err)?;
            txn.open_table(OUTBOX_CURSORS)
                .map_err(db_err)?
                .insert(name.as_str(), value.as_slice())
                .map_err(db_err)?;
            txn.commit().map_err(db_err)
        })
        .await
    }
}
