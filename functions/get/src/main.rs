//! The 'get' function: health, discovery, a file (inline or a presigned download), its
//! history and diffs. S3 + DynamoDB.

use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let files = aws.files()?;
    let app = workspace_lambda::app(s)
        .with_files(files)
        .advertising(s.limits, s.advertised_on_aws())
        .serve(serve::GET);
    workspace_lambda::run(app).await
}
