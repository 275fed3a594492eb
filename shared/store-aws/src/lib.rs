//! AWS adapters for the workspace ports: bodies in a versioned S3 bucket ([`s3`]), metadata
//! and every commit decision in DynamoDB ([`dynamo`]), `workspace.updated` on EventBridge
//! ([`events`]). Clients are built once per process ([`AwsConfig`]) and shared.
//!
//! Each SDK is behind a feature of its own (`s3`, `dynamodb`, `eventbridge`), so a Lambda
//! function depends only on the clients it calls: `fn-list` has no S3 in its tree.
#![cfg_attr(
    not(any(feature = "s3", feature = "dynamodb", feature = "eventbridge")),
    allow(dead_code)
)]

#[cfg(feature = "s3")]
pub mod blobs;
#[cfg(feature = "dynamodb")]
pub mod cache;
/// Counting AWS calls in tests (an SDK interceptor): never in a function's binary.
#[cfg(feature = "testing")]
pub mod calls;
pub mod clients;
#[cfg(feature = "dynamodb")]
pub mod dynamo;
#[cfg(feature = "dynamodb")]
mod dynamo_pins;
#[cfg(feature = "eventbridge")]
pub mod events;
#[cfg(feature = "dynamodb")]
pub mod items;
#[cfg(feature = "dynamodb")]
pub mod keys_table;
pub mod layout;
#[cfg(feature = "dynamodb")]
mod paging;
#[cfg(all(feature = "s3", feature = "dynamodb", feature = "eventbridge"))]
pub mod provision;
#[cfg(all(feature = "eventbridge", feature = "s3"))]
pub mod publisher;
#[cfg(feature = "s3")]
pub mod s3;
#[cfg(feature = "s3")]
pub mod search_index;
#[cfg(feature = "dynamodb")]
pub mod secrets_table;
#[cfg(feature = "dynamodb")]
pub mod sessions;
#[cfg(all(feature = "dynamodb", feature = "s3"))]
pub mod sweeper;
#[cfg(feature = "testing")]
pub mod testing;

#[cfg(feature = "s3")]
pub use blobs::S3Blobs;
#[cfg(feature = "dynamodb")]
pub use cache::DynamoCache;
pub use clients::https_client;
#[cfg(all(feature = "s3", feature = "dynamodb", feature = "eventbridge"))]
pub use clients::AwsClients;
pub use clients::AwsConfig;
#[cfg(feature = "dynamodb")]
pub use dynamo::DynamoMeta;
#[cfg(feature = "s3")]
pub use s3::S3Bodies;

use workspace_core::WorkspaceError;

pub(crate) fn aws_err(e: impl std::error::Error) -> WorkspaceError {
    // The full chain (service code and message) goes to the log through Internal.
    let mut text = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        src = cause.source();
    }
    WorkspaceError::internal(text)
}
