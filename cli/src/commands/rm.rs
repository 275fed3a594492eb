//! `ws rm path [--if-match ETAG | --safe]`.

use super::put::{conflict_hint, safe_precondition};
use super::Ctx;
use crate::error::{Error, Kind, Result};
use crate::output;
use crate::route;
use crate::write::{quote_etag, Precondition};
use reqwest::Method;
use serde_json::json;

pub async fn run(ctx: &mut Ctx, path: &str, if_match: Option<String>, safe: bool) -> Result<()> {
    let precondition = match (if_match, safe) {
        (Some(etag), _) => Precondition::IfMatch(quote_etag(&etag)),
        (None, true) => safe_precondition(ctx, path),
        (None, false) => Precondition::None,
    };
    // A DELETE takes no If-None-Match: with nothing seen, there is nothing to check against.
    if precondition == Precondition::IfAbsent {
        return Err(Error::new(
            Kind::Conflict,
            format!("cannot remove {path}"),
            "this machine has not read or written it, so --safe has no version to check",
        )
        .with_hint(format!("run `ws cat {path}` first, then retry")));
    }
    let client = &ctx.client;
    let rb = precondition.apply(client.api(Method::DELETE, &route::file(path)));
    client
        .send(rb, &format!("cannot remove {path}"))
        .await
        .map_err(|e| conflict_hint(e, path, &precondition))?;
    ctx.state.remove(path);
    if ctx.json {
        output::json(&json!({"path": path, "deleted": true}));
    } else {
        output::out(&format!("removed {path}\n"));
    }
    Ok(())
}
