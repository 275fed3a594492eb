//! The 'snapshots' function: create, read and delete run snapshots (pins on heads,
//! snapshot records). DynamoDB only.

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws.metadata_files()?;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(serve::SNAPSHOTS);
    workspace_lambda::run(app).await
}
