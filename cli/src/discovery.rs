//! The deployment's limits, from its discovery document (`GET /.well-known/openwop`, no key).

use crate::client::Client;
use crate::error::Result;
use crate::route;
use reqwest::Method;
use serde_json::Value;

/// The documented defaults, for a deployment whose document leaves a limit out.
const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;
const DEFAULT_MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;
const DEFAULT_MAX_COMMIT_OPERATIONS: u64 = 20;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest body one PUT carries; larger files go through a two-step upload.
    pub max_file_bytes: u64,
    /// Largest two-step upload.
    pub max_upload_bytes: u64,
    /// Most operations one commit (`POST .../commits`) applies.
    pub max_commit_operations: u64,
}

pub async fn limits(client: &Client) -> Result<Limits> {
    let url = format!("{}{}", client.settings().url, route::DISCOVERY);
    let doc = client
        .json(
            client.public(Method::GET, &url),
            "cannot read the deployment's limits (GET /.well-known/openwop)",
        )
        .await?;
    Ok(from_document(&doc))
}

/// The `workspace` family sits at the root of the document and under `capabilities`.
fn from_document(doc: &Value) -> Limits {
    let field = |name: &str| {
        doc["workspace"][name]
            .as_u64()
            .or_else(|| doc["capabilities"]["workspace"][name].as_u64())
    };
    Limits {
        max_file_bytes: field("maxFileBytes").unwrap_or(DEFAULT_MAX_FILE_BYTES),
        max_upload_bytes: field("maxUploadBytes").unwrap_or(DEFAULT_MAX_UPLOAD_BYTES),
        max_commit_operations: field("maxCommitOperations")
            .unwrap_or(DEFAULT_MAX_COMMIT_OPERATIONS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_come_from_either_place_or_the_defaults() {
        let root = from_document(&json!({"workspace": {"maxFileBytes": 4096}}));
        assert_eq!(
            (root.max_file_bytes, root.max_upload_bytes),
            (4096, DEFAULT_MAX_UPLOAD_BYTES)
        );
        let nested = from_document(
            &json!({"capabilities": {"workspace": {"maxFileBytes": 10, "maxUploadBytes": 20}}}),
        );
        assert_eq!((nested.max_file_bytes, nested.max_upload_bytes), (10, 20));
        assert_eq!(
            from_document(&json!({})).max_file_bytes,
            DEFAULT_MAX_FILE_BYTES
        );
    }
}
