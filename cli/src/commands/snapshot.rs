//! `ws snapshot create|ls|show`.

use super::Ctx;
use crate::cli::SnapshotCommand;
use crate::error::{Kind, Result};
use crate::output;
use crate::route;
use reqwest::Method;
use serde_json::{json, Value};

pub async fn run(ctx: &mut Ctx, command: SnapshotCommand) -> Result<()> {
    match command {
        SnapshotCommand::Create { label, keep } => create(ctx, label, keep).await,
        SnapshotCommand::Ls => list(ctx).await,
        SnapshotCommand::Show { id } => show(ctx, &id).await,
    }
}

async fn create(ctx: &Ctx, label: Option<String>, keep: bool) -> Result<()> {
    let mut body = json!({});
    if let Some(label) = label {
        body["label"] = json!(label);
    }
    if keep {
        body["keep"] = json!(true);
    }
    let client = &ctx.client;
    let answer = client
        .json(
            client.api(Method::POST, route::SNAPSHOTS).json(&body),
            "cannot create a snapshot",
        )
        .await?;
    if ctx.json {
        output::json(&answer);
        return Ok(());
    }
    // The id alone on stdout, so `SNAP=$(ws snapshot create)` works; the rest for people.
    output::out(&format!("{}\n", output::cell(&answer["snapshotId"])));
    // The answer lists the first files only when there are many (`moreFiles`).
    let files = answer["files"].as_array().map_or(0, Vec::len);
    let plural = if files == 1 { "" } else { "s" };
    let more = if answer["moreFiles"] == json!(true) {
        "+"
    } else {
        ""
    };
    eprintln!("{files}{more} file{plural} held; {}", expiry(&answer));
    Ok(())
}

fn expiry(snapshot: &Value) -> String {
    match snapshot["expiresAt"].as_str() {
        Some(at) => format!("expires {at}"),
        None => "kept until deleted".to_owned(),
    }
}

async fn list(ctx: &Ctx) -> Result<()> {
    let client = &ctx.client;
    let mut snapshots: Vec<Value> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let query = route::with_query(route::SNAPSHOTS, &[("nextToken", token.take())]);
        let page = client
            .json(client.api(Method::GET, &query), "cannot list snapshots")
            .await?;
        snapshots.extend(page["snapshots"].as_array().cloned().unwrap_or_default());
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    if ctx.json {
        output::json(&json!({ "snapshots": snapshots }));
        return Ok(());
    }
    if snapshots.is_empty() {
        eprintln!("no snapshots");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = snapshots
        .iter()
        .map(|s| {
            vec![
                output::cell(&s["snapshotId"]),
                output::cell(&s["label"]),
                output::cell(&s["createdAt"]),
                s["expiresAt"].as_str().unwrap_or("kept").to_owned(),
            ]
        })
        .collect();
    output::out(&output::table(
        &["ID", "LABEL", "CREATED", "EXPIRES"],
        &rows,
    ));
    Ok(())
}

async fn show(ctx: &Ctx, id: &str) -> Result<()> {
    let client = &ctx.client;
    let answer = client
        .json(
            client.api(Method::GET, &route::snapshot(id)),
            &format!("cannot read snapshot {id}"),
        )
        .await
        .map_err(|e| e.hint_for(Kind::NotFound, "list live snapshots with `ws snapshot ls`"))?;
    if ctx.json {
        output::json(&answer);
        return Ok(());
    }
    let mut text = format!("snapshot {}\n", output::cell(&answer["snapshotId"]));
    if let Some(label) = answer["label"].as_str() {
        text.push_str(&format!("label    {label}\n"));
    }
    text.push_str(&format!(
        "created  {}\n{}\n\n",
        output::cell(&answer["createdAt"]),
        expiry(&answer)
    ));
    let rows: Vec<Vec<String>> = answer["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .map(|f| {
                    vec![
                        output::cell(&f["path"]),
                        output::cell(&f["version"]),
                        output::cell(&f["etag"]),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    text.push_str(&output::table(&["PATH", "VERSION", "ETAG"], &rows));
    output::out(&text);
    Ok(())
}
