//! Floor that sends: http with s3 dynamodb, one GetItem and one GetObject per request (see
//! the crate docs).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let conf = lambda_floors::config().await;
    let s3 = aws_sdk_s3::Client::new(&conf);
    let dynamodb = aws_sdk_dynamodb::Client::new(&conf);
    lambda_floors::serve_http_sending(move || {
        let (s3, dynamodb) = (s3.clone(), dynamodb.clone());
        async move {
            lambda_floors::get_item(&dynamodb).await;
            let _ = s3
                .get_object()
                .bucket(lambda_floors::NAME)
                .key(lambda_floors::NAME)
                .send()
                .await;
        }
    })
    .await
}
