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
