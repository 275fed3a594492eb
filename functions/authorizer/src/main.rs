//! The 'authorizer' function: API keys (hashed in DynamoDB) as the HTTP API's Lambda
//! authorizer. See `workspace_lambda::authorizer`.

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use workspace_lambda::authorizer::authorize;
use workspace_wiring::aws::Aws;
use workspace_wiring::Settings;

#[tokio::main]
async fn main() -> Result<(), Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let store = aws.key_table()?;
    let names = &aws.settings.claims;
    let store = &store;
    lambda_runtime::run(service_fn(|ev: LambdaEvent<Value>| async move {
        Ok::<_, Error>(authorize(store, names, &ev.payload).await)
    }))
    .await
}
