//! The 'list' function: the file listing, live or through a snapshot. DynamoDB only.

use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let files = aws.metadata_files()?;
    let app = workspace_lambda::app(s)
        .with_files(files)
        .serve(serve::LIST);
    workspace_lambda::run(app).await
}
