//! `ws ls [prefix]`: every live file, following `nextToken` through all pages.

use super::Ctx;
use crate::error::Result;
use crate::output;
use crate::route;
use reqwest::Method;
use serde_json::{json, Value};

pub async fn run(ctx: &mut Ctx, prefix: Option<String>, page_size: Option<u32>) -> Result<()> {
    let client = &ctx.client;
    let mut files: Vec<Value> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let query = route::with_query(
            route::FILES,
            &[
                ("prefix", prefix.clone()),
                ("limit", page_size.map(|n| n.to_string())),
                ("nextToken", token.take()),
            ],
        );
        let page = client
            .json(client.api(Method::GET, &query), "cannot list files")
            .await?;
        files.extend(page["files"].as_array().cloned().unwrap_or_default());
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    if ctx.json {
        output::json(&json!({ "files": files }));
        return Ok(());
    }
    if files.is_empty() {
        eprintln!("no files");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = files
        .iter()
        .map(|f| {
            vec![
                output::cell(&f["path"]),
                output::cell(&f["version"]),
                f["size"].as_u64().map(output::size).unwrap_or_default(),
                output::cell(&f["updatedAt"]),
            ]
        })
        .collect();
    output::out(&output::table(
        &["PATH", "VERSION", "SIZE", "UPDATED"],
        &rows,
    ));
    Ok(())
}
