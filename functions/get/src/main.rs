//! The 'get' function: every row of the route table whose function is "get".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("get").await
}
