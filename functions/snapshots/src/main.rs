//! The 'snapshots' function: every row of the route table whose function is "snapshots"
//! (create, read and delete run snapshots; DynamoDB only).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::run("snapshots").await
}
