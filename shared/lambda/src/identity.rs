//! Identity on Lambda: tenant, workspace and principal come from the API Gateway authorizer
//! context (JWT claims, or a Lambda authorizer's context), under configurable claim names.
//! A request without them is 401; there is never a default tenant.

use async_trait::async_trait;
use http::request::Parts;
use lambda_http::request::RequestContext;
use workspace_core::sessions::Caller;
use workspace_core::{Access, Identity, Result, Scope, TenantId, WorkspaceError};
use workspace_http::auth::Authenticator;

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
    async fn authenticate(&self, parts: &Parts) -> Result<Identity> {
        let claim = claims(parts)?;
        let need = |name: &str| {
            claim(name).ok_or_else(|| unauthenticated(&format!("claim '{name}' is missing")))
        };
        let tenant = need(&self.names.tenant)?;
        let workspace = need(&self.names.workspace)?;
        let principal = need(&self.names.principal)?;
        let scope = Scope::parse(&tenant, &workspace)
            .map_err(|e| unauthenticated(&format!("claims name an invalid scope ({e})")))?;
        Ok(Identity {
            scope,
            principal,
            access: self.access(&claim),
        })
    }

    /// The `/workspaces` API needs tenant and principal only: a user-level token without
    /// a workspace claim may call it.
    async fn caller(&self, parts: &Parts) -> Result<Caller> {
        let claim = claims(parts)?;
        let need = |name: &str| {
            claim(name).ok_or_else(|| unauthenticated(&format!("claim '{name}' is missing")))
        };
        let tenant = TenantId::parse(&need(&self.names.tenant)?)
            .map_err(|e| unauthenticated(&format!("claims name an invalid tenant ({e})")))?;
        Ok(Caller {
            tenant,
            principal: need(&self.names.principal)?,
            access: self.access(&claim),
        })
    }
}
