//! What a route's handler is, and the call it receives.
//!
//! A handler is a plain function pointer that an [`App`] is given when it is built
//! ([`App::serve`]). The route table says which function serves a row; the handlers a
//! process registers say what it can answer. Code is only linked into a binary when
//! something reaches it at compile time, so a Lambda function that registers only its own
//! rows carries only their handlers and the services those call, not the whole API.

use crate::envelope::HttpResponse;
use crate::routes::Route;
use crate::App;
use bytes::Bytes;
use http::request::Parts;
use std::future::Future;
use std::pin::Pin;
use workspace_core::sessions::Caller;
use workspace_core::{Identity, Result, WorkspaceError};

/// One matched request, as a handler sees it.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    pub app: &'a App,
    /// The row that matched (none for a URL this process signed).
    pub route: Option<Route>,
    pub parts: &'a Parts,
    /// What the route's first parameter captured (see [`crate::routes::Matched`]), already
    /// percent-decoded; for a URL this process signed, the path as sent.
    pub tail: &'a str,
    pub body: &'a Bytes,
    /// The credential, already checked against the row's `Needs` (`App::authorize`); none
    /// for a URL this process signed or a route outside the table.
    pub credential: Option<&'a Credential>,
}

/// Who a request acts as, as decided before its handler runs.
#[derive(Debug, Clone)]
pub enum Credential {
    /// A public row.
    None,
    /// A workspace's caller (every row but the workspace API's).
    Workspace(Identity),
    /// A tenant and principal: the workspace API (`/workspaces`), which names workspaces
    /// in its paths.
    Tenant(Caller),
}

impl Call<'_> {
    /// The caller in its workspace: the identity the row's check admitted, or, for a route
    /// outside the table, the credential's (WCT-1: a request naming another scope fails).
    pub async fn identify(&self) -> Result<Identity> {
        match self.credential {
            Some(Credential::Workspace(who)) => Ok(who.clone()),
            _ => self.app.identify(self.parts, self.body).await,
        }
    }

    /// The tenant-level caller the workspace API's row admitted.
    pub fn tenant_caller(&self) -> Result<&Caller> {
        match self.credential {
            Some(Credential::Tenant(caller)) => Ok(caller),
            _ => Err(WorkspaceError::internal(
                "not a workspace API route: no tenant-level caller",
            )),
        }
    }
}

/// A handler's answer, boxed so handlers of different routes share one type.
pub type Reply<'a> = Pin<Box<dyn Future<Output = Result<HttpResponse>> + Send + 'a>>;

/// Serves one route.
pub type Handler = for<'a> fn(Call<'a>) -> Reply<'a>;

/// A set of routes and their handlers, registered together.
pub type Routes = &'static [(Route, Handler)];

/// Serves a URL this process signed itself (no credential; the signature is the grant).
pub struct SignedUrls {
    /// Requests whose path starts with this are served here, before the route table.
    pub prefix: &'static str,
    /// The route label in logs.
    pub label: &'static str,
    pub handler: Handler,
    /// Whether the body may be as large as an upload (else the inline request limit).
    pub takes_uploads: bool,
    /// What the request head alone must pass before its body is read (see [`App::admit`]).
    pub check_head: Option<fn(&App, &Parts) -> Result<()>>,
}

/// A route a process serves outside the route table, so never in template.yaml and never
/// on Lambda: the local server's conformance test seams. Matched on method and exact path,
/// authenticated before its body is read like any table row that needs a credential.
pub struct ExtraRoute {
    pub method: http::Method,
    pub path: &'static str,
    pub handler: Handler,
}
