//! read_file, list_directory, get_file_info.

use super::args::{self, Args};
use super::{fail, from_domain, require_read, target, Outcome, ToolOutput, Workspace};
use crate::paths::Target;
use crate::tree::{self, is_marker};
use std::collections::BTreeSet;
use workspace_core::model::format_time;
use workspace_core::{FilePath, StoredFile, WorkspaceError};

/// The live file at `shown`, or the answer explaining why there is none.
pub(super) async fn load(ws: &Workspace<'_>, shown: &str) -> Result<StoredFile, ToolOutput> {
    let path = match target(shown)? {
        Target::Root => return Err(fail(format!("Not a file: {shown} is a directory"))),
        Target::Path(p) => p,
    };
    match ws.service.get(ws.who, &path, None).await {
        Ok(f) => Ok(f),
        Err(WorkspaceError::NotFound(_)) => Err(not_a_file(ws, &path, shown).await),
        Err(e) => Err(from_domain(e, shown)),
    }
}

/// Why there is no file at `path`: a directory is there, or nothing.
pub(super) async fn not_a_file(ws: &Workspace<'_>, path: &FilePath, shown: &str) -> ToolOutput {
    match tree::dir_exists(ws.service, ws.who, &Target::Path(path.clone())).await {
        Ok(true) => fail(format!("Not a file: {shown} is a directory")),
        Ok(false) => fail(format!("File not found: {shown}")),
        Err(e) => from_domain(e, shown),
    }
}

/// `text` split into lines, each keeping its line break.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

pub async fn read_file(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_read(ws)?;
    let shown = args::string(a, "path")?;
    let head = args::opt_count(a, "head")?;
    let tail = args::opt_count(a, "tail")?;
    let offset = args::opt_count(a, "offset")?;
    let limit = args::opt_count(a, "limit")?;
    if head.is_some() && tail.is_some() {
        return Err(fail("Cannot specify both 'head' and 'tail' parameters"));
    }
    if (head.is_some() || tail.is_some()) && (offset.is_some() || limit.is_some()) {
        return Err(fail(
            "Cannot combine 'head' or 'tail' with 'offset' or 'limit'",
        ));
    }
    if offset == Some(0) {
        return Err(fail("'offset' counts lines from 1"));
    }
    let file = load(ws, shown).await?;
    let text = String::from_utf8_lossy(&file.content);
    let all = lines(&text);
    let take = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let picked: &[&str] = if let Some(n) = head {
        &all[..take(n).min(all.len())]
    } else if let Some(n) = tail {
        &all[all.len() - take(n).min(all.len())..]
    } else if offset.is_some() || limit.is_some() {
        let start = take(offset.unwrap_or(1) - 1);
        if start >= all.len() && !(start == 0 && all.is_empty()) {
            return Err(fail(format!(
                "offset {} is past the end of {shown} ({} lines)",
                start + 1,
                all.len()
            )));
        }
        let end = limit.map_or(all.len(), |l| start.saturating_add(take(l)).min(all.len()));
        &all[start..end]
    } else {
        return Ok(ToolOutput::ok(text.into_owned()));
    };
    Ok(ToolOutput::ok(picked.concat()))
}

pub async fn list_directory(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_read(ws)?;
    let shown = args::string(a, "path")?;
    let dir = target(shown)?;
    let scope = ws.who;
    let prefix = dir.dir_prefix();
    let files = tree::files_under(ws.service, scope, &prefix)
        .await
        .map_err(|e| from_domain(e, shown))?;
    if files.is_empty() {
        if let Target::Path(p) = &dir {
            let is_file = tree::file_meta(ws.service, scope, p)
                .await
                .map_err(|e| from_domain(e, shown))?
                .is_some();
            return Err(fail(if is_file {
                format!("Not a directory: {shown}")
            } else {
                format!("Directory not found: {shown}")
            }));
        }
    }
    // (name, 0 = DIR / 1 = FILE): a name can be both in a flat namespace (`x` and `x/y`).
    let mut entries: BTreeSet<(String, u8)> = BTreeSet::new();
    for f in &files {
        let rest = &f.path[prefix.len()..];
        match rest.split_once('/') {
            Some((first, _)) => {
                entries.insert((first.to_owned(), 0));
            }
            None if !is_marker(&f.path) => {
                entries.insert((rest.to_owned(), 1));
            }
            None => {}
        }
    }
    if entries.is_empty() {
        return Ok(ToolOutput::ok(format!("Directory is empty: {shown}")));
    }
    let listing: Vec<String> = entries
        .iter()
        .map(|(name, kind)| format!("{} {name}", if *kind == 0 { "[DIR]" } else { "[FILE]" }))
        .collect();
    Ok(ToolOutput::ok(format!(
        "Contents of {shown}:\n\n{}",
        listing.join("\n")
    )))
}

pub async fn get_file_info(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_read(ws)?;
    let shown = args::string(a, "path")?;
    let t = target(shown)?;
    let scope = ws.who;
    if let Target::Path(p) = &t {
        if let Some(m) = tree::file_meta(ws.service, scope, p)
            .await
            .map_err(|e| from_domain(e, shown))?
        {
            // Created = when version 1 of this lineage was written, while it is retained.
            let created = match ws.service.get(scope, p, Some(1)).await {
                Ok(first) => format_time(first.meta.updated_at),
                Err(_) => "unknown (version 1 is no longer retained)".to_owned(),
            };
            return Ok(ToolOutput::ok(format!(
                "Path: {shown}\nType: file\nSize: {} bytes\nCreated: {created}\nModified: {}\nVersion: {}\nETag: {}\nContent-Type: {}",
                m.size,
                format_time(m.updated_at),
                m.version,
                m.etag,
                m.content_type
            )));
        }
    }
    let files = tree::files_under(ws.service, scope, &t.dir_prefix())
        .await
        .map_err(|e| from_domain(e, shown))?;
    if files.is_empty() && t != Target::Root {
        return Err(fail(format!("File not found: {shown}")));
    }
    let size: u64 = files.iter().map(|f| f.size).sum();
    let when = |v: Option<i64>| v.map_or_else(|| "unknown".to_owned(), format_time);
    Ok(ToolOutput::ok(format!(
        "Path: {shown}\nType: directory\nSize: {size} bytes\nCreated: {}\nModified: {}",
        when(files.iter().map(|f| f.updated_at).min()),
        when(files.iter().map(|f| f.updated_at).max()),
    )))
}
