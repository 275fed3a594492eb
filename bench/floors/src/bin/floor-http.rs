//! Floor: http with no AWS client (fn-console's; see the crate docs).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_floors::serve_http(()).await
}
