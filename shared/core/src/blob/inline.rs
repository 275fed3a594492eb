//! Small bodies kept inline with their commit.
//!
//! A body of at most the threshold never goes to the body store: it becomes a
//! [`BodyRef::inline`] that the commit stores in the head and the version item themselves
//! (a binary attribute on DynamoDB, the record on the embedded store). So on AWS a small
//! file's write is one DynamoDB transaction and its read one `GetItem`, with no S3 request
//! (docs/design.md, "Small files inline"; docs/cost.md for the threshold's price).
//!
//! One wrapper of the body port does it for every rule that stores or reads a body
//! (writes, merges, restores, history, search, erase), so no rule needs to know.

use crate::error::Result;
use crate::model::BodyRef;
use crate::ports::Bodies;
use crate::presign::{PresignSpec, PresignedUrl};
use async_trait::async_trait;
use std::sync::Arc;

/// The default threshold: bodies of at most this many bytes are kept inline. 2 KiB is where
/// a write and a read together cost no more inline than through S3 at us-east-1 list prices
/// (the body is written twice, in the head and the version item, at 2 write units per KB of
/// a transaction; an S3 PUT costs $5 per million): `bench/cost.py` derives the table in
/// docs/cost.md, and checks this value against it.
pub const DEFAULT_INLINE_BODY_BYTES: u64 = 2048;

/// The largest threshold a deployment may set: a head or version item keeps one body and
/// its metadata well under DynamoDB's 400 KB item limit, and a batch of commits still fits
/// a 4 MB transaction at about 28 files of that size (larger batches go through the durable
/// plan: the AWS adapter weighs inline bodies when it decides).
pub const MAX_INLINE_BODY_BYTES: u64 = 64 * 1024;

/// The body port with small bodies kept inline (see the module notes).
pub struct InlineBodies {
    store: Arc<dyn Bodies>,
    max_bytes: u64,
}

impl InlineBodies {
    /// Bodies of at most `max_bytes` inline (0: none), the rest in `store`.
    pub fn new(store: Arc<dyn Bodies>, max_bytes: u64) -> Self {
        Self {
            store,
            max_bytes: max_bytes.min(MAX_INLINE_BODY_BYTES),
        }
    }

    /// The body store itself, for a copy that must outlive the version items (a kept
    /// checkpoint's).
    pub fn store(&self) -> &Arc<dyn Bodies> {
        &self.store
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }
}

#[async_trait]
impl Bodies for InlineBodies {
    async fn put(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<BodyRef> {
        if bytes.len() as u64 <= self.max_bytes {
            return Ok(BodyRef::inline(bytes));
        }
        self.store.put(key, bytes, content_type).await
    }

    async fn get(&self, body: &BodyRef) -> Result<Option<Vec<u8>>> {
        match &body.inline {
            Some(bytes) => Ok(Some(bytes.0.clone())),
            None => self.store.get(body).await,
        }
    }

    /// An inline body goes with the item that holds it: nothing to delete here.
    async fn delete(&self, body: &BodyRef) -> Result<()> {
        if body.is_inline() {
            return Ok(());
        }
        self.store.delete(body).await
    }

    async fn presign_get(
        &self,
        body: &BodyRef,
        spec: &PresignSpec,
    ) -> Result<Option<PresignedUrl>> {
        if body.is_inline() {
            return Ok(None);
        }
        self.store.presign_get(body, spec).await
    }
}
