//! The 'authorizer' function: API keys (hashed in DynamoDB) as the HTTP API's Lambda
//! authorizer. See `workspace_lambda::authorizer`.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    workspace_lambda::jobs::run_authorizer().await
}
