//! Floor that sends: http with dynamodb, one GetItem per request (see the crate docs).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let conf = lambda_floors::config().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&conf);
    lambda_floors::serve_http_sending(move || {
        let dynamodb = dynamodb.clone();
        async move { lambda_floors::get_item(&dynamodb).await }
    })
    .await
}
