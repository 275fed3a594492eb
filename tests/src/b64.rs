//! Standard base64 (RFC 4648, with padding), what API Gateway and Lambda use for binary
//! bodies and the API for `contentBase64`: the `base64` crate, named once for the suite.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// `None` for text that is not standard base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}
