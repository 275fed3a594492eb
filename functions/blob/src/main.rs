//! The 'blob' function: RFC 0019 blob storage (list, get, put, delete). S3, and the workspace registry (one DynamoDB read) for
//! tenant-wide credentials.

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_blobs(aws.blob_service()?)
        .serve(serve::BLOB);
    workspace_lambda::run(app).await
}
