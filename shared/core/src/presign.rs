//! What a presigned URL allows and what a store answers for one: shared by file bodies
//! (`ports::Bodies::presign_get`) and blobs (`blob`), so neither depends on the other.

use crate::model::Millis;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresignMethod {
    Get,
    Put,
}

impl PresignMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Put => "PUT",
        }
    }
}

/// What a presigned URL must allow, decided by the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresignSpec {
    pub method: PresignMethod,
    pub expires_in_seconds: u64,
    /// GET: the exact version the URL reads.
    pub version_id: Option<String>,
    /// PUT: the exact body size the URL accepts, when the client named one.
    pub content_length: Option<u64>,
    /// PUT: the content type the upload must declare, when the client named one.
    pub content_type: Option<String>,
    /// When the URL starts to be valid (the service clock).
    pub now: Millis,
}

/// A URL a client can use without credentials until `expires_at`, with the headers it
/// must send along.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresignedUrl {
    pub url: String,
    pub method: PresignMethod,
    pub expires_at: Millis,
    pub headers: Vec<(String, String)>,
}
