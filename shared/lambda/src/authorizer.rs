//! The API-key authorizer for the HTTP API (`functions/authorizer`): resolves a bearer key
//! by its digest in the DynamoDB table into the same identity the JWT path produces, handed
//! to the route functions as the authorizer context under the configured claim names. A
//! tenant-wide key names no workspace: the route function resolves its `X-Workspace-Id`.
//! Answers in the HTTP API "simple response" format.

use crate::identity::ClaimNames;
use serde_json::{json, Map, Value};
use workspace_core::keys::{key_digest, KeyStore};

fn deny() -> Value {
    json!({ "isAuthorized": false })
}

/// Generic over the store, so the authorizer links only the one read it makes (a
/// `dyn KeyStore` would link every method of the table adapter, and each is an SDK operation).
pub async fn authorize<K: KeyStore + ?Sized>(
    store: &K,
    names: &ClaimNames,
    event: &Value,
) -> Value {
    let header = |name: &str| {
        event["headers"]
            .as_object()
            .and_then(|h| h.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
            .and_then(|(_, v)| v.as_str())
    };
    let Some(token) = header("authorization").and_then(|v| {
        v.split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
    }) else {
        return deny();
    };
    let key = match store.key_by_digest(&key_digest(token)).await {
        Ok(Some(k)) if k.revoked_at.is_none() => k,
        Ok(_) => return deny(),
        Err(e) => {
            // Fail closed; the gateway answers 500 to an authorizer error, 403 to a deny.
            tracing::error!(error = %e, "key lookup failed");
            return deny();
        }
    };
    let mut scopes = Vec::new();
    if key.read {
        scopes.push("workspace:read");
    }
    if key.write {
        scopes.push("workspace:write");
    }
    if key.admin {
        scopes.push("workspace:admin");
    }
    // The key's globs go on as they are stored; the route function compiles them and
    // refuses one that does not compile. A glob that could not even be carried in the claim
    // is refused here, never widened to every path.
    let Ok(paths) = key.path_claim() else {
        tracing::error!(key = %key.id, "stored path globs are malformed");
        return deny();
    };
    let mut context = Map::new();
    context.insert(names.tenant.clone(), Value::from(key.tenant.clone()));
    // Only a bound key names its workspace here. A tenant-wide key's `X-Workspace-Id` is
    // resolved by the route function, by the same rule as on the local server (so its
    // refusals carry our envelope, and a registered workspace is checked against the
    // registry there).
    if let Some(own) = &key.workspace {
        context.insert(names.workspace.clone(), Value::from(own.clone()));
    }
    context.insert(names.principal.clone(), Value::from(key.principal.clone()));
    context.insert(names.scopes.clone(), Value::from(scopes.join(" ")));
    if let Some(paths) = paths {
        context.insert(names.paths.clone(), Value::from(paths));
    }
    json!({ "isAuthorized": true, "context": context })
}
