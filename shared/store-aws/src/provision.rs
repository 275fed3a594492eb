//! Creates, idempotently, the data plane template.yaml declares, on whatever endpoint the
//! clients point at (an emulator for a laptop, an account without the stack): versioned
//! buckets with public access blocked and default encryption, `pk`/`sk` tables with TTL on
//! `expiresAt` (the main table also with its stream), and the event bus. Each call says
//! whether it created the resource or found it. `workspace-local provision` and the test
//! set-ups use these; CloudFormation does the same from the template on a real stack.

use crate::aws_err;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    StreamSpecification, StreamViewType, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_s3::types::{
    BucketVersioningStatus, PublicAccessBlockConfiguration, ServerSideEncryption,
    ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    VersioningConfiguration,
};
use std::time::Duration;
use workspace_core::{Result, WorkspaceError};

/// The attribute DynamoDB TTL deletes by (every read also filters on it).
pub const TTL_ATTRIBUTE: &str = "expiresAt";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Found,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Created => "created",
            Outcome::Found => "found",
        })
    }
}

/// A bucket with versioning on (so a PUT returns the VersionId a commit records), public
/// access blocked and default encryption, as the template declares both of ours.
pub async fn bucket(s3: &aws_sdk_s3::Client, name: &str) -> Result<Outcome> {
    // Asked first: in us-east-1 creating a bucket one already owns succeeds again.
    let outcome = match s3.head_bucket().bucket(name).send().await {
        Ok(_) => Outcome::Found,
        Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => {
            create_bucket(s3, name).await?
        }
        Err(e) => return Err(aws_err(e)),
    };
    // The settings below are idempotent: a found bucket gets them too.
    s3.put_bucket_versioning()
        .bucket(name)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .map_err(aws_err)?;
    s3.put_public_access_block()
        .bucket(name)
        .public_access_block_configuration(
            PublicAccessBlockConfiguration::builder()
                .block_public_acls(true)
                .block_public_policy(true)
                .ignore_public_acls(true)
                .restrict_public_buckets(true)
                .build(),
        )
        .send()
        .await
        .map_err(aws_err)?;
    let sse = ServerSideEncryptionByDefault::builder()
        .sse_algorithm(ServerSideEncryption::Aes256)
        .build()
        .map_err(aws_err)?;
    s3.put_bucket_encryption()
        .bucket(name)
        .server_side_encryption_configuration(
            ServerSideEncryptionConfiguration::builder()
                .rules(
                    ServerSideEncryptionRule::builder()
                        .apply_server_side_encryption_by_default(sse)
                        .build(),
                )
                .build()
                .map_err(aws_err)?,
        )
        .send()
        .await
        .map_err(aws_err)?;
    Ok(outcome)
}

async fn create_bucket(s3: &aws_sdk_s3::Client, name: &str) -> Result<Outcome> {
    match s3.create_bucket().bucket(name).send().await {
        Ok(_) => Ok(Outcome::Created),
        Err(e) => match e.as_service_error() {
            Some(se) if se.is_bucket_already_owned_by_you() => Ok(Outcome::Found),
            Some(se) if se.is_bucket_already_exists() => Err(WorkspaceError::internal(format!(
                "bucket {name} exists and belongs to another account: choose another name"
            ))),
            _ => Err(aws_err(e)),
        },
    }
}

/// Whether a table carries the stream the publisher reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    NewAndOldImages,
    None,
}

/// A table keyed by `pk` (hash) and `sk` (range), on demand, with TTL on `expiresAt`; its
/// stream ARN when it has one. Waits until the table is active.
pub async fn table(
    ddb: &aws_sdk_dynamodb::Client,
    name: &str,
    stream: Stream,
) -> Result<(Outcome, Option<String>)> {
    let key = |attr: &str, kt: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(attr)
            .key_type(kt)
            .build()
            .map_err(aws_err)
    };
    let attr = |attr: &str| {
        AttributeDefinition::builder()
            .attribute_name(attr)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(aws_err)
    };
    let mut create = ddb
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash)?)
        .key_schema(key("sk", KeyType::Range)?)
        .attribute_definitions(attr("pk")?)
        .attribute_definitions(attr("sk")?);
    if stream == Stream::NewAndOldImages {
        create = create.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::NewAndOldImages)
                .build()
                .map_err(aws_err)?,
        );
    }
    let outcome = match create.send().await {
        Ok(_) => Outcome::Created,
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            Outcome::Found
        }
        Err(e) => return Err(aws_err(e)),
    };
    // A new table is CREATING for a while on AWS; TTL can only be set once it is active.
    let mut stream_arn = None;
    for attempt in 0.. {
        let table = ddb
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(aws_err)?
            .table;
        let status = table.as_ref().and_then(|t| t.table_status.clone());
        stream_arn = table.and_then(|t| t.latest_stream_arn);
        if status == Some(TableStatus::Active) {
            break;
        }
        if attempt >= 120 {
            return Err(WorkspaceError::internal(format!(
                "table {name} did not become active within a minute"
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let ttl = ddb
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(aws_err)?
        .time_to_live_description
        .and_then(|d| d.time_to_live_status);
    if !matches!(
        ttl,
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
    ) {
        ddb.update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(TTL_ATTRIBUTE)
                    .enabled(true)
                    .build()
                    .map_err(aws_err)?,
            )
            .send()
            .await
            .map_err(aws_err)?;
    }
    Ok((outcome, stream_arn))
}

/// The event bus `workspace.updated` goes to.
pub async fn event_bus(eb: &aws_sdk_eventbridge::Client, name: &str) -> Result<Outcome> {
    match eb.create_event_bus().name(name).send().await {
        Ok(_) => Ok(Outcome::Created),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_already_exists_exception()) =>
        {
            Ok(Outcome::Found)
        }
        Err(e) => Err(aws_err(e)),
    }
}
