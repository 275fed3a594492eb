//! search_files (globs over paths) and grep (a regex over contents).

use super::args::{self, Args};
use super::{fail, from_domain, require_read, target, Outcome, ToolOutput, Workspace};
use crate::paths::{pattern_escapes, Target, ACCESS_DENIED};
use crate::tree::{self, is_marker};
use std::collections::BTreeSet;
use workspace_core::globs::{GlobSyntax, Globs};
use workspace_core::FileMeta;

const DEFAULT_MAX_RESULTS: u64 = 100;
/// Longest line grep echoes; longer ones are cut (minified files would flood the answer).
const MAX_LINE_CHARS: usize = 400;

/// A glob over paths relative to the searched directory: `*` and `?` stay within a
/// segment, `**` crosses them (globset's syntax, the one ripgrep uses; see
/// `workspace_core::globs`).
fn glob(pattern: &str) -> Result<Globs, ToolOutput> {
    if pattern_escapes(pattern) {
        return Err(ToolOutput::error(ACCESS_DENIED));
    }
    if pattern.is_empty() {
        return Err(fail("Invalid pattern: it must not be empty"));
    }
    Globs::new([pattern], GlobSyntax::PATHS)
        .map_err(|e| fail(format!("Invalid pattern '{pattern}': {}", e.reason)))
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

/// `search`: the workspace's ranked search (`workspace_core::search`), fresh as of the
/// call; each hit as `path@version` with its matching lines.
pub async fn search(ws: &Workspace<'_>, a: &Args) -> Outcome {
    use workspace_core::search::{Mode, MAX_SEARCH_LIMIT};
    use workspace_core::service::SearchRequest;
    require_read(ws)?;
    let query = args::string(a, "query")?;
    let shown = args::opt_string(a, "path")?.unwrap_or("/workspace");
    let mode = match args::opt_string(a, "mode")? {
        None => Mode::Keyword,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            fail(format!(
                "'mode' must be one of {}, not '{m}'",
                Mode::NAMES.join(", ")
            ))
        })?,
    };
    let max = max_results(a)?.min(MAX_SEARCH_LIMIT);
    let dir = target(shown)?;
    let prefix = dir.dir_prefix();
    // The glob is relative to 'path', as grep's is.
    let glob = match args::opt_string(a, "glob")? {
        Some(g) if pattern_escapes(g) => return Err(ToolOutput::error(ACCESS_DENIED)),
        Some(g) => Some(format!("{prefix}{g}")),
        None => None,
    };
    let request = SearchRequest {
        q: query.to_owned(),
        mode,
        ignore_case: args::opt_bool(a, "ignore_case")?.unwrap_or(false),
        prefix: workspace_core::PathPrefix::parse(&prefix).map_err(|e| from_domain(e, shown))?,
        glob,
        limit: Some(max),
        ..SearchRequest::default()
    };
    let page = ws
        .service
        .search(ws.who, &request)
        .await
        .map_err(|e| from_domain(e, shown))?;
    let ix = &page.index;
    let coverage = format!(
        "{} of {} files indexed{}",
        ix.indexed,
        ix.total,
        if ix.skipped.is_empty() {
            String::new()
        } else {
            format!(
                "; not searched: {}",
                ix.skipped
                    .iter()
                    .map(|s| format!("{} ({})", s.path, s.reason))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    if page.hits.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No matches found for '{query}' in {shown} ({coverage})"
        )));
    }
    let mut out = format!(
        "Found {} file(s) for '{query}', best first ({coverage}). Read a hit at exactly this version with read_file, or edit it with expected_version:\n",
        page.hits.len()
    );
    for hit in &page.hits {
        let passage = hit
            .passage
            .map(|p| format!(", lines {}-{}", p.start_line, p.end_line))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n{}@{} (score {:.3}{passage})\n",
            hit.path, hit.version, hit.score
        ));
        for line in &hit.lines {
            out.push_str(&format!("  {}: {}\n", line.line, line.text));
        }
    }
    if page.next_offset.is_some() {
        out.push_str(&format!(
            "\n(more files match; showing the best {max}: raise max_results (up to {MAX_SEARCH_LIMIT}) or narrow with path or glob)"
        ));
    }
    Ok(ToolOutput::ok(out.trim_end().to_owned()))
}
