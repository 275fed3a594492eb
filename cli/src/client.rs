//! HTTP to the deployment: the credential on every API request (never on the signed URLs
//! the server hands out, which are grants of their own), and every failure turned into an
//! [`Error`] with the exit code and hint it deserves.

use crate::config::Settings;
use crate::error::{Error, Kind, Result};
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use std::time::Duration;

pub struct Client {
    http: reqwest::Client,
    settings: Settings,
}

impl Client {
    pub fn new(settings: Settings) -> Result<Client> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("ws/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            // Per read, not per request: a large upload or a quiet event stream (the server
            // sends a keep-alive comment every 15 s) may take as long as it needs.
            .read_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| Error::new(Kind::Server, "cannot start the HTTP client", e))?;
        Ok(Client { http, settings })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// An authenticated request to `route` (`/v1/...`, query included) of the deployment.
    pub fn api(&self, method: Method, route: &str) -> RequestBuilder {
        let rb = self
            .http
            .request(method, format!("{}{route}", self.settings.url))
            .bearer_auth(&self.settings.key);
        match &self.settings.workspace {
            Some(w) => rb.header("X-Workspace-Id", w),
            None => rb,
        }
    }

    /// A request without the credential: discovery, and the signed upload and download
    /// URLs (sending the key there would hand it to whatever host the URL names).
    pub fn public(&self, method: Method, url: &str) -> RequestBuilder {
        self.http.request(method, url)
    }

    /// Sends `rb`; a network failure or an answer outside 2xx becomes an error saying `what`.
    pub async fn send(&self, rb: RequestBuilder, what: &str) -> Result<Response> {
        let resp = rb.send().await.map_err(|e| self.network(e, what))?;
        if resp.status().is_success() {
            Ok(resp)
        } else {
            Err(answer_error(resp, what).await)
        }
    }

    /// Sends `rb` and parses the JSON answer (`null` for an empty body, as for a 204).
    pub async fn json(&self, rb: RequestBuilder, what: &str) -> Result<Value> {
        let resp = self.send(rb, what).await?;
        let bytes = resp.bytes().await.map_err(|e| self.network(e, what))?;
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::new(
                Kind::Server,
                what,
                format!("the server's answer is not JSON: {e}"),
            )
        })
    }

    pub fn network(&self, e: reqwest::Error, what: &str) -> Error {
        network_error(e, what, &self.settings.url)
    }
}

/// A transport failure: the chain of causes (without the URL, which may be a signed grant).
pub fn network_error(e: reqwest::Error, what: &str, url: &str) -> Error {
    let kind = if e.is_builder() {
        Kind::BadInput
    } else {
        Kind::Server
    };
    let timeout = e.is_timeout();
    let e = e.without_url();
    // reqwest's own text is generic ("error sending request"); the causes say what happened,
    // the innermost (say, "Connection refused") most plainly.
    let mut causes = Vec::new();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        causes.push(c.to_string());
        cause = c.source();
    }
    let detail = match causes.last() {
        Some(root) if e.is_connect() => format!("cannot connect to {url}: {root}"),
        Some(root) if timeout => format!("timed out: {root}"),
        Some(root) => format!("{e}: {root}"),
        None => e.to_string(),
    };
    let hint = if timeout {
        format!("{url} did not answer in time; check that it is up, then retry")
    } else {
        format!("check the URL ({url}; --url, WS_URL or `ws login`) and that the server is running")
    };
    Error::new(kind, what, detail).with_hint(hint)
}

/// An answer outside 2xx: the API's `{"error", "message"}` when it has one.
pub(crate) async fn answer_error(resp: Response, what: &str) -> Error {
    let status = resp.status();
    let code = status.as_u16();
    let text = resp.text().await.unwrap_or_default();
    let (error, message, details) = match serde_json::from_str::<Value>(&text) {
        Ok(v) => (
            v["error"].as_str().map(str::to_owned),
            v["message"].as_str().map(str::to_owned),
            v["details"].clone(),
        ),
        Err(_) => (None, None, Value::Null),
    };
    let message = message.unwrap_or_else(|| {
        let t = text.trim();
        if t.is_empty() {
            status.canonical_reason().unwrap_or("no message").to_owned()
        } else {
            t.chars().take(300).collect()
        }
    });
    let label = match error {
        Some(e) => format!("{code} {e}"),
        None => code.to_string(),
    };
    let kind = Kind::from_status(code);
    let mut err = Error::new(kind, what, format!("{message} ({label})"));
    err.status = Some(code);
    err.details = (!details.is_null()).then(|| Box::new(details));
    match default_hint(code) {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

fn default_hint(status: u16) -> Option<&'static str> {
    Some(match status {
        409 | 412 => "the file changed since you read it; run `ws cat` again, then retry",
        404 => "check the path with `ws ls` (and the version with `ws log`)",
        410 => "that version was erased from history; see `ws log`",
        401 => "run `ws login` with a valid key",
        403 => "this key may not do that here (read-only, limited to some paths, or bound to another workspace)",
        413 => "the body is over the deployment's limit",
        500..=599 => "the server failed; try again later",
        _ => return None,
    })
}
