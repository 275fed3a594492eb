//! Memory paths: `/memories/<rest>` as the model writes them ↔ workspace files under the
//! memory prefix (`memories/<rest>` by default). A path is refused with the reference
//! implementation's texts; one the workspace's path rules refuse gets their reason.

use crate::path::{FilePath, PathPrefix};
use percent_encoding::percent_decode_str;

/// The directory every memory path starts with, as the model sees it.
pub const MEMORY_ROOT: &str = "/memories";
/// Where memories live in the workspace unless configured (`WORKSPACE_MEMORY_PREFIX`).
pub const DEFAULT_MEMORY_PREFIX: &str = "memories";

/// A memory path the tool may act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPath {
    /// As the model wrote it (answers quote it back).
    pub shown: String,
    /// The workspace file it names; `None` for `/memories` itself.
    pub file: Option<FilePath>,
    /// Every file under it as a directory (`memories/dir/`).
    pub under: PathPrefix,
}

impl MemoryPath {
    pub fn is_root(&self) -> bool {
        self.file.is_none()
    }
}

/// `path` as a memory path under `prefix`, or the tool's error text.
pub fn resolve(prefix: &str, path: &str) -> Result<MemoryPath, String> {
    let Some(rest) = path
        .strip_prefix(MEMORY_ROOT)
        .filter(|r| r.is_empty() || r.starts_with('/'))
    else {
        // The SDK also takes `/memoriesX` as `/memories/X`; a path must name the
        // directory itself or something in it here.
        return Err(format!("Path must start with {MEMORY_ROOT}, got: {path}"));
    };
    let escape = || format!("Path {path} would escape /memories directory");
    // `..` anywhere (also percent-encoded, or with backslashes) is refused outright, even
    // where it would resolve back inside: nothing a model needs, everything an attack
    // tries.
    let decoded = percent_decode_str(rest).decode_utf8_lossy();
    if rest.contains('\\')
        || decoded.contains('\\')
        || decoded.split('/').any(|s| s == "..")
        || rest.split('/').any(|s| s == "..")
    {
        return Err(escape());
    }
    // `.` and empty segments resolve away, as on a filesystem.
    let segments: Vec<&str> = rest
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let invalid = |e: crate::WorkspaceError| format!("Invalid memory path {path}: {e}");
    if segments.is_empty() {
        let under = PathPrefix::parse(&format!("{prefix}/")).map_err(invalid)?;
        return Ok(MemoryPath {
            shown: path.to_owned(),
            file: None,
            under,
        });
    }
    let name = format!("{prefix}/{}", segments.join("/"));
    let file = FilePath::parse(&name).map_err(invalid)?;
    let under = PathPrefix::parse(&format!("{name}/")).map_err(invalid)?;
    Ok(MemoryPath {
        shown: path.to_owned(),
        file: Some(file),
        under,
    })
}

/// The memory path of workspace file `file` under `prefix` (for answers about files the
/// model did not name itself, such as those moved with a directory).
pub fn shown(prefix: &str, file: &str) -> String {
    match file.strip_prefix(prefix).and_then(|r| r.strip_prefix('/')) {
        Some(rest) => format!("{MEMORY_ROOT}/{rest}"),
        None => file.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_paths_map_onto_the_prefix() {
        let p = resolve("memories", "/memories/notes/a.md").unwrap();
        assert_eq!(p.file.unwrap().as_str(), "memories/notes/a.md");
        assert_eq!(p.under.as_str(), "memories/notes/a.md/");
        assert!(resolve("memories", "/memories").unwrap().is_root());
        assert!(resolve("memories", "/memories/").unwrap().is_root());
        assert_eq!(
            resolve("agent/mem", "/memories/./x//y")
                .unwrap()
                .file
                .unwrap()
                .as_str(),
            "agent/mem/x/y"
        );
    }

    #[test]
    fn escapes_and_foreign_roots_get_the_reference_texts() {
        for bad in ["/etc/passwd", "memories/a", "/memoriesX/a", "", "/"] {
            assert_eq!(
                resolve("memories", bad).unwrap_err(),
                format!("Path must start with /memories, got: {bad}")
            );
        }
        for bad in [
            "/memories/../etc/passwd",
            "/memories/a/../../b",
            "/memories/a/..",
            "/memories/%2e%2e%2fsecret",
            "/memories/%2E%2E/x",
            "/memories/a\\..\\b",
            "/memories/a%5c..%5cb",
        ] {
            assert_eq!(
                resolve("memories", bad).unwrap_err(),
                format!("Path {bad} would escape /memories directory")
            );
        }
        assert!(resolve("memories", "/memories/a b.md")
            .unwrap_err()
            .starts_with("Invalid memory path /memories/a b.md: "));
    }
}
