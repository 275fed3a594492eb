//! Forks: `POST|GET /v1/host/workspace/forks`, `GET|DELETE .../forks/{forkId}`,
//! `GET .../forks/{forkId}/diff`, `POST .../forks/{forkId}/merge`. The fork itself is
//! reached like any workspace, by naming its `workspaceId` in `X-Workspace-Id`.

use crate::envelope::{empty_response, error_response, json_response, HttpResponse};
use crate::files::write_headers;
use crate::request::Query;
use bytes::Bytes;
use http::request::Parts;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use workspace_core::forks::three_way::{FileState, PathDiff, Resolution, Strategy};
use workspace_core::model::format_time;
use workspace_core::service::{
    ConflictReport, Fork, ForkCounts, ForkRequest, MergeOutcome, MergeReport, MergeRequest,
};
use workspace_core::{Identity, PathPrefix, Result, WorkspaceError, WorkspaceService};

fn base_json(snapshot: &str, created_at: i64) -> Value {
    json!({ "snapshotId": snapshot, "createdAt": format_time(created_at) })
}

fn fork_json(f: &Fork) -> Value {
    json!({
        "forkId": f.workspace.as_str(),
        "workspaceId": f.workspace.as_str(),
        "parentWorkspaceId": f.parent.as_str(),
        "base": base_json(&f.base_snapshot, f.base_created_at),
        "label": f.label,
        "createdAt": format_time(f.created_at),
        "expiresAt": format_time(f.expires_at),
    })
}

/// `{from?, label?, ttlSeconds?}`; an empty body is `{}`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateBody {
    from: Option<String>,
    label: Option<String>,
    ttl_seconds: Option<u64>,
}

fn parse_body<T: for<'de> Deserialize<'de> + Default>(body: &Bytes, shape: &str) -> Result<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| WorkspaceError::validation(format!("body must be empty or {shape}: {e}")))
}

pub async fn create(
    service: &WorkspaceService,
    who: &Identity,
    body: &Bytes,
) -> Result<HttpResponse> {
    let b: CreateBody = parse_body(
        body,
        r#"{"from"?: "live" | "<snapshotId>", "label"?: "<name>", "ttlSeconds"?: <seconds>}"#,
    )?;
    let fork = service
        .create_fork(
            who,
            ForkRequest {
                from: b.from,
                label: b.label,
                ttl_seconds: b.ttl_seconds,
            },
        )
        .await?;
    Ok(json_response(StatusCode::CREATED, &fork_json(&fork)))
}

pub async fn list(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
) -> Result<HttpResponse> {
    let query = Query::parse(parts)?;
    let (forks, next) = service
        .list_forks(who, query.limit()?, query.get("nextToken"))
        .await?;
    let mut body = json!({ "forks": forks.iter().map(fork_json).collect::<Vec<_>>() });
    if let Some(next) = next {
        body["nextToken"] = Value::String(next);
    }
    Ok(json_response(StatusCode::OK, &body))
}

fn counts_json(c: &ForkCounts) -> Value {
    json!({ "fork": c.fork, "parent": c.parent, "conflicts": c.conflicts })
}

pub async fn get(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    let (fork, counts) = service.get_fork(who, id).await?;
    let mut body = fork_json(&fork);
    body["changedPaths"] = counts_json(&counts);
    Ok(json_response(StatusCode::OK, &body))
}

pub async fn discard(service: &WorkspaceService, who: &Identity, id: &str) -> Result<HttpResponse> {
    service.discard_fork(who, id).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

fn state_json(s: &Option<FileState>) -> Value {
    match s {
        None => Value::Null,
        Some(s) => json!({ "version": s.version, "etag": s.etag }),
    }
}

fn change_json(d: &PathDiff) -> Value {
    let mut v = json!({
        "path": d.path,
        "fork": d.fork_change,
        "parent": d.parent_change,
        "conflict": d.conflict,
    });
    for (name, side) in [
        ("baseVersion", &d.base),
        ("forkVersion", &d.fork),
        ("parentVersion", &d.parent),
    ] {
        if let Some(s) = side {
            v[name] = json!(s.version);
        }
    }
    v
}

/// What a diff's paging token is bound to, so a token of another listing is refused.
fn diff_binding(who: &Identity, id: &str, prefix: &PathPrefix) -> String {
    format!(
        "forkdiff|{}|{}|{id}|{}",
        who.scope.tenant,
        who.scope.workspace,
        prefix.as_str()
    )
}

pub async fn diff(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
) -> Result<HttpResponse> {
    let id = tail.strip_suffix("/diff").unwrap_or(tail);
    let query = Query::parse(parts)?;
    let prefix = PathPrefix::parse(query.get("prefix").unwrap_or(""))?;
    let binding = diff_binding(who, id, &prefix);
    let keys = service.token_key();
    let after = query
        .get("nextToken")
        .map(|t| keys.open(&binding, t))
        .transpose()?;
    let page = service
        .fork_diff(who, id, &prefix, query.limit()?, after.as_deref())
        .await?;
    let mut body = json!({
        "forkId": page.fork.workspace.as_str(),
        "base": base_json(&page.fork.base_snapshot, page.fork.base_created_at),
        "changes": page.changes.iter().map(change_json).collect::<Vec<_>>(),
    });
    if let Some(after) = &page.next_after {
        body["nextToken"] = Value::String(keys.seal(&binding, after));
    }
    Ok(json_response(StatusCode::OK, &body))
}

/// `{strategy?, resolutions?, dryRun?, discardFork?}`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MergeBody {
    strategy: Option<String>,
    #[serde(default)]
    resolutions: BTreeMap<String, Value>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    discard_fork: bool,
}

fn resolution(path: &str, v: &Value) -> Result<Resolution> {
    Resolution::from_json(v)
        .map_err(|e| WorkspaceError::validation(format!("resolutions[{path}] {e}")))
}

fn report_json(r: &MergeReport) -> Value {
    json!({
        "mergeId": r.merge_id,
        "forkId": r.fork_id,
        "dryRun": r.dry_run,
        "applied": r.applied.iter().map(|a| {
            let mut v = json!({ "path": a.path, "operation": a.operation });
            if let Some(version) = a.version { v["version"] = json!(version); }
            if let Some(etag) = &a.etag { v["etag"] = json!(etag); }
            v
        }).collect::<Vec<_>>(),
        "base": base_json(&r.base_snapshot, r.base_created_at),
        "forkDiscarded": r.fork_discarded,
    })
}

fn side_json(s: &Option<FileState>, deleted_if_absent: bool) -> Value {
    match s {
        Some(s) => json!({ "version": s.version, "etag": s.etag, "deleted": false }),
        None if deleted_if_absent => json!({ "deleted": true }),
        None => Value::Null,
    }
}

fn conflict_json(c: &ConflictReport) -> Value {
    let d = &c.diff;
    let mut v = Map::new();
    v.insert("path".into(), json!(d.path));
    v.insert("base".into(), state_json(&d.base));
    // A side that removed (or never had) the path says so.
    v.insert("fork".into(), side_json(&d.fork, true));
    v.insert("parent".into(), side_json(&d.parent, true));
    v.insert("binary".into(), json!(c.binary));
    if let Some(m) = &c.merged {
        v.insert("merged".into(), json!(m));
    }
    Value::Object(v)
}

pub async fn merge(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    combine(
        service,
        who,
        parts,
        tail.strip_suffix("/merge").unwrap_or(tail),
        body,
        false,
    )
    .await
}

/// `POST .../forks/{id}/rebase`: the parent's changes into the fork, the same body and
/// answers as a merge.
pub async fn rebase(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    tail: &str,
    body: &Bytes,
) -> Result<HttpResponse> {
    combine(
        service,
        who,
        parts,
        tail.strip_suffix("/rebase").unwrap_or(tail),
        body,
        true,
    )
    .await
}

async fn combine(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
    id: &str,
    body: &Bytes,
    rebase: bool,
) -> Result<HttpResponse> {
    let (_, idempotency_key) = write_headers(parts)?;
    let b: MergeBody = parse_body(
        body,
        r#"{"strategy"?: "fail"|"fork-wins"|"parent-wins"|"three-way", "resolutions"?: {"<path>": ...}, "dryRun"?: bool, "discardFork"?: bool}"#,
    )?;
    let strategy = match b.strategy.as_deref() {
        None => Strategy::Fail,
        Some(s) => Strategy::parse(s).ok_or_else(|| {
            WorkspaceError::validation(format!(
                "strategy must be fail, fork-wins, parent-wins or three-way (not {s:?})"
            ))
        })?,
    };
    let resolutions = b
        .resolutions
        .iter()
        .map(|(p, v)| Ok((p.clone(), resolution(p, v)?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    let req = MergeRequest {
        strategy,
        resolutions,
        dry_run: b.dry_run,
        discard_fork: b.discard_fork,
        idempotency_key,
    };
    let outcome = if rebase {
        service.rebase_fork(who, id, req).await?
    } else {
        service.merge_fork(who, id, req).await?
    };
    match outcome {
        MergeOutcome::Merged(report) => Ok(json_response(StatusCode::OK, &report_json(&report))),
        MergeOutcome::Conflicts(conflicts) => {
            let paths: Vec<&str> = conflicts.iter().map(|c| c.diff.path.as_str()).collect();
            let message = format!(
                "{} path(s) changed on both sides and were not combined: {}. Nothing was applied; \
                 resolve each in \"resolutions\" (\"fork\", \"parent\", or the content to keep, \
                 e.g. the \"merged\" text with its conflict markers edited) or choose another \
                 strategy, and try again",
                conflicts.len(),
                paths.join(", ")
            );
            Ok(error_response(
                StatusCode::CONFLICT,
                "workspace_conflict",
                &message,
                Some(
                    json!({ "conflicts": conflicts.iter().map(conflict_json).collect::<Vec<_>>() }),
                ),
            ))
        }
    }
}
