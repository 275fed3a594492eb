//! The 'console' function: the web console's page and assets (`workspace-console`), public
//! routes with nothing behind them. No AWS client, no setting read: the assets are compiled
//! in, and the console calls the API's other routes from the browser.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    workspace_lambda::init_tracing();
    let app = workspace_lambda::public_app().serve(workspace_console::ROUTES);
    workspace_lambda::run(app).await
}
