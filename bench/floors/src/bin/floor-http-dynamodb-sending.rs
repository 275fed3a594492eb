//! Floor that sends: http with dynamodb, one GetItem per request (see the crate docs).

use aws_sdk_dynamodb::types::AttributeValue;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let conf = lambda_floors::config().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&conf);
    lambda_floors::serve_http_sending(move || {
        let dynamodb = dynamodb.clone();
        async move {
            let key = AttributeValue::S(lambda_floors::NAME.to_owned());
            let _ = dynamodb
                .get_item()
                .table_name(lambda_floors::NAME)
                .key("pk", key)
                .send()
                .await;
        }
    })
    .await
}
