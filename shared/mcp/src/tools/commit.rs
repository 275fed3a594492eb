//! commit: writes, deletes and moves applied together or not at all, through
//! `WorkspaceService::commit_operations` exactly as `POST /v1/host/workspace/commits` (one
//! atomic step: versions, events, quotas, WSR-1 redaction). Each operation is checked as its
//! single-file tool checks it (paths, `expected_version` as the same If-Match precondition,
//! a move's destination free), so most refusals name their path before anything is sent; a
//! precondition that fails inside the commit is named by checking again.

use super::args::{self, Args};
use super::write::{existing, file_target, precondition};
use super::{
    fail, from_domain, require_write, target, version_conflict, Outcome, ToolOutput, Workspace,
};
use crate::paths::Target;
use crate::tree;
use serde_json::Value;
use workspace_core::model::sha256_hex;
use workspace_core::service::commits::{CommitOp, CommitRequest, OpResult, MAX_COMMIT_OPERATIONS};
use workspace_core::{FilePath, WorkspaceError};

pub const NAME: &str = "commit";

/// One operation's arguments, read.
enum Wanted<'a> {
    Write {
        path: &'a str,
        content: &'a str,
        expected: Option<u64>,
    },
    Delete {
        path: &'a str,
        expected: Option<u64>,
    },
    Move {
        source: &'a str,
        destination: &'a str,
        expected: Option<u64>,
    },
}

impl Wanted<'_> {
    /// The paths as the caller wrote them, for the answer.
    fn shown(&self) -> &str {
        match self {
            Wanted::Write { path, .. } | Wanted::Delete { path, .. } => path,
            Wanted::Move { source, .. } => source,
        }
    }
}

/// `operations[i]`'s arguments; a wrong one is named with its index.
fn read_op(i: usize, v: &Value) -> Result<Wanted<'_>, ToolOutput> {
    let at = |e: ToolOutput| {
        let rest = e.text.strip_prefix("Error: ").unwrap_or(&e.text);
        fail(format!("operations[{i}]: {rest}"))
    };
    let a: &Args = v
        .as_object()
        .ok_or_else(|| fail(format!("operations[{i}] must be an object")))?;
    let expected = args::opt_count(a, "expected_version").map_err(at)?;
    Ok(match args::string(a, "op").map_err(at)? {
        "write" => Wanted::Write {
            path: args::string(a, "path").map_err(at)?,
            content: args::string(a, "content").map_err(at)?,
            expected,
        },
        "delete" => Wanted::Delete {
            path: args::string(a, "path").map_err(at)?,
            expected,
        },
        "move" => Wanted::Move {
            source: args::string(a, "source").map_err(at)?,
            destination: args::string(a, "destination").map_err(at)?,
            expected,
        },
        other => {
            return Err(fail(format!(
                "operations[{i}]: 'op' must be write, delete or move, not '{other}'"
            )))
        }
    })
}

/// A path that must name a file, not the root.
fn file_path(shown: &str) -> Result<FilePath, ToolOutput> {
    match target(shown)? {
        Target::Root => Err(fail(format!("Not a file: {shown} is a directory"))),
        Target::Path(p) => Ok(p),
    }
}

/// One operation checked as its single-file tool checks it, as the domain's operation.
async fn check(ws: &Workspace<'_>, w: &Wanted<'_>) -> Result<CommitOp, ToolOutput> {
    Ok(match *w {
        Wanted::Write {
            path: shown,
            content,
            expected,
        } => {
            let path = file_target(ws, shown).await?;
            let (if_match, if_none_match_any) = precondition(ws, &path, shown, expected).await?;
            if if_none_match_any {
                // Named now: the commit's own refusal would not say which path.
                if let Some(m) = tree::file_meta(ws.service, ws.who, &path)
                    .await
                    .map_err(|e| from_domain(e, shown))?
                {
                    return Err(version_conflict(shown, m.version, Some(0)));
                }
            }
            CommitOp::Put {
                path,
                content: content.as_bytes().to_vec(),
                content_type: None,
                if_match,
                if_none_match_any,
            }
        }
        Wanted::Delete {
            path: shown,
            expected,
        } => {
            let path = file_path(shown)?;
            let (_, if_match) = existing(ws, &path, shown, expected).await?;
            CommitOp::Delete { path, if_match }
        }
        Wanted::Move {
            source,
            destination,
            expected,
        } => {
            let from = file_path(source)?;
            let (_, if_match) = existing(ws, &from, source, expected).await?;
            let taken = || fail(format!("Destination already exists: {destination}"));
            let to = match target(destination)? {
                Target::Root => return Err(taken()),
                Target::Path(p) => p,
            };
            if from == to {
                return Err(fail(format!(
                    "Source and destination are the same file: {source}"
                )));
            }
            if tree::file_meta(ws.service, ws.who, &to)
                .await
                .map_err(|e| from_domain(e, destination))?
                .is_some()
            {
                return Err(taken());
            }
            let to = file_target(ws, destination).await?;
            CommitOp::Move {
                from,
                to,
                if_match,
                // As move_file: never over an existing file.
                if_none_match_any: true,
            }
        }
    })
}

fn nothing_applied(e: ToolOutput) -> ToolOutput {
    let text = e.text.trim_end_matches('.');
    ToolOutput::error(format!("{text}. Nothing was applied."))
}

pub async fn commit(ws: &Workspace<'_>, a: &Args) -> Outcome {
    require_write(ws)?;
    let ops = match a.get("operations") {
        Some(Value::Array(ops)) => ops,
        None | Some(Value::Null) => return Err(fail("Missing required parameter 'operations'")),
        Some(_) => {
            return Err(fail(
                "Parameter 'operations' must be an array of operations",
            ))
        }
    };
    if ops.is_empty() {
        return Err(fail("'operations' is empty: a commit needs at least one"));
    }
    if ops.len() > MAX_COMMIT_OPERATIONS {
        return Err(fail(format!(
            "'operations' holds {} operations; a commit holds at most {MAX_COMMIT_OPERATIONS}",
            ops.len()
        )));
    }
    let wanted = ops
        .iter()
        .enumerate()
        .map(|(i, v)| read_op(i, v))
        .collect::<Result<Vec<_>, _>>()?;
    let mut operations = Vec::with_capacity(wanted.len());
    for w in &wanted {
        operations.push(check(ws, w).await.map_err(nothing_applied)?);
    }
    let request = CommitRequest {
        operations,
        idempotency_key: None,
    };
    let answer = match ws.service.commit_operations(ws.who, request.clone()).await {
        Ok(a) => a,
        Err(WorkspaceError::Conflict { message, .. }) => {
            // A precondition failed in the commit itself (a change meanwhile): name it.
            for w in &wanted {
                check(ws, w).await.map_err(nothing_applied)?;
            }
            return Err(nothing_applied(fail(format!(
                "Version conflict: {message}; read the files again and retry"
            ))));
        }
        Err(e) => return Err(nothing_applied(from_domain(e, wanted[0].shown()))),
    };
    let mut text = format!("Committed {} operation(s):", answer.results.len());
    for ((w, op), result) in wanted.iter().zip(&request.operations).zip(&answer.results) {
        text.push('\n');
        match (w, result) {
            (Wanted::Write { path, .. }, OpResult::Put(meta)) => {
                text.push_str(&format!("wrote {path} version {}", meta.version));
                if let CommitOp::Put { content, .. } = op {
                    if !meta.sha256.is_empty() && meta.sha256 != sha256_hex(content) {
                        text.push_str(" (secret-shaped values were redacted before storing)");
                    }
                }
            }
            (Wanted::Delete { path, .. }, OpResult::Delete { .. }) => {
                text.push_str(&format!("deleted {path}"));
            }
            (
                Wanted::Move {
                    source,
                    destination,
                    ..
                },
                OpResult::Move { to, .. },
            ) => {
                text.push_str(&format!(
                    "moved {source} to {destination} version {}",
                    to.version
                ));
            }
            _ => text.push_str(&format!("{} (changed)", w.shown())),
        }
    }
    Ok(ToolOutput::ok(text))
}
