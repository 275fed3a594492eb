//! The 'delete' function: every row of the route table whose function is "delete".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("delete").await
}
