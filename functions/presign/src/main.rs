//! The 'presign' function: presigned blob URLs (signed here, no call to S3). S3 only.

use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let app = workspace_lambda::app(s)
        .with_blobs(aws.blob_service()?)
        .serve(serve::PRESIGN);
    workspace_lambda::run(app).await
}
