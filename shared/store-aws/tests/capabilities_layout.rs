//! RFC 0019 storage layout on the emulator: cache items under the tenant's partition with a
//! TTL attribute DynamoDB can act on, expired items never served while TTL lags, blob keys
//! under the tenant's S3 prefix, and a delete that leaves no version a pinned URL could read.

use std::sync::Arc;
use workspace_core::blob::{BlobLimits, BlobService, PresignRequest};
use workspace_core::cache::{CacheKey, CacheLimits, CacheService};
use workspace_core::ports::{Clock, SystemClock};
use workspace_core::Scope;
use workspace_store_aws::testing as common;
use workspace_store_aws::{DynamoCache, S3Blobs};

struct Fixed(i64);
impl Clock for Fixed {
    fn now_ms(&self) -> i64 {
        self.0
    }
}

#[tokio::test]
async fn cache_items_carry_tenant_keys_and_ttl_and_lagging_ttl_is_never_served() {
    let env = common::fresh(None).await;
    let caps = common::fresh_capabilities().await;
    let store = Arc::new(DynamoCache::new(
        env.clients.dynamodb.clone(),
        caps.cache_table.clone(),
    ));
    let scope = Scope::parse("acme", "main").unwrap();
    let key = CacheKey::parse("k").unwrap();
    let t0 = 1_700_000_000_250;
    let at_t0 = CacheService::new(store.clone(), Arc::new(Fixed(t0)), CacheLimits::default());
    let expires = at_t0
        .put(&scope, &key, &serde_json::json!({"v": 1}), 10)
        .await
        .unwrap();
    assert_eq!(expires, t0 + 10_000);
    let item = env
        .clients
        .dynamodb
        .get_item()
        .table_name(&caps.cache_table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S("acme#main".into()),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("cache#k".into()),
        )
        .send()
        .await
        .unwrap()
        .item
        .expect("item under the tenant's partition");
    // TTL needs epoch seconds, rounded up so DynamoDB never deletes a live entry.
    assert_eq!(item["expiresAt"].as_n().unwrap(), "1700000011");
    assert_eq!(item["expiresAtMs"].as_n().unwrap(), "1700000010250");
    assert_eq!(item["value"].as_s().unwrap(), r#"{"v":1}"#);
    // The item is still in the table (TTL has not run), but past expiresAt it is a miss.
    let later = CacheService::new(store, Arc::new(Fixed(t0 + 10_000)), CacheLimits::default());
    assert!(later.get(&scope, &key).await.is_err());
    assert!(at_t0.get(&scope, &key).await.is_ok());
}

#[tokio::test]
async fn blob_keys_are_tenant_prefixed_and_delete_leaves_no_version() {
    let env = common::fresh(None).await;
    let caps = common::fresh_capabilities().await;
    let s3 = env.clients.s3.clone();
    let blobs = BlobService::new(
        Arc::new(S3Blobs::new(s3.clone(), caps.blob_bucket.clone())),
        Arc::new(SystemClock),
        BlobLimits::default(),
    );
    let scope = Scope::parse("acme", "main").unwrap();
    let loc = blobs.location(&scope, "default", "a/b.bin").unwrap();
    blobs.put(&loc, b"one".to_vec(), None).await.unwrap();
    let url = blobs
        .presign(
            &scope,
            "default",
            PresignRequest {
                key: "a/b.bin".into(),
                method: "GET".into(),
                expires_in_seconds: 60,
                content_length: None,
                content_type: None,
            },
        )
        .await
        .unwrap();
    blobs.put(&loc, b"two".to_vec(), None).await.unwrap();
    let listed = s3
        .list_object_versions()
        .bucket(&caps.blob_bucket)
        .send()
        .await
        .unwrap();
    let keys: Vec<_> = listed.versions().iter().filter_map(|v| v.key()).collect();
    assert_eq!(keys, ["t/acme/w/main/blobs/default/a/b.bin"; 2]);
    // The pinned URL reads version one even after the overwrite ...
    let r = reqwest::get(&url.url).await.unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"one");
    // ... and nothing once the object is deleted: every version goes.
    blobs.delete(&loc).await.unwrap();
    let listed = s3
        .list_object_versions()
        .bucket(&caps.blob_bucket)
        .send()
        .await
        .unwrap();
    assert!(listed.versions().is_empty() && listed.delete_markers().is_empty());
    let r = reqwest::get(&url.url).await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
}
