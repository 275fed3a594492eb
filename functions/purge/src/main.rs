//! The 'purge' function: on a schedule, erases workspaces idle longer than
//! `WORKSPACE_PURGE_AFTER_DAYS` (files, versions, artifacts, sessions, cache, blobs).

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use workspace_core::sessions::token::TokenKey;
use workspace_lambda::purge::purge_handler;
use workspace_wiring::services;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let aws = workspace_lambda::start().await?;
    // Purging issues no paging tokens; any key will do.
    let svc = services::sessions(
        &aws.settings,
        aws.sessions()?,
        aws.bodies()?,
        aws.erasers()?,
        TokenKey::random(),
    );
    let svc = &svc;
    lambda_runtime::run(service_fn(|ev: LambdaEvent<Value>| async move {
        purge_handler(svc, &ev.payload).await
    }))
    .await
}
