//! The 'put' function: every row of the route table whose function is "put".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("put").await
}
