//! fork_workspace, fork_diff, merge_fork, discard_fork: the fork routes as tools, over the
//! same service calls, with answers an agent can act on (what changed, what conflicts,
//! how to resolve it).

use super::args::{self, Args};
use super::{fail, from_domain, require_read, require_write, Outcome, ToolOutput, Workspace};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use workspace_core::forks::three_way::{Change, PathDiff, Resolution, Strategy};
use workspace_core::model::format_time;
use workspace_core::service::{ForkRequest, MergeOutcome, MergeRequest};
use workspace_core::{PathPrefix, WorkspaceError};

/// A fork tool's domain error (paths here are fork ids, not files).
fn fork_error(e: WorkspaceError) -> ToolOutput {
    match e {
        WorkspaceError::NotFound(m) => fail(m),
        WorkspaceError::Conflict { message, .. } => fail(message),
        other => from_domain(other, "/workspace"),
    }
}

fn change(c: Change) -> &'static str {
    match c {
        Change::Added => "added",
        Change::Modified => "modified",
        Change::Deleted => "deleted",
        Change::Unchanged => "unchanged",
    }
}

fn diff_line(d: &PathDiff) -> String {
    format!(
        "{} {}: fork {}, workspace {}",
        if d.conflict { "!" } else { "-" },
        d.path,
        change(d.fork_change),
        change(d.parent_change)
    )
}

pub async fn fork_workspace(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let req = ForkRequest {
        from: None,
        label: args::opt_string(a, "label")?.map(str::to_owned),
        ttl_seconds: args::opt_count(a, "ttl_seconds")?,
    };
    let f = ws
        .service
        .create_fork(ws.who, req)
        .await
        .map_err(fork_error)?;
    Ok(ToolOutput::ok(format!(
        "Created fork {id} of {parent} (it reads {parent} as of {base}; expires {expires}).\n\
         Work in it by naming workspace {id} (X-Workspace-Id, or a key made for it); \
         compare with fork_diff, merge back with merge_fork, or drop it with discard_fork.",
        id = f.workspace,
        parent = f.parent,
        base = format_time(f.base_created_at),
        expires = format_time(f.expires_at),
    )))
}

pub async fn fork_diff(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_read(ws)?;
    let id = args::string(a, "fork_id")?;
    let prefix = PathPrefix::parse(args::opt_string(a, "prefix")?.unwrap_or(""))
        .map_err(|e| fail(format!("Invalid prefix: {e}")))?;
    let mut lines = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = ws
            .service
            .fork_diff(ws.who, id, &prefix, None, after.as_deref())
            .await
            .map_err(fork_error)?;
        lines.extend(page.changes.iter().map(diff_line));
        match page.next_after {
            Some(a) => after = Some(a),
            None => break,
        }
    }
    if lines.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "Nothing changed on either side since fork {id} was made (or last merged)."
        )));
    }
    let conflicts = lines.iter().filter(|l| l.starts_with('!')).count();
    Ok(ToolOutput::ok(format!(
        "{} path(s) changed since the fork's base ({conflicts} conflict(s), marked !):\n\n{}",
        lines.len(),
        lines.join("\n")
    )))
}

pub async fn merge_fork(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let id = args::string(a, "fork_id")?;
    let strategy = match args::opt_string(a, "strategy")? {
        None => Strategy::Fail,
        Some(s) => Strategy::parse(s).ok_or_else(|| {
            fail(format!(
                "Parameter 'strategy' must be fail, fork-wins, parent-wins or three-way (not {s})"
            ))
        })?,
    };
    let mut resolutions = BTreeMap::new();
    match a.get("resolutions") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            for (path, v) in o {
                let r = Resolution::from_json(v)
                    .map_err(|e| fail(format!("resolutions[{path}] {e}")))?;
                resolutions.insert(path.clone(), r);
            }
        }
        Some(_) => return Err(fail("Parameter 'resolutions' must be an object")),
    }
    let apply = args::opt_bool(a, "apply")?.unwrap_or(false);
    let req = MergeRequest {
        strategy,
        resolutions,
        dry_run: !apply,
        discard_fork: args::opt_bool(a, "discard_fork")?.unwrap_or(false),
        idempotency_key: None,
    };
    let outcome = ws
        .service
        .merge_fork(ws.who, id, req)
        .await
        .map_err(fork_error)?;
    match outcome {
        MergeOutcome::Merged(r) => {
            let changes: Vec<String> = r
                .applied
                .iter()
                .map(|x| format!("{} {}", x.operation, x.path))
                .collect();
            let listed = if changes.is_empty() {
                "nothing to apply".to_owned()
            } else {
                changes.join(", ")
            };
            Ok(ToolOutput::ok(if r.dry_run {
                format!(
                    "Dry run: merging fork {id} would apply {} change(s): {listed}. \
                     Call merge_fork again with apply: true to merge.",
                    changes.len()
                )
            } else {
                format!(
                    "Merged fork {id} (merge {}): applied {} change(s): {listed}.{}",
                    r.merge_id,
                    changes.len(),
                    if r.fork_discarded {
                        " The fork was discarded."
                    } else {
                        " The fork now holds the merged state."
                    }
                )
            }))
        }
        MergeOutcome::Conflicts(conflicts) => {
            let mut text = format!(
                "Error: {} path(s) changed on both sides; nothing was applied. Settle each with \
                 resolutions ({{\"<path>\": \"fork\" | \"parent\" | {{\"content\": \"<text>\"}}}}) \
                 or another strategy, and call merge_fork again.\n",
                conflicts.len()
            );
            for c in &conflicts {
                let side = |s: &Option<workspace_core::forks::three_way::FileState>| {
                    s.as_ref()
                        .map_or("deleted".to_owned(), |s| format!("version {}", s.version))
                };
                let _ = write!(
                    text,
                    "\n{}: fork {}, workspace {}{}",
                    c.diff.path,
                    side(&c.diff.fork),
                    side(&c.diff.parent),
                    if c.binary {
                        " (binary: choose a side)"
                    } else {
                        ""
                    }
                );
                if let Some(m) = &c.merged {
                    let _ = write!(text, "\nmerged text (edit the conflict markers, then send it as the content):\n{m}");
                }
                text.push('\n');
            }
            Err(ToolOutput::error(text))
        }
    }
}

pub async fn discard_fork(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let id = args::string(a, "fork_id")?;
    ws.service
        .discard_fork(ws.who, id)
        .await
        .map_err(fork_error)?;
    Ok(ToolOutput::ok(format!(
        "Discarded fork {id}; this workspace is untouched."
    )))
}
