//! The 'put' function: inline writes, restores, and two-step uploads (a presigned S3 PUT,
//! then the commit). S3 + DynamoDB.

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws.files()?;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(serve::PUT);
    workspace_lambda::run(app).await
}
