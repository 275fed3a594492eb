//! Prompts: one, `changes_since_snapshot`, which an agent (or the person driving it) uses to
//! catch up after a break: the files added, deleted and changed since a snapshot, with the
//! diffs, as one user message for the model to summarise. Built from the snapshot's record
//! and the live listing (what changed is a different etag), the diffs from the two
//! contents (`similar`, the diff the history routes use).
//!
//! Bounded: at most [`MAX_PATHS`] paths named per kind of change, [`MAX_DIFFS`] diffs of
//! at most [`MAX_DIFF_BYTES`] each, and only files up to `maxFileBytes` are read.

use crate::resources::{failure, Failure};
use crate::tools::Workspace;
use crate::tree::{files_under, is_marker};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use workspace_core::model::format_time;
use workspace_core::{FilePath, WorkspaceError};

pub const NAME: &str = "changes_since_snapshot";
/// Most paths named per kind of change (added, deleted, changed).
pub const MAX_PATHS: usize = 100;
/// Most changed files whose diff is included.
pub const MAX_DIFFS: usize = 20;
/// Most bytes of one file's diff.
pub const MAX_DIFF_BYTES: usize = 8 * 1024;

fn invalid(msg: impl Into<String>) -> Failure {
    (crate::protocol::INVALID_PARAMS, msg.into())
}

pub fn list() -> Value {
    json!({ "prompts": [{
        "name": NAME,
        "title": "What changed since a snapshot",
        "description": "The files added, deleted and changed in the workspace since a snapshot, with their diffs, to summarise.",
        "arguments": [
            { "name": "snapshot", "description": "The snapshot's id (completion lists them, newest first).", "required": true },
            { "name": "prefix", "description": "Only paths under this directory (notes/).", "required": false },
        ],
    }]})
}

pub async fn get(ws: &Workspace<'_>, params: &Value) -> Result<Value, Failure> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    if name != NAME {
        return Err(invalid(format!(
            "Invalid params: no prompt {}; prompts/list names them",
            name.escape_debug()
        )));
    }
    let arg = |k: &str| {
        params
            .pointer(&format!("/arguments/{k}"))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let id = arg("snapshot").ok_or_else(|| {
        invalid("Invalid params: changes_since_snapshot needs the snapshot argument")
    })?;
    let prefix = arg("prefix").unwrap_or("");
    if !ws.who.access.read {
        return Err((
            crate::resources::ACCESS_DENIED,
            "Access denied. This credential may not read files: it needs the workspace:read scope"
                .to_owned(),
        ));
    }
    let snapshot = ws
        .service
        .get_snapshot(ws.who, id)
        .await
        .map_err(|e| match e {
            WorkspaceError::NotFound(_) => invalid(format!(
                "Invalid params: no snapshot {} (expired, deleted, or never taken)",
                id.escape_debug()
            )),
            other => failure(other, id),
        })?;
    let then: BTreeMap<&str, &str> = snapshot
        .files
        .iter()
        .filter(|f| f.path.starts_with(prefix) && !is_marker(&f.path))
        .map(|f| (f.path.as_str(), f.etag.as_str()))
        .collect();
    let live = files_under(ws.service, ws.who, prefix)
        .await
        .map_err(|e| failure(e, prefix))?;
    let now: BTreeMap<&str, &str> = live
        .iter()
        .filter(|f| !is_marker(&f.path))
        .map(|f| (f.path.as_str(), f.etag.as_str()))
        .collect();
    let added: Vec<&str> = now
        .keys()
        .filter(|p| !then.contains_key(*p))
        .copied()
        .collect();
    let deleted: Vec<&str> = then
        .keys()
        .filter(|p| !now.contains_key(*p))
        .copied()
        .collect();
    let changed: Vec<&str> = now
        .iter()
        .filter(|(p, etag)| then.get(*p).is_some_and(|old| old != *etag))
        .map(|(p, _)| *p)
        .collect();

    let mut text = format!(
        "Summarise what changed in the workspace{} since snapshot {id} (taken {}): what was added, removed and changed, and what the changes amount to. Be brief and concrete.\n",
        if prefix.is_empty() { String::new() } else { format!(" under {prefix}") },
        format_time(snapshot.created_at),
    );
    for (kind, paths) in [
        ("Added", &added),
        ("Deleted", &deleted),
        ("Changed", &changed),
    ] {
        let _ = write!(text, "\n{kind} ({}):\n", paths.len());
        for p in paths.iter().take(MAX_PATHS) {
            let _ = writeln!(text, "- {p}");
        }
        if paths.len() > MAX_PATHS {
            let _ = writeln!(text, "- … and {} more", paths.len() - MAX_PATHS);
        }
    }
    if added.is_empty() && deleted.is_empty() && changed.is_empty() {
        text.push_str("\nNothing changed.\n");
    }
    for p in changed.iter().take(MAX_DIFFS) {
        let _ = write!(text, "\n{}", diff_of(ws, id, p).await);
    }
    if changed.len() > MAX_DIFFS {
        let _ = write!(
            text,
            "\n({} more changed files without their diff.)\n",
            changed.len() - MAX_DIFFS
        );
    }
    Ok(json!({
        "description": format!("Changes since snapshot {id}"),
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
    }))
}

/// The unified diff of `path` from the snapshot to now, bounded; a line saying why there is
/// none where it cannot be shown.
async fn diff_of(ws: &Workspace<'_>, id: &str, path: &str) -> String {
    let Ok(p) = FilePath::parse(path) else {
        return String::new();
    };
    let (old, new) = tokio::join!(
        ws.service.get_in_snapshot(ws.who, id, &p),
        ws.service.get(ws.who, &p, None)
    );
    let (Ok(old), Ok(new)) = (old, new) else {
        return format!(
            "{path}: the diff is not shown (a side is over maxFileBytes or no longer readable)\n"
        );
    };
    match (
        std::str::from_utf8(&old.content),
        std::str::from_utf8(&new.content),
    ) {
        (Ok(a), Ok(b)) => {
            let mut d = similar::TextDiff::from_lines(a, b)
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{path}"), &format!("b/{path}"))
                .to_string();
            if d.len() > MAX_DIFF_BYTES {
                let cut = (0..=MAX_DIFF_BYTES)
                    .rev()
                    .find(|i| d.is_char_boundary(*i))
                    .unwrap_or(0);
                d.truncate(cut);
                d.push_str("\n… (diff cut here)\n");
            }
            format!("```diff\n{d}```\n")
        }
        _ => format!("{path}: binary, changed\n"),
    }
}
