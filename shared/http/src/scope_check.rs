//! WCT-1 for requests that name a scope themselves. Tenant and workspace always come from
//! the credential; a client may still send them (an `X-Tenant-Id` header, a `tenantId`
//! query parameter or body field, ...). Naming its own scope is harmless; naming any other
//! is refused with 403 before anything is read, so nothing about that scope is revealed.

use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use workspace_core::{Identity, Result, WorkspaceError};

const TENANT_NAMES: &[&str] = &["tenant", "tenantId", "tenant_id"];
const WORKSPACE_NAMES: &[&str] = &["workspace", "workspaceId", "workspace_id"];

pub fn names_only_its_own_scope(who: &Identity, parts: &Parts, body: &Bytes) -> Result<()> {
    let mut tenants: Vec<String> = Vec::new();
    let mut workspaces: Vec<String> = Vec::new();
    let header = |name: &str| {
        parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
    };
    tenants.extend(header("x-tenant-id"));
    workspaces.extend(header("x-workspace-id"));
    // A malformed query is reported by the route itself.
    if let Ok(q) = Query::parse(parts) {
        tenants.extend(
            TENANT_NAMES
                .iter()
                .filter_map(|n| q.get(n))
                .map(str::to_owned),
        );
        workspaces.extend(
            WORKSPACE_NAMES
                .iter()
                .filter_map(|n| q.get(n))
                .map(str::to_owned),
        );
    }
    if body.first() == Some(&b'{') {
        if let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice(body) {
            let field = |names: &[&str]| -> Vec<String> {
                names
                    .iter()
                    .filter_map(|n| obj.get(*n))
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect()
            };
            tenants.extend(field(TENANT_NAMES));
            workspaces.extend(field(WORKSPACE_NAMES));
        }
    }
    if tenants.iter().any(|t| t != who.scope.tenant.as_str())
        || workspaces.iter().any(|w| w != who.scope.workspace.as_str())
    {
        return Err(WorkspaceError::Forbidden(
            "the request names a tenant or workspace this credential does not act on; \
             the scope comes from the credential"
                .to_owned(),
        ));
    }
    Ok(())
}
