//! Directories over the flat namespace. A directory exists when some live file's path
//! starts with `<dir>/`; `create_directory` makes an empty one real by writing an empty
//! marker file `<dir>/.keep` (the `.gitkeep` convention: an ordinary file an HTTP user sees
//! in listings and may delete). Tools hide markers from listings and searches.

use crate::paths::Target;
use workspace_core::{FileMeta, FilePath, Identity, PathPrefix, Result, WorkspaceService};

/// The marker `create_directory` writes.
pub const MARKER: &str = ".keep";

/// True for a directory marker (`<dir>/.keep`).
pub fn is_marker(path: &str) -> bool {
    path.rsplit('/').next() == Some(MARKER) && path.contains('/')
}

/// Every live file under `prefix`, sorted by path (all pages).
pub async fn files_under(
    svc: &WorkspaceService,
    who: &Identity,
    prefix: &str,
) -> Result<Vec<FileMeta>> {
    let prefix = PathPrefix::parse(prefix)?;
    let mut out = Vec::new();
    let mut after: Option<FilePath> = None;
    loop {
        let page = svc.list(who, &prefix, None, after.as_ref()).await?;
        out.extend(page.files);
        match page.next_after {
            Some(next) => after = Some(next),
            None => return Ok(out),
        }
    }
}

/// The live file at `path`, without reading its body (one listing query).
pub async fn file_meta(
    svc: &WorkspaceService,
    who: &Identity,
    path: &FilePath,
) -> Result<Option<FileMeta>> {
    // `path` sorts before every other path it prefixes, so it is first if it exists.
    let page = svc
        .list(who, &PathPrefix::parse(path.as_str())?, Some(1), None)
        .await?;
    Ok(page.files.into_iter().find(|f| f.path == path.as_str()))
}

/// Whether `target` is a directory (the root always is).
pub async fn dir_exists(svc: &WorkspaceService, who: &Identity, target: &Target) -> Result<bool> {
    match target {
        Target::Root => Ok(true),
        Target::Path(p) => {
            let page = svc
                .list(who, &PathPrefix::parse(&format!("{p}/"))?, Some(1), None)
                .await?;
            Ok(!page.files.is_empty())
        }
    }
}

/// The first ancestor of `path` that is a file, if any (a file cannot hold files).
pub async fn file_ancestor(
    svc: &WorkspaceService,
    who: &Identity,
    path: &FilePath,
) -> Result<Option<FilePath>> {
    for a in crate::paths::ancestors(path) {
        if file_meta(svc, who, &a).await?.is_some() {
            return Ok(Some(a));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_keep_files_below_a_directory() {
        assert!(is_marker("a/.keep"));
        assert!(is_marker("a/b/.keep"));
        assert!(!is_marker("a/x.keep"));
        assert!(!is_marker("a/.keeps"));
    }
}
