//! write_file, create_directory, delete_file, move_file, edit_file. Each goes through
//! `WorkspaceService::put`/`delete` exactly as the HTTP PUT/DELETE do (versions, quotas,
//! events, WSR-1 redaction). `expected_version` becomes the same If-Match precondition the
//! HTTP API uses, so a stale writer loses atomically, never silently.

use super::args::{self, Args};
use super::read::{load, not_a_file};
use super::{
    fail, from_domain, require_write, target, version_conflict, Outcome, ToolOutput, Workspace,
};
use crate::paths::Target;
use crate::tree::{self, MARKER};
use workspace_core::{FileMeta, FilePath, PutRequest, StoredFile, WorkspaceError};

/// A write's domain error: a lost precondition names the current version.
fn write_error(e: WorkspaceError, shown: &str, expected: Option<u64>) -> ToolOutput {
    match e {
        WorkspaceError::Conflict {
            current_version, ..
        } => version_conflict(shown, current_version, expected),
        other => from_domain(other, shown),
    }
}

/// The file path a write names (never the root, never a directory, never below a file).
pub(super) async fn file_target(ws: &Workspace<'_>, shown: &str) -> Result<FilePath, ToolOutput> {
    let path = match target(shown)? {
        Target::Root => return Err(fail(format!("Not a file: {shown} is a directory"))),
        Target::Path(p) => p,
    };
    let scope = ws.who;
    let is_dir = tree::dir_exists(ws.service, scope, &Target::Path(path.clone()))
        .await
        .map_err(|e| from_domain(e, shown))?;
    if is_dir {
        return Err(fail(format!("Not a file: {shown} is a directory")));
    }
    if let Some(a) = tree::file_ancestor(ws.service, scope, &path)
        .await
        .map_err(|e| from_domain(e, shown))?
    {
        return Err(fail(format!(
            "Cannot write {shown}: {a} is a file, not a directory"
        )));
    }
    Ok(path)
}

/// `expected_version` as preconditions: `(If-Match etag, If-None-Match: *)`.
pub(super) async fn precondition(
    ws: &Workspace<'_>,
    path: &FilePath,
    shown: &str,
    expected: Option<u64>,
) -> Result<(Option<String>, bool), ToolOutput> {
    match expected {
        None => Ok((None, false)),
        Some(0) => Ok((None, true)),
        Some(n) => {
            let meta = tree::file_meta(ws.service, ws.who, path)
                .await
                .map_err(|e| from_domain(e, shown))?;
            match meta {
                Some(m) if m.version == n => Ok((Some(m.etag), false)),
                Some(m) => Err(version_conflict(shown, m.version, Some(n))),
                None => Err(version_conflict(shown, 0, Some(n))),
            }
        }
    }
}

/// The file a delete (or a move) removes, which must exist, and `expected_version` as its
/// If-Match etag (0, "must not exist", is a conflict with the file that does).
pub(super) async fn existing(
    ws: &Workspace<'_>,
    path: &FilePath,
    shown: &str,
    expected: Option<u64>,
) -> Result<(FileMeta, Option<String>), ToolOutput> {
    let meta = tree::file_meta(ws.service, ws.who, path)
        .await
        .map_err(|e| from_domain(e, shown))?;
    let Some(m) = meta else {
        return Err(not_a_file(ws, path, shown).await);
    };
    let if_match = match expected {
        Some(e) if e != m.version => return Err(version_conflict(shown, m.version, Some(e))),
        Some(_) => Some(m.etag.clone()),
        None => None,
    };
    Ok((m, if_match))
}

async fn put(
    ws: &Workspace<'_>,
    path: &FilePath,
    content: Vec<u8>,
    content_type: Option<String>,
    (if_match, if_none_match_any): (Option<String>, bool),
) -> Result<StoredFile, WorkspaceError> {
    ws.service
        .put(
            ws.who,
            PutRequest {
                merge: None,
                path: Some(path.clone()),
                content,
                content_type,
                if_match,
                if_none_match_any,
                idempotency_key: None,
            },
        )
        .await
}

/// The success text of a write, with the new version (and a note when WSR-1 redacted).
fn written(first_line: String, stored: &StoredFile, sent: &[u8]) -> ToolOutput {
    let mut text = format!("{first_line}\nVersion: {}", stored.meta.version);
    if stored.content != sent {
        text.push_str("\nSecret-shaped values were redacted before storing ([REDACTED:<rule>]).");
    }
    ToolOutput::ok(text)
}

pub async fn write_file(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let shown = args::string(a, "path")?;
    let content = args::string(a, "content")?;
    let expected = args::opt_count(a, "expected_version")?;
    let path = file_target(ws, shown).await?;
    let pre = precondition(ws, &path, shown, expected).await?;
    let stored = put(ws, &path, content.as_bytes().to_vec(), None, pre)
        .await
        .map_err(|e| write_error(e, shown, expected))?;
    Ok(written(
        format!("Successfully wrote {} bytes to {shown}", stored.meta.size),
        &stored,
        content.as_bytes(),
    ))
}

pub async fn create_directory(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let shown = args::string(a, "path")?;
    let exists = || Ok(ToolOutput::ok(format!("Directory already exists: {shown}")));
    let path = match target(shown)? {
        Target::Root => return exists(),
        Target::Path(p) => p,
    };
    let scope = ws.who;
    let domain = |e| from_domain(e, shown);
    if tree::file_meta(ws.service, scope, &path)
        .await
        .map_err(domain)?
        .is_some()
    {
        return Err(fail(format!(
            "Cannot create directory {shown}: a file exists at that path"
        )));
    }
    if tree::dir_exists(ws.service, scope, &Target::Path(path.clone()))
        .await
        .map_err(domain)?
    {
        return exists();
    }
    if let Some(a) = tree::file_ancestor(ws.service, scope, &path)
        .await
        .map_err(domain)?
    {
        return Err(fail(format!(
            "Cannot create directory {shown}: {a} is a file, not a directory"
        )));
    }
    let marker = FilePath::parse(&format!("{path}/{MARKER}")).map_err(domain)?;
    match put(ws, &marker, Vec::new(), None, (None, true)).await {
        Ok(_) => Ok(ToolOutput::ok(format!(
            "Successfully created directory: {shown}"
        ))),
        Err(WorkspaceError::Conflict { .. }) => exists(),
        Err(e) => Err(domain(e)),
    }
}

pub async fn delete_file(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let shown = args::string(a, "path")?;
    let expected = args::opt_count(a, "expected_version")?;
    let path = match target(shown)? {
        Target::Root => return Err(fail(format!("Not a file: {shown} is a directory"))),
        Target::Path(p) => p,
    };
    let (m, if_match) = existing(ws, &path, shown, expected).await?;
    ws.service
        .delete(ws.who, &path, if_match.as_deref())
        .await
        .map_err(|e| write_error(e, shown, expected))?;
    Ok(ToolOutput::ok(format!(
        "Successfully deleted {shown} (it was at version {})",
        m.version
    )))
}

pub async fn move_file(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let src_shown = args::string(a, "source")?;
    let dst_shown = args::string(a, "destination")?;
    let dst = match target(dst_shown)? {
        Target::Root => return Err(fail(format!("Destination already exists: {dst_shown}"))),
        Target::Path(p) => p,
    };
    let src_file = load(ws, src_shown).await?;
    let src = FilePath::parse(&src_file.meta.path).map_err(|e| from_domain(e, src_shown))?;
    if src == dst {
        return Err(fail(format!(
            "Source and destination are the same file: {src_shown}"
        )));
    }
    let taken = tree::file_meta(ws.service, ws.who, &dst)
        .await
        .map_err(|e| from_domain(e, dst_shown))?
        .is_some();
    if taken {
        return Err(fail(format!("Destination already exists: {dst_shown}")));
    }
    let dst = file_target(ws, dst_shown).await.map_err(|e| {
        if e.text.starts_with("Error: Not a file") {
            fail(format!("Destination already exists: {dst_shown}"))
        } else {
            e
        }
    })?;
    let content_type = Some(src_file.meta.content_type.clone());
    let moved = match put(
        ws,
        &dst,
        src_file.content.clone(),
        content_type,
        (None, true),
    )
    .await
    {
        Ok(f) => f,
        Err(WorkspaceError::Conflict { .. }) => {
            return Err(fail(format!("Destination already exists: {dst_shown}")))
        }
        Err(e) => return Err(from_domain(e, dst_shown)),
    };
    // Only the source as it was copied may be removed; if it changed meanwhile, undo.
    if let Err(e) = ws
        .service
        .delete(ws.who, &src, Some(src_file.meta.etag.as_str()))
        .await
    {
        if let Err(undo) = ws
            .service
            .delete(ws.who, &dst, Some(moved.meta.etag.as_str()))
            .await
        {
            tracing::warn!(error = %undo, "could not undo the copy of a failed move");
        }
        return Err(match e {
            WorkspaceError::Conflict { .. } | WorkspaceError::NotFound(_) => fail(format!(
                "{src_shown} changed while it was being moved; nothing was moved, read it again and retry"
            )),
            other => from_domain(other, src_shown),
        });
    }
    Ok(ToolOutput::ok(format!(
        "Successfully moved {src_shown} to {dst_shown}\nVersion: {}",
        moved.meta.version
    )))
}

pub async fn edit_file(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let shown = args::string(a, "path")?;
    let old = args::string(a, "old_text")?;
    let new = args::string(a, "new_text")?;
    let all = args::opt_bool(a, "replace_all")?.unwrap_or(false);
    let expected = args::opt_count(a, "expected_version")?;
    if old.is_empty() {
        return Err(fail("'old_text' must not be empty"));
    }
    let file = load(ws, shown).await?;
    if let Some(e) = expected.filter(|e| *e != file.meta.version) {
        return Err(version_conflict(shown, file.meta.version, Some(e)));
    }
    let text = std::str::from_utf8(&file.content)
        .map_err(|_| fail(format!("{shown} is not UTF-8 text")))?;
    let count = text.matches(old).count();
    if count == 0 {
        return Err(fail(format!(
            "old_text was not found in {shown}; it must match exactly, including whitespace and line breaks"
        )));
    }
    if count > 1 && !all {
        return Err(fail(format!(
            "old_text matches {count} places in {shown}; include more surrounding text to make it unique, or set replace_all to true"
        )));
    }
    let updated = if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    };
    let path = FilePath::parse(&file.meta.path).map_err(|e| from_domain(e, shown))?;
    // Always against the version just read: a concurrent write makes this a conflict.
    let pre = (Some(file.meta.etag.clone()), false);
    let content_type = Some(file.meta.content_type.clone());
    let stored = put(ws, &path, updated.clone().into_bytes(), content_type, pre)
        .await
        .map_err(|e| write_error(e, shown, expected))?;
    Ok(written(
        format!("Successfully edited {shown}: {count} replacement(s)"),
        &stored,
        updated.as_bytes(),
    ))
}
