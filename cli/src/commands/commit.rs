//! `ws commit`: several writes, deletes and moves applied together or not at all
//! (`POST /v1/host/workspace/commits`), from flags or from the API's JSON body in a file.

use super::Ctx;
use crate::cli::CommitArgs;
use crate::error::{Error, Kind, Result};
use crate::output;
use crate::route;
use crate::state::Entry;
use crate::write::quote_etag;
use base64::Engine;
use reqwest::Method;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

const WHAT: &str = "cannot commit";

pub async fn run(ctx: &mut Ctx, args: CommitArgs) -> Result<()> {
    let (mut body, hashes) = match &args.file {
        Some(file) => (from_file(file)?, Map::new()),
        None => from_flags(&args)?,
    };
    if let Some(m) = &args.message {
        body["message"] = json!(m);
    }
    let client = &ctx.client;
    let mut rb = client.api(Method::POST, route::COMMITS).json(&body);
    if let Some(k) = &args.idempotency_key {
        rb = rb.header("Idempotency-Key", k);
    }
    let answer = client.json(rb, WHAT).await.map_err(|e| {
        e.hint_for(
            Kind::Conflict,
            "a file changed since you read it; nothing was applied. Run `ws ls` or `ws cat` again, then retry",
        )
    })?;
    let results = answer["results"].as_array().cloned().unwrap_or_default();
    remember(ctx, &results, &hashes);
    if ctx.json {
        output::json(&answer);
        return Ok(());
    }
    let mut text = if answer["replayed"] == json!(true) {
        format!(
            "already committed with this Idempotency-Key: {} operation(s), nothing applied again\n",
            results.len()
        )
    } else {
        format!("committed {} operation(s)\n", results.len())
    };
    for r in &results {
        text.push_str(&line(r));
        text.push('\n');
    }
    output::out(&text);
    Ok(())
}

/// One result as a line: what happened to which path, and the version it made.
fn line(r: &Value) -> String {
    let file = |f: &Value| {
        format!(
            "version {} (etag {})",
            output::cell(&f["version"]),
            output::cell(&f["etag"])
        )
    };
    match r["op"].as_str() {
        Some("put") => format!("put {}: {}", output::cell(&r["path"]), file(r)),
        Some("delete") => format!("deleted {}", output::cell(&r["path"])),
        Some("move") => format!(
            "moved {} to {}: {}",
            output::cell(&r["from"]),
            output::cell(&r["to"]["path"]),
            file(&r["to"])
        ),
        _ => r.to_string(),
    }
}

/// What this machine knows now: written paths at their new etags, removed ones forgotten
/// (so a later `--safe` checks against them).
fn remember(ctx: &mut Ctx, results: &[Value], hashes: &Map<String, Value>) {
    let mut set = |path: &Value, f: &Value| {
        if let (Some(path), Some(etag)) = (path.as_str(), f["etag"].as_str()) {
            let sha256 = hashes
                .get(path)
                .and_then(Value::as_str)
                .or_else(|| f["sha256"].as_str())
                .map(str::to_owned);
            ctx.state.set(
                path,
                Entry {
                    etag: etag.to_owned(),
                    sha256,
                },
            );
        }
    };
    for r in results {
        match r["op"].as_str() {
            Some("put") => set(&r["path"], r),
            Some("move") => set(&r["to"]["path"], &r["to"]),
            _ => {}
        }
    }
    for r in results {
        let gone = match r["op"].as_str() {
            Some("delete") => r["path"].as_str(),
            Some("move") => r["from"].as_str(),
            _ => None,
        };
        if let Some(p) = gone {
            ctx.state.remove(p);
        }
    }
}

/// `--file`: the API's body as it is (`-`: standard input).
fn from_file(file: &Path) -> Result<Value> {
    let what = format!("cannot read {}", file.display());
    let bytes = if file.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| Error::bad_input(&what, e))?;
        b
    } else {
        std::fs::read(file).map_err(|e| Error::bad_input(&what, e))?
    };
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_input(&what, format!("not JSON: {e}")))?;
    if !body["operations"].is_array() {
        return Err(Error::bad_input(
            what,
            r#"it must be the API's body: {"operations": [{"op": "put" | "delete" | "move", ...}]}"#,
        ));
    }
    Ok(body)
}

/// `PATH=VALUE`, split at the first `=` (a workspace path holds none).
fn pair<'a>(flag: &str, spec: &'a str, form: &str) -> Result<(&'a str, &'a str)> {
    spec.split_once('=')
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .ok_or_else(|| {
            Error::bad_input(
                format!("cannot read {flag} {spec}"),
                format!("it takes {form}"),
            )
        })
}

/// The flags as the API's body, and each put's SHA-256 (for `--safe` later).
fn from_flags(args: &CommitArgs) -> Result<(Value, Map<String, Value>)> {
    let mut ops: Vec<Value> = Vec::new();
    let mut hashes = Map::new();
    let mut stdin_used = false;
    for spec in &args.put {
        let (remote, local) = pair(
            "--put",
            spec,
            "REMOTE=LOCAL (a local file, or - for standard input)",
        )?;
        let bytes = if local == "-" {
            if stdin_used {
                return Err(Error::bad_input(
                    format!("cannot read --put {spec}"),
                    "standard input can be read for one --put only",
                ));
            }
            stdin_used = true;
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .map_err(|e| Error::bad_input("cannot read standard input", e))?;
            b
        } else {
            std::fs::read(local).map_err(|e| Error::bad_input(format!("cannot read {local}"), e))?
        };
        hashes.insert(
            remote.to_owned(),
            json!(hex::encode(Sha256::digest(&bytes))),
        );
        let mut op = json!({"op": "put", "path": remote});
        match String::from_utf8(bytes) {
            Ok(text) => op["content"] = json!(text),
            Err(e) => {
                op["contentBase64"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))
            }
        }
        ops.push(op);
    }
    for path in &args.delete {
        ops.push(json!({"op": "delete", "path": path}));
    }
    for spec in &args.moves {
        let (from, to) = pair("--move", spec, "FROM=TO")?;
        ops.push(json!({"op": "move", "from": from, "to": to}));
    }
    if ops.is_empty() {
        return Err(Error::bad_input(
            WHAT,
            "no operations: give --put, --delete or --move (or --file)",
        ));
    }
    for spec in &args.if_match {
        let (path, etag) = pair("--if-match", spec, "PATH=ETAG")?;
        let op = ops
            .iter_mut()
            .find(|o| o["path"] == path || o["from"] == path)
            .ok_or_else(|| {
                Error::bad_input(
                    format!("cannot read --if-match {spec}"),
                    format!("no --put, --delete or --move FROM names {path}"),
                )
            })?;
        op["ifMatch"] = json!(quote_etag(etag));
    }
    for path in &args.if_absent {
        let op = ops
            .iter_mut()
            .find(|o| (o["op"] == "put" && o["path"] == path.as_str()) || o["to"] == path.as_str())
            .ok_or_else(|| {
                Error::bad_input(
                    format!("cannot read --if-absent {path}"),
                    format!("no --put or --move TO names {path}"),
                )
            })?;
        op["ifNoneMatch"] = json!("*");
    }
    Ok((json!({ "operations": ops }), hashes))
}
