//! URLs this process signs and serves itself, for body stores that cannot presign (memory,
//! redb): the local server's answer to S3's presigned URLs for two-step uploads and for
//! reads of large files. Signed and verified by the [`LocalPresign`] the service was given
//! (the same signer and verifier as blob URLs); the signature covers the method, the path
//! (scope and key) and the parameters.
//!
//! - `PUT /v1/signed/upload/<tenant>/<workspace>/<uploadId>?len&ct`: the upload's bytes,
//!   exactly `len` of them with Content-Type `ct` (as S3 refuses other signed values);
//! - `GET /v1/signed/body/<body key>?v&ct`: exactly that body version.

use super::uploads::{bytes_key, is_upload_id, unknown_upload};
use super::*;
use crate::blob::local_presign::{parse_scoped_path, scoped_path, serving};
use crate::blob::{LocalPresign, PresignMethod, PresignSpec, PresignedUrl};
use crate::ports::{BodyPieces, OnePiece};
use std::collections::BTreeMap;

/// Path prefix of every locally signed upload URL.
pub const SIGNED_UPLOAD_PREFIX: &str = "/v1/signed/upload/";
/// Path prefix of every locally signed download URL.
pub const SIGNED_BODY_PREFIX: &str = "/v1/signed/body/";

/// `<tenant>/<workspace>/<id>` of a signed upload path back into its parts.
fn parse_upload_path(path: &str) -> Option<(Scope, String)> {
    let (scope, id) = parse_scoped_path(SIGNED_UPLOAD_PREFIX, path)?;
    is_upload_id(id).then(|| (scope, id.to_owned()))
}

impl WorkspaceService {
    fn local_signer(&self) -> Result<&LocalPresign> {
        self.upload_signer.as_ref().ok_or_else(|| {
            WorkspaceError::NotProvided(
                "this deployment cannot hand out upload or download URLs (no presigning store, no local signer)"
                    .to_owned(),
            )
        })
    }

    /// Signs `method path` with `params` for `spec`'s lifetime (to the whole second).
    fn sign_local(
        &self,
        spec: &PresignSpec,
        path: &str,
        params: &[(&str, &str)],
        headers: Vec<(String, String)>,
    ) -> Result<PresignedUrl> {
        Ok(self
            .local_signer()?
            .signed_url(spec, spec.now, path, params, headers))
    }

    /// The signed parameters of a `method` request to a local URL signed for `allowed`, or
    /// 403 naming `what` expired, is not one this server issued, or is not for this method.
    fn verify_local(
        &self,
        what: &str,
        allowed: PresignMethod,
        method: &str,
        path: &str,
        query: &[(String, String)],
    ) -> Result<BTreeMap<String, String>> {
        let now = self.clock.now_ms();
        let params =
            serving(self.upload_signer.as_ref())?.verify(what, method, path, query, now, |at| {
                WorkspaceError::Forbidden(format!(
                    "the {what} URL expired at {at}; ask for a new one"
                ))
            })?;
        if method != allowed.as_str() {
            return Err(not_for_this_request(what));
        }
        Ok(params)
    }

    /// The upload URL for `id`: valid for exactly the declared length and content type.
    pub(super) fn local_upload_url(
        &self,
        scope: &Scope,
        id: &str,
        spec: &PresignSpec,
    ) -> Result<PresignedUrl> {
        let len = spec.content_length.unwrap_or(0).to_string();
        let ct = spec.content_type.clone().unwrap_or_default();
        let path = scoped_path(SIGNED_UPLOAD_PREFIX, scope, id);
        let headers = vec![
            ("content-length".to_owned(), len.clone()),
            ("content-type".to_owned(), ct.clone()),
        ];
        self.sign_local(spec, &path, &[("len", &len), ("ct", &ct)], headers)
    }

    /// The download URL of exactly `body`, served with the file's content type.
    pub(super) fn local_download_url(
        &self,
        meta: &FileMeta,
        body: &BodyRef,
        spec: &PresignSpec,
    ) -> Result<PresignedUrl> {
        let path = format!("{SIGNED_BODY_PREFIX}{}", body.key);
        let params = [("v", body.version_id.as_str()), ("ct", &meta.content_type)];
        self.sign_local(spec, &path, &params, Vec::new())
    }

    /// What a PUT to a local upload URL may be, from its head alone (before a byte of the
    /// body is read): the method, the signature and expiry, the declared `Content-Length`
    /// against the signed length (required, as S3 requires it of a URL signed with one),
    /// and the content type. Answers the upload's scope and id.
    pub fn check_signed_upload_head(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        length: Option<u64>,
        content_type: Option<&str>,
    ) -> Result<(Scope, String)> {
        let params = self.verify_local("upload", PresignMethod::Put, method, path, query)?;
        let (scope, id) = parse_upload_path(path).ok_or_else(|| not_for_this_request("upload"))?;
        let Some(size) = length else {
            return Err(WorkspaceError::Forbidden(
                "an upload must declare its Content-Length (the size the URL was signed for)"
                    .to_owned(),
            ));
        };
        if params.get("len") != Some(&size.to_string()) {
            return Err(WorkspaceError::Forbidden(format!(
                "the body is {size} bytes, not the size this upload URL was signed for"
            )));
        }
        if params.get("ct").map(String::as_str) != Some(content_type.unwrap_or_default()) {
            return Err(WorkspaceError::Forbidden(
                "the Content-Type is not the one this upload URL was signed for".to_owned(),
            ));
        }
        Ok((scope, id))
    }

    /// A PUT to a local upload URL whose body is already in memory (the contract harness;
    /// see [`WorkspaceService::serve_signed_upload_pieces`]).
    pub async fn serve_signed_upload(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Vec<u8>,
        content_type: Option<&str>,
    ) -> Result<(String, u64)> {
        let size = body.len() as u64;
        let mut body = OnePiece(Some(body));
        self.serve_signed_upload_pieces(method, path, query, Some(size), content_type, &mut body)
            .await
    }

    /// A PUT to a local upload URL, its body read piece by piece as it arrives (`length` is
    /// the declared `Content-Length`). Like S3, it refuses a body of another length or
    /// content type than the URL was signed for, and any use at or after its expiry, all
    /// from the head; a body that then turns out longer or shorter than signed, or cannot
    /// be read to its end, stages nothing. The bytes go to the staging area as they come
    /// (`Staging::put_staged_pieces`), so the embedded store holds a bounded buffer of
    /// an upload however large it is. Answers the upload id and the size stored.
    pub async fn serve_signed_upload_pieces(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        length: Option<u64>,
        content_type: Option<&str>,
        pieces: &mut dyn BodyPieces,
    ) -> Result<(String, u64)> {
        let (scope, id) =
            self.check_signed_upload_head(method, path, query, length, content_type)?;
        let size = length.unwrap_or_default();
        // Bytes for an upload already committed (or pruned) would only be garbage.
        if self.declaration(&scope, &id).await?.is_none() {
            return Err(unknown_upload());
        }
        let mut exact = SignedLength {
            pieces,
            len: size,
            seen: 0,
        };
        self.staging
            .put_staged_pieces(&bytes_key(&scope, &id), &mut exact, self.clock.now_ms())
            .await?;
        Ok((id, size))
    }

    /// A GET to a local download URL: the exact body version's bytes and content type.
    pub async fn serve_signed_body(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
    ) -> Result<(String, Vec<u8>)> {
        let params = self.verify_local("download", PresignMethod::Get, method, path, query)?;
        let (Some(key), Some(version_id), Some(ct)) = (
            path.strip_prefix(SIGNED_BODY_PREFIX),
            params.get("v"),
            params.get("ct"),
        ) else {
            return Err(not_for_this_request("download"));
        };
        let body = BodyRef::stored(key.to_owned(), version_id.clone());
        let bytes = self
            .bodies
            .get(&body)
            .await?
            .ok_or_else(|| WorkspaceError::not_found("that version is no longer retained"))?;
        Ok((ct.clone(), bytes))
    }
}

/// 403: a genuine `what` URL, but not for this method or path.
fn not_for_this_request(what: &str) -> WorkspaceError {
    WorkspaceError::Forbidden(format!("the {what} URL is not valid for this request"))
}

/// An upload's body held to its signed length: a piece that takes it past that length, or
/// an end before it, fails the body (and so stages nothing).
struct SignedLength<'a> {
    pieces: &'a mut dyn BodyPieces,
    len: u64,
    seen: u64,
}

#[async_trait::async_trait]
impl BodyPieces for SignedLength<'_> {
    async fn next_piece(&mut self) -> Result<Option<Vec<u8>>> {
        let piece = self.pieces.next_piece().await?;
        self.seen = self
            .seen
            .saturating_add(piece.as_ref().map_or(0, |p| p.len() as u64));
        let len = self.len;
        if self.seen > len {
            return Err(WorkspaceError::Forbidden(format!(
                "the body is longer than the {len} bytes this upload URL was signed for; nothing was stored"
            )));
        }
        if piece.is_none() && self.seen < len {
            return Err(WorkspaceError::Forbidden(format!(
                "the body ended after {} of the {len} bytes this upload URL was signed for; nothing was stored",
                self.seen
            )));
        }
        Ok(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pieces(Vec<Vec<u8>>);

    #[async_trait::async_trait]
    impl BodyPieces for Pieces {
        async fn next_piece(&mut self) -> Result<Option<Vec<u8>>> {
            Ok((!self.0.is_empty()).then(|| self.0.remove(0)))
        }
    }

    /// Reads `pieces` held to `len`: the bytes, or the error that ended them.
    async fn read(len: u64, pieces: Vec<Vec<u8>>) -> Result<Vec<u8>> {
        let mut inner = Pieces(pieces);
        let mut exact = SignedLength {
            pieces: &mut inner,
            len,
            seen: 0,
        };
        let mut all = Vec::new();
        while let Some(p) = exact.next_piece().await? {
            all.extend(p);
        }
        Ok(all)
    }

    #[tokio::test]
    async fn a_body_is_held_to_its_signed_length() {
        let exact = read(6, vec![b"abc".to_vec(), b"def".to_vec()]).await;
        assert_eq!(exact.unwrap(), b"abcdef");
        let longer = read(5, vec![b"abc".to_vec(), b"def".to_vec()]).await;
        assert!(
            matches!(&longer, Err(WorkspaceError::Forbidden(m)) if m.contains("longer than the 5 bytes")),
            "{longer:?}"
        );
        let shorter = read(7, vec![b"abc".to_vec(), b"def".to_vec()]).await;
        assert!(
            matches!(&shorter, Err(WorkspaceError::Forbidden(m)) if m.contains("after 6 of the 7 bytes")),
            "{shorter:?}"
        );
    }
}
