//! The 'snapshots' function: run snapshots, checkpoints and run records (pins on heads,
//! snapshot records), the S3 copies a kept checkpoint holds, and forks (whose base is a
//! snapshot; a discarded fork is erased like a deleted workspace).

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let files = aws
        .files()?
        .with_scope_eraser(workspace_wiring::services::scope_eraser(
            aws.sessions()?,
            aws.erasers()?,
        ));
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_files(files)
        .serve(serve::SNAPSHOTS);
    workspace_lambda::run(app).await
}
