//! Identity on Lambda: tenant, workspace and principal come from the API Gateway authorizer
//! context (JWT claims, or a Lambda authorizer's context), under configurable claim names.
//! A request without tenant and principal is 401; there is never a default tenant. A token
//! without the workspace claim is tenant-wide, as on the local server (`workspace_http::auth`).

use async_trait::async_trait;
use http::request::Parts;
use lambda_http::request::RequestContext;
use workspace_core::{Access, PathScope, Result, TenantId, WorkspaceError, WorkspaceId};
use workspace_http::auth::{Authenticator, Grant};

pub use workspace_wiring::ClaimNames;

pub struct AuthorizerClaims {
    names: ClaimNames,
}

impl AuthorizerClaims {
    pub fn new(names: ClaimNames) -> Self {
        Self { names }
    }
}

fn unauthenticated(why: &str) -> WorkspaceError {
    WorkspaceError::Unauthenticated(format!("no usable identity: {why}"))
}

/// The authorizer's claims of a request, by name.
fn claims(parts: &Parts) -> Result<impl Fn(&str) -> Option<String> + '_> {
    let Some(RequestContext::ApiGatewayV2(ctx)) = parts.extensions.get::<RequestContext>() else {
        return Err(unauthenticated(
            "the request did not come through an HTTP API authorizer",
        ));
    };
    let Some(auth) = ctx.authorizer.as_ref() else {
        return Err(unauthenticated("the route has no authorizer"));
    };
    Ok(move |name: &str| -> Option<String> {
        if let Some(v) = auth.jwt.as_ref().and_then(|j| j.claims.get(name)) {
            return Some(v.clone());
        }
        if name == SCOPES_VALIDATED {
            return auth
                .jwt
                .as_ref()
                .and_then(|j| j.scopes.clone())
                .map(|s| s.join(" "));
        }
        auth.fields
            .get(name)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    })
}

/// Pseudo-claim: the scopes the authorizer validated, space-separated.
const SCOPES_VALIDATED: &str = "\0validated-scopes";

impl AuthorizerClaims {
    fn access(&self, claim: &impl Fn(&str) -> Option<String>) -> Access {
        // Scopes: the scope claim (space-separated, as OAuth writes it) plus any scopes
        // the authorizer validated. No scope means no access (403), never full access.
        let claimed = claim(&self.names.scopes).unwrap_or_default();
        let validated = claim(SCOPES_VALIDATED).unwrap_or_default();
        Access::from_scopes(
            claimed
                .split_whitespace()
                .chain(validated.split_whitespace()),
        )
    }
}

#[async_trait]
impl Authenticator for AuthorizerClaims {
    /// Tenant and principal are required; the workspace claim binds the token to one
    /// workspace, and without it the token is tenant-wide (it names its workspace in
    /// `X-Workspace-Id`), exactly as an API key on the local server.
    async fn grant(&self, parts: &Parts) -> Result<Grant> {
        let claim = claims(parts)?;
        let need = |name: &str| {
            claim(name).ok_or_else(|| unauthenticated(&format!("claim '{name}' is missing")))
        };
        let tenant = TenantId::parse(&need(&self.names.tenant)?)
            .map_err(|e| unauthenticated(&format!("claims name an invalid tenant ({e})")))?;
        let workspace = claim(&self.names.workspace)
            .map(|w| {
                WorkspaceId::parse(&w).map_err(|e| {
                    unauthenticated(&format!("claims name an invalid workspace ({e})"))
                })
            })
            .transpose()?;
        // Present, the path claim must parse to at least one glob: a malformed one is
        // refused, never read as the whole workspace.
        let paths = match claim(&self.names.paths) {
            None => PathScope::whole(),
            Some(c) => PathScope::from_claim(&c).map_err(|e| {
                unauthenticated(&format!("claim '{}' is not usable ({e})", self.names.paths))
            })?,
        };
        Ok(Grant {
            tenant,
            workspace,
            principal: need(&self.names.principal)?,
            access: self.access(&claim),
            paths,
        })
    }
}
