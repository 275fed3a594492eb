//! AWS adapters for the workspace ports: bodies in a versioned S3 bucket ([`s3`]), metadata
//! and every commit decision in DynamoDB ([`dynamo`]), `workspace.updated` on EventBridge
//! ([`events`]). Clients are built once ([`AwsClients::from_env`]) and shared.

pub mod blobs;
pub mod cache;
pub mod calls;
pub mod dynamo;
mod dynamo_pins;
pub mod events;
pub mod items;
pub mod keys;
pub mod keys_table;
pub mod publisher;
pub mod s3;
pub mod secrets_table;
pub mod sessions;
pub mod sweeper;
#[cfg(feature = "testing")]
pub mod testing;

pub use blobs::S3Blobs;
pub use cache::DynamoCache;
pub use dynamo::DynamoMeta;
pub use s3::S3Bodies;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_runtime_api::client::interceptors::SharedInterceptor;

/// The three SDK clients, configured once per process.
#[derive(Clone)]
pub struct AwsClients {
    pub s3: aws_sdk_s3::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub eventbridge: aws_sdk_eventbridge::Client,
}

impl AwsClients {
    /// Credentials, region and endpoint from the standard AWS environment
    /// (`AWS_ENDPOINT_URL` points every client at an emulator).
    pub async fn from_env() -> Self {
        let conf = aws_config::defaults(BehaviorVersion::latest()).load().await;
        Self::from_sdk_config(&conf, None)
    }

    /// Clients from one SDK config, optionally with an interceptor on each (tests count
    /// calls with one). With a custom endpoint (an emulator) S3 uses path-style addressing.
    pub fn from_sdk_config(conf: &SdkConfig, interceptor: Option<SharedInterceptor>) -> Self {
        let path_style = conf.endpoint_url().is_some();
        let mut s3 = aws_sdk_s3::config::Builder::from(conf).force_path_style(path_style);
        let mut ddb = aws_sdk_dynamodb::config::Builder::from(conf);
        let mut eb = aws_sdk_eventbridge::config::Builder::from(conf);
        if let Some(i) = interceptor {
            s3 = s3.interceptor(i.clone());
            ddb = ddb.interceptor(i.clone());
            eb = eb.interceptor(i);
        }
        Self {
            s3: aws_sdk_s3::Client::from_conf(s3.build()),
            dynamodb: aws_sdk_dynamodb::Client::from_conf(ddb.build()),
            eventbridge: aws_sdk_eventbridge::Client::from_conf(eb.build()),
        }
    }
}
