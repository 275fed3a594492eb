//! The 'sweep' function: removes S3 bodies that never committed (older than
//! `WORKSPACE_ORPHAN_GRACE_SECONDS`) and abandoned upload staging. See
//! `workspace_store_aws::sweeper`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use workspace_core::ports::{Clock, SystemClock};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let aws = workspace_lambda::start().await?;
    let sweeper = aws.sweeper()?;
    let grace_ms =
        i64::try_from(aws.settings.orphan_grace_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    let sweeper = &sweeper;
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async move {
        // The answer says how many versions were looked at and deleted.
        let report = sweeper.sweep(SystemClock.now_ms(), grace_ms).await?;
        workspace_lambda::metrics::events_processed("sweep", report.examined);
        Ok::<_, Error>(json!({ "examined": report.examined, "deleted": report.deleted }))
    }))
    .await
}
