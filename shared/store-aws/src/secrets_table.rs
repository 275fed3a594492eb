//! Registered secrets in the DynamoDB table: one item per secret under the partition
//! `<tenant>##secrets` (see `keys::secrets_partition`), which no workspace partition
//! (`<tenant>#<workspace>`, workspace ids start with a letter or digit) can equal. Read with
//! one strongly consistent Query per write, so a newly registered secret counts at once.

use crate::aws_err;
use crate::dynamo::query_prefix;
use crate::items::{get_n, get_s, n, s};
use crate::keys::secrets_partition;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use workspace_core::secrets::{SecretRecord, SecretStore};
use workspace_core::{Result, TenantId};

const SK_PREFIX: &str = "secret#";

#[derive(Clone)]
pub struct DynamoSecrets {
    client: Client,
    table: String,
}

impl DynamoSecrets {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

#[async_trait]
impl SecretStore for DynamoSecrets {
    async fn put_secret(&self, record: SecretRecord) -> Result<()> {
        let tenant = TenantId::parse(&record.tenant)?;
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(secrets_partition(&tenant)))
            .item("sk", s(format!("{SK_PREFIX}{}", record.id)))
            .item("kind", s("secret"))
            .item("secretId", s(&record.id))
            .item("value", s(&record.value))
            .item("createdAt", n(record.created_at))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }

    async fn secrets_of(&self, tenant: &TenantId) -> Result<Vec<SecretRecord>> {
        query_prefix(
            &self.client,
            &self.table,
            &secrets_partition(tenant),
            SK_PREFIX,
        )
        .await?
        .iter()
        .map(|item| {
            Ok(SecretRecord {
                tenant: tenant.to_string(),
                id: get_s(item, "secretId")?,
                value: get_s(item, "value")?,
                created_at: get_n(item, "createdAt")?,
            })
        })
        .collect()
    }

    async fn remove_secret(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(secrets_partition(tenant)))
            .key("sk", s(format!("{SK_PREFIX}{id}")))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(aws_err)?;
        Ok(out.attributes.is_some())
    }
}
