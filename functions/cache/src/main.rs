//! The 'cache' function: the RFC 0019 TTL cache. DynamoDB only.

use workspace_http::serve;
use workspace_wiring::aws::Aws;
use workspace_wiring::{services, Settings};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let aws = Aws::connect(Settings::from_env()?).await;
    let s = &aws.settings;
    let table = aws.cache().ok_or("WORKSPACE_CACHE_TABLE must be set")?;
    let cache = services::cache(s, table, aws.secrets()?);
    let app = workspace_lambda::app(s)
        .with_cache(cache)
        .serve(serve::CACHE);
    workspace_lambda::run(app).await
}
