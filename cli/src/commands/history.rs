//! `ws log`, `ws diff`, `ws restore`: a file's versions, what changed between two, and
//! bringing an old one back.

use super::put::conflict_hint;
use super::Ctx;
use crate::content;
use crate::error::{Kind, Result};
use crate::output;
use crate::route;
use crate::state::Entry;
use crate::write::{quote_etag, Precondition};
use reqwest::Method;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub async fn log(ctx: &mut Ctx, path: &str) -> Result<()> {
    let client = &ctx.client;
    let mut versions: Vec<Value> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let query = route::with_query(&route::versions(path), &[("nextToken", token.take())]);
        let page = client
            .json(
                client.api(Method::GET, &query),
                &format!("cannot read the history of {path}"),
            )
            .await?;
        versions.extend(page["versions"].as_array().cloned().unwrap_or_default());
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    if ctx.json {
        output::json(&json!({"path": path, "versions": versions}));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = versions.iter().map(version_row).collect();
    output::out(&output::table(
        &["VERSION", "SIZE", "UPDATED", "BY", "ETAG", "NOTE"],
        &rows,
    ));
    Ok(())
}

fn version_row(v: &Value) -> Vec<String> {
    let erased = v["erased"].as_bool() == Some(true);
    let note = if erased {
        format!("erased by {}", output::cell(&v["erasedBy"]))
    } else if v["deleted"].as_bool() == Some(true) {
        "deleted".to_owned()
    } else {
        String::new()
    };
    vec![
        output::cell(&v["version"]),
        v["size"].as_u64().map(output::size).unwrap_or_default(),
        if erased {
            output::cell(&v["erasedAt"])
        } else {
            output::cell(&v["updatedAt"])
        },
        output::cell(&v["principal"]),
        output::cell(&v["etag"]),
        note,
    ]
}

pub async fn diff(ctx: &mut Ctx, path: &str, from: u64, to: Option<u64>) -> Result<()> {
    let client = &ctx.client;
    let query = route::with_query(
        &route::diff(path),
        &[
            ("from", Some(from.to_string())),
            ("to", to.map(|t| t.to_string())),
        ],
    );
    let answer = client
        .json(
            client.api(Method::GET, &query),
            &format!("cannot diff {path}"),
        )
        .await
        .map_err(|e| {
            e.hint_for(
                Kind::NotFound,
                format!("see the versions with `ws log {path}`"),
            )
        })?;
    if ctx.json {
        output::json(&answer);
        return Ok(());
    }
    let text = answer["diff"].as_str().unwrap_or_default();
    if text.is_empty() {
        eprintln!(
            "no differences between versions {} and {}",
            output::cell(&answer["from"]),
            output::cell(&answer["to"])
        );
    } else if text.ends_with('\n') {
        output::out(text);
    } else {
        output::out(&format!("{text}\n"));
    }
    Ok(())
}

pub async fn restore(
    ctx: &mut Ctx,
    path: &str,
    version: u64,
    if_match: Option<String>,
) -> Result<()> {
    let precondition = match if_match {
        Some(etag) => Precondition::IfMatch(quote_etag(&etag)),
        None => Precondition::None,
    };
    let client = &ctx.client;
    let what = format!("cannot restore version {version} of {path}");
    let rb = precondition.apply(client.api(Method::POST, &route::versions(path)));
    let answer = client
        .json(rb.json(&json!({"restore": version})), &what)
        .await
        .map_err(|e| {
            conflict_hint(e, path, &precondition).hint_for(
                Kind::NotFound,
                format!("see the versions with `ws log {path}`"),
            )
        })?;
    if let Some(etag) = answer["etag"].as_str() {
        let sha = content::inline_bytes(&answer, &what)?.map(|b| hex::encode(Sha256::digest(b)));
        ctx.state.set(
            path,
            Entry {
                etag: etag.to_owned(),
                sha256: sha,
            },
        );
    }
    if ctx.json {
        output::json(&answer);
    } else {
        output::out(&format!(
            "{path}: version {version} restored as version {}\n",
            output::cell(&answer["version"])
        ));
    }
    Ok(())
}
