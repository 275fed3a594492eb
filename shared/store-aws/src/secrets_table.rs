//! Registered secrets in the DynamoDB table: one item per secret under the partition
//! `<tenant>##secrets` (see `layout::secrets_partition`), which no workspace partition
//! (`<tenant>#<workspace>`, workspace ids start with a letter or digit) can equal.
//!
//! Beside them, the item `epoch` counts every registration and removal, in the same
//! transaction as the change. A writer reads the secrets and the epoch with one Query, keeps
//! them, and puts a condition on the epoch into each commit (`DynamoMeta::commit`), so a
//! secret registered meanwhile fails the commit, which is then redacted again: a write
//! needs no read of the secrets of its own, and a new secret still counts from the next
//! commit on.

use crate::aws_err;
use crate::dynamo::query_prefix;
use crate::items::{get_n, get_s, n, s};
use crate::layout::secrets_partition;
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use workspace_core::secrets::{SecretRecord, SecretStore};
use workspace_core::{Result, TenantId};

const SK_PREFIX: &str = "secret#";
/// The sort key of the tenant's epoch item.
pub(crate) const EPOCH_SK: &str = "epoch";

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
        let put = Put::builder()
            .table_name(&self.table)
            .item("pk", s(secrets_partition(&tenant)))
            .item("sk", s(format!("{SK_PREFIX}{}", record.id)))
            .item("kind", s("secret"))
            .item("secretId", s(&record.id))
            .item("value", s(&record.value))
            .item("createdAt", n(record.created_at))
            .build()
            .map_err(aws_err)?;
        self.client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put).build())
            .transact_items(self.bump_epoch(&tenant)?)
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
        .map(|item| record_of(tenant, item))
        .collect()
    }

    async fn remove_secret(&self, tenant: &TenantId, id: &str) -> Result<bool> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .key("pk", s(secrets_partition(tenant)))
            .key("sk", s(format!("{SK_PREFIX}{id}")))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(aws_err)?;
        let res = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().delete(delete).build())
            .transact_items(self.bump_epoch(tenant)?)
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            // No such secret: the condition failed, nothing changed.
            Err(SdkError::ServiceError(e))
                if matches!(
                    e.err(),
                    TransactWriteItemsError::TransactionCanceledException(_)
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(aws_err(e)),
        }
    }

    async fn secrets_at(&self, tenant: &TenantId) -> Result<Option<(Vec<SecretRecord>, u64)>> {
        let items = query_prefix(&self.client, &self.table, &secrets_partition(tenant), "").await?;
        let mut epoch = 0;
        let mut records = Vec::new();
        for item in &items {
            if get_s(item, "sk")? == EPOCH_SK {
                epoch = get_n(item, "epoch")?;
            } else {
                records.push(record_of(tenant, item)?);
            }
        }
        Ok(Some((records, epoch)))
    }
}

fn record_of(tenant: &TenantId, item: &crate::items::Item) -> Result<SecretRecord> {
    Ok(SecretRecord {
        tenant: tenant.to_string(),
        id: get_s(item, "secretId")?,
        value: get_s(item, "value")?,
        created_at: get_n(item, "createdAt")?,
    })
}

impl DynamoSecrets {
    /// The epoch item's increment, in the same transaction as a registration or removal.
    fn bump_epoch(&self, tenant: &TenantId) -> Result<TransactWriteItem> {
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(secrets_partition(tenant)))
            .key("sk", s(EPOCH_SK))
            .update_expression("ADD epoch :one")
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(aws_err)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}
