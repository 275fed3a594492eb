//! URLs this process signs and serves itself, for stores that cannot presign (memory,
//! embedded): [`LocalPresign`] is the one signer ([`LocalPresign::signed_url`]) and the one
//! verifier ([`LocalPresign::verify`]) of every such URL, and lays out their paths
//! (`<prefix><tenant>/<workspace>/<rest>`). Its users are the blob URLs here, served at
//! `/v1/signed/blob/<tenant>/<workspace>/<bucket>/<key>?…`, and the upload and download URLs
//! of `service::local_urls`. The scope in the path is safe to show because the signature
//! covers it: nobody can change it without the secret.
//!
//! GET URLs are pinned to the version presigned (after an overwrite they keep reading it,
//! as S3's do: the local stores keep a replaced version until no URL can name it); PUT URLs
//! carry the size limit (`max`), and the exact size (`len`) and content type (`ct`) when the
//! client named them.

use super::service::{check_content_type, no_object, too_large, BlobService};
use super::{
    BlobKey, BlobLimits, BlobLocation, BlobMeta, PresignMethod, PresignSpec, PresignedUrl,
};
use crate::capability::CapabilityCode;
use crate::error::{Result, WorkspaceError};
use crate::model::Millis;
use crate::scope::Scope;
use crate::signed_url::{expiry_second, SignedUrlError, UrlSigner};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::collections::BTreeMap;

/// Path prefix of every locally signed blob URL.
pub const SIGNED_BLOB_PREFIX: &str = "/v1/signed/blob/";

#[derive(Debug, Clone)]
pub struct LocalPresign {
    pub signer: UrlSigner,
    /// Scheme, host and port clients reach this process at (no trailing `/`).
    pub base_url: String,
}

/// A signed request, after verification.
pub enum SignedOutcome {
    Got(BlobMeta, Vec<u8>),
    Put(BlobMeta),
}

/// The path of a locally signed URL for `rest` in `scope`:
/// `<prefix><tenant>/<workspace>/<rest>`.
pub fn scoped_path(prefix: &str, scope: &Scope, rest: &str) -> String {
    format!("{prefix}{}/{}/{rest}", scope.tenant, scope.workspace)
}

/// A [`scoped_path`] back into its scope and rest.
pub fn parse_scoped_path<'a>(prefix: &str, path: &'a str) -> Option<(Scope, &'a str)> {
    let mut parts = path.strip_prefix(prefix)?.splitn(3, '/');
    let (t, w, rest) = (parts.next()?, parts.next()?, parts.next()?);
    Some((Scope::parse(t, w).ok()?, rest))
}

/// Every byte of a key but the unreserved ones (RFC 3986) and `/`: what a URL path carries
/// unchanged through every client (no `?`, `#`, `%`, backslash or space left to reinterpret).
const KEY_IN_PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

fn path_of(loc: &BlobLocation) -> String {
    let key = utf8_percent_encode(loc.key.as_str(), KEY_IN_PATH);
    let rest = format!("{}/{key}", loc.bucket);
    scoped_path(SIGNED_BLOB_PREFIX, &loc.scope, &rest)
}

/// `<tenant>/<workspace>/<bucket>/<key>` (the key percent-encoded) back into its parts.
fn parse_path(path: &str) -> Option<(Scope, String, BlobKey)> {
    let (scope, rest) = parse_scoped_path(SIGNED_BLOB_PREFIX, path)?;
    let (b, k) = rest.split_once('/')?;
    let k = percent_decode_str(k).decode_utf8().ok()?;
    Some((scope, b.to_owned(), BlobKey::parse(&k).ok()?))
}

/// The local signer a service was given, or 404: this deployment serves no signed URLs.
pub fn serving(local: Option<&LocalPresign>) -> Result<&LocalPresign> {
    local.ok_or_else(|| WorkspaceError::not_found("this deployment serves no signed URLs"))
}

/// 403: the `what` URL (`signed`, `upload`, `download`) was altered or not issued here.
pub fn not_issued_here(what: &str) -> WorkspaceError {
    WorkspaceError::Forbidden(format!(
        "the {what} URL is not valid (altered, or not issued by this server)"
    ))
}

impl LocalPresign {
    pub fn url_for(
        &self,
        loc: &BlobLocation,
        spec: &PresignSpec,
        now: Millis,
        limits: &BlobLimits,
    ) -> PresignedUrl {
        let max = limits.max_object_bytes.to_string();
        let len = spec.content_length.map(|n| n.to_string());
        let mut params: Vec<(&str, &str)> = Vec::new();
        let mut headers = Vec::new();
        match spec.method {
            PresignMethod::Get => {
                if let Some(v) = &spec.version_id {
                    params.push(("v", v));
                }
            }
            PresignMethod::Put => {
                params.push(("max", &max));
                if let Some(l) = &len {
                    params.push(("len", l));
                    headers.push(("content-length".to_owned(), l.clone()));
                }
                if let Some(ct) = &spec.content_type {
                    params.push(("ct", ct));
                    headers.push(("content-type".to_owned(), ct.clone()));
                }
            }
        }
        self.signed_url(spec, now, &path_of(loc), &params, headers)
    }

    /// `spec.method path` signed with `params` until `now` plus `spec`'s lifetime (to the
    /// whole second), at this process's base URL: every locally signed URL (blobs here,
    /// upload and download URLs in `service::local_urls`) is made by this.
    pub fn signed_url(
        &self,
        spec: &PresignSpec,
        now: Millis,
        path: &str,
        params: &[(&str, &str)],
        headers: Vec<(String, String)>,
    ) -> PresignedUrl {
        let expires = expiry_second(now, spec.expires_in_seconds);
        let query = self
            .signer
            .sign(spec.method.as_str(), path, expires, params);
        PresignedUrl {
            url: format!("{}{path}?{query}", self.base_url),
            method: spec.method,
            expires_at: expires.saturating_mul(1000),
            headers,
        }
    }

    /// The signed parameters of a request to a URL this process signed, checked at `now`:
    /// first the signature ([`not_issued_here`] naming `what`), then the expiry
    /// (`expired`, given the time it expired at). Every locally signed URL is verified by
    /// this.
    pub fn verify(
        &self,
        what: &str,
        method: &str,
        path: &str,
        query: &[(String, String)],
        now: Millis,
        expired: impl FnOnce(String) -> WorkspaceError,
    ) -> Result<BTreeMap<String, String>> {
        match self.signer.verify(method, path, query, now) {
            Ok(params) => Ok(params),
            Err(SignedUrlError::Invalid) => Err(not_issued_here(what)),
            Err(SignedUrlError::Expired { expires_at }) => Err(expired(crate::model::format_time(
                expires_at.saturating_mul(1000),
            ))),
        }
    }
}

impl BlobService {
    /// Serves a request to a locally signed URL: the signature, then the expiry, then the
    /// operation it allows. `query` holds the decoded query pairs.
    pub async fn serve_signed(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: Vec<u8>,
        content_type: Option<&str>,
    ) -> Result<SignedOutcome> {
        let invalid = || not_issued_here("signed");
        let now = self.clock.now_ms();
        let params =
            serving(self.local.as_ref())?.verify("signed", method, path, query, now, |at| {
                CapabilityCode::BlobPresignExpired
                    .error(format!("the presigned URL expired at {at}"))
            })?;
        let (scope, bucket, key) = parse_path(path).ok_or_else(invalid)?;
        let loc = BlobLocation {
            scope,
            bucket: self.bucket(&bucket)?,
            key,
        };
        match method {
            "GET" => {
                let version = params.get("v").map(String::as_str);
                let (meta, bytes) = self
                    .store
                    .get(&loc, version)
                    .await?
                    .ok_or_else(|| no_object(&loc))?;
                Ok(SignedOutcome::Got(meta, bytes))
            }
            "PUT" => {
                let size = body.len() as u64;
                let max = params
                    .get("max")
                    .and_then(|m| m.parse::<u64>().ok())
                    .unwrap_or(self.limits.max_object_bytes)
                    .min(self.limits.max_object_bytes);
                if size > max {
                    return Err(too_large(size, max));
                }
                if params.get("len").is_some_and(|l| *l != size.to_string()) {
                    return Err(WorkspaceError::Forbidden(
                        "the body size is not the contentLength this URL was signed for".to_owned(),
                    ));
                }
                let ct = content_type.unwrap_or("application/octet-stream");
                if params.get("ct").is_some_and(|c| c != ct) {
                    return Err(WorkspaceError::Forbidden(
                        "the Content-Type is not the one this URL was signed for".to_owned(),
                    ));
                }
                check_content_type(ct)?;
                let meta = self
                    .store
                    .put(
                        &loc,
                        body,
                        ct,
                        self.clock.now_ms(),
                        self.keep_superseded_ms(),
                    )
                    .await?;
                Ok(SignedOutcome::Put(meta))
            }
            _ => Err(invalid()),
        }
    }
}
