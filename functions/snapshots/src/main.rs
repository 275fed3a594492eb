//! The 'snapshots' function: run snapshots, checkpoints and run records (pins on heads,
//! snapshot records), and the S3 copies a kept checkpoint holds.

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws.files()?;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(serve::SNAPSHOTS);
    workspace_lambda::run(app).await
}
