//! Signed URLs served by the process that issued them (the local server's answer to S3
//! presigning). A URL names a method, a path and a few parameters, plus an expiry in Unix
//! seconds, under an HMAC-SHA256 of all of them with a secret only the server knows. Blob
//! presigning uses it now; two-step file uploads can reuse it as is.
//!
//! The query carries `X-Wop-Expires` and `X-Wop-Signature` beside the signed parameters. A
//! URL is valid while `now < expires` (to the second, as S3 does); the signature is checked
//! before the expiry so a forged expiry is simply an invalid URL.

use crate::model::Millis;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::BTreeMap;

pub const EXPIRES_PARAM: &str = "X-Wop-Expires";
pub const SIGNATURE_PARAM: &str = "X-Wop-Signature";

/// Why a signed URL is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedUrlError {
    /// Missing parameters, a bad signature, or parameters changed after signing.
    Invalid,
    /// Correctly signed, but used at or after its expiry.
    Expired { expires_at: i64 },
}

/// The secret and the signing rule. The secret is at least 32 random bytes; the local
/// server generates it once per data directory and keeps it there.
#[derive(Clone)]
pub struct UrlSigner {
    secret: Vec<u8>,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UrlSigner(..)")
    }
}

/// The signed text: JSON of method, path, expiry and the sorted parameters, so no two
/// different requests share a canonical form (values may hold any character).
fn canonical(method: &str, path: &str, expires: i64, params: &BTreeMap<String, String>) -> String {
    serde_json::json!(["WOP-HMAC-SHA256", method, path, expires, params]).to_string()
}

impl UrlSigner {
    pub fn new(secret: Vec<u8>) -> Self {
        Self { secret }
    }

    /// A fresh random secret.
    pub fn generate_secret() -> Vec<u8> {
        rand::random::<[u8; 32]>().to_vec()
    }

    fn mac(&self, text: &str) -> Hmac<Sha256> {
        // HMAC takes keys of any length; this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(text.as_bytes());
        mac
    }

    /// The query string (without `?`) that makes `method path` valid until `expires`
    /// (Unix seconds), carrying `params`. Values are percent-encoded.
    pub fn sign(&self, method: &str, path: &str, expires: i64, params: &[(&str, &str)]) -> String {
        let map: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let sig = hex::encode(
            self.mac(&canonical(method, path, expires, &map))
                .finalize()
                .into_bytes(),
        );
        let mut q = String::new();
        for (k, v) in map
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .chain([(EXPIRES_PARAM, expires.to_string()), (SIGNATURE_PARAM, sig)])
        {
            if !q.is_empty() {
                q.push('&');
            }
            q.push_str(k);
            q.push('=');
            q.push_str(&percent_encode(&v));
        }
        q
    }

    /// Checks a request against its signature and expiry; returns the signed parameters.
    /// `query` holds the decoded query pairs as received.
    pub fn verify(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        now: Millis,
    ) -> Result<BTreeMap<String, String>, SignedUrlError> {
        let mut params = BTreeMap::new();
        let mut expires = None;
        let mut sig = None;
        for (k, v) in query {
            let slot = match k.as_str() {
                EXPIRES_PARAM => expires.replace(v.clone()),
                SIGNATURE_PARAM => sig.replace(v.clone()),
                _ => params.insert(k.clone(), v.clone()),
            };
            if slot.is_some() {
                return Err(SignedUrlError::Invalid); // a parameter given twice
            }
        }
        let expires: i64 = expires
            .and_then(|e| e.parse().ok())
            .ok_or(SignedUrlError::Invalid)?;
        let sig = sig
            .and_then(|s| hex::decode(s).ok())
            .ok_or(SignedUrlError::Invalid)?;
        self.mac(&canonical(method, path, expires, &params))
            .verify_slice(&sig) // constant time
            .map_err(|_| SignedUrlError::Invalid)?;
        if now >= expires.saturating_mul(1000) {
            return Err(SignedUrlError::Expired {
                expires_at: expires,
            });
        }
        Ok(params)
    }
}

/// The expiry (Unix seconds) of a URL signed at `now` to live `seconds`: rounded down to
/// the second, so the URL never outlives what was asked for.
pub fn expiry_second(now: Millis, seconds: u64) -> i64 {
    let ttl_ms = i64::try_from(seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    now.saturating_add(ttl_ms).div_euclid(1000)
}

/// RFC 3986 unreserved characters pass, everything else is `%XX`. Hand-written: eight
/// lines, and core has no URL crate.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &str) -> Vec<(String, String)> {
        q.split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                let v = v.replace("%22", "\"");
                (k.to_owned(), v)
            })
            .collect()
    }

    #[test]
    fn signs_verifies_and_expires_to_the_second() {
        let s = UrlSigner::new(b"0123456789abcdef0123456789abcdef".to_vec());
        let q = s.sign("GET", "/x/y", 1000, &[("v", "7")]);
        let got = s.verify("GET", "/x/y", &pairs(&q), 999_999).unwrap();
        assert_eq!(got.get("v").map(String::as_str), Some("7"));
        assert_eq!(
            s.verify("GET", "/x/y", &pairs(&q), 1_000_000),
            Err(SignedUrlError::Expired { expires_at: 1000 })
        );
        // Any change is an invalid URL.
        assert_eq!(
            s.verify("PUT", "/x/y", &pairs(&q), 0),
            Err(SignedUrlError::Invalid)
        );
        assert_eq!(
            s.verify("GET", "/x/z", &pairs(&q), 0),
            Err(SignedUrlError::Invalid)
        );
        let longer = q.replace("X-Wop-Expires=1000", "X-Wop-Expires=9999");
        assert_eq!(
            s.verify("GET", "/x/y", &pairs(&longer), 0),
            Err(SignedUrlError::Invalid)
        );
        let other = q.replace("v=7", "v=8");
        assert_eq!(
            s.verify("GET", "/x/y", &pairs(&other), 0),
            Err(SignedUrlError::Invalid)
        );
        let stranger = UrlSigner::new(b"another secret of thirty-two b!!".to_vec());
        assert_eq!(
            stranger.verify("GET", "/x/y", &pairs(&q), 0),
            Err(SignedUrlError::Invalid)
        );
        let mut extra = pairs(&q);
        extra.push(("max".into(), "1".into()));
        assert_eq!(
            s.verify("GET", "/x/y", &extra, 0),
            Err(SignedUrlError::Invalid)
        );
    }
}
