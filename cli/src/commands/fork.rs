//! `ws fork create|ls|diff|merge|rebase|rm`.

use super::Ctx;
use crate::cli::{ForkCommand, MergeArgs};
use crate::error::{Error, Kind, Result};
use crate::output;
use crate::route;
use reqwest::Method;
use serde_json::{json, Map, Value};

pub async fn run(ctx: &mut Ctx, command: ForkCommand) -> Result<()> {
    match command {
        ForkCommand::Create { label, ttl } => create(ctx, label, ttl).await,
        ForkCommand::Ls => list(ctx).await,
        ForkCommand::Diff { fork } => diff(ctx, &fork).await,
        ForkCommand::Merge { fork, how, discard } => {
            combine(ctx, &fork, how, discard, "merge").await
        }
        ForkCommand::Rebase { fork, how } => combine(ctx, &fork, how, false, "rebase").await,
        ForkCommand::Rm { fork } => remove(ctx, &fork).await,
    }
}

async fn create(ctx: &Ctx, label: Option<String>, ttl: Option<u64>) -> Result<()> {
    let mut body = json!({});
    if let Some(label) = label {
        body["label"] = json!(label);
    }
    if let Some(ttl) = ttl {
        body["ttlSeconds"] = json!(ttl);
    }
    let client = &ctx.client;
    let answer = client
        .json(
            client.api(Method::POST, route::FORKS).json(&body),
            "cannot fork",
        )
        .await?;
    if ctx.json {
        output::json(&answer);
        return Ok(());
    }
    // The id alone on stdout, so `F=$(ws fork create)` works.
    output::out(&format!("{}\n", output::cell(&answer["workspaceId"])));
    eprintln!(
        "fork of {}; expires {}; work in it with --workspace {}",
        output::cell(&answer["parentWorkspaceId"]),
        output::cell(&answer["expiresAt"]),
        output::cell(&answer["workspaceId"])
    );
    Ok(())
}

async fn list(ctx: &Ctx) -> Result<()> {
    let client = &ctx.client;
    let mut forks: Vec<Value> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let query = route::with_query(route::FORKS, &[("nextToken", token.take())]);
        let page = client
            .json(client.api(Method::GET, &query), "cannot list forks")
            .await?;
        forks.extend(page["forks"].as_array().cloned().unwrap_or_default());
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    if ctx.json {
        output::json(&json!({ "forks": forks }));
        return Ok(());
    }
    if forks.is_empty() {
        eprintln!("no forks");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = forks
        .iter()
        .map(|f| {
            ["forkId", "label", "createdAt", "expiresAt"]
                .iter()
                .map(|k| output::cell(&f[*k]))
                .collect()
        })
        .collect();
    output::out(&output::table(
        &["FORK", "LABEL", "CREATED", "EXPIRES"],
        &rows,
    ));
    Ok(())
}

async fn diff(ctx: &Ctx, fork: &str) -> Result<()> {
    let client = &ctx.client;
    let mut changes: Vec<Value> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let query = route::with_query(&route::fork(fork, "/diff"), &[("nextToken", token.take())]);
        let page = client
            .json(
                client.api(Method::GET, &query),
                &format!("cannot compare fork {fork}"),
            )
            .await
            .map_err(|e| e.hint_for(Kind::NotFound, "list live forks with `ws fork ls`"))?;
        changes.extend(page["changes"].as_array().cloned().unwrap_or_default());
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    if ctx.json {
        output::json(&json!({ "changes": changes }));
        return Ok(());
    }
    if changes.is_empty() {
        eprintln!("nothing changed on either side");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = changes
        .iter()
        .map(|c| {
            vec![
                if c["conflict"] == true { "!" } else { "" }.to_owned(),
                output::cell(&c["path"]),
                output::cell(&c["fork"]),
                output::cell(&c["parent"]),
            ]
        })
        .collect();
    output::out(&output::table(&["", "PATH", "FORK", "WORKSPACE"], &rows));
    Ok(())
}

/// `--resolve PATH=fork|parent|@FILE` as the API's `resolutions`.
fn resolutions(specs: &[String]) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for spec in specs {
        let Some((path, how)) = spec.rsplit_once('=') else {
            return Err(Error::bad_input(
                format!("cannot read --resolve {spec}"),
                "it takes PATH=fork, PATH=parent or PATH=@FILE",
            ));
        };
        let value = match how {
            "fork" | "parent" => json!(how),
            file if file.starts_with('@') => {
                let bytes = std::fs::read(&file[1..])
                    .map_err(|e| Error::bad_input(format!("cannot read {}", &file[1..]), e))?;
                match String::from_utf8(bytes) {
                    Ok(text) => json!({ "content": text }),
                    Err(e) => {
                        use base64::Engine;
                        json!({ "contentBase64": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()) })
                    }
                }
            }
            _ => {
                return Err(Error::bad_input(
                    format!("cannot read --resolve {spec}"),
                    "the resolution is fork, parent or @FILE",
                ))
            }
        };
        out.insert(path.to_owned(), value);
    }
    Ok(out)
}

async fn combine(ctx: &Ctx, fork: &str, how: MergeArgs, discard: bool, verb: &str) -> Result<()> {
    let mut body = json!({ "resolutions": resolutions(&how.resolve)?, "dryRun": how.dry_run });
    if let Some(s) = how.strategy {
        body["strategy"] = json!(s);
    }
    if discard {
        body["discardFork"] = json!(true);
    }
    let client = &ctx.client;
    let what = format!("cannot {verb} fork {fork}");
    let resp = client
        .api(Method::POST, &route::fork(fork, &format!("/{verb}")))
        .json(&body)
        .send()
        .await
        .map_err(|e| client.network(e, &what))?;
    // A conflict answer carries the paths to settle: show them before failing.
    if resp.status().as_u16() == 409 {
        let answer: Value = resp.json().await.unwrap_or(Value::Null);
        if let Some(conflicts) = answer["details"]["conflicts"].as_array() {
            if ctx.json {
                output::json(&answer);
            } else {
                let mut text = String::new();
                for c in conflicts {
                    text.push_str(&format!(
                        "conflict {}{}\n",
                        output::cell(&c["path"]),
                        if c["binary"] == true { " (binary)" } else { "" }
                    ));
                    if let Some(m) = c["merged"].as_str() {
                        text.push_str(m);
                        if !m.ends_with('\n') {
                            text.push('\n');
                        }
                    }
                }
                output::out(&text);
            }
            return Err(Error::new(
                Kind::Conflict,
                what,
                answer["message"]
                    .as_str()
                    .unwrap_or("paths changed on both sides"),
            )
            .with_hint(format!(
                "settle each with --resolve PATH=fork|parent|@FILE, or --strategy, and {verb} again"
            )));
        }
        return Err(Error::new(
            Kind::Conflict,
            what,
            answer["message"].as_str().unwrap_or("conflict"),
        ));
    }
    if !resp.status().is_success() {
        return Err(crate::client::answer_error(resp, &what).await);
    }
    let report: Value = resp
        .json()
        .await
        .map_err(|e| Error::new(Kind::Server, &what, e))?;
    if ctx.json {
        output::json(&report);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = report["applied"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| {
                    vec![
                        output::cell(&x["operation"]),
                        output::cell(&x["path"]),
                        output::cell(&x["version"]),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    if rows.is_empty() {
        eprintln!("nothing to apply");
    } else {
        output::out(&output::table(&["OP", "PATH", "VERSION"], &rows));
    }
    if how.dry_run {
        eprintln!("dry run: nothing was changed");
    }
    Ok(())
}

async fn remove(ctx: &Ctx, fork: &str) -> Result<()> {
    let client = &ctx.client;
    client
        .send(
            client.api(Method::DELETE, &route::fork(fork, "")),
            &format!("cannot discard fork {fork}"),
        )
        .await?;
    eprintln!("discarded {fork}");
    Ok(())
}
