//! DynamoDB's bulk calls, each written once: the paged read ([`read_pages`]: a `Query` or
//! `Scan`, page after page, until it has what its caller asked for; DynamoDB ends a page at
//! 1 MB and applies `Limit` before a filter, so any page can come back short) and the batched
//! write ([`batch_write`]: `BatchWriteItem` 25 requests at a time, unprocessed ones sent
//! again).

use crate::aws_err;
use crate::items::Item;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder;
use aws_sdk_dynamodb::types::WriteRequest;
use aws_sdk_dynamodb::Client;
use std::future::Future;
use workspace_core::{Result, WorkspaceError};

/// A request DynamoDB answers a page at a time.
pub(crate) trait Pages: Clone + Send {
    /// One page from `start` (at most `limit` items read when given): its items and where
    /// the next one starts.
    fn page(
        self,
        start: Option<Item>,
        limit: Option<i32>,
    ) -> impl Future<Output = Result<(Vec<Item>, Option<Item>)>> + Send;
}

// The SDK's Query and Scan builders share no trait, so the same body is stamped for each.
macro_rules! pages {
    ($($request:ty),*) => {$(
        impl Pages for $request {
            async fn page(
                self,
                start: Option<Item>,
                limit: Option<i32>,
            ) -> Result<(Vec<Item>, Option<Item>)> {
                let out = self
                    .set_exclusive_start_key(start)
                    .set_limit(limit)
                    .send()
                    .await
                    .map_err(aws_err)?;
                Ok((out.items.unwrap_or_default(), out.last_evaluated_key))
            }
        }
    )*};
}

pages!(QueryFluentBuilder, ScanFluentBuilder);

/// What `request` returns from `start` on, each item read by `read` (`None` passes over
/// it), until `limit` are read (every one when `None`) or the range ends. Each page asks
/// for no more items than are still missing.
pub(crate) async fn read_pages<T: Send>(
    request: impl Pages,
    mut start: Option<Item>,
    limit: Option<usize>,
    mut read: impl FnMut(&Item) -> Result<Option<T>> + Send,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    loop {
        let missing = limit.map(|l| i32::try_from(l - out.len()).unwrap_or(i32::MAX));
        let (items, next) = request.clone().page(start.take(), missing).await?;
        for item in &items {
            if let Some(t) = read(item)? {
                out.push(t);
            }
        }
        match next {
            Some(k) if limit.is_none_or(|l| out.len() < l) => start = Some(k),
            _ => return Ok(out),
        }
    }
}

/// `BatchWriteItem` takes at most 25 requests.
const BATCH_WRITE_MAX: usize = 25;
/// Rounds of sending unprocessed requests again before giving up (the caller can retry).
const BATCH_WRITE_ROUNDS: usize = 20;

/// Every one of `requests` (puts or deletes) on `table`, 25 a call, unprocessed ones sent
/// again with backoff.
pub(crate) async fn batch_write(
    client: &Client,
    table: &str,
    requests: Vec<WriteRequest>,
) -> Result<()> {
    for chunk in requests.chunks(BATCH_WRITE_MAX) {
        let mut pending = chunk.to_vec();
        for round in 0.. {
            if pending.is_empty() {
                break;
            }
            if round == BATCH_WRITE_ROUNDS {
                return Err(WorkspaceError::internal("items stayed unprocessed"));
            }
            let out = client
                .batch_write_item()
                .request_items(table, pending)
                .send()
                .await
                .map_err(aws_err)?;
            pending = out
                .unprocessed_items
                .and_then(|mut m| m.remove(table))
                .unwrap_or_default();
            if !pending.is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(50 << round.min(5))).await;
            }
        }
    }
    Ok(())
}
