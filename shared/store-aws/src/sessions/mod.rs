//! The session service's store in the same DynamoDB table.
//!
//! Items (records as JSON in `data`, so the adapter and the model cannot drift apart):
//! - workspace:  pk `<tenant>##ws`, sk `u#<sha256(user)>#w#<id>`, `lastActiveAt` beside it
//! - path claim: pk `<tenant>##ws`, sk `u#<sha256(user)>#l#<sha256(localPath)>` → id
//! - artifact:   pk `<tenant>#<workspace>` (the files' partition), sk `art#<id>`
//! - session:    pk `<tenant>#<workspace>`, sk `sess#<id>`, `rev` for compare-and-swap
//!
//! Every partition starts with `<tenant>#`, inside the tenant's `dynamodb:LeadingKeys`.
//! Artifacts and sessions share the workspace's partition, so erasing that partition
//! erases files, versions, artifacts and sessions alike.

mod erase;

pub use erase::PartitionEraser;
#[cfg(feature = "s3")]
pub use erase::S3Eraser;

use crate::aws_err;
use crate::dynamo::{get_consistent, query_prefix};
use crate::items::{get_n, get_s, n, s, Item};
use crate::layout::partition;
use crate::paging::read_pages;
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use serde::de::DeserializeOwned;
use workspace_core::model::{sha256_hex, Millis};
use workspace_core::sessions::model::{ArtifactRecord, SessionRecord, WorkspaceRecord};
use workspace_core::sessions::ports::{Created, SessionStore};
use workspace_core::{Result, Scope, TenantId, WorkspaceError, WorkspaceId};

/// Compare-and-swap rounds before giving up under extreme contention.
const MAX_ATTEMPTS: usize = 100;

#[derive(Clone)]
pub struct DynamoSessions {
    client: Client,
    table: String,
}

fn ws_partition(tenant: &str) -> String {
    format!("{tenant}##ws")
}

fn user_sk(user: &str) -> String {
    format!("u#{}#", sha256_hex(user.as_bytes()))
}

fn record_sk(user: &str, id: &str) -> String {
    format!("{}w#{id}", user_sk(user))
}

fn claim_sk(user: &str, path: &str) -> String {
    format!("{}l#{}", user_sk(user), sha256_hex(path.as_bytes()))
}

fn data<T: DeserializeOwned>(item: &Item) -> Result<T> {
    serde_json::from_str(&get_s(item, "data")?).map_err(WorkspaceError::internal)
}

fn json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(WorkspaceError::internal)
}

fn workspace_from(item: &Item) -> Result<WorkspaceRecord> {
    let mut w: WorkspaceRecord = data(item)?;
    if let Ok(at) = get_n::<Millis>(item, "lastActiveAt") {
        w.last_active_at = w.last_active_at.max(at);
    }
    Ok(w)
}

/// What a cancelled transaction says about each of its parts.
fn cancellation(
    err: &SdkError<TransactWriteItemsError, impl std::fmt::Debug>,
) -> Option<Vec<String>> {
    match err {
        SdkError::ServiceError(e) => match e.err() {
            TransactWriteItemsError::TransactionCanceledException(tc) => Some(
                tc.cancellation_reasons()
                    .iter()
                    .map(|r| r.code().unwrap_or("None").to_owned())
                    .collect(),
            ),
            _ => None,
        },
        _ => None,
    }
}

impl DynamoSessions {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    async fn get(&self, pk: String, sk: String) -> Result<Option<Item>> {
        get_consistent(&self.client, &self.table, pk, sk).await
    }

    /// Every item of a partition whose sk starts with `prefix`.
    pub(crate) async fn query(&self, pk: &str, prefix: &str) -> Result<Vec<Item>> {
        query_prefix(&self.client, &self.table, pk, prefix).await
    }

    /// The JSON record of a workspace's item `sk` (an artifact, a session), if present.
    async fn record<T: DeserializeOwned>(&self, scope: &Scope, sk: String) -> Result<Option<T>> {
        self.get(partition(scope), sk)
            .await?
            .map(|i| data(&i))
            .transpose()
    }

    /// The JSON records of a workspace's items whose sk starts with `prefix`.
    async fn records<T: DeserializeOwned>(&self, scope: &Scope, prefix: &str) -> Result<Vec<T>> {
        self.query(&partition(scope), prefix)
            .await?
            .iter()
            .map(data)
            .collect()
    }

    fn put(&self, item: Item, condition: Option<&str>) -> Result<Put> {
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .set_condition_expression(condition.map(str::to_owned))
            .build()
            .map_err(aws_err)
    }

    fn record_item(rec: &WorkspaceRecord) -> Result<Item> {
        Ok(Item::from([
            ("pk".to_owned(), s(ws_partition(&rec.tenant))),
            ("sk".to_owned(), s(record_sk(&rec.user, &rec.workspace_id))),
            ("kind".to_owned(), s("workspace")),
            ("tenant".to_owned(), s(&rec.tenant)),
            ("data".to_owned(), s(json(rec)?)),
            ("lastActiveAt".to_owned(), n(rec.last_active_at)),
        ]))
    }
}

#[async_trait]
impl SessionStore for DynamoSessions {
    async fn create_workspace(&self, rec: &WorkspaceRecord) -> Result<Created> {
        let record = self.put(Self::record_item(rec)?, Some("attribute_not_exists(pk)"))?;
        let Some(path) = &rec.local_path else {
            self.client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(record).build())
                .send()
                .await
                .map_err(aws_err)?;
            return Ok(Created::New);
        };
        // The claim on (tenant, user, localPath) and the record commit together; the
        // claim's condition decides which of concurrent creates wins.
        let pk = ws_partition(&rec.tenant);
        let claim = Item::from([
            ("pk".to_owned(), s(&pk)),
            ("sk".to_owned(), s(claim_sk(&rec.user, path))),
            ("kind".to_owned(), s("workspace-claim")),
            ("workspaceId".to_owned(), s(&rec.workspace_id)),
        ]);
        let claim = self.put(claim, Some("attribute_not_exists(pk)"))?;
        for _ in 0..MAX_ATTEMPTS {
            let res = self
                .client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(claim.clone()).build())
                .transact_items(TransactWriteItem::builder().put(record.clone()).build())
                .send()
                .await;
            let reasons = match res {
                Ok(_) => return Ok(Created::New),
                Err(e) => cancellation(&e).ok_or_else(|| aws_err(e))?,
            };
            if reasons.first().map(String::as_str) == Some("ConditionalCheckFailed") {
                let owner = self
                    .get(pk.clone(), claim_sk(&rec.user, path))
                    .await?
                    .ok_or_else(|| WorkspaceError::internal("claimed path has no claim"))?;
                let id = get_s(&owner, "workspaceId")?;
                if let Some(item) = self.get(pk.clone(), record_sk(&rec.user, &id)).await? {
                    return Ok(Created::Existing(workspace_from(&item)?));
                }
            }
            // TransactionConflict (a concurrent create in flight): try again.
        }
        Err(WorkspaceError::internal(
            "workspace create kept conflicting",
        ))
    }

    async fn workspace(
        &self,
        tenant: &TenantId,
        user: &str,
        id: &WorkspaceId,
    ) -> Result<Option<WorkspaceRecord>> {
        self.get(ws_partition(tenant.as_str()), record_sk(user, id.as_str()))
            .await?
            .map(|i| workspace_from(&i))
            .transpose()
    }

    async fn list_workspaces(
        &self,
        tenant: &TenantId,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<WorkspaceRecord>> {
        let pk = ws_partition(tenant.as_str());
        let prefix = format!("{}w#", user_sk(user));
        let start = after.map(|a| {
            Item::from([
                ("pk".to_owned(), s(&pk)),
                ("sk".to_owned(), s(record_sk(user, a))),
            ])
        });
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND begins_with(sk, :p)")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":p", s(&prefix));
        read_pages(query, start, Some(limit), |item| {
            workspace_from(item).map(Some)
        })
        .await
    }

    async fn all_workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        let scan = self
            .client
            .scan()
            .table_name(&self.table)
            .consistent_read(true)
            .filter_expression("kind = :k")
            .expression_attribute_values(":k", s("workspace"));
        read_pages(scan, None, None, |item| workspace_from(item).map(Some)).await
    }

    async fn touch_workspace(&self, rec: &WorkspaceRecord, at: Millis) -> Result<()> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(ws_partition(&rec.tenant)))
            .key("sk", s(record_sk(&rec.user, &rec.workspace_id)))
            .update_expression("SET lastActiveAt = :at")
            .condition_expression("attribute_exists(pk) AND lastActiveAt < :at")
            .expression_attribute_values(":at", n(at))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            // Already as recent, or deleted meanwhile: nothing to do.
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                Ok(())
            }
            Err(e) => Err(aws_err(e)),
        }
    }

    async fn remove_workspace(&self, rec: &WorkspaceRecord) -> Result<()> {
        let pk = ws_partition(&rec.tenant);
        let mut keys = vec![(pk.clone(), record_sk(&rec.user, &rec.workspace_id))];
        if let Some(path) = &rec.local_path {
            keys.push((pk, claim_sk(&rec.user, path)));
        }
        self.delete_keys(keys).await.map(|_| ())
    }

    async fn put_artifact(
        &self,
        scope: &Scope,
        art: &ArtifactRecord,
    ) -> Result<Option<ArtifactRecord>> {
        let pk = partition(scope);
        let sess_sk = format!("sess#{}", art.session_id);
        let art_item = Item::from([
            ("pk".to_owned(), s(&pk)),
            ("sk".to_owned(), s(format!("art#{}", art.artifact_id))),
            ("kind".to_owned(), s("artifact")),
            ("data".to_owned(), s(json(art)?)),
        ]);
        let art_put = self.put(art_item, Some("attribute_not_exists(pk)"))?;
        for _ in 0..MAX_ATTEMPTS {
            let current = self.get(pk.clone(), sess_sk.clone()).await?;
            let (prev, rev): (Option<SessionRecord>, u64) = match &current {
                Some(item) => (Some(data(item)?), get_n(item, "rev")?),
                None => (None, 0),
            };
            let (session, replaced_id) = SessionRecord::with_artifact(prev, art);
            let mut put = self.put(
                Item::from([
                    ("pk".to_owned(), s(&pk)),
                    ("sk".to_owned(), s(&sess_sk)),
                    ("kind".to_owned(), s("session")),
                    ("data".to_owned(), s(json(&session)?)),
                    ("rev".to_owned(), n(rev + 1)),
                ]),
                None,
            )?;
            if current.is_some() {
                put.condition_expression = Some("rev = :rev".into());
                put.expression_attribute_values = Some([(":rev".to_owned(), n(rev))].into());
            } else {
                put.condition_expression = Some("attribute_not_exists(pk)".into());
            }
            let mut ops = vec![
                TransactWriteItem::builder().put(art_put.clone()).build(),
                TransactWriteItem::builder().put(put).build(),
            ];
            let mut replaced = None;
            if let Some(id) = &replaced_id {
                let old_sk = format!("art#{id}");
                replaced = self
                    .get(pk.clone(), old_sk.clone())
                    .await?
                    .map(|i| data::<ArtifactRecord>(&i))
                    .transpose()?;
                let del = Delete::builder()
                    .table_name(&self.table)
                    .key("pk", s(&pk))
                    .key("sk", s(old_sk))
                    .build()
                    .map_err(aws_err)?;
                ops.push(TransactWriteItem::builder().delete(del).build());
            }
            let res = self
                .client
                .transact_write_items()
                .set_transact_items(Some(ops))
                .send()
                .await;
            match res {
                Ok(_) => return Ok(replaced),
                Err(e) => {
                    let reasons = cancellation(&e).ok_or_else(|| aws_err(e))?;
                    if reasons.first().map(String::as_str) == Some("ConditionalCheckFailed") {
                        return Err(WorkspaceError::internal("artifact id already used"));
                    }
                    // The session moved (or a concurrent transaction): read it again.
                }
            }
        }
        Err(WorkspaceError::internal("artifact upload kept conflicting"))
    }

    async fn artifact(&self, scope: &Scope, id: &str) -> Result<Option<ArtifactRecord>> {
        self.record(scope, format!("art#{id}")).await
    }

    async fn artifacts(&self, scope: &Scope) -> Result<Vec<ArtifactRecord>> {
        self.records(scope, "art#").await
    }

    async fn session(&self, scope: &Scope, id: &str) -> Result<Option<SessionRecord>> {
        self.record(scope, format!("sess#{id}")).await
    }

    async fn sessions(&self, scope: &Scope) -> Result<Vec<SessionRecord>> {
        self.records(scope, "sess#").await
    }

    async fn delete_session(&self, scope: &Scope, id: &str) -> Result<Vec<ArtifactRecord>> {
        let pk = partition(scope);
        let gone: Vec<ArtifactRecord> = self
            .artifacts(scope)
            .await?
            .into_iter()
            .filter(|a| a.session_id == id)
            .collect();
        let mut keys = vec![(pk.clone(), format!("sess#{id}"))];
        keys.extend(
            gone.iter()
                .map(|a| (pk.clone(), format!("art#{}", a.artifact_id))),
        );
        self.delete_keys(keys).await?;
        Ok(gone)
    }

    async fn erase_scope(&self, scope: &Scope) -> Result<u64> {
        let pk = partition(scope);
        let keys: Vec<_> = self
            .query(&pk, "")
            .await?
            .iter()
            .map(|i| get_s(i, "sk").map(|sk| (pk.clone(), sk)))
            .collect::<Result<_>>()?;
        self.delete_keys(keys).await
    }

    async fn items_under(&self, scope: &Scope) -> Result<u64> {
        Ok(self.query(&partition(scope), "").await?.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_stay_under_their_tenant() {
        let (a, b) = (ws_partition("acme"), ws_partition("acme-evil"));
        assert!(a.starts_with("acme#") && !b.starts_with("acme#"));
        let w = Scope::parse("acme", "ws-1").unwrap();
        assert!(partition(&w).starts_with("acme#"));
        // Users and paths are hashed into sort keys: no separator of theirs can shift a key.
        assert_ne!(record_sk("a#w#x", "y"), record_sk("a", "x#w#y"));
        assert_ne!(claim_sk("bob", "/p"), claim_sk("alice", "/p"));
        assert!(record_sk("alice", "ws-1").starts_with(&user_sk("alice")));
    }
}
