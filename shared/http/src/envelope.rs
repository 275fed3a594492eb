//! Responses: JSON bodies and the one error envelope
//! `{"error": "<code>", "message": "<text>", "details"?: {...}}`.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use serde_json::{json, Value};
use workspace_core::capability::CapabilityCode;
use workspace_core::WorkspaceError;

pub type HttpResponse = Response<Bytes>;

pub fn json_response(status: StatusCode, body: &Value) -> HttpResponse {
    let mut resp = Response::new(Bytes::from(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub fn empty_response(status: StatusCode) -> HttpResponse {
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = status;
    resp
}

pub fn error_response(
    status: StatusCode,
    code: &str,
    message: &str,
    details: Option<Value>,
) -> HttpResponse {
    let mut body = json!({ "error": code, "message": message });
    if let Some(d) = details {
        body["details"] = d;
    }
    json_response(status, &body)
}

/// Status and envelope code of a domain error.
pub fn status_and_code(err: &WorkspaceError) -> (StatusCode, &'static str) {
    match err {
        WorkspaceError::Validation(_) => (StatusCode::BAD_REQUEST, "validation_error"),
        WorkspaceError::Unauthenticated(_) => (StatusCode::UNAUTHORIZED, "unauthenticated"),
        WorkspaceError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        WorkspaceError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        WorkspaceError::Conflict { .. } => (StatusCode::CONFLICT, "workspace_conflict"),
        WorkspaceError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "workspace_too_large"),
        WorkspaceError::NotProvided(_) => (StatusCode::NOT_IMPLEMENTED, "capability_not_provided"),
        WorkspaceError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        WorkspaceError::Capability { code, .. } => (capability_status(*code), code.as_str()),
        WorkspaceError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal_error"),
    }
}

/// Status of a blob or cache refusal (RFC 0019).
fn capability_status(code: CapabilityCode) -> StatusCode {
    match code {
        CapabilityCode::BlobBucketNotFound | CapabilityCode::BlobObjectNotFound => {
            StatusCode::NOT_FOUND
        }
        CapabilityCode::BlobObjectTooLarge | CapabilityCode::CacheValueTooLarge => {
            StatusCode::PAYLOAD_TOO_LARGE
        }
        CapabilityCode::BlobPresignExpired | CapabilityCode::RunForbidden => StatusCode::FORBIDDEN,
        CapabilityCode::EventsExpired | CapabilityCode::VersionErased => StatusCode::GONE,
        CapabilityCode::CacheTtlExceedsMax => StatusCode::BAD_REQUEST,
    }
}

/// The envelope response for a domain error.
pub fn error_to_response(err: &WorkspaceError) -> HttpResponse {
    {
        let (status, code) = status_and_code(err);
        let (message, details) = match err {
            WorkspaceError::Conflict {
                message,
                current_version,
            } => (
                message.clone(),
                Some(json!({ "currentVersion": current_version })),
            ),
            WorkspaceError::TooLarge { message, limit } => {
                (message.clone(), Some(json!({ "limit": limit })))
            }
            WorkspaceError::Capability { message, limit, .. } => {
                (message.clone(), limit.map(|l| json!({ "limit": l })))
            }
            WorkspaceError::Internal(detail) => {
                // The detail may name backend internals; it goes to the log only.
                tracing::error!(error = %detail, "internal error");
                (
                    "the server failed to handle this request; retry later".to_owned(),
                    None,
                )
            }
            other => (other.to_string(), None),
        };
        let mut resp = error_response(status, code, &message, details);
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}
