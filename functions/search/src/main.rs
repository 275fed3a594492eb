//! The 'search' function: ranked keyword, exact and regex search over a workspace. Each
//! instance keeps its workspaces' indexes in /tmp and catches them up from the change log
//! before every answer (`workspace_core::search`).

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let files = aws
        .reading_files()?
        .with_search(aws.search()?)
        .with_semantic(workspace_wiring::semantic::on_lambda(&aws.settings));
    let app = workspace_lambda::app(&aws.settings)
        .with_files(files)
        .serve(serve::SEARCH);
    workspace_lambda::run(app).await
}
