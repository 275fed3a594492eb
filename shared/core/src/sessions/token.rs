//! Paging tokens for the session list: opaque and tamper-evident. A token is the position
//! (lastTaskAt, sessionId) plus an HMAC-SHA256 over it and the caller's scope (tenant,
//! user, workspace), so a forged, altered or foreign token (another workspace or user) is
//! refused. The key comes from the deployment (`WORKSPACE_SESSION_TOKEN_KEY`; the local
//! server generates and keeps one in its data directory).

use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Where a page ends: the last session shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub last_task_at: Millis,
    pub session_id: String,
}

#[derive(Clone)]
pub struct TokenKey(Vec<u8>);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

fn bad() -> WorkspaceError {
    WorkspaceError::validation("nextToken is not one this server issued for this listing")
}

impl TokenKey {
    /// At least 32 bytes of key material.
    pub fn new(bytes: Vec<u8>) -> Result<Self> {
        if bytes.len() < 32 {
            return Err(WorkspaceError::validation(
                "the session token key must be at least 32 bytes",
            ));
        }
        Ok(Self(bytes))
    }

    pub fn random() -> Self {
        Self(rand::random::<[u8; 32]>().to_vec())
    }

    fn mac(&self, binding: &str, body: &str) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(binding.as_bytes());
        mac.update(b"\n");
        mac.update(body.as_bytes());
        mac
    }

    /// A token carrying `body`, valid only under `binding` (the listing and the caller's
    /// scope it was issued for).
    pub fn seal(&self, binding: &str, body: &str) -> String {
        let tag = self.mac(binding, body).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(body.as_bytes()),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The body of a token [`TokenKey::seal`] issued under `binding`; anything else is 400.
    pub fn open(&self, binding: &str, token: &str) -> Result<String> {
        let (body, tag) = token.split_once('.').ok_or_else(bad)?;
        let body = String::from_utf8(URL_SAFE_NO_PAD.decode(body).map_err(|_| bad())?)
            .map_err(|_| bad())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| bad())?;
        // verify_slice compares in constant time.
        self.mac(binding, &body)
            .verify_slice(&tag)
            .map_err(|_| bad())?;
        Ok(body)
    }

    /// `binding` names the caller's scope; a token only verifies under the same binding.
    pub fn issue(&self, binding: &str, pos: &Position) -> String {
        self.seal(binding, &format!("{}:{}", pos.last_task_at, pos.session_id))
    }

    pub fn verify(&self, binding: &str, token: &str) -> Result<Position> {
        let body = self.open(binding, token)?;
        let (at, id) = body.split_once(':').ok_or_else(bad)?;
        Ok(Position {
            last_task_at: at.parse().map_err(|_| bad())?,
            session_id: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_unchanged_and_in_their_scope() {
        let k = TokenKey::random();
        let pos = Position {
            last_task_at: 42,
            session_id: "s-1".into(),
        };
        let t = k.issue("acme|alice|w1", &pos);
        assert_eq!(k.verify("acme|alice|w1", &t).unwrap(), pos);
        assert!(k.verify("acme|bob|w1", &t).is_err());
        assert!(k.verify("acme|alice|w2", &t).is_err());
        assert!(TokenKey::random().verify("acme|alice|w1", &t).is_err());
        let (_, tag) = t.split_once('.').unwrap();
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode("43:s-1"));
        assert!(k.verify("acme|alice|w1", &forged).is_err());
        for junk in ["", ".", "abc", "a.b", "!!.!!"] {
            assert!(k.verify("acme|alice|w1", junk).is_err(), "{junk}");
        }
    }
}
