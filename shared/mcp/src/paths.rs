//! Tool paths → workspace paths. Agents name files as on a disk mounted at `/workspace`:
//! relative (`notes/a.md`) or absolute under the mount (`/workspace/notes/a.md`). `.` and `..`
//! are resolved lexically like a file system would; a path that climbs above the root or is
//! absolute elsewhere is refused, never clamped. What remains must then be a valid
//! [`FilePath`] (the same rule as the HTTP API), or be the root itself.

use workspace_core::FilePath;

/// The mount point agents see.
pub const MOUNT: &str = "/workspace";

/// The refusal for anything outside the workspace, worded as the published tool words it.
pub const ACCESS_DENIED: &str = "Error: Access denied. Path must be within /workspace";

/// A resolved tool path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The workspace root (`""`, `.`, `/workspace`).
    Root,
    Path(FilePath),
}

impl Target {
    /// The path inside the workspace (`""` for the root).
    pub fn rel(&self) -> &str {
        match self {
            Target::Root => "",
            Target::Path(p) => p.as_str(),
        }
    }

    /// The listing prefix of this directory: `""` or `"<path>/"`.
    pub fn dir_prefix(&self) -> String {
        match self {
            Target::Root => String::new(),
            Target::Path(p) => format!("{p}/"),
        }
    }
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// It escapes the workspace.
    Denied,
    /// It stays inside but breaks the path rules (characters, length).
    Invalid(String),
}

impl PathError {
    /// The tool's answer for this refusal.
    pub fn text(&self, shown: &str) -> String {
        match self {
            PathError::Denied => ACCESS_DENIED.to_owned(),
            PathError::Invalid(why) => format!("Error: Invalid path '{shown}': {why}"),
        }
    }
}

pub fn resolve(input: &str) -> Result<Target, PathError> {
    if input.contains('\\') {
        // A backslash is no separator here; refusing it keeps `..\x` from meaning anything.
        return Err(PathError::Invalid(
            "backslashes are not allowed; separate directories with '/'".to_owned(),
        ));
    }
    let rest = if input.starts_with('/') {
        if input == MOUNT {
            ""
        } else if let Some(r) = input.strip_prefix("/workspace/") {
            r
        } else {
            return Err(PathError::Denied);
        }
    } else {
        input
    };
    let mut segments: Vec<&str> = Vec::new();
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::Denied);
                }
            }
            s => segments.push(s),
        }
    }
    if segments.is_empty() {
        return Ok(Target::Root);
    }
    FilePath::parse(&segments.join("/"))
        .map(Target::Path)
        .map_err(|e| PathError::Invalid(e.to_string()))
}

/// True when a glob pattern could reach outside the directory it is applied to.
pub fn pattern_escapes(pattern: &str) -> bool {
    pattern.starts_with('/') || pattern.contains('\\') || pattern.split('/').any(|seg| seg == "..")
}

/// The ancestors of a path, nearest last: `a/b/c` → `a`, `a/b`.
pub fn ancestors(path: &FilePath) -> Vec<FilePath> {
    let s = path.as_str();
    s.match_indices('/')
        .filter_map(|(i, _)| FilePath::parse(&s[..i]).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> String {
        resolve(s).unwrap().rel().to_owned()
    }

    #[test]
    fn relative_and_mounted_paths_name_the_same_file() {
        assert_eq!(rel("notes/a.md"), "notes/a.md");
        assert_eq!(rel("/workspace/notes/a.md"), "notes/a.md");
        assert_eq!(rel("./notes//a.md"), "notes/a.md");
        assert_eq!(rel("notes/x/../a.md"), "notes/a.md");
        for root in ["", ".", "/workspace", "/workspace/", "a/..", "/workspace/."] {
            assert_eq!(resolve(root), Ok(Target::Root), "{root:?}");
        }
    }

    #[test]
    fn anything_outside_is_denied() {
        for p in [
            "../../../etc/passwd",
            "/etc/passwd",
            "../outside.txt",
            "..",
            "a/../../b",
            "/workspace/../etc/passwd",
            "/workspace2/x",
            "/",
            "//workspace/x",
        ] {
            assert_eq!(resolve(p), Err(PathError::Denied), "{p:?}");
            assert_eq!(PathError::Denied.text(p), ACCESS_DENIED);
        }
    }

    #[test]
    fn bad_characters_are_invalid_not_rewritten() {
        for p in ["a\\..\\b", "a b", "a%2e%2e/b", "é.md", "a\0b", ".hidden"] {
            assert!(
                matches!(resolve(p), Err(PathError::Invalid(_))),
                "{p:?}: {:?}",
                resolve(p)
            );
        }
    }

    #[test]
    fn patterns_with_parent_segments_escape() {
        for p in ["../*", "a/../../*", "/etc/*", "**/..", "..\\*"] {
            assert!(pattern_escapes(p), "{p}");
        }
        for p in ["*.md", "**/*.md", "a/{b,c}/?.txt", "..md", "a..b"] {
            assert!(!pattern_escapes(p), "{p}");
        }
    }

    #[test]
    fn ancestors_nearest_last() {
        let p = FilePath::parse("a/b/c").unwrap();
        let got: Vec<_> = ancestors(&p).iter().map(|a| a.to_string()).collect();
        assert_eq!(got, ["a", "a/b"]);
    }
}
