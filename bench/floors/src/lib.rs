//! Floors for the function size and init benchmark (`bench/lambda_size.py`). Each binary
//! builds the AWS clients one of our functions uses, exactly as that function does (one
//! loaded config, clients built once in `main`), and answers every event with 200 and
//! nothing else: what a function cannot be smaller or start faster than.

use aws_config::{BehaviorVersion, SdkConfig};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use lambda_http::{service_fn, Body, Error, Request, Response};
use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};

/// The AWS configuration from the standard environment, with the HTTPS client the functions
/// use (`workspace_store_aws::https_client`: rustls with ring, not the SDK's default aws-lc).
pub async fn config() -> SdkConfig {
    let https = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(https)
        .load()
        .await
}

/// Serves HTTP API events with 200, keeping `clients` alive for the process.
pub async fn serve_http<C: Send + Sync + 'static>(clients: C) -> Result<(), Error> {
    let clients = &clients;
    lambda_http::run(service_fn(move |_: Request| async move {
        let _ = clients;
        Response::builder()
            .status(200)
            .body(Body::Empty)
            .map_err(Error::from)
    }))
    .await
}

/// Answers every plain Lambda event with `{}`, keeping `clients` alive for the process.
pub async fn serve_events<C: Send + Sync + 'static>(clients: C) -> Result<(), Error> {
    let clients = &clients;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |_: LambdaEvent<Value>| async move {
            let _ = clients;
            Ok::<_, Error>(json!({}))
        },
    ))
    .await
}

/// The table and bucket a sending floor reads from (whether they exist does not matter: the
/// answer is 200 either way, the request path is linked all the same).
pub const NAME: &str = "floor";

/// One GetItem on the floor's table, its answer dropped: a sending floor's DynamoDB request.
pub async fn get_item(dynamodb: &aws_sdk_dynamodb::Client) {
    let key = aws_sdk_dynamodb::types::AttributeValue::S(NAME.to_owned());
    let _ = dynamodb
        .get_item()
        .table_name(NAME)
        .key("pk", key)
        .send()
        .await;
}

/// Serves HTTP API events with 200 after `call` (one SDK request per client), for the
/// floors that send: a function that calls a client links the SDK's request path (the
/// runtime's orchestrator, the HTTPS client, signing, one operation's serializers), which
/// a floor that only builds the client never does.
pub async fn serve_http_sending<F, Fut>(call: F) -> Result<(), Error>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let call = &call;
    lambda_http::run(service_fn(move |_: Request| async move {
        call().await;
        Response::builder()
            .status(200)
            .body(Body::Empty)
            .map_err(Error::from)
    }))
    .await
}
