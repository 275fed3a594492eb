//! The 'cache' function: the RFC 0019 TTL cache. DynamoDB only (the cache table, and one read of the
//! workspace registry for tenant-wide credentials).

use workspace_http::serve;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let aws = workspace_lambda::start().await?;
    let s = &aws.settings;
    let app = workspace_lambda::app(s)
        .with_registry(aws.registry()?)
        .with_cache(aws.cache_service()?)
        .serve(serve::CACHE);
    workspace_lambda::run(app).await
}
