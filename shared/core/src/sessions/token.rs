//! Paging tokens for every listing: opaque and tamper-evident. A token is the position
//! (where the page ended) encrypted and authenticated with ChaCha20-Poly1305 under a key
//! derived from the deployment's, with the listing and the caller's scope as associated
//! data, so a forged, altered or foreign token (another listing, workspace, user or path
//! scope) is refused, and a token reveals nothing, not even the path a page ended at (a
//! path-scoped caller's change-log page may end on an entry it cannot see). The key comes
//! from the deployment (`WORKSPACE_SESSION_TOKEN_KEY`; the local server generates and keeps
//! one in its data directory).

use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use sha2::{Digest, Sha256};

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

    fn cipher(&self) -> ChaCha20Poly1305 {
        // A key of its own for tokens, derived so the configured bytes serve one purpose.
        let key: [u8; 32] = Sha256::new()
            .chain_update(b"workspace paging token v2\n")
            .chain_update(&self.0)
            .finalize()
            .into();
        ChaCha20Poly1305::new(&key.into())
    }

    /// A token carrying `body`, valid only under `binding` (the listing and the caller's
    /// scope it was issued for).
    pub fn seal(&self, binding: &str, body: &str) -> String {
        let nonce: [u8; 12] = rand::random();
        let sealed = self
            .cipher()
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: body.as_bytes(),
                    aad: binding.as_bytes(),
                },
            )
            .expect("ChaCha20-Poly1305 encrypts any message under 256 GiB");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The body of a token [`TokenKey::seal`] issued under `binding`; anything else is 400.
    pub fn open(&self, binding: &str, token: &str) -> Result<String> {
        // Tokens are short; a long one is refused before any work.
        if token.len() > 4096 {
            return Err(bad());
        }
        let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
        if raw.len() < 12 + 16 {
            return Err(bad());
        }
        let (nonce, sealed) = raw.split_at(12);
        let body = self
            .cipher()
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: binding.as_bytes(),
                },
            )
            .map_err(|_| bad())?;
        String::from_utf8(body).map_err(|_| bad())
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
        // Nothing of the position shows, and a flipped bit is refused.
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        assert!(!raw.windows(3).any(|w| w == b"s-1"));
        let mut flipped = raw.clone();
        flipped[14] ^= 1;
        assert!(k
            .verify("acme|alice|w1", &URL_SAFE_NO_PAD.encode(flipped))
            .is_err());
        for junk in ["", ".", "abc", "a.b", "!!.!!"] {
            assert!(k.verify("acme|alice|w1", junk).is_err(), "{junk}");
        }
    }
}
