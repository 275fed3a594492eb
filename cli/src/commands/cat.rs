//! `ws cat path [--version N | --snapshot ID]`: the file's exact bytes on stdout (or the
//! server's JSON with --json), remembering the etag read for `put --safe`.

use super::Ctx;
use crate::content;
use crate::error::{Kind, Result};
use crate::output;
use crate::route;
use crate::state::Entry;
use reqwest::Method;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub async fn run(
    ctx: &mut Ctx,
    path: &str,
    version: Option<u64>,
    snapshot: Option<String>,
) -> Result<()> {
    let from_snapshot = snapshot.is_some();
    let route = route::with_query(
        &route::file(path),
        &[
            ("version", version.map(|v| v.to_string())),
            ("snapshot", snapshot),
        ],
    );
    let what = format!("cannot read {path}");
    let not_found = |e: crate::error::Error| {
        if from_snapshot {
            e.hint_for(Kind::NotFound, "list snapshots with `ws snapshot ls`, and what one holds with `ws snapshot show ID`")
        } else {
            e
        }
    };
    let client = &ctx.client;
    if ctx.json {
        let answer = client
            .json(client.api(Method::GET, &route), &what)
            .await
            .map_err(not_found)?;
        let sha = content::inline_bytes(&answer, &what)?.map(|b| hex::encode(Sha256::digest(b)));
        remember(ctx, path, &answer, sha);
        output::json(&answer);
        return Ok(());
    }
    let read = content::read(client, &route, &what, &mut |bytes| {
        output::write_stdout(bytes)
    })
    .await
    .map_err(not_found)?;
    remember(ctx, path, &read.answer, Some(read.sha256));
    Ok(())
}

fn remember(ctx: &mut Ctx, path: &str, answer: &Value, sha256: Option<String>) {
    if let Some(etag) = answer["etag"].as_str() {
        ctx.state.set(
            path,
            Entry {
                etag: etag.to_owned(),
                sha256,
            },
        );
    }
}
