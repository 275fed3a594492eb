//! Floor: http with s3 (see the crate docs).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let conf = lambda_floors::config().await;
    let s3 = aws_sdk_s3::Client::new(&conf);
    lambda_floors::serve_http((s3,)).await
}
