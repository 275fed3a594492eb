//! The 'snapshots' function: create, read and delete run snapshots (pins on heads,
//! snapshot records). DynamoDB only.

use std::sync::Arc;
use workspace_core::ports::NoBodies;
use workspace_core::secrets::NoSecrets;
use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::{services, Settings};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    // DynamoDB only: no body store, and no secrets (nothing is written here).
    let files = services::files(s, aws.meta()?, Arc::new(NoBodies), Arc::new(NoSecrets));
    let app = workspace_lambda::app(s)
        .with_files(files)
        .serve(serve::SNAPSHOTS);
    workspace_lambda::run(app).await
}
