//! `GET /v1/host/workspace/search`: ranked keyword, exact, regex, semantic and hybrid search
//! (`workspace_core::search`), a page of hits at a time.

use crate::envelope::{json_response, HttpResponse};
use crate::request::Query;
use http::request::Parts;
use http::StatusCode;
use serde_json::{json, Value};
use workspace_core::search::Mode;
use workspace_core::service::SearchRequest;
use workspace_core::{Identity, PathPrefix, Result, WorkspaceError, WorkspaceService};

fn flag(query: &Query, name: &str) -> Result<bool> {
    match query.get(name) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(v) => Err(WorkspaceError::validation(format!(
            "{name} must be true or false, got '{}'",
            v.escape_debug()
        ))),
    }
}

/// The request a query string asks for (the paging offset aside).
pub fn request(query: &Query) -> Result<SearchRequest> {
    let mode = match query.get("mode") {
        None => Mode::Keyword,
        Some(m) => Mode::parse(m).ok_or_else(|| {
            WorkspaceError::validation(format!(
                "mode must be one of {}, got '{}'",
                Mode::NAMES.join(", "),
                m.escape_debug()
            ))
        })?,
    };
    let eventual = match query.get("consistency") {
        None | Some("fresh") => false,
        Some("eventual") => true,
        Some(c) => {
            return Err(WorkspaceError::validation(format!(
                "consistency must be fresh or eventual, got '{}'",
                c.escape_debug()
            )))
        }
    };
    Ok(SearchRequest {
        q: query.get("q").unwrap_or_default().to_owned(),
        mode,
        ignore_case: flag(query, "ignoreCase")?,
        prefix: PathPrefix::parse(query.get("prefix").unwrap_or(""))?,
        glob: query.get("glob").map(str::to_owned),
        limit: query.limit()?,
        offset: 0,
        snapshot: query.get("snapshot").map(str::to_owned),
        eventual,
    })
}

pub async fn search(
    service: &WorkspaceService,
    who: &Identity,
    parts: &Parts,
) -> Result<HttpResponse> {
    let query = Query::parse(parts)?;
    let mut req = request(&query)?;
    // The token is bound to the caller's scope and the whole query: another search's is
    // refused.
    let binding = format!(
        "search|{}|{}|{}|{:?}",
        who.scope.tenant,
        who.scope.workspace,
        who.paths.to_claim(),
        SearchRequest {
            limit: None,
            ..req.clone()
        }
    );
    let keys = service.token_key();
    if let Some(token) = query.get("nextToken") {
        req.offset = keys
            .open(&binding, token)?
            .parse()
            .map_err(|_| WorkspaceError::validation("nextToken is not valid here"))?;
    }
    let page = service.search(who, &req).await?;
    let mut body = json!({ "hits": page.hits, "index": page.index });
    if let Some(next) = page.next_offset {
        body["nextToken"] = Value::String(keys.seal(&binding, &next.to_string()));
    }
    Ok(json_response(StatusCode::OK, &body))
}
