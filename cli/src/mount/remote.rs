//! The mount's view of the API: the same [`Client`] every `ws` command uses, called from the
//! FUSE threads (which are not the runtime's) through the runtime's handle. Network failures
//! and 5xx are retried a bounded number of times; writes carry an `Idempotency-Key` so that a
//! retry of a write whose answer was lost replays it instead of failing its precondition.

use crate::client::Client;
use crate::content;
use crate::discovery::Limits;
use crate::error::{Error, Kind, Result};
use crate::route;
use crate::source::Source;
use crate::write::{self, Precondition};
use reqwest::Method;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::runtime::Handle;

/// Attempts for a request that failed on the network or with a 5xx (then `EIO`).
const ATTEMPTS: u32 = 3;
/// Most pages (of 100) of changes read in one refresh; past it the mount lists everything
/// again.
const MAX_CHANGE_PAGES: usize = 50;

/// One file as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    pub path: String,
    pub version: u64,
    pub etag: String,
    /// Unknown in a snapshot's listing (it names versions only).
    pub size: Option<u64>,
    /// RFC 3339, milliseconds, UTC: the server's order of changes.
    pub updated_at: String,
    pub content_type: Option<String>,
}

impl Meta {
    pub fn from_json(v: &Value) -> Option<Meta> {
        Some(Meta {
            path: v["path"].as_str()?.to_owned(),
            version: v["version"].as_u64()?,
            etag: v["etag"].as_str()?.to_owned(),
            size: v["size"].as_u64(),
            updated_at: v["updatedAt"].as_str().unwrap_or_default().to_owned(),
            content_type: v["contentType"].as_str().map(str::to_owned),
        })
    }
}

/// One row of the change log: a write (`meta`) or a delete of `path`.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: String,
    pub time: String,
    pub meta: Option<Meta>,
}

/// A past version of a file.
#[derive(Debug, Clone)]
pub struct VersionRow {
    pub version: u64,
    pub etag: String,
    pub size: Option<u64>,
    pub updated_at: String,
}

pub struct Remote {
    client: Client,
    rt: Handle,
    pub limits: Limits,
    /// A read-only mount of this snapshot.
    pub snapshot: Option<String>,
    /// Prefix of this mount's idempotency keys (unique per mount process).
    key_prefix: String,
    writes: AtomicU64,
}

impl Remote {
    pub fn new(
        client: Client,
        rt: Handle,
        limits: Limits,
        snapshot: Option<String>,
        mount_id: &str,
    ) -> Remote {
        Remote {
            client,
            rt,
            limits,
            snapshot,
            key_prefix: format!("mount-{mount_id}"),
            writes: AtomicU64::new(0),
        }
    }

    fn next_key(&self) -> String {
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.key_prefix)
    }

    /// Runs `op` until it succeeds, fails for a reason a retry cannot change, or
    /// [`ATTEMPTS`] are spent (250 ms, then 1 s between them).
    fn retrying<T, F>(&self, mut op: impl FnMut() -> F) -> Result<T>
    where
        F: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.rt.block_on(op()) {
                Err(e) if e.kind == Kind::Server && attempt < ATTEMPTS => {
                    std::thread::sleep(Duration::from_millis(if attempt == 1 {
                        250
                    } else {
                        1000
                    }));
                }
                other => return other,
            }
        }
    }

    /// Every live file (every page), or the mounted snapshot's files.
    pub fn list_all(&self) -> Result<Vec<Meta>> {
        if let Some(id) = &self.snapshot {
            return self.snapshot_files(id);
        }
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let query = route::with_query(
                route::FILES,
                &[("limit", Some("1000".into())), ("nextToken", token.clone())],
            );
            let page = self.retrying(|| {
                self.client
                    .json(self.client.api(Method::GET, &query), "cannot list files")
            })?;
            out.extend(
                page["files"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Meta::from_json),
            );
            match page["nextToken"].as_str() {
                Some(t) => token = Some(t.to_owned()),
                None => return Ok(out),
            }
        }
    }

    /// One file's metadata as the listing has it (`None`: no live file there).
    pub fn stat(&self, path: &str) -> Result<Option<Meta>> {
        let query = route::with_query(
            route::FILES,
            &[
                ("prefix", Some(path.to_owned())),
                ("limit", Some("100".into())),
            ],
        );
        let page = self.retrying(|| {
            self.client
                .json(self.client.api(Method::GET, &query), "cannot list files")
        })?;
        Ok(page["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Meta::from_json)
            .find(|m| m.path == path))
    }

    /// Streams a file's bytes (`query`: `version=N` or `snapshot=ID`, or none) into `dest`.
    pub fn fetch(&self, path: &str, query: Option<(&str, String)>, dest: &Path) -> Result<Meta> {
        let mounted = self.snapshot.clone().map(|s| ("snapshot", s));
        let pairs: Vec<(&str, Option<String>)> = query
            .or(mounted)
            .map(|(k, v)| vec![(k, Some(v))])
            .unwrap_or_default();
        let route = route::with_query(&route::file(path), &pairs);
        let what = format!("cannot read {path}");
        self.retrying(|| async {
            let mut file = std::fs::File::create(dest)
                .map_err(|e| Error::new(Kind::Server, &what, format!("cache: {e}")))?;
            let mut failed = None;
            let read = content::read(&self.client, &route, &what, &mut |chunk| {
                if failed.is_none() {
                    if let Err(e) = file.write_all(chunk) {
                        failed = Some(e);
                    }
                }
            })
            .await?;
            if let Some(e) = failed {
                return Err(Error::new(Kind::Server, &what, format!("cache: {e}")));
            }
            let mut meta = Meta::from_json(&read.answer).ok_or_else(|| {
                Error::new(
                    Kind::Server,
                    &what,
                    "the answer has no path, version or etag",
                )
            })?;
            meta.size = Some(file.metadata().map(|m| m.len()).unwrap_or(0));
            Ok(meta)
        })
    }

    /// Writes `local`'s bytes as the next version of `path` under `precondition`.
    pub fn put(
        &self,
        path: &str,
        local: &Path,
        content_type: Option<&str>,
        precondition: &Precondition,
    ) -> Result<Meta> {
        let what = format!("cannot write {path}");
        let source = Source::from_file(local, self.limits.max_file_bytes)?;
        let key = self.next_key();
        self.retrying(|| async {
            let written = write::write(
                &self.client,
                path,
                &source,
                content_type,
                precondition,
                self.limits,
                false,
                Some(&key),
            )
            .await?;
            Meta::from_json(&written.answer)
                .ok_or_else(|| Error::new(Kind::Server, &what, "the answer has no version or etag"))
        })
    }

    /// Deletes `path` if it is still at `etag`.
    pub fn delete(&self, path: &str, etag: &str) -> Result<()> {
        let route = route::file(path);
        let what = format!("cannot delete {path}");
        self.retrying(|| {
            self.client.send(
                self.client
                    .api(Method::DELETE, &route)
                    .header("If-Match", etag),
                &what,
            )
        })
        .map(|_| ())
    }

    /// Applies `operations` all together (`POST .../commits`); the answer's `results`.
    pub fn commit(&self, operations: Vec<Value>) -> Result<Vec<Value>> {
        let body = json!({ "operations": operations, "message": "ws mount" });
        let key = self.next_key();
        let answer = self.retrying(|| {
            self.client.json(
                self.client
                    .api(Method::POST, route::COMMITS)
                    .header("Idempotency-Key", &key)
                    .json(&body),
                "cannot commit",
            )
        })?;
        Ok(answer["results"].as_array().cloned().unwrap_or_default())
    }

    /// Changes at or after `since` (RFC 3339; all when absent), newest first; with `limit`
    /// only that first page. `None` when there are more than the mount reads in one go (it
    /// then lists everything again).
    pub fn changes_since(
        &self,
        since: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Option<Vec<Change>>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_CHANGE_PAGES {
            let query = route::with_query(
                "/v1/host/workspace/changes",
                &[
                    ("since", since.map(str::to_owned)),
                    ("limit", Some(limit.unwrap_or(100).to_string())),
                    ("nextToken", token.clone()),
                ],
            );
            let page = self.retrying(|| {
                self.client
                    .json(self.client.api(Method::GET, &query), "cannot read changes")
            })?;
            for c in page["changes"].as_array().into_iter().flatten() {
                let (Some(path), Some(time)) = (c["path"].as_str(), c["time"].as_str()) else {
                    continue;
                };
                let meta = if c["operation"].as_str() == Some("delete") {
                    None
                } else {
                    Meta::from_json(&json!({
                        "path": path, "version": c["version"], "etag": c["etag"],
                        "size": c["size"], "updatedAt": time, "contentType": c["contentType"],
                    }))
                };
                out.push(Change {
                    path: path.to_owned(),
                    time: time.to_owned(),
                    meta,
                });
            }
            match page["nextToken"].as_str() {
                Some(t) if limit.is_none() => token = Some(t.to_owned()),
                _ => return Ok(Some(out)),
            }
        }
        Ok(None)
    }

    /// A file's versions, newest first.
    pub fn versions(&self, path: &str) -> Result<Vec<VersionRow>> {
        let route = route::versions(path);
        let what = format!("cannot list the versions of {path}");
        let answer = self.retrying(|| {
            self.client
                .json(self.client.api(Method::GET, &route), &what)
        })?;
        Ok(answer["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                Some(VersionRow {
                    version: v["version"].as_u64()?,
                    etag: v["etag"].as_str()?.to_owned(),
                    size: v["size"].as_u64(),
                    updated_at: v["updatedAt"].as_str().unwrap_or_default().to_owned(),
                })
            })
            .collect())
    }

    /// The workspace's snapshots' ids.
    pub fn snapshots(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_CHANGE_PAGES {
            let query = route::with_query(route::SNAPSHOTS, &[("nextToken", token.clone())]);
            let page = self.retrying(|| {
                self.client.json(
                    self.client.api(Method::GET, &query),
                    "cannot list snapshots",
                )
            })?;
            out.extend(
                page["snapshots"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s["snapshotId"].as_str().map(str::to_owned)),
            );
            match page["nextToken"].as_str() {
                Some(t) => token = Some(t.to_owned()),
                None => break,
            }
        }
        Ok(out)
    }

    /// The files a snapshot pinned (their sizes are not in its record).
    pub fn snapshot_files(&self, id: &str) -> Result<Vec<Meta>> {
        let route = route::snapshot(id);
        let what = format!("cannot read snapshot {id}");
        let answer = self.retrying(|| {
            self.client
                .json(self.client.api(Method::GET, &route), &what)
        })?;
        let at = answer["createdAt"].as_str().unwrap_or_default().to_owned();
        Ok(answer["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let mut m = Meta::from_json(f)?;
                if m.updated_at.is_empty() {
                    m.updated_at.clone_from(&at);
                }
                Some(m)
            })
            .collect())
    }
}
