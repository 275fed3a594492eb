//! WCT-1 for requests that name a scope themselves. Tenant and workspace always come from
//! the credential; a client may still send them (an `X-Tenant-Id` header, a `tenantId`
//! query parameter or body field, ...). Naming its own scope is harmless; naming any other
//! is refused with 403 before anything is read, so nothing about that scope is revealed.

use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use workspace_core::{Result, WorkspaceError};

const TENANT_NAMES: &[&str] = &["tenant", "tenantId", "tenant_id"];

/// Who besides its tenant a credential is, in the names a request may use for it.
#[derive(Debug, Clone, Copy)]
pub enum Own<'a> {
    /// A workspace's caller: `X-Workspace-Id`, `workspace`, `workspaceId`, `workspace_id`.
    Workspace(&'a str),
    /// The workspace API's caller (which names workspaces in its paths): `user`, `userId`,
    /// `user_id`.
    User(&'a str),
}

impl Own<'_> {
    fn header(self) -> Option<&'static str> {
        match self {
            Own::Workspace(_) => Some("x-workspace-id"),
            Own::User(_) => None,
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            Own::Workspace(_) => &["workspace", "workspaceId", "workspace_id"],
            Own::User(_) => &["user", "userId", "user_id"],
        }
    }

    fn refusal(self) -> &'static str {
        match self {
            Own::Workspace(_) => {
                "the request names a tenant or workspace this credential does not act on; \
                 the scope comes from the credential"
            }
            Own::User(_) => "the request names a tenant or user other than the credential's own",
        }
    }

    fn id(&self) -> &str {
        match self {
            Own::Workspace(id) | Own::User(id) => id,
        }
    }
}

/// 403 when the request names (in a header, a query parameter or a top-level field of a
/// JSON object body) a tenant other than `tenant`, or a workspace or user other than `own`.
/// The one WCT-1 check of every route that needs a credential.
pub fn names_only_its_own(tenant: &str, own: Own<'_>, parts: &Parts, body: &Bytes) -> Result<()> {
    let header = |name: &str| {
        parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
    };
    let mut tenants = header("x-tenant-id");
    let mut others = own.header().map(header).unwrap_or_default();
    // A malformed query is reported by the route itself.
    if let Ok(q) = Query::parse(parts) {
        let named = |names: &[&str]| -> Vec<String> {
            names
                .iter()
                .filter_map(|n| q.get(n))
                .map(str::to_owned)
                .collect()
        };
        tenants.extend(named(TENANT_NAMES));
        others.extend(named(own.names()));
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
            others.extend(field(own.names()));
        }
    }
    if tenants.iter().any(|t| t != tenant) || others.iter().any(|o| o != own.id()) {
        return Err(WorkspaceError::Forbidden(own.refusal().to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn check(own: Own<'_>, uri: &str, headers: &[(&str, &str)], body: &str) -> bool {
        names_only_its_own(
            "acme",
            own,
            &parts(uri, headers),
            &Bytes::from(body.to_owned()),
        )
        .is_ok()
    }

    #[test]
    fn every_name_of_another_tenant_is_refused_for_both_kinds_of_caller() {
        for own in [Own::Workspace("main"), Own::User("alice")] {
            assert!(check(own, "/x?tenant_id=acme", &[], ""), "{own:?}");
            for (uri, headers, body) in [
                ("/x?tenant_id=evil", &[][..], ""),
                ("/x?tenantId=evil", &[][..], ""),
                ("/x?tenant=evil", &[][..], ""),
                ("/x", &[("x-tenant-id", "evil")][..], ""),
                ("/x", &[][..], r#"{"tenant_id": "evil"}"#),
            ] {
                assert!(!check(own, uri, headers, body), "{own:?} {uri} {body}");
            }
        }
    }

    #[test]
    fn a_workspace_caller_names_only_its_workspace_and_a_tenant_caller_only_itself() {
        let ws = Own::Workspace("main");
        assert!(check(
            ws,
            "/x?workspace=main",
            &[("x-workspace-id", "main")],
            ""
        ));
        assert!(!check(ws, "/x?workspace_id=other", &[], ""));
        assert!(!check(ws, "/x", &[("x-workspace-id", "other")], ""));
        assert!(!check(ws, "/x", &[], r#"{"workspaceId": "other"}"#));
        let user = Own::User("alice");
        assert!(check(
            user,
            "/x?userId=alice",
            &[("x-workspace-id", "any")],
            ""
        ));
        assert!(!check(user, "/x?user_id=bob", &[], ""));
        assert!(!check(user, "/x", &[], r#"{"user": "bob"}"#));
    }
}
