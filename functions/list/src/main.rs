//! The 'list' function: every row of the route table whose function is "list".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("list").await
}
