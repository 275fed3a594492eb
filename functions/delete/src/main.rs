//! The 'delete' function: a delete writes a tombstone. DynamoDB only (pruned bodies go
//! with the stream publisher).

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
        .serve(serve::DELETE);
    workspace_lambda::run(app).await
}
