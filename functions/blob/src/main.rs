//! The 'blob' function: every row of the route table whose function is "blob".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("blob").await
}
