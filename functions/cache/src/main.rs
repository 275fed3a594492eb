//! The 'cache' function: every row of the route table whose function is "cache".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("cache").await
}
