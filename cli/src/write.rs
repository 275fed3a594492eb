//! Writing one file: in the PUT body when it fits `maxFileBytes`, else through the two-step
//! upload; either way with the caller's precondition.

use crate::client::Client;
use crate::discovery::Limits;
use crate::error::{Error, Result};
use crate::route;
use crate::source::{Data, Source};
use crate::upload;
use base64::Engine;
use reqwest::{Method, RequestBuilder};
use serde_json::{json, Value};

/// What the write requires of the file's current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    None,
    /// `If-Match`: the file is at one of these etags.
    IfMatch(String),
    /// `If-None-Match: *`: the file does not exist.
    IfAbsent,
}

impl Precondition {
    pub fn apply(&self, rb: RequestBuilder) -> RequestBuilder {
        match self {
            Precondition::None => rb,
            Precondition::IfMatch(etag) => rb.header("If-Match", etag),
            Precondition::IfAbsent => rb.header("If-None-Match", "*"),
        }
    }
}

/// An etag as typed: shells eat the quotes of `"2-ab12"`, so a bare one gets them back.
pub fn quote_etag(etag: &str) -> String {
    let etag = etag.trim();
    if etag == "*" || etag.starts_with('"') || etag.starts_with("W/") || etag.contains(',') {
        etag.to_owned()
    } else {
        format!("\"{etag}\"")
    }
}

pub struct Written {
    /// The server's answer (for an upload, the metadata only).
    pub answer: Value,
    pub via_upload: bool,
}

// Each argument is one independent choice of the caller's; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub async fn write(
    client: &Client,
    path: &str,
    source: &Source,
    content_type: Option<&str>,
    precondition: &Precondition,
    limits: Limits,
    progress: bool,
    idempotency_key: Option<&str>,
) -> Result<Written> {
    if source.size > limits.max_upload_bytes {
        return Err(Error::bad_input(
            format!("cannot write {path}"),
            format!(
                "it is {} bytes; this deployment takes at most {} (maxUploadBytes)",
                source.size, limits.max_upload_bytes
            ),
        ));
    }
    let bytes = match &source.data {
        Data::Memory(b) if source.size <= limits.max_file_bytes => b,
        _ => {
            let answer = upload::upload(
                client,
                path,
                source,
                content_type,
                precondition,
                progress,
                idempotency_key,
            )
            .await?;
            return Ok(Written {
                answer,
                via_upload: true,
            });
        }
    };
    let mut body = match std::str::from_utf8(bytes) {
        Ok(text) => json!({"content": text}),
        Err(_) => {
            json!({"contentBase64": base64::engine::general_purpose::STANDARD.encode(bytes)})
        }
    };
    if let Some(ct) = content_type {
        body["contentType"] = json!(ct);
    }
    let mut rb = precondition.apply(client.api(Method::PUT, &route::file(path)));
    if let Some(key) = idempotency_key {
        rb = rb.header("Idempotency-Key", key);
    }
    let answer = client
        .json(rb.json(&body), &format!("cannot write {path}"))
        .await?;
    Ok(Written {
        answer,
        via_upload: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_etags_get_their_quotes_back() {
        assert_eq!(quote_etag("2-ab"), "\"2-ab\"");
        assert_eq!(quote_etag("\"2-ab\""), "\"2-ab\"");
        assert_eq!(quote_etag("*"), "*");
        assert_eq!(quote_etag("W/\"x\""), "W/\"x\"");
    }
}
