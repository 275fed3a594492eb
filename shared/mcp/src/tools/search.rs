//! search_files (globs over paths) and grep (a regex over contents).

use super::args::{self, Args};
use super::{fail, from_domain, require_read, target, Outcome, ToolOutput, Workspace};
use crate::paths::{pattern_escapes, Target, ACCESS_DENIED};
use crate::tree::{self, is_marker};
use globset::{GlobBuilder, GlobMatcher};
use std::collections::BTreeSet;
use workspace_core::FileMeta;

const DEFAULT_MAX_RESULTS: u64 = 100;
/// Longest line grep echoes; longer ones are cut (minified files would flood the answer).
const MAX_LINE_CHARS: usize = 400;

/// A glob over paths relative to the searched directory: `*` and `?` stay within a
/// segment, `**` crosses them (globset, the matcher ripgrep uses).
fn glob(pattern: &str) -> Result<GlobMatcher, ToolOutput> {
    if pattern_escapes(pattern) {
        return Err(ToolOutput::error(ACCESS_DENIED));
    }
    if pattern.is_empty() {
        return Err(fail("Invalid pattern: it must not be empty"));
    }
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| fail(format!("Invalid pattern '{pattern}': {e}")))
}

fn max_results(a: &Args) -> Result<usize, ToolOutput> {
    match args::opt_count(a, "max_results")?.unwrap_or(DEFAULT_MAX_RESULTS) {
        0 => Err(fail("'max_results' must be 1 or more")),
        n => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// The files below directory `dir`, markers included; an error if it is no directory.
async fn files_in(
    ws: &Workspace<'_>,
    dir: &Target,
    shown: &str,
) -> Result<Vec<FileMeta>, ToolOutput> {
    let files = tree::files_under(ws.service, ws.who, &dir.dir_prefix())
        .await
        .map_err(|e| from_domain(e, shown))?;
    if files.is_empty() {
        if let Target::Path(p) = dir {
            if tree::file_meta(ws.service, ws.who, p)
                .await
                .map_err(|e| from_domain(e, shown))?
                .is_some()
            {
                return Err(fail(format!("Not a directory: {shown}")));
            }
            return Err(fail(format!("Directory not found: {shown}")));
        }
    }
    Ok(files)
}

fn truncated_note(total: usize, shown: usize) -> String {
    if total > shown {
        format!(
            "\n\n(showing the first {shown} of {total}; narrow the search or raise max_results)"
        )
    } else {
        String::new()
    }
}

pub async fn search_files(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_read(ws)?;
    let shown = args::string(a, "path")?;
    let pattern = args::string(a, "pattern")?;
    let max = max_results(a)?;
    let dir = target(shown)?;
    let matcher = glob(pattern)?;
    let prefix = dir.dir_prefix();
    let files = files_in(ws, &dir, shown).await?;
    // Directories are virtual: every proper ancestor below `dir` of a file (or marker).
    let mut found: BTreeSet<(String, &str)> = BTreeSet::new();
    for f in &files {
        let rel = &f.path[prefix.len()..];
        for (i, _) in rel.match_indices('/') {
            if matcher.is_match(&rel[..i]) {
                found.insert((f.path[..prefix.len() + i].to_owned(), "[DIR]"));
            }
        }
    }
    for f in files.iter().filter(|f| !is_marker(&f.path)) {
        if matcher.is_match(&f.path[prefix.len()..]) {
            found.insert((f.path.clone(), "[FILE]"));
        }
    }
    if found.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No matches found for pattern '{pattern}' in {shown}"
        )));
    }
    let lines: Vec<String> = found
        .iter()
        .take(max)
        .map(|(p, kind)| format!("{kind} {p}"))
        .collect();
    Ok(ToolOutput::ok(format!(
        "Found {} match(es) for '{pattern}':\n\n{}{}",
        found.len(),
        lines.join("\n"),
        truncated_note(found.len(), lines.len())
    )))
}

pub async fn grep(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_read(ws)?;
    let pattern = args::string(a, "pattern")?;
    let shown = args::opt_string(a, "path")?.unwrap_or("/workspace");
    let only = args::opt_string(a, "glob")?.map(glob).transpose()?;
    let max = max_results(a)?;
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| fail(format!("Invalid regular expression '{pattern}': {e}")))?;
    let t = target(shown)?;
    // A file path searches that file; a directory searches the files below it.
    let (files, prefix) = match &t {
        Target::Path(p) => match tree::file_meta(ws.service, ws.who, p)
            .await
            .map_err(|e| from_domain(e, shown))?
        {
            Some(m) => {
                let parent = p.as_str().rfind('/').map_or(0, |i| i + 1);
                (vec![m], p.as_str()[..parent].to_owned())
            }
            None => (files_in(ws, &t, shown).await?, t.dir_prefix()),
        },
        Target::Root => (files_in(ws, &t, shown).await?, String::new()),
    };
    let mut hits: Vec<String> = Vec::new();
    let mut total = 0usize;
    for f in files.into_iter().filter(|f| !is_marker(&f.path)) {
        if only
            .as_ref()
            .is_some_and(|g| !g.is_match(&f.path[prefix.len()..]))
        {
            continue;
        }
        let path = workspace_core::FilePath::parse(&f.path).map_err(|e| from_domain(e, shown))?;
        let file = match ws.service.get(ws.who, &path, None).await {
            Ok(file) => file,
            // Deleted since it was listed, or over maxFileBytes (not searched inline).
            Err(
                workspace_core::WorkspaceError::NotFound(_)
                | workspace_core::WorkspaceError::TooLarge { .. },
            ) => continue,
            Err(e) => return Err(from_domain(e, shown)),
        };
        let text = String::from_utf8_lossy(&file.content);
        for (n, line) in text.lines().enumerate() {
            if re.is_match(line) {
                total += 1;
                if hits.len() < max {
                    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                    let more = if cut.len() < line.len() { "…" } else { "" };
                    hits.push(format!("{}:{}: {cut}{more}", f.path, n + 1));
                }
            }
        }
    }
    if hits.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No matches found for '{pattern}' in {shown}"
        )));
    }
    Ok(ToolOutput::ok(format!(
        "Found {total} match(es) for '{pattern}':\n\n{}{}",
        hits.join("\n"),
        truncated_note(total, hits.len())
    )))
}
