//! `POST /v1/host/workspace/memory`: one call of Claude's memory tool. The body is the tool
//! call's `input` as the model sent it; the answer `{content, isError}` goes back to the
//! model as the `tool_result` unchanged (see `workspace_core::memory`).

use crate::envelope::{json_response, HttpResponse};
use crate::routes::Needs;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};
use workspace_core::memory::{execute, MemoryCommand};
use workspace_core::{Identity, Result, WorkspaceError, WorkspaceService};

pub async fn post(
    service: &WorkspaceService,
    who: &Identity,
    body: &Bytes,
) -> Result<HttpResponse> {
    let input: Value = serde_json::from_slice(body).map_err(|e| {
        WorkspaceError::validation(format!(
            "body must be the memory tool call's input object, e.g. {{\"command\": \"view\", \"path\": \"/memories\"}}: {e}"
        ))
    })?;
    let answer = match MemoryCommand::parse(&input) {
        Ok(command) => {
            // `workspace:read` is the row's need (`routes::ROUTES`); a command that
            // changes files needs more.
            if command.changes() {
                Needs::Write.check(who.access)?;
            }
            execute(service, who, &command).await?
        }
        // The model's input is wrong: it reads why and can try again.
        Err(answer) => answer,
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({ "content": answer.content, "isError": answer.is_error }),
    ))
}
