//! Managed API keys in the DynamoDB table, for the Lambda authorizer and
//! `workspace-local keys …` with `WORKSPACE_TABLE` set. Stored by digest only:
//! `pk = apikey#<sha256>`, `sk = apikey`. These are the one kind of item whose key does not
//! start with a tenant: the authorizer must find a key before it knows the tenant. Its role
//! may read only items whose partition key starts with `apikey#`.

use crate::aws_err;
use crate::items::{get_s, s};
use crate::paging::read_pages;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use workspace_core::keys::{KeyStore, ManagedKey};
use workspace_core::model::Millis;
use workspace_core::{Result, WorkspaceError};

const SK: &str = "apikey";

pub fn key_pk(digest: &str) -> String {
    format!("apikey#{digest}")
}

#[derive(Clone)]
pub struct DynamoKeys {
    client: Client,
    table: String,
}

impl DynamoKeys {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    async fn put(&self, key: &ManagedKey, condition: &str) -> Result<()> {
        let record = serde_json::to_string(key).map_err(WorkspaceError::internal)?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(key_pk(&key.digest)))
            .item("sk", s(SK))
            .item("kind", s("apikey"))
            .item("keyId", s(&key.id))
            .item("record", s(record))
            .condition_expression(condition)
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }
}

fn record(item: &std::collections::HashMap<String, AttributeValue>) -> Result<ManagedKey> {
    serde_json::from_str(&get_s(item, "record")?).map_err(WorkspaceError::internal)
}

#[async_trait]
impl KeyStore for DynamoKeys {
    async fn insert_key(&self, key: ManagedKey) -> Result<()> {
        self.put(&key, "attribute_not_exists(pk)").await
    }

    async fn key_by_digest(&self, digest: &str) -> Result<Option<ManagedKey>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(key_pk(digest)))
            .key("sk", s(SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(aws_err)?;
        out.item.as_ref().map(record).transpose()
    }

    async fn list_keys(&self) -> Result<Vec<ManagedKey>> {
        let scan = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression("kind = :k")
            .expression_attribute_values(":k", s("apikey"));
        let mut keys = read_pages(scan, None, None, |item| record(item).map(Some)).await?;
        keys.sort_by_key(|k| k.created_at);
        Ok(keys)
    }

    async fn revoke_key(&self, id: &str, at: Millis) -> Result<bool> {
        let found = self
            .list_keys()
            .await?
            .into_iter()
            .find(|k| k.id == id && k.revoked_at.is_none());
        let Some(mut key) = found else {
            return Ok(false);
        };
        key.revoked_at = Some(at);
        self.put(&key, "attribute_exists(pk)").await?;
        Ok(true)
    }
}
