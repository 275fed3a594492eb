//! `ws sync DIR [--prefix P]`: push every regular file under DIR to `P/<relative path>`,
//! skipping those whose content the workspace already has.
//!
//! "Already has" is judged by SHA-256: the listing carries each file's `sha256`, so nothing
//! is fetched; against a server that does not list it, the state file's hash of the etag the
//! workspace still lists serves, and otherwise the remote content is read and hashed. Each upload carries the etag just seen (or "only
//! if absent"), so a file someone writes meanwhile is reported as a conflict, not lost.

use crate::client::Client;
use crate::commands::Ctx;
use crate::content;
use crate::discovery::{self, Limits};
use crate::error::{Error, Result};
use crate::output;
use crate::route;
use crate::source::Source;
use crate::state::Entry;
use crate::write::{self, Precondition};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

enum Outcome {
    Skipped,
    Uploaded { answer: Value, via_upload: bool },
}

pub async fn run(ctx: &mut Ctx, dir: &Path, prefix: Option<&str>) -> Result<()> {
    let prefix = prefix
        .map(|p| p.trim_end_matches('/'))
        .filter(|p| !p.is_empty());
    let mut files = Vec::new();
    walk(dir, "", &mut files)?;
    files.sort();
    let limits = discovery::limits(&ctx.client).await?;
    let remote = remote_etags(&ctx.client, prefix).await?;

    let (mut uploaded, mut skipped, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_error: Option<Error> = None;
    for (relative, local) in files {
        let path = match prefix {
            Some(p) => format!("{p}/{relative}"),
            None => relative,
        };
        match one(ctx, &path, &local, remote.get(&path), limits).await {
            Ok(Outcome::Skipped) => {
                if !ctx.json {
                    output::out(&format!("skipped   {path} (unchanged)\n"));
                }
                skipped.push(json!(path));
            }
            Ok(Outcome::Uploaded { answer, via_upload }) => {
                if !ctx.json {
                    output::out(&format!(
                        "uploaded  {path} (version {})\n",
                        output::cell(&answer["version"])
                    ));
                }
                uploaded.push(json!({
                    "path": path,
                    "version": answer["version"],
                    "etag": answer["etag"],
                    "size": answer["size"],
                    "via": if via_upload { "upload" } else { "direct" },
                }));
            }
            Err(e) => {
                eprintln!("{e}");
                failed.push(json!({"path": path, "error": format!("{}: {}", e.what, e.detail)}));
                first_error.get_or_insert(e);
            }
        }
    }

    if ctx.json {
        output::json(&json!({"uploaded": uploaded, "skipped": skipped, "failed": failed}));
    } else {
        output::out(&format!(
            "{} uploaded, {} skipped, {} failed\n",
            uploaded.len(),
            skipped.len(),
            failed.len()
        ));
    }
    match first_error {
        // The exit code of the first failure; each one was reported as it happened.
        Some(e) => Err(Error::new(
            e.kind,
            "sync incomplete",
            format!(
                "{} of {} files failed",
                failed.len(),
                failed.len() + uploaded.len() + skipped.len()
            ),
        )),
        None => Ok(()),
    }
}

async fn one(
    ctx: &mut Ctx,
    path: &str,
    local: &Path,
    listed: Option<&Listed>,
    limits: Limits,
) -> Result<Outcome> {
    let source = Source::from_file(local, limits.max_file_bytes)?;
    let precondition = match listed {
        None => Precondition::IfAbsent,
        Some(listed) => {
            let (etag, remote_sha) = remote_hash(ctx, path, listed).await?;
            if remote_sha == source.sha256 {
                ctx.state.set(
                    path,
                    Entry {
                        etag,
                        sha256: Some(remote_sha),
                    },
                );
                return Ok(Outcome::Skipped);
            }
            Precondition::IfMatch(etag)
        }
    };
    let written = write::write(
        &ctx.client,
        path,
        &source,
        None,
        &precondition,
        limits,
        ctx.progress(),
        None,
    )
    .await
    .map_err(|e| {
        e.hint_for(
            crate::error::Kind::Conflict,
            "someone wrote the file during the sync; run `ws sync` again",
        )
    })?;
    if let Some(etag) = written.answer["etag"].as_str() {
        ctx.state.set(
            path,
            Entry {
                etag: etag.to_owned(),
                sha256: Some(source.sha256),
            },
        );
    }
    Ok(Outcome::Uploaded {
        answer: written.answer,
        via_upload: written.via_upload,
    })
}

/// The current etag of `path` and the SHA-256 of its content: from the state when it knows
/// the listed etag's hash, else by reading the content.
async fn remote_hash(ctx: &Ctx, path: &str, listed: &Listed) -> Result<(String, String)> {
    if let Some(sha) = &listed.sha256 {
        return Ok((listed.etag.clone(), sha.clone()));
    }
    let listed = listed.etag.as_str();
    if let Some(Entry {
        etag,
        sha256: Some(sha),
    }) = ctx.state.get(path)
    {
        if etag == listed {
            return Ok((etag.clone(), sha.clone()));
        }
    }
    let read = content::read(
        &ctx.client,
        &route::file(path),
        &format!("cannot read {path}"),
        &mut |_| {},
    )
    .await?;
    let etag = read.answer["etag"].as_str().unwrap_or(listed).to_owned();
    Ok((etag, read.sha256))
}

/// A live file as the listing shows it.
struct Listed {
    etag: String,
    /// The content's SHA-256, where the server lists it.
    sha256: Option<String>,
}

/// path → etag (and content hash) of every live file under `prefix`, all pages.
async fn remote_etags(client: &Client, prefix: Option<&str>) -> Result<HashMap<String, Listed>> {
    let mut etags = HashMap::new();
    let mut token: Option<String> = None;
    loop {
        let query = route::with_query(
            route::FILES,
            &[
                ("prefix", prefix.map(|p| format!("{p}/"))),
                ("nextToken", token.take()),
            ],
        );
        let page = client
            .json(client.api(Method::GET, &query), "cannot list files")
            .await?;
        for f in page["files"].as_array().into_iter().flatten() {
            if let (Some(p), Some(e)) = (f["path"].as_str(), f["etag"].as_str()) {
                let sha256 = f["sha256"].as_str().map(str::to_owned);
                etags.insert(
                    p.to_owned(),
                    Listed {
                        etag: e.to_owned(),
                        sha256,
                    },
                );
            }
        }
        match page["nextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => return Ok(etags),
        }
    }
}

/// Every regular file under `dir` as (relative path with `/`, local path). Symbolic links
/// are not followed (a link cycle would never end, and a link out of DIR is not under it).
fn walk(dir: &Path, relative: &str, out: &mut Vec<(String, PathBuf)>) -> Result<()> {
    let unreadable =
        |e: std::io::Error| Error::bad_input(format!("cannot read {}", dir.display()), e);
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let kind = entry.file_type().map_err(unreadable)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(Error::bad_input(
                format!("cannot sync {}", entry.path().display()),
                "the name is not UTF-8",
            ));
        };
        let rel = if relative.is_empty() {
            name.to_owned()
        } else {
            format!("{relative}/{name}")
        };
        if kind.is_dir() {
            walk(&entry.path(), &rel, out)?;
        } else if kind.is_file() {
            out.push((rel, entry.path()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_finds_nested_regular_files_with_slash_paths() {
        let dir = std::env::temp_dir().join(format!("ws-walk-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("top.md"), "1").unwrap();
        std::fs::write(dir.join("a/b/deep.md"), "2").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&dir, dir.join("a/loop")).unwrap();
        let mut files = Vec::new();
        walk(&dir, "", &mut files).unwrap();
        files.sort();
        let names: Vec<&str> = files.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(names, ["a/b/deep.md", "top.md"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(walk(&dir, "", &mut files).is_err());
    }
}
