//! The 'delete' function: a delete writes a tombstone. DynamoDB only (pruned bodies go
//! with the stream publisher).

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws.metadata_files()?;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(serve::DELETE);
    workspace_lambda::run(app).await
}
