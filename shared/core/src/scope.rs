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

/// A workspace id: [`check_id`]'s form, or a fork's: its parent's id, `~`, and 16 lower-case
/// hex digits (`crate::forks`). `~` appears in no other id, so a fork and its parent are told
/// apart, and its parent found, from the id alone: an ordinary workspace pays nothing for
/// forks existing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspaceId(String);

/// What separates a fork's id from its parent's.
pub const FORK_SEPARATOR: char = '~';
/// Hex digits after [`FORK_SEPARATOR`].
pub const FORK_SUFFIX_LEN: usize = 16;

impl WorkspaceId {
    pub fn parse(s: &str) -> Result<Self> {
        match s.split_once(FORK_SEPARATOR) {
            None => check_id("workspace", s)?,
            Some((parent, suffix)) => {
                check_id("workspace", parent)?;
                if !is_fork_suffix(suffix) {
                    return Err(WorkspaceError::validation(format!(
                        "a fork's workspace id is its parent's id, '{FORK_SEPARATOR}' and {FORK_SUFFIX_LEN} lower-case hex digits"
                    )));
                }
            }
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The workspace this one is a fork of, if it is a fork.
    pub fn fork_parent(&self) -> Option<WorkspaceId> {
        let (parent, _) = self.0.split_once(FORK_SEPARATOR)?;
        Some(Self(parent.to_owned()))
    }

    /// The id of this workspace's fork with `suffix` (16 lower-case hex digits); `None` for
    /// a fork (a fork is not forked again) or another suffix.
    pub fn fork(&self, suffix: &str) -> Option<WorkspaceId> {
        (self.fork_parent().is_none() && is_fork_suffix(suffix))
            .then(|| Self(format!("{}{FORK_SEPARATOR}{suffix}", self.0)))
    }
}

fn is_fork_suffix(s: &str) -> bool {
    s.len() == FORK_SUFFIX_LEN && s.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

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
    fn fork_ids_name_their_parent_and_nothing_else() {
        let parent = WorkspaceId::parse("ws-1").unwrap();
        let fork = parent.fork("0123456789abcdef").unwrap();
        assert_eq!(fork.as_str(), "ws-1~0123456789abcdef");
        assert_eq!(WorkspaceId::parse(fork.as_str()).unwrap(), fork);
        assert_eq!(fork.fork_parent(), Some(parent.clone()));
        assert_eq!(parent.fork_parent(), None);
        // A fork is not forked again, and the suffix has one exact form.
        assert_eq!(fork.fork("0123456789abcdef"), None);
        for bad in [
            "ws-1~",
            "ws-1~0123456789ABCDEF",
            "ws-1~0123456789abcde",
            "ws-1~0123456789abcdef0",
            "~0123456789abcdef",
            "a/b~0123456789abcdef",
            "ws-1~0123456789abcdef~0123456789abcdef",
        ] {
            assert!(WorkspaceId::parse(bad).is_err(), "{bad:?}");
        }
        // Tenant ids never take the fork form.
        assert!(TenantId::parse("ws-1~0123456789abcdef").is_err());
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
