//! Floor: events with s3 eventbridge (see the crate docs).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let conf = lambda_floors::config().await;
    let s3 = aws_sdk_s3::Client::new(&conf);
    let eventbridge = aws_sdk_eventbridge::Client::new(&conf);
    lambda_floors::serve_events((s3, eventbridge)).await
}
