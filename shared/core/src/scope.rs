//! Who is asking and which workspace they act on. Tenant and workspace come only from the
//! authenticated identity; nothing in a request body, query or other header can change them.

use crate::error::{Result, WorkspaceError};
use crate::path_scope::PathScope;
use std::fmt;

/// Longest tenant or workspace id.
pub const MAX_ID_LEN: usize = 64;

/// Checks an id: letters, digits, `_` and `-`, starting with a letter or digit. Storage keys
/// join ids with `/` and `#`, so neither may appear in one (tenant `acme` can never address
/// `acme-evil` because every key is `<tenant><separator>...`).
fn check_id(kind: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= MAX_ID_LEN
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::validation(format!(
            "{kind} id must be 1-{MAX_ID_LEN} characters of A-Z a-z 0-9 _ -, starting with a letter or digit"
        )))
    }
}

macro_rules! id_type {
    ($name:ident, $kind:literal) => {
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: &str) -> Result<Self> {
                check_id($kind, s)?;
                Ok(Self(s.to_owned()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(TenantId, "tenant");
id_type!(WorkspaceId, "workspace");

/// One tenant's workspace: the unit every file, version and key belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope {
    pub tenant: TenantId,
    pub workspace: WorkspaceId,
}

impl Scope {
    pub fn new(tenant: TenantId, workspace: WorkspaceId) -> Self {
        Self { tenant, workspace }
    }

    pub fn parse(tenant: &str, workspace: &str) -> Result<Self> {
        Ok(Self::new(
            TenantId::parse(tenant)?,
            WorkspaceId::parse(workspace)?,
        ))
    }

    /// Prefix for every storage key of this scope. Ids cannot contain `/`, so the prefix of
    /// one scope is never a prefix of another's.
    pub fn key_prefix(&self) -> String {
        format!("t/{}/w/{}/", self.tenant, self.workspace)
    }

    /// The scope whose [`Scope::key_prefix`] is exactly `prefix`.
    pub fn from_key_prefix(prefix: &str) -> Option<Self> {
        let rest = prefix.strip_prefix("t/")?.strip_suffix('/')?;
        let (tenant, workspace) = rest.split_once("/w/")?;
        Self::parse(tenant, workspace).ok()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tenant, self.workspace)
    }
}

/// What a credential may do: `workspace:read`, `workspace:write`, and `workspace:admin`
/// (erasing versions from history).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    pub read: bool,
    pub write: bool,
    pub admin: bool,
}

impl Access {
    pub const READ_WRITE: Self = Self {
        read: true,
        write: true,
        admin: false,
    };
    pub const READ_ONLY: Self = Self {
        read: true,
        write: false,
        admin: false,
    };

    /// From OAuth-style scope names (`workspace:read`, `workspace:write`,
    /// `workspace:admin`); others ignored.
    pub fn from_scopes<'a>(scopes: impl IntoIterator<Item = &'a str>) -> Self {
        let mut a = Self::default();
        for s in scopes {
            match s {
                "workspace:read" => a.read = true,
                "workspace:write" => a.write = true,
                "workspace:admin" => a.admin = true,
                _ => {}
            }
        }
        a
    }
}

/// The authenticated caller: the scope it acts on, a principal name for audit, what it may
/// do there, and which of its paths it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub scope: Scope,
    pub principal: String,
    pub access: Access,
    pub paths: PathScope,
}

impl Identity {
    /// A read-write identity (tests, development keys).
    pub fn read_write(scope: Scope, principal: impl Into<String>) -> Self {
        Self {
            scope,
            principal: principal.into(),
            access: Access::READ_WRITE,
            paths: PathScope::whole(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_refuse_separators_and_oddities() {
        assert!(TenantId::parse("acme").is_ok());
        assert!(TenantId::parse("acme-evil_2").is_ok());
        for bad in ["", "a/b", "a#b", "-a", "a b", "ä", &"a".repeat(65)] {
            assert!(TenantId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn scopes_grant_only_what_they_name() {
        assert_eq!(
            Access::from_scopes("workspace:read workspace:write".split(' ')),
            Access::READ_WRITE
        );
        assert_eq!(Access::from_scopes(["workspace:read"]), Access::READ_ONLY);
        assert_eq!(
            Access::from_scopes(["workspace:owner", "read", "admin"]),
            Access::default()
        );
        // Admin is its own grant: it implies neither reading nor writing.
        assert_eq!(
            Access::from_scopes(["workspace:admin"]),
            Access {
                admin: true,
                ..Access::default()
            }
        );
    }

    #[test]
    fn key_prefixes_of_sibling_tenants_do_not_nest() {
        let a = Scope::parse("acme", "w").unwrap().key_prefix();
        let b = Scope::parse("acme-evil", "w").unwrap().key_prefix();
        assert!(!b.starts_with(&a) && !a.starts_with(&b));
    }

    #[test]
    fn key_prefixes_name_their_scope() {
        let s = Scope::parse("acme", "ws-1").unwrap();
        assert_eq!(Scope::from_key_prefix(&s.key_prefix()), Some(s));
        for bad in ["t/acme/w/ws-1", "t/acme/ws-1/", "t/a/b/w/c/", "x/acme/w/w/"] {
            assert_eq!(Scope::from_key_prefix(bad), None, "{bad}");
        }
    }
}
