//! Floor: http with dynamodb (see the crate docs).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let conf = lambda_floors::config().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&conf);
    lambda_floors::serve_http((dynamodb,)).await
}
