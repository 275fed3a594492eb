//! The 'list' function: the file listing, live or through a snapshot. DynamoDB only.

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws.listing_files()?;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(serve::LIST);
    workspace_lambda::run(app).await
}
