//! The 'authorizer' function: API keys (hashed in DynamoDB) as the HTTP API's Lambda
//! authorizer. See `workspace_lambda::authorizer`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use workspace_lambda::authorizer::authorize;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let aws = workspace_lambda::start().await?;
    let store = aws.key_table()?;
    let names = &aws.settings.claims;
    let store = &store;
    lambda_runtime::run(service_fn(|ev: LambdaEvent<Value>| async move {
        Ok::<_, Error>(authorize(store, names, &ev.payload).await)
    }))
    .await
}
