//! Path-scoped credentials: a key limited to some paths of its workspace. `allow` globs may
//! be read and written, `read` globs only read; a key with neither reaches the whole
//! workspace (as every key did before scopes). The service checks every path a request names
//! against the caller's scope, and filters every listing, snapshot, change log, history and
//! event stream by it, so a scoped key never learns that a path outside it exists.
//!
//! Globs are `globset` globs (matched by `crate::globs`) against the whole path, with `*`
//! never crossing a `/` (`memory/*` is `memory/a`, not `memory/a/b`; `memory/**` is
//! everything under `memory/`).
//! Paths cannot contain glob metacharacters (see `crate::path`), so a path always matches
//! itself literally.

use crate::error::{Result, WorkspaceError};
use crate::globs::{GlobSyntax, Globs};
use crate::path::FilePath;
use std::fmt;
use std::sync::Arc;

/// Most globs one key carries (allow and read together).
pub const MAX_PATH_GLOBS: usize = 32;
/// Longest glob.
pub const MAX_GLOB_LEN: usize = 256;

/// Which paths a credential reaches (see the module docs). Cheap to clone.
#[derive(Clone, Default)]
pub struct PathScope(Option<Arc<Scoped>>);

struct Scoped {
    allow: Vec<String>,
    read: Vec<String>,
    /// The `allow` globs: read and write.
    writable: Globs,
    /// The `read` globs: read only (a path is readable if either set matches it).
    read_only: Globs,
}

fn bad(glob: &str, why: impl fmt::Display) -> WorkspaceError {
    WorkspaceError::validation(format!(
        "path glob '{}' {why}",
        glob.escape_debug()
            .to_string()
            .chars()
            .take(80)
            .collect::<String>()
    ))
}

/// What a glob must be before it is compiled: 1-`MAX_GLOB_LEN` characters of the path
/// alphabet and the glob metacharacters, relative. This alone keeps a glob safe to carry in
/// the claim form (no space, no `:`, no quote).
fn check_form(g: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/-*?[]{},!".contains(c);
    if g.is_empty() || g.len() > MAX_GLOB_LEN {
        return Err(bad(g, format_args!("must be 1-{MAX_GLOB_LEN} characters")));
    }
    if let Some(c) = g.chars().find(|c| !allowed(*c)) {
        return Err(bad(
            g,
            format_args!(
                "contains {:?}; globs use the path alphabet and * ? [ ] {{ }} , !",
                c
            ),
        ));
    }
    if g.starts_with('/') {
        return Err(bad(g, "must not start with '/' (paths are relative)"));
    }
    Ok(())
}

fn check_count(allow: &[String], read: &[String]) -> Result<()> {
    if allow.len() + read.len() > MAX_PATH_GLOBS {
        return Err(WorkspaceError::validation(format!(
            "at most {MAX_PATH_GLOBS} path globs per key"
        )));
    }
    Ok(())
}

fn set_of(globs: &[String]) -> Result<Globs> {
    for g in globs {
        check_form(g)?;
    }
    Globs::new(globs.iter().map(String::as_str), GlobSyntax::PATHS)
        .map_err(|e| bad(&e.glob, format_args!("is not a glob: {}", e.reason)))
}

/// The claim form of `allow` and `read` (see [`PathScope::to_claim`]).
fn claim_text(allow: &[String], read: &[String]) -> String {
    allow
        .iter()
        .map(|g| format!("allow:{g}"))
        .chain(read.iter().map(|g| format!("read:{g}")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The claim that carries `allow` and `read` globs to a route function, `None` for the
/// whole workspace. Each glob is checked for its form and count but not compiled: the API-key
/// authorizer hands the claim on, and the route function compiles it (and refuses a glob
/// that does not, never widening it). Compiling in the authorizer as well linked the regex
/// engine into it (420 KB of its 2.53 MB arm64 zip) and compiled a scoped key twice per
/// request.
pub fn claim_of(allow: &[String], read: &[String]) -> Result<Option<String>> {
    if allow.is_empty() && read.is_empty() {
        return Ok(None);
    }
    check_count(allow, read)?;
    for g in allow.iter().chain(read) {
        check_form(g)?;
    }
    Ok(Some(claim_text(allow, read)))
}

impl PathScope {
    /// The whole workspace.
    pub fn whole() -> Self {
        Self(None)
    }

    /// `allow` (read and write) and `read` (read only) globs; both empty is the whole
    /// workspace.
    pub fn new(allow: Vec<String>, read: Vec<String>) -> Result<Self> {
        if allow.is_empty() && read.is_empty() {
            return Ok(Self::whole());
        }
        check_count(&allow, &read)?;
        let writable = set_of(&allow)?;
        let read_only = set_of(&read)?;
        Ok(Self(Some(Arc::new(Scoped {
            allow,
            read,
            writable,
            read_only,
        }))))
    }

    /// Whether the credential reaches every path (no globs).
    pub fn is_whole(&self) -> bool {
        self.0.is_none()
    }

    pub fn can_read(&self, path: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|g| g.writable.is_match(path) || g.read_only.is_match(path))
    }

    pub fn can_write(&self, path: &str) -> bool {
        self.0.as_ref().is_none_or(|g| g.writable.is_match(path))
    }

    /// The read-and-write globs (empty for the whole workspace).
    pub fn allow(&self) -> &[String] {
        self.0.as_ref().map_or(&[], |g| &g.allow)
    }

    /// The read-only globs.
    pub fn read(&self) -> &[String] {
        self.0.as_ref().map_or(&[], |g| &g.read)
    }

    /// Every glob the credential may read through (allow, then read).
    pub fn readable_globs(&self) -> Vec<String> {
        self.allow().iter().chain(self.read()).cloned().collect()
    }

    /// 403 unless the credential may read `path`. The answer depends on the path alone,
    /// never on whether a file is there, so it reveals nothing about the workspace.
    pub fn check_read(&self, path: &FilePath) -> Result<()> {
        if self.can_read(path.as_str()) {
            return Ok(());
        }
        Err(WorkspaceError::Forbidden(format!(
            "this key may read only paths matching {}; {path} is outside them",
            self.readable_globs().join(", ")
        )))
    }

    /// 403 unless the credential may write `path` (by the path alone, as [`Self::check_read`]).
    pub fn check_write(&self, path: &FilePath) -> Result<()> {
        if self.can_write(path.as_str()) {
            return Ok(());
        }
        let allow = self.allow();
        Err(WorkspaceError::Forbidden(if allow.is_empty() {
            format!("this key may not write any path (its paths are read-only); {path} is one")
        } else {
            format!(
                "this key may write only paths matching {}; {path} is outside them",
                allow.join(", ")
            )
        }))
    }

    /// The claim form: space-separated `allow:<glob>` and `read:<glob>` entries (globs hold
    /// no spaces). Empty for the whole workspace.
    pub fn to_claim(&self) -> String {
        claim_text(self.allow(), self.read())
    }

    /// Parses [`Self::to_claim`]'s form, also as API Gateway hands a JWT array claim to a
    /// function (`[allow:a read:b]`). A claim that is present must name at least one glob:
    /// an empty or malformed one is refused, never read as the whole workspace.
    pub fn from_claim(claim: &str) -> Result<Self> {
        let inner = claim.trim();
        let inner = inner
            .strip_prefix('[')
            .and_then(|s| s.strip_suffix(']'))
            .unwrap_or(inner);
        let (mut allow, mut read) = (Vec::new(), Vec::new());
        for entry in inner.split(' ').filter(|e| !e.is_empty()) {
            let entry = entry.trim_matches('"');
            match entry.split_once(':') {
                Some(("allow", g)) => allow.push(g.to_owned()),
                Some(("read", g)) => read.push(g.to_owned()),
                _ => {
                    return Err(WorkspaceError::validation(format!(
                        "path claim entry '{}' is not allow:<glob> or read:<glob>",
                        entry.escape_debug()
                    )))
                }
            }
        }
        if allow.is_empty() && read.is_empty() {
            return Err(WorkspaceError::validation(
                "the path claim names no glob; leave it out for the whole workspace",
            ));
        }
        Self::new(allow, read)
    }
}

impl PartialEq for PathScope {
    fn eq(&self, other: &Self) -> bool {
        self.allow() == other.allow() && self.read() == other.read()
    }
}

impl Eq for PathScope {}

impl fmt::Debug for PathScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_whole() {
            f.write_str("PathScope(whole workspace)")
        } else {
            write!(f, "PathScope({})", self.to_claim())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(allow: &[&str], read: &[&str]) -> PathScope {
        PathScope::new(
            allow.iter().map(|s| (*s).to_owned()).collect(),
            read.iter().map(|s| (*s).to_owned()).collect(),
        )
        .unwrap()
    }

    #[test]
    fn allow_reads_and_writes_read_only_reads() {
        let s = scope(&["memory/**"], &["docs/*.md"]);
        assert!(s.can_read("memory/a/b.md") && s.can_write("memory/a/b.md"));
        assert!(s.can_read("docs/x.md") && !s.can_write("docs/x.md"));
        // `*` stops at a separator; names that merely share a prefix are outside.
        for outside in [
            "docs/a/x.md",
            "memory2/a",
            "memoryx",
            "secret/memory/a",
            "memory",
        ] {
            assert!(!s.can_read(outside), "{outside}");
        }
        assert!(PathScope::whole().can_write("anything/at/all"));
    }

    #[test]
    fn checks_depend_on_the_path_alone() {
        let s = scope(&["memory/**"], &[]);
        let p = FilePath::parse("secret/key.txt").unwrap();
        let e = s.check_read(&p).unwrap_err();
        assert!(matches!(e, WorkspaceError::Forbidden(_)), "{e:?}");
        assert!(s.check_write(&FilePath::parse("memory/x").unwrap()).is_ok());
    }

    #[test]
    fn claims_round_trip_and_refuse_nonsense() {
        let s = scope(&["memory/**", "notes/*"], &["docs/**"]);
        assert_eq!(PathScope::from_claim(&s.to_claim()).unwrap(), s);
        assert_eq!(
            PathScope::from_claim("[allow:memory/** allow:notes/* read:docs/**]").unwrap(),
            s
        );
        for bad in [
            "",
            "[]",
            "memory/**",
            "write:a/**",
            "allow:",
            "allow:/abs",
            "allow:a\\b",
        ] {
            assert!(PathScope::from_claim(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_uncompiled_claim_carries_the_globs_and_the_route_function_compiles_them() {
        let (allow, read) = (vec!["memory/**".to_owned()], vec!["docs/*".to_owned()]);
        let claim = claim_of(&allow, &read).unwrap().unwrap();
        assert_eq!(claim, "allow:memory/** read:docs/*");
        assert_eq!(
            PathScope::from_claim(&claim).unwrap(),
            scope(&["memory/**"], &["docs/*"])
        );
        assert_eq!(claim_of(&[], &[]).unwrap(), None);
        // Well formed but not a glob: carried, then refused where it is compiled.
        let claim = claim_of(&["memory/[ab".to_owned()], &[]).unwrap().unwrap();
        assert!(PathScope::from_claim(&claim).is_err(), "{claim}");
        // What the claim form cannot carry (a space would add an entry) is refused at once.
        for bad in ["a read:b", "x:y", "", "/abs", "a\"b"] {
            assert!(claim_of(&[bad.to_owned()], &[]).is_err(), "{bad:?}");
        }
        assert!(claim_of(&vec!["a/*".to_owned(); MAX_PATH_GLOBS + 1], &[]).is_err());
    }

    #[test]
    fn globs_are_bounded_and_checked() {
        assert!(PathScope::new(vec!["a[".into()], vec![]).is_err());
        assert!(PathScope::new(vec!["a b".into()], vec![]).is_err());
        assert!(PathScope::new(vec!["x".repeat(MAX_GLOB_LEN + 1)], vec![]).is_err());
        assert!(PathScope::new(vec!["a/*".into(); MAX_PATH_GLOBS + 1], vec![]).is_err());
        assert!(PathScope::new(vec![], vec![]).unwrap().is_whole());
    }
}
