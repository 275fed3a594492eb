//! Test support (feature `testing`), shared by every crate whose tests run on the AWS
//! emulator. `tests/run.sh` starts one moto server on a free loopback
//! port and exports its URL as `WORKSPACE_TEST_MOTO_URL` (and stops it afterwards). Each
//! test makes its own bucket and table, so tests share the server without sharing state.

use crate::provision::{self, Stream};
use crate::AwsClients;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_runtime_api::client::interceptors::SharedInterceptor;
use std::sync::Arc;

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
        .http_client(crate::https_client())
        .endpoint_url(moto_url())
        .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
            aws_sdk_s3::config::Credentials::new("testing", "testing", None, None, "moto"),
        ))
        .build()
}

/// A unique lowercase name for this test's bucket and table.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}-{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub struct Env {
    pub clients: AwsClients,
    pub bucket: String,
    pub table: String,
    pub stream_arn: Option<String>,
}

impl Env {
    /// The workspace service over this table and bucket (DynamoDB metadata, S3 bodies,
    /// events from the table's stream) under `limits`.
    pub fn service(&self, limits: workspace_core::Limits) -> workspace_core::WorkspaceService {
        use workspace_core::ports::{FromCommittedState, RandomIds, SystemClock};
        workspace_core::WorkspaceService::new(
            Arc::new(crate::DynamoMeta::new(
                self.clients.dynamodb.clone(),
                &self.table,
            )),
            Arc::new(crate::S3Bodies::new(self.clients.s3.clone(), &self.bucket)),
            Arc::new(FromCommittedState),
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            limits,
        )
    }

    /// [`Env::service`] with the tenants' registered secrets in the table, as every Lambda
    /// that writes wires it.
    pub fn service_with_secrets(
        &self,
        limits: workspace_core::Limits,
    ) -> workspace_core::WorkspaceService {
        self.service(limits)
            .with_secrets(Arc::new(crate::secrets_table::DynamoSecrets::new(
                self.clients.dynamodb.clone(),
                &self.table,
            )))
    }
}

/// The table and bucket a CloudFormation stack created (tests/deploy/stack.py deploys
/// template.yaml into the emulator). moto's CloudFormation ignores a bucket's
/// `VersioningConfiguration`, so the bucket gets what the template declares here
/// (`provision::bucket` is idempotent; tests/deploy/check.py holds the template to it).
pub async fn of_stack(table: &str, bucket: &str) -> Env {
    let conf = sdk_config();
    let clients = AwsClients::from_sdk_config(&conf, None);
    provision::bucket(&clients.s3, bucket)
        .await
        .expect("the stack's bucket, versioned");
    let (_, stream_arn) = provision::table(&clients.dynamodb, table, Stream::NewAndOldImages)
        .await
        .expect("the stack's table");
    Env {
        clients,
        bucket: bucket.to_owned(),
        table: table.to_owned(),
        stream_arn,
    }
}

/// A versioned bucket and a streamed table of the template's shape, fresh for one test.
pub async fn fresh(interceptor: Option<SharedInterceptor>) -> Env {
    let conf = sdk_config();
    let clients = AwsClients::from_sdk_config(&conf, interceptor);
    let setup = AwsClients::from_sdk_config(&conf, None);
    let bucket = unique("ws-bodies");
    let table = unique("ws-meta");
    provision::bucket(&setup.s3, &bucket)
        .await
        .expect("create bucket");
    let (_, stream_arn) = provision::table(&setup.dynamodb, &table, Stream::NewAndOldImages)
        .await
        .expect("create table");
    Env {
        clients,
        bucket,
        table,
        stream_arn,
    }
}

use crate::events::{Attr, Image, StreamRecord};

fn image(
    m: &std::collections::HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>,
) -> Image {
    use aws_sdk_dynamodbstreams::types::AttributeValue as A;
    m.iter()
        .filter_map(|(k, v)| {
            let a = match v {
                A::S(s) => Attr::S(s.clone()),
                A::N(n) => Attr::N(n.clone()),
                A::Bool(b) => Attr::Bool(*b),
                _ => return None,
            };
            Some((k.clone(), a))
        })
        .collect()
}

/// Every record the table's stream holds so far, oldest first, as the publisher sees them.
pub async fn stream_records(arn: &str) -> Vec<StreamRecord> {
    raw_stream_records(arn)
        .await
        .into_iter()
        .filter_map(|r| {
            let d = r.dynamodb?;
            Some(StreamRecord {
                event_name: r
                    .event_name
                    .map(|e| e.as_str().to_owned())
                    .unwrap_or_default(),
                sequence_number: d.sequence_number.clone().unwrap_or_default(),
                new_image: d.new_image.as_ref().map(image),
                old_image: d.old_image.as_ref().map(image),
            })
        })
        .collect()
}

/// Every record the table's stream holds so far, oldest first, as DynamoDB Streams gives
/// them (every attribute of both images).
pub async fn raw_stream_records(arn: &str) -> Vec<aws_sdk_dynamodbstreams::types::Record> {
    use aws_sdk_dynamodbstreams::types::ShardIteratorType;
    let client = aws_sdk_dynamodbstreams::Client::new(&sdk_config());
    let desc = client
        .describe_stream()
        .stream_arn(arn)
        .send()
        .await
        .expect("describe stream");
    let mut out = Vec::new();
    let shards = desc
        .stream_description
        .map(|d| d.shards.unwrap_or_default())
        .unwrap_or_default();
    for shard in shards {
        let Some(id) = shard.shard_id else { continue };
        let mut it = client
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(id)
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("shard iterator")
            .shard_iterator;
        while let Some(i) = it {
            let page = client
                .get_records()
                .shard_iterator(i)
                .send()
                .await
                .expect("get records");
            let records = page.records.unwrap_or_default();
            if records.is_empty() {
                break;
            }
            out.extend(records);
            it = page.next_shard_iterator;
        }
    }
    out
}

/// An event bus whose `workspace.updated` events land in a fresh SQS queue.
pub struct Observed {
    pub bus: String,
    pub queue_url: String,
    pub sqs: aws_sdk_sqs::Client,
}

pub async fn observed_bus() -> Observed {
    let bus = unique("ws-bus");
    aws_sdk_eventbridge::Client::new(&sdk_config())
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .expect("create bus");
    observe(&bus).await
}

/// A queue that receives every `workspace.updated` on `bus`, an existing bus (a stack's).
pub async fn observe(bus: &str) -> Observed {
    let conf = sdk_config();
    let eb = aws_sdk_eventbridge::Client::new(&conf);
    let sqs = aws_sdk_sqs::Client::new(&conf);
    let bus = bus.to_owned();
    let queue_url = sqs
        .create_queue()
        .queue_name(unique("ws-events"))
        .send()
        .await
        .expect("create queue")
        .queue_url
        .expect("queue url");
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("queue attributes")
        .attributes
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
                .cloned()
        })
        .expect("queue arn");
    let rule = unique("ws-rule");
    eb.put_rule()
        .name(&rule)
        .event_bus_name(&bus)
        .event_pattern(r#"{"source": ["agent-workspace"], "detail-type": ["workspace.updated"]}"#)
        .send()
        .await
        .expect("put rule");
    eb.put_targets()
        .rule(&rule)
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("put targets");
    Observed {
        bus,
        queue_url,
        sqs,
    }
}

impl Observed {
    /// One receive: the EventBridge envelopes (JSON) that were waiting, deleted from the queue.
    async fn receive(&self) -> Vec<serde_json::Value> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        let mut got = Vec::new();
        for m in out.messages.unwrap_or_default() {
            got.push(serde_json::from_str(m.body().unwrap_or("null")).expect("message is JSON"));
            if let Some(h) = m.receipt_handle() {
                let _ = self
                    .sqs
                    .delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(h)
                    .send()
                    .await;
            }
        }
        got
    }

    /// Reads messages until `want` arrived or a few quiet seconds passed, then looks once
    /// more so an extra (wrong) event would be seen.
    pub async fn drain(&self, want: usize) -> Vec<serde_json::Value> {
        let pause = |ms| tokio::time::sleep(std::time::Duration::from_millis(ms));
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
        while got.len() < want && std::time::Instant::now() < deadline {
            got.extend(self.receive().await);
            // No long polling: the emulator serves one request at a time.
            pause(200).await;
        }
        pause(300).await;
        got.extend(self.receive().await);
        got
    }
}

/// RFC 0019 resources of the template's shape, fresh for one test: a versioned blob bucket
/// and a cache table (`pk`, `sk`; TTL on `expiresAt`, which the emulator does not run).
pub struct CapabilityEnv {
    pub blob_bucket: String,
    pub cache_table: String,
}

/// The blob bucket and cache table a CloudFormation stack created, the bucket given the
/// versioning the template declares (see [`of_stack`]).
pub async fn capabilities_of_stack(blob_bucket: &str, cache_table: &str) -> CapabilityEnv {
    let setup = AwsClients::from_sdk_config(&sdk_config(), None);
    provision::bucket(&setup.s3, blob_bucket)
        .await
        .expect("the stack's blob bucket, versioned");
    CapabilityEnv {
        blob_bucket: blob_bucket.to_owned(),
        cache_table: cache_table.to_owned(),
    }
}

pub async fn fresh_capabilities() -> CapabilityEnv {
    let setup = AwsClients::from_sdk_config(&sdk_config(), None);
    let blob_bucket = unique("ws-blobs");
    let cache_table = unique("ws-cache");
    provision::bucket(&setup.s3, &blob_bucket)
        .await
        .expect("create blob bucket");
    provision::table(&setup.dynamodb, &cache_table, Stream::None)
        .await
        .expect("create cache table");
    CapabilityEnv {
        blob_bucket,
        cache_table,
    }
}
