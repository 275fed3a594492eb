//! The session service (`SessionService`) over HTTP: `/workspaces` and below. Tenant and
//! user come from the credential ([`Authenticator::caller`]); a request that names another
//! tenant or user (body `tenantId`/`userId`, `X-Tenant-Id`, query) is 403, and another
//! user's or tenant's workspace is simply not found (404).

mod artifacts;
mod workspaces;

use crate::envelope::HttpResponse;
use crate::handler::{Call, Reply, Routes};
use crate::routes::Route;
use crate::App;
use bytes::Bytes;
use http::request::Parts;
use serde_json::Value;
use workspace_core::model::{format_time, Millis};
use workspace_core::sessions::{Caller, SessionService};
use workspace_core::{Result, WorkspaceError};

/// The path parameters of a `/workspaces/{id}/...` route, in order, from the route's tail
/// (the path from its first parameter on).
fn params(tail: &str) -> Vec<&str> {
    // "{id}/artifacts/{artifactId}" → [id, artifactId]
    tail.split('/')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, s)| s)
        .collect()
}

fn param<'a>(ps: &[&'a str], i: usize) -> &'a str {
    ps.get(i).copied().unwrap_or("")
}

pub(crate) fn time(ms: Millis) -> Value {
    Value::String(format_time(ms))
}

pub(crate) fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes, shape: &str) -> Result<T> {
    serde_json::from_slice(body)
        .map_err(|e| WorkspaceError::validation(format!("body must be {shape}: {e}")))
}

/// `workspaces`: the session service (`SessionService`).
pub const ROUTES: Routes = &[
    (Route::CreateWorkspace, serve),
    (Route::ListWorkspaces, serve),
    (Route::GetWorkspace, serve),
    (Route::DeleteWorkspace, serve),
    (Route::UploadArtifact, serve),
    (Route::ListArtifacts, serve),
    (Route::GetArtifact, serve),
    (Route::ListSessions, serve),
    (Route::SessionHistory, serve),
    (Route::DeleteSession, serve),
];

fn serve(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let route = c
            .route
            .ok_or_else(|| WorkspaceError::internal("not a workspace API route"))?;
        dispatch(c.app, route, c.tenant_caller()?, c.parts, c.tail, c.body).await
    })
}

/// Serves one `/workspaces` route.
async fn dispatch(
    app: &App,
    route: Route,
    caller: &Caller,
    parts: &Parts,
    path: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    let Some(svc) = app.sessions.as_deref() else {
        return Err(WorkspaceError::NotProvided(
            "this deployment does not serve the workspace API".to_owned(),
        ));
    };
    // Base64 adds a third and JSON escaping up to six times: anything larger cannot hold
    // an artifact within the cap, and is refused before it is parsed.
    let max = svc.limits().max_artifact_bytes;
    let cap = usize::try_from(max.saturating_mul(6)).unwrap_or(usize::MAX);
    if body.len() > cap.saturating_add(64 * 1024) {
        return Err(WorkspaceError::TooLarge {
            message: format!("request body is too large for WORKSPACE_MAX_ARTIFACT_BYTES = {max}"),
            limit: max,
        });
    }
    // The scope the route needs was checked before it was dispatched (its row's `Needs`).
    crate::scope_check::names_only_its_own(
        caller.tenant.as_str(),
        crate::scope_check::Own::User(&caller.principal),
        parts,
        body,
    )?;
    let ps = params(path);
    let id = param(&ps, 0);
    let svc: &SessionService = svc;
    match route {
        Route::CreateWorkspace => workspaces::create(svc, caller, body).await,
        Route::ListWorkspaces => workspaces::list(svc, caller, parts).await,
        Route::GetWorkspace => workspaces::get(svc, caller, id).await,
        Route::DeleteWorkspace => workspaces::delete(svc, app.files()?, caller, id, parts).await,
        Route::UploadArtifact => artifacts::upload(svc, app.files()?, caller, id, body).await,
        Route::ListArtifacts => artifacts::list(svc, caller, id, parts).await,
        Route::GetArtifact => artifacts::get(svc, caller, id, param(&ps, 1)).await,
        Route::ListSessions => artifacts::sessions(svc, caller, id, parts).await,
        Route::SessionHistory => artifacts::history(svc, caller, id, param(&ps, 1)).await,
        Route::DeleteSession => artifacts::delete_session(svc, caller, id, param(&ps, 1)).await,
        _ => Err(WorkspaceError::internal("not a workspace API route")),
    }
}

#[cfg(test)]
mod tests {
    use super::params;

    #[test]
    fn params_are_every_other_segment_of_the_tail() {
        assert_eq!(params("w1"), ["w1"]);
        assert_eq!(params("w1/artifacts/a1"), ["w1", "a1"]);
        assert_eq!(params("w1/sessions/s1/history"), ["w1", "s1"]);
    }
}
