//! The TTL cache in its own DynamoDB table (`pk`, `sk`, TTL on `expiresAt`):
//! pk `<tenant>#<workspace>` (the tenant's own prefix, as in the main table, so IAM can pin a
//! role with `dynamodb:LeadingKeys`), sk `cache#<key>`. `expiresAt` is epoch seconds for
//! DynamoDB TTL, which deletes days late at worst; `expiresAtMs` is what reads judge (the
//! service filters every read on it), so an expired entry is never served.

use crate::aws_err;
use crate::items::{get_n, get_s, n, s};
use crate::layout;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use workspace_core::cache::{CacheEntry, CacheKey, CacheStore};
use workspace_core::{Result, Scope};

#[derive(Clone)]
pub struct DynamoCache {
    client: Client,
    table: String,
}

fn sk(key: &CacheKey) -> String {
    format!("cache#{}", key.as_str())
}

impl DynamoCache {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

#[async_trait]
impl CacheStore for DynamoCache {
    async fn put(&self, scope: &Scope, key: &CacheKey, entry: CacheEntry) -> Result<()> {
        // Rounded up: TTL must never delete an entry before it expires.
        let ttl_secs = entry.expires_at.div_euclid(1000) + i64::from(entry.expires_at % 1000 != 0);
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(layout::partition(scope)))
            .item("sk", s(sk(key)))
            .item("value", s(entry.value_json))
            .item("expiresAtMs", n(entry.expires_at))
            .item("expiresAt", n(ttl_secs))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }

    async fn get(&self, scope: &Scope, key: &CacheKey) -> Result<Option<CacheEntry>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(layout::partition(scope)))
            .key("sk", s(sk(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(aws_err)?;
        out.item
            .map(|i| {
                Ok(CacheEntry {
                    value_json: get_s(&i, "value")?,
                    expires_at: get_n(&i, "expiresAtMs")?,
                })
            })
            .transpose()
    }

    async fn delete(&self, scope: &Scope, key: &CacheKey) -> Result<()> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(layout::partition(scope)))
            .key("sk", s(sk(key)))
            .send()
            .await
            .map_err(aws_err)?;
        Ok(())
    }
}
