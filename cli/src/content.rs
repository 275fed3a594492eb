//! Reading a file's exact bytes: the answer carries them as `content` (UTF-8 text) or
//! `contentBase64`, or, for a file over `maxFileBytes`, a `download` URL to fetch them from.

use crate::client::{network_error, Client};
use crate::error::{Error, Kind, Result};
use base64::Engine;
use reqwest::Method;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The file's metadata (the server's answer) and what its bytes hash to.
pub struct Read {
    pub answer: Value,
    pub sha256: String,
}

/// The bytes inside the answer, if they are there (not for a `download`).
pub fn inline_bytes(answer: &Value, what: &str) -> Result<Option<Vec<u8>>> {
    if let Some(text) = answer["content"].as_str() {
        return Ok(Some(text.as_bytes().to_vec()));
    }
    if let Some(b64) = answer["contentBase64"].as_str() {
        return base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map(Some)
            .map_err(|e| Error::new(Kind::Server, what, format!("bad contentBase64: {e}")));
    }
    Ok(None)
}

/// GETs `route` (a file route with its query) and hands its exact bytes to `sink`, a piece
/// at a time, hashing them on the way.
pub async fn read(
    client: &Client,
    route: &str,
    what: &str,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<Read> {
    let answer = client.json(client.api(Method::GET, route), what).await?;
    let mut hasher = Sha256::new();
    if let Some(bytes) = inline_bytes(&answer, what)? {
        hasher.update(&bytes);
        sink(&bytes);
    } else if let Some(url) = answer["download"]["url"].as_str() {
        download(client, &answer["download"], url, what, &mut |chunk| {
            hasher.update(chunk);
            sink(chunk);
        })
        .await?;
    } else {
        return Err(Error::new(
            Kind::Server,
            what,
            "the answer has neither content, contentBase64 nor download",
        ));
    }
    Ok(Read {
        answer,
        sha256: hex::encode(hasher.finalize()),
    })
}

/// Streams a signed download URL (with the headers it lists, without the credential).
async fn download(
    client: &Client,
    grant: &Value,
    url: &str,
    what: &str,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    let method = grant["method"]
        .as_str()
        .and_then(|m| Method::from_bytes(m.as_bytes()).ok())
        .unwrap_or(Method::GET);
    let mut rb = client.public(method, url);
    if let Some(headers) = grant["headers"].as_object() {
        for (name, value) in headers {
            if let Some(value) = value.as_str() {
                rb = rb.header(name, value);
            }
        }
    }
    let where_ = client.settings().url.clone();
    let mut resp = rb
        .send()
        .await
        .map_err(|e| network_error(e, what, &where_))?;
    if !resp.status().is_success() {
        let status = resp.status().as_u16();
        return Err(Error::new(
            Kind::from_status(status),
            what,
            format!("the download URL answered {status}"),
        ));
    }
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| network_error(e, what, &where_))?
    {
        sink(&chunk);
    }
    Ok(())
}
