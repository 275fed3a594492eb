//! `ws put path [file|-]`: write a file from a local file or stdin, directly or through the
//! two-step upload, with `--if-match` or `--safe` as the precondition.

use super::Ctx;
use crate::discovery;
use crate::error::{Error, Kind, Result};
use crate::output;
use crate::source::Source;
use crate::state::Entry;
use crate::write::{self, quote_etag, Precondition};
use serde_json::{json, Value};
use std::path::PathBuf;

pub async fn run(
    ctx: &mut Ctx,
    path: &str,
    file: Option<PathBuf>,
    if_match: Option<String>,
    safe: bool,
    content_type: Option<String>,
) -> Result<()> {
    let precondition = match (&if_match, safe) {
        (Some(etag), _) => Precondition::IfMatch(quote_etag(etag)),
        (None, true) => safe_precondition(ctx, path),
        (None, false) => Precondition::None,
    };
    let limits = discovery::limits(&ctx.client).await?;
    let source = match file.as_deref() {
        None => Source::from_stdin()?,
        Some(p) if p.as_os_str() == "-" => Source::from_stdin()?,
        Some(p) => Source::from_file(p, limits.max_file_bytes)?,
    };
    let written = write::write(
        &ctx.client,
        path,
        &source,
        content_type.as_deref(),
        &precondition,
        limits,
        ctx.progress(),
        None,
    )
    .await
    .map_err(|e| conflict_hint(e, path, &precondition))?;
    let answer = &written.answer;
    if let Some(etag) = answer["etag"].as_str() {
        ctx.state.set(
            path,
            Entry {
                etag: etag.to_owned(),
                sha256: Some(source.sha256.clone()),
            },
        );
    }
    if ctx.json {
        output::json(&summary(answer, written.via_upload));
    } else {
        output::out(&format!(
            "{path}: version {} ({}, etag {}){}\n",
            output::cell(&answer["version"]),
            output::size(source.size),
            output::cell(&answer["etag"]),
            if written.via_upload {
                ", uploaded in two steps"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

/// `--safe`: the etag this machine last saw, or, if it never saw the file, "only if absent"
/// (so a file someone else created is never overwritten unseen).
pub fn safe_precondition(ctx: &Ctx, path: &str) -> Precondition {
    match ctx.state.get(path) {
        Some(entry) => Precondition::IfMatch(entry.etag.clone()),
        None => Precondition::IfAbsent,
    }
}

pub fn conflict_hint(e: Error, path: &str, precondition: &Precondition) -> Error {
    let hint = match precondition {
        Precondition::IfAbsent => format!(
            "{path} exists and this machine has not read it; run `ws cat {path}` first, then retry"
        ),
        _ => format!("the file changed since you read it; run `ws cat {path}` again, then retry"),
    };
    e.hint_for(Kind::Conflict, hint)
}

/// The answer without the content it echoes back, and how it travelled.
fn summary(answer: &Value, via_upload: bool) -> Value {
    let mut s = answer.clone();
    if let Some(map) = s.as_object_mut() {
        map.remove("content");
        map.remove("contentBase64");
        map.insert(
            "via".into(),
            json!(if via_upload { "upload" } else { "direct" }),
        );
    }
    s
}
