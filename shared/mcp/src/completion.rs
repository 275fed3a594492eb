//! `completion/complete`: paths from the workspace's listing, like a shell completes them
//! (the entries one level under what was typed, directories ending in `/`), snapshot ids
//! from the snapshot list. For the resource templates' `path` and `snapshot` arguments
//! (`ref/resource`), the `changes_since_snapshot` prompt's `snapshot` and `prefix`
//! (`ref/prompt`), and, as an extension the specification does not define (its
//! references are prompts and resource templates only), the path arguments of the tools
//! (`{"type": "ref/tool", "name": "read_file"}`, arguments `path`, `source`,
//! `destination`, `prefix`), whose values keep the `/workspace/` form when typed with it.
//!
//! Bounded: at most [`MAX_SCANNED`] listed files are read per request and at most
//! [`MAX_VALUES`] values answered (the specification's limit), with `hasMore` when there
//! were more.

use crate::paths::MOUNT;
use crate::resources::{failure, Failure, FILE_TEMPLATE, SNAPSHOT_TEMPLATE, VERSION_TEMPLATE};
use crate::tools::Workspace;
use crate::tree::is_marker;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use workspace_core::{FilePath, PathPrefix};

/// Most values one answer holds (MCP's own limit).
pub const MAX_VALUES: usize = 100;
/// Most listed files read to answer one request.
pub const MAX_SCANNED: usize = 1000;

/// Tool arguments that name a workspace path.
const TOOL_PATH_ARGUMENTS: &[&str] = &["path", "source", "destination", "prefix"];

fn invalid(msg: impl Into<String>) -> Failure {
    (crate::protocol::INVALID_PARAMS, msg.into())
}

pub async fn complete(ws: &Workspace<'_>, params: &Value) -> Result<Value, Failure> {
    let kind = params.pointer("/ref/type").and_then(Value::as_str);
    let argument = params
        .pointer("/argument/name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("Invalid params: completion/complete needs argument.name"))?;
    let value = params
        .pointer("/argument/value")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("Invalid params: completion/complete needs argument.value"))?;
    let context = |name: &str| {
        params
            .pointer(&format!("/context/arguments/{name}"))
            .and_then(Value::as_str)
    };
    if !ws.who.access.read {
        return Ok(answer(Vec::new(), false));
    }
    match kind {
        Some("ref/resource") => {
            let uri = params
                .pointer("/ref/uri")
                .and_then(Value::as_str)
                .unwrap_or("");
            match (uri, argument) {
                (FILE_TEMPLATE | VERSION_TEMPLATE, "path") => paths(ws, value, None).await,
                (SNAPSHOT_TEMPLATE, "path") => match context("snapshot") {
                    Some(id) => paths(ws, value, Some(id)).await,
                    // Which snapshot's files is not known yet.
                    None => Ok(answer(Vec::new(), false)),
                },
                (SNAPSHOT_TEMPLATE, "snapshot") => snapshots(ws, value).await,
                (FILE_TEMPLATE | VERSION_TEMPLATE | SNAPSHOT_TEMPLATE, _) => {
                    Ok(answer(Vec::new(), false))
                }
                _ => Err(invalid(format!(
                    "Invalid params: no resource template {}; resources/templates/list names them",
                    uri.escape_debug()
                ))),
            }
        }
        Some("ref/tool") => {
            let name = params
                .pointer("/ref/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !crate::tools::exists(name) {
                return Err(invalid(format!("Unknown tool: {}", name.escape_debug())));
            }
            if !TOOL_PATH_ARGUMENTS.contains(&argument) {
                return Ok(answer(Vec::new(), false));
            }
            let mounted = value == MOUNT || value.starts_with("/workspace/");
            let typed = value
                .strip_prefix(MOUNT)
                .map(|v| v.trim_start_matches('/'))
                .unwrap_or(value);
            let mut out = paths(ws, typed, None).await?;
            if mounted {
                if let Some(values) = out.pointer_mut("/completion/values") {
                    for v in values.as_array_mut().into_iter().flatten() {
                        if let Some(s) = v.as_str() {
                            *v = json!(format!("{MOUNT}/{s}"));
                        }
                    }
                }
            }
            Ok(out)
        }
        Some("ref/prompt") => {
            let name = params
                .pointer("/ref/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if name != crate::prompts::NAME {
                return Err(invalid(format!(
                    "Invalid params: no prompt {}; prompts/list names them",
                    name.escape_debug()
                )));
            }
            match argument {
                "snapshot" => snapshots(ws, value).await,
                "prefix" => {
                    // Directories only: a prefix names one.
                    let mut out = paths(ws, value, None).await?;
                    if let Some(values) = out
                        .pointer_mut("/completion/values")
                        .and_then(Value::as_array_mut)
                    {
                        values.retain(|v| v.as_str().is_some_and(|s| s.ends_with('/')));
                        let n = values.len();
                        if let Some(total) = out.pointer_mut("/completion/total") {
                            *total = json!(n);
                        }
                    }
                    Ok(out)
                }
                _ => Ok(answer(Vec::new(), false)),
            }
        }
        _ => Err(invalid(
            "Invalid params: ref.type must be ref/resource (or ref/tool, this server's extension)",
        )),
    }
}

fn answer(values: Vec<String>, has_more: bool) -> Value {
    let total = values.len();
    let mut values = values;
    let more = has_more || total > MAX_VALUES;
    values.truncate(MAX_VALUES);
    let mut completion = json!({ "values": values, "hasMore": more });
    if !has_more {
        completion["total"] = json!(total);
    }
    json!({ "completion": completion })
}

/// The entries one level under `typed`: `notes/a` gives `notes/a.md` and `notes/archive/`.
async fn paths(ws: &Workspace<'_>, typed: &str, snapshot: Option<&str>) -> Result<Value, Failure> {
    // Something that can start no path completes to nothing (never an error: it is typing).
    let Ok(prefix) = PathPrefix::parse(typed) else {
        return Ok(answer(Vec::new(), false));
    };
    let dir = typed.rfind('/').map_or("", |i| &typed[..=i]);
    let mut found: BTreeSet<String> = BTreeSet::new();
    let mut scanned = 0usize;
    let mut after: Option<FilePath> = None;
    let exhausted = loop {
        let page = match snapshot {
            None => ws.service.list(ws.who, &prefix, None, after.as_ref()).await,
            Some(id) => {
                ws.service
                    .list_snapshot(ws.who, id, &prefix, None, after.as_ref())
                    .await
            }
        };
        let page = match page {
            Ok(page) => page,
            // An unknown snapshot (or another workspace's) has nothing to complete from.
            Err(workspace_core::WorkspaceError::NotFound(_)) if snapshot.is_some() => {
                return Ok(answer(Vec::new(), false))
            }
            Err(e) => return Err(failure(e, typed)),
        };
        for f in &page.files {
            scanned += 1;
            let rest = &f.path[dir.len()..];
            match rest.split_once('/') {
                Some((first, _)) => {
                    found.insert(format!("{dir}{first}/"));
                }
                None if !is_marker(&f.path) => {
                    found.insert(f.path.clone());
                }
                None => {}
            }
        }
        match page.next_after {
            None => break true,
            Some(_) if scanned >= MAX_SCANNED => break false,
            Some(next) => after = Some(next),
        }
    };
    Ok(answer(found.into_iter().collect(), !exhausted))
}

/// Snapshot ids that start with `typed`, newest first (one page of the snapshot list).
async fn snapshots(ws: &Workspace<'_>, typed: &str) -> Result<Value, Failure> {
    let (page, next) = ws
        .service
        .list_checkpoints(&ws.who.scope, None, None)
        .await
        .map_err(|e| failure(e, typed))?;
    let ids = page
        .into_iter()
        .map(|s| s.id)
        .filter(|id| id.starts_with(typed))
        .collect();
    Ok(answer(ids, next.is_some()))
}
