//! The 'get' function: health, discovery, a file (inline or a presigned download), its
//! history and diffs. S3 + DynamoDB.

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws.reading_files()?;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .advertising(s.limits, s.advertised_on_aws())
        .serve(serve::GET);
    workspace_lambda::run(app).await
}
