//! The 'put' function: inline writes, restores, and two-step uploads (a presigned S3 PUT,
//! then the commit). S3 + DynamoDB.

use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let files = aws.files()?;
    let app = workspace_lambda::app(s).with_files(files).serve(serve::PUT);
    workspace_lambda::run(app).await
}
