//! `GET /v1/host/workspace/changes`: every committed change of the workspace, newest first,
//! filtered by time (`since` inclusive, `until` exclusive, RFC 3339), `principal` and path
//! `prefix`, paged with `limit` and `nextToken`.

use crate::envelope::{json_response, HttpResponse};
use crate::request::Query;
use http::request::Parts;
use http::StatusCode;
use serde_json::{json, Value};
use workspace_core::model::parse_time;
use workspace_core::service::ChangeFilter;
use workspace_core::{Identity, PathPrefix, Result, WorkspaceError, WorkspaceService};

fn instant(query: &Query, name: &str) -> Result<Option<i64>> {
    query
        .get(name)
        .map(|v| {
            parse_time(v).ok_or_else(|| {
                WorkspaceError::validation(format!(
                    "{name} must be an RFC 3339 time like 2026-01-31T12:00:00Z, got '{}'",
                    v.escape_debug()
                ))
            })
        })
        .transpose()
}

pub async fn list(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
) -> Result<HttpResponse> {
    let query = Query::parse(parts)?;
    let filter = ChangeFilter {
        since: instant(&query, "since")?,
        until: instant(&query, "until")?,
        principal: query.get("principal").map(str::to_owned),
        prefix: PathPrefix::parse(query.get("prefix").unwrap_or(""))?,
    };
    // The token is bound to the caller's scope and filters: another listing's is refused.
    let binding = format!(
        "changes|{}|{}|{}|{:?}",
        who.scope.tenant,
        who.scope.workspace,
        who.paths.to_claim(),
        filter
    );
    let keys = service.token_key();
    let before = query
        .get("nextToken")
        .map(|t| keys.open(&binding, t))
        .transpose()?;
    let page = service
        .changes(who, &filter, query.limit()?, before)
        .await?;
    let rows: Vec<Value> = page
        .changes
        .iter()
        .map(|c| {
            json!({
                "path": c.path,
                "version": c.version,
                "etag": c.etag,
                "operation": c.operation(),
                "principal": c.principal,
                "time": c.time(),
                "size": c.size,
                "contentType": c.content_type,
            })
        })
        .collect();
    let mut body = json!({ "changes": rows });
    if let Some(next) = page.next_before {
        body["nextToken"] = Value::String(keys.seal(&binding, &next));
    }
    Ok(json_response(StatusCode::OK, &body))
}
