//! The AWS emulator for tests: `tests/run.sh` starts one moto server on a free loopback
//! port and exports its URL as `WORKSPACE_TEST_MOTO_URL` (and stops it afterwards). Each
//! test makes its own bucket and table, so tests share the server without sharing state.

#![allow(dead_code)]

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    StreamSpecification, StreamViewType,
};
use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
use aws_smithy_runtime_api::client::interceptors::SharedInterceptor;
use workspace_store_aws::AwsClients;

pub fn moto_url() -> String {
    std::env::var("WORKSPACE_TEST_MOTO_URL").unwrap_or_else(|_| {
        panic!(
            "WORKSPACE_TEST_MOTO_URL is not set: run the tests with `bash tests/run.sh`, which \
             installs and starts the moto emulator"
        )
    })
}

pub fn sdk_config() -> SdkConfig {
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(moto_url())
        .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
            aws_sdk_s3::config::Credentials::new("testing", "testing", None, None, "moto"),
        ))
        .build()
}

/// A unique lowercase name for this test's bucket and table.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", hex(rand::random::<[u8; 6]>()))
}

fn hex(b: [u8; 6]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub struct Env {
    pub clients: AwsClients,
    pub bucket: String,
    pub table: String,
    pub stream_arn: Option<String>,
}

/// A versioned bucket and a streamed table of the template's shape, fresh for one test.
pub async fn fresh(interceptor: Option<SharedInterceptor>) -> Env {
    let conf = sdk_config();
    let clients = AwsClients::from_sdk_config(&conf, interceptor);
    let setup = AwsClients::from_sdk_config(&conf, None);
    let bucket = unique("ws-bodies");
    let table = unique("ws-meta");
    setup
        .s3
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("create bucket");
    setup
        .s3
        .put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .expect("enable versioning");
    let key = |name: &str, kt: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kt)
            .build()
            .unwrap()
    };
    let attr = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .unwrap()
    };
    let out = setup
        .dynamodb
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .attribute_definitions(attr("pk"))
        .attribute_definitions(attr("sk"))
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("create table");
    let stream_arn = out.table_description.and_then(|d| d.latest_stream_arn);
    Env {
        clients,
        bucket,
        table,
        stream_arn,
    }
}
