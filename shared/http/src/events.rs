//! `GET /v1/host/workspace/events`: `workspace.updated` of the caller's workspace as
//! server-sent events, from the store's outbox, resumable with `Last-Event-ID` (or
//! `?after=`). This module judges the request (credential, resume point, retention); the
//! transport then holds the stream open ([`EventStream`], attached to the answer), since a
//! handler's answer here is one finished body.

use crate::envelope::HttpResponse;
use crate::App;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use workspace_core::capability::CapabilityCode;
use workspace_core::events::{Since, DETAIL_TYPE, SOURCE};
use workspace_core::{Identity, PathScope, Result, Scope, WorkspaceError};

/// What the transport streams: the events of `scope` after position `after`, as they come,
/// of the paths `paths` may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventStream {
    pub scope: Scope,
    pub paths: PathScope,
    pub after: u64,
}

/// The position a client resumes after: `Last-Event-ID`, else `?after=`, else 0 (every
/// retained event).
fn resume_point(parts: &Parts) -> Result<u64> {
    let bad = |what: &str| {
        WorkspaceError::validation(format!(
            "{what} must be an event id this stream sent (a whole number)"
        ))
    };
    if let Some(v) = parts.headers.get("last-event-id") {
        return v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| bad("Last-Event-ID"));
    }
    let query = parts.uri.query().unwrap_or("");
    match form_urlencoded::parse(query.as_bytes()).next() {
        None => Ok(0),
        Some((k, v)) if k == "after" => v.parse().map_err(|_| bad("after")),
        Some((other, _)) => Err(WorkspaceError::validation(format!(
            "unknown query parameter '{}' (this route takes after)",
            other.escape_debug()
        ))),
    }
}

pub async fn open(app: &App, who: &Identity, parts: &Parts) -> Result<HttpResponse> {
    let after = resume_point(parts)?;
    let log = app.events.as_ref().ok_or_else(|| {
        WorkspaceError::NotProvided(format!(
            "this deployment announces changes on EventBridge (source {SOURCE}, detail-type {DETAIL_TYPE}), not as a server-sent event stream"
        ))
    })?;
    if let Since::Expired { oldest } = log.since(Some(&who.scope), after, 0).await? {
        return Err(CapabilityCode::EventsExpired.error(format!(
            "events after id {after} were dropped by retention; the oldest kept is {oldest}: re-read the workspace, then resume from id {}",
            oldest - 1
        )));
    }
    let mut resp = Response::new(bytes::Bytes::new());
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp.extensions_mut().insert(EventStream {
        scope: who.scope.clone(),
        paths: who.paths.clone(),
        after,
    });
    Ok(resp)
}
