//! `ws search QUERY`: one page of the best-matching files, each as `path@version` with its
//! matching lines (the matched text in bold on a terminal).

use super::Ctx;
use crate::error::Result;
use crate::output;
use crate::route;
use reqwest::Method;

pub struct Query {
    pub q: String,
    pub mode: &'static str,
    pub ignore_case: bool,
    pub prefix: Option<String>,
    pub glob: Option<String>,
    pub limit: Option<u32>,
    pub snapshot: Option<String>,
}

pub async fn run(ctx: &mut Ctx, query: Query) -> Result<()> {
    let client = &ctx.client;
    let uri = route::with_query(
        route::SEARCH,
        &[
            ("q", Some(query.q.clone())),
            ("mode", Some(query.mode.to_owned())),
            ("ignoreCase", query.ignore_case.then(|| "true".to_owned())),
            ("prefix", query.prefix),
            ("glob", query.glob),
            ("limit", query.limit.map(|n| n.to_string())),
            ("snapshot", query.snapshot),
        ],
    );
    let answer = client
        .json(client.api(Method::GET, &uri), "cannot search")
        .await?;
    if ctx.json {
        output::json(&answer);
        return Ok(());
    }
    let hits = answer["hits"].as_array().cloned().unwrap_or_default();
    let index = &answer["index"];
    let mut out = String::new();
    for hit in &hits {
        // A hit by meaning names the passage that matched.
        let passage = match (
            hit["passage"]["startLine"].as_u64(),
            hit["passage"]["endLine"].as_u64(),
        ) {
            (Some(a), Some(b)) => format!(" (lines {a}-{b})"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{}@{}{passage}\n",
            output::cell(&hit["path"]),
            output::cell(&hit["version"])
        ));
        for line in hit["lines"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "  {}: {}\n",
                output::cell(&line["line"]),
                line["text"].as_str().unwrap_or_default()
            ));
        }
    }
    output::out(&out);
    let skipped = index["skipped"].as_array().map_or(0, Vec::len);
    eprintln!(
        "{} file(s) found; {} of {} files indexed{}{}",
        hits.len(),
        output::cell(&index["indexed"]),
        output::cell(&index["total"]),
        if skipped > 0 {
            format!(", {skipped} not searched (binary or too large)")
        } else {
            String::new()
        },
        if answer["nextToken"].is_string() {
            "; more match: raise --limit or narrow with --prefix/--glob"
        } else {
            ""
        }
    );
    Ok(())
}
