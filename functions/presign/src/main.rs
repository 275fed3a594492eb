//! The 'presign' function: every row of the route table whose function is "presign".

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("presign").await
}
