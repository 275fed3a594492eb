//! File paths: a flat namespace with `/` inside names.
//!
//! The rule is `^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$` plus: no empty, `.` or `..` segment and
//! no trailing `/`. Nothing is normalised: a path that breaks a rule is refused, never
//! rewritten into a different path. Written by hand because the rule is a character class and
//! a segment walk; a regex engine would still need the segment checks.

use crate::error::{Result, WorkspaceError};
use std::fmt;

/// Longest accepted path, in bytes (all accepted characters are ASCII).
pub const MAX_PATH_LEN: usize = 256;

/// A validated file path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FilePath(String);

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-')
}

/// Describes a character for an error message without echoing control bytes.
fn describe(c: char) -> String {
    if c.is_control() || !c.is_ascii() {
        format!("U+{:04X}", c as u32)
    } else {
        format!("'{c}'")
    }
}

fn check_segments(s: &str, what: &str, allow_trailing_slash: bool) -> Result<()> {
    let body = if allow_trailing_slash {
        s.strip_suffix('/').unwrap_or(s)
    } else {
        s
    };
    if body.is_empty() {
        return Ok(());
    }
    for seg in body.split('/') {
        match seg {
            "" => {
                return Err(WorkspaceError::validation(format!(
                    "{what} must not contain an empty segment ('//', leading or trailing '/')"
                )))
            }
            "." | ".." => {
                return Err(WorkspaceError::validation(format!(
                    "{what} must not contain a '{seg}' segment"
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_chars(s: &str, what: &str) -> Result<()> {
    if let Some(c) = s.chars().find(|c| !allowed(*c)) {
        return Err(WorkspaceError::validation(format!(
            "{what} contains {}; allowed are A-Z a-z 0-9 . _ / -",
            describe(c)
        )));
    }
    Ok(())
}

impl FilePath {
    pub fn parse(s: &str) -> Result<Self> {
        if s.is_empty() {
            return Err(WorkspaceError::validation("path must not be empty"));
        }
        if s.len() > MAX_PATH_LEN {
            return Err(WorkspaceError::validation(format!(
                "path is {} bytes; the limit is {MAX_PATH_LEN}",
                s.len()
            )));
        }
        check_chars(s, "path")?;
        if !s.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return Err(WorkspaceError::validation(
                "path must start with a letter or digit (no leading '/', '.', '_' or '-')",
            ));
        }
        if s.ends_with('/') {
            return Err(WorkspaceError::validation("path must not end with '/'"));
        }
        check_segments(s, "path", false)?;
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated listing prefix: the path alphabet, may be empty, may end with '/',
/// never contains a `.`/`..`/empty segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathPrefix(String);

impl PathPrefix {
    pub fn parse(s: &str) -> Result<Self> {
        if s.len() > MAX_PATH_LEN {
            return Err(WorkspaceError::validation(format!(
                "prefix is {} bytes; the limit is {MAX_PATH_LEN}",
                s.len()
            )));
        }
        check_chars(s, "prefix")?;
        if s.starts_with('/') {
            return Err(WorkspaceError::validation("prefix must not start with '/'"));
        }
        // A final partial segment may be "." (prefix of ".md"-less names is fine) but a
        // complete `..` segment is traversal whatever follows.
        let complete = match s.rfind('/') {
            Some(i) => &s[..=i],
            None => "",
        };
        check_segments(complete, "prefix", true)?;
        let last = &s[complete.len()..];
        if last == ".." {
            return Err(WorkspaceError::validation(
                "prefix must not contain a '..' segment",
            ));
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, path: &FilePath) -> bool {
        path.as_str().starts_with(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_and_nested_paths() {
        for p in [
            "a",
            "README.md",
            "behavior/CRUD.md",
            "a/b/c.d-e_f",
            "9",
            "x.y.z",
        ] {
            assert_eq!(FilePath::parse(p).unwrap().as_str(), p);
        }
        let max = "a".repeat(MAX_PATH_LEN);
        assert!(FilePath::parse(&max).is_ok());
    }

    #[test]
    fn refuses_traversal_and_odd_shapes() {
        for p in [
            "", "../x", "a/../b", "a/./b", "/abs", "a//b", "a/", ".hidden", "-x", "_x", "a/..",
            "a/.", "a\\b", "a\0b", "a\nb", "a b", "a%2Fb", "ａ", "a／b", "a．b", "e\u{301}", "é",
        ] {
            assert!(
                matches!(FilePath::parse(p), Err(WorkspaceError::Validation(_))),
                "{p:?} should be refused"
            );
        }
        assert!(FilePath::parse(&"a".repeat(MAX_PATH_LEN + 1)).is_err());
    }

    #[test]
    fn prefixes() {
        for p in ["", "a", "a/", "behavior/CR", "a/b/", "a/."] {
            assert!(PathPrefix::parse(p).is_ok(), "{p:?}");
        }
        for p in ["/a", "../", "a/../", "a//", "..", "a/..", "a\\", "a*"] {
            assert!(PathPrefix::parse(p).is_err(), "{p:?}");
        }
        let pre = PathPrefix::parse("a/").unwrap();
        assert!(pre.matches(&FilePath::parse("a/b").unwrap()));
        assert!(!pre.matches(&FilePath::parse("ab").unwrap()));
    }
}
