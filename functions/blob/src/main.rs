//! The 'blob' function: RFC 0019 blob storage (list, get, put, delete). S3 only.

use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::{services, Settings};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let bucket = aws.blobs().ok_or("WORKSPACE_BLOB_S3_BUCKET must be set")?;
    let app = workspace_lambda::app(s)
        .with_blobs(services::blobs(s, bucket))
        .serve(serve::BLOB);
    workspace_lambda::run(app).await
}
