//! The workspace's files as MCP resources: `resources/list`, `resources/read` and
//! `resources/templates/list`, over the same `WorkspaceService` calls as the file routes, so
//! scopes and path-scoped keys decide exactly as they do there.
//!
//! The URI scheme (one scheme, three forms; a path's segments are percent-encoded as in any
//! URI path, `/` between them kept):
//!
//! | URI | What it names |
//! |---|---|
//! | `workspace:///notes/a.md` | the file's current version (the only form that changes, so the only one a client subscribes to) |
//! | `workspace:///notes/a.md?version=3` | a retained version of it |
//! | `workspace://snapshot/<id>/notes/a.md` | the file as snapshot `<id>` pinned it |
//!
//! A file is read as `text` when its bytes are valid UTF-8, as a base64 `blob` otherwise,
//! with its stored content type as `mimeType`. Reads over `maxFileBytes` are refused with
//! the way to fetch them (the file routes' download URL); nothing here holds more than one
//! file or one listing page.

use crate::tools::Workspace;
use crate::tree::is_marker;
use base64::Engine as _;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::{json, Value};
use workspace_core::model::format_time;
use workspace_core::{FileMeta, FilePath, PathPrefix, StoredFile, WorkspaceError};

/// The scheme of every resource this server serves.
pub const SCHEME: &str = "workspace";
/// Files listed per `resources/list` page.
pub const PAGE: usize = 100;

/// JSON-RPC error codes of resources: MCP's "resource not found", and this server's
/// "access denied" (a path-scoped key asking past its globs: 403 on the file routes).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
pub const ACCESS_DENIED: i64 = -32003;

/// A JSON-RPC error: code and message.
pub type Failure = (i64, String);

/// Characters a path keeps as they are in a URI (`/` included); everything else that a URI
/// path may not hold literally is percent-encoded.
const PATH_ENCODE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A parsed resource URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceUri {
    /// The current version (`version: None`) or a retained one.
    File {
        path: FilePath,
        version: Option<u64>,
    },
    /// A file as a snapshot pinned it.
    InSnapshot { snapshot: String, path: FilePath },
}

/// The URI of a file's current version.
pub fn file_uri(path: &str) -> String {
    format!("{SCHEME}:///{}", utf8_percent_encode(path, PATH_ENCODE))
}

fn invalid(uri: &str, why: &str) -> Failure {
    (
        crate::protocol::INVALID_PARAMS,
        format!(
            "Invalid resource URI '{}': {why}; this server's resources are workspace:///<path>, workspace:///<path>?version=<n> and workspace://snapshot/<id>/<path>",
            uri.escape_debug()
        ),
    )
}

fn decoded_path(uri: &str, encoded: &str) -> Result<FilePath, Failure> {
    let path = percent_decode_str(encoded)
        .decode_utf8()
        .map_err(|_| invalid(uri, "the path is not UTF-8 once percent-decoded"))?;
    FilePath::parse(&path).map_err(|e| invalid(uri, &e.to_string()))
}

impl ResourceUri {
    pub fn parse(uri: &str) -> Result<ResourceUri, Failure> {
        let rest = uri
            .strip_prefix("workspace://")
            .ok_or_else(|| invalid(uri, "not a workspace: URI"))?;
        if let Some(file) = rest.strip_prefix('/') {
            let (encoded, query) = match file.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (file, None),
            };
            let path = decoded_path(uri, encoded)?;
            let version = match query {
                None => None,
                Some(q) => {
                    let n = q
                        .strip_prefix("version=")
                        .and_then(|n| n.parse::<u64>().ok())
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            invalid(uri, "the only query is version=<n>, a version from 1 up")
                        })?;
                    Some(n)
                }
            };
            return Ok(ResourceUri::File { path, version });
        }
        if let Some(rest) = rest.strip_prefix("snapshot/") {
            let (snapshot, encoded) = rest
                .split_once('/')
                .ok_or_else(|| invalid(uri, "a snapshot URI names a file after the id"))?;
            if snapshot.is_empty() || encoded.contains('?') {
                return Err(invalid(uri, "a snapshot URI is snapshot/<id>/<path>"));
            }
            let path = decoded_path(uri, encoded)?;
            return Ok(ResourceUri::InSnapshot {
                snapshot: snapshot.to_owned(),
                path,
            });
        }
        Err(invalid(uri, "the authority is empty or 'snapshot'"))
    }
}

/// A domain error as a JSON-RPC error of a resource request.
pub fn failure(e: WorkspaceError, uri: &str) -> Failure {
    use crate::protocol::{INTERNAL_ERROR, INVALID_PARAMS};
    match e {
        WorkspaceError::NotFound(_) => (
            RESOURCE_NOT_FOUND,
            format!("Resource not found: {}", uri.escape_debug()),
        ),
        WorkspaceError::Forbidden(m) => (ACCESS_DENIED, format!("Access denied. {m}")),
        WorkspaceError::Validation(m) => (INVALID_PARAMS, format!("Invalid params: {m}")),
        WorkspaceError::TooLarge { message, .. } => (
            INVALID_PARAMS,
            format!("{message}; read it through GET /v1/host/workspace/files/<path>, which answers a download URL"),
        ),
        WorkspaceError::Capability { message, .. }
        | WorkspaceError::Unauthenticated(message)
        | WorkspaceError::NotProvided(message)
        | WorkspaceError::Unavailable(message) => (INVALID_PARAMS, message),
        WorkspaceError::Conflict { .. } => (INVALID_PARAMS, "Invalid params: conflict".to_owned()),
        WorkspaceError::Internal(detail) => {
            tracing::error!(error = %detail, "resource request failed");
            (
                INTERNAL_ERROR,
                "Internal error: the workspace failed to handle this request; retry later"
                    .to_owned(),
            )
        }
    }
}

fn require_read(ws: &Workspace<'_>) -> Result<(), Failure> {
    if ws.who.access.read {
        Ok(())
    } else {
        Err((
            ACCESS_DENIED,
            "Access denied. This credential may not read files: it needs the workspace:read scope"
                .to_owned(),
        ))
    }
}

/// The opaque `resources/list` cursor: the last path of the page before, base64url.
const CURSOR_TAG: &str = "r1:";

fn encode_cursor(after: &FilePath) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{CURSOR_TAG}{after}"))
}

fn decode_cursor(cursor: &str) -> Result<FilePath, Failure> {
    let bad = || {
        (
            crate::protocol::INVALID_PARAMS,
            "Invalid params: cursor is not one resources/list answered; start again without one"
                .to_owned(),
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| bad())?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    let path = text.strip_prefix(CURSOR_TAG).ok_or_else(bad)?;
    FilePath::parse(path).map_err(|_| bad())
}

fn listed(f: &FileMeta) -> Value {
    let name = f.path.rsplit('/').next().unwrap_or(&f.path);
    json!({
        "uri": file_uri(&f.path),
        "name": f.path,
        "title": name,
        "mimeType": f.content_type,
        "size": f.size,
        "annotations": { "lastModified": format_time(f.updated_at) },
    })
}

/// `resources/list`: the live files the caller may read, sorted by path, [`PAGE`] at a
/// time. Directory markers (`<dir>/.keep`) are left out, as the tools leave them out.
pub async fn list(ws: &Workspace<'_>, params: &Value) -> Result<Value, Failure> {
    require_read(ws)?;
    let after = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(decode_cursor(c)?),
        Some(_) => return Err(decode_cursor("").unwrap_err()),
    };
    let root = PathPrefix::parse("").map_err(|e| failure(e, ""))?;
    let page = ws
        .service
        .list(ws.who, &root, Some(PAGE), after.as_ref())
        .await
        .map_err(|e| failure(e, ""))?;
    let resources: Vec<Value> = page
        .files
        .iter()
        .filter(|f| !is_marker(&f.path))
        .map(listed)
        .collect();
    let mut out = json!({ "resources": resources });
    if let Some(next) = page.next_after {
        out["nextCursor"] = json!(encode_cursor(&next));
    }
    Ok(out)
}

/// A file's content as MCP sends it: `text` when UTF-8, else a base64 `blob`.
fn contents(uri: &str, file: StoredFile) -> Value {
    let mime = file.meta.content_type;
    match String::from_utf8(file.content) {
        Ok(text) => json!({ "uri": uri, "mimeType": mime, "text": text }),
        Err(e) => json!({
            "uri": uri,
            "mimeType": mime,
            "blob": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
        }),
    }
}

/// `resources/read` of one URI.
pub async fn read(ws: &Workspace<'_>, params: &Value) -> Result<Value, Failure> {
    let uri = params.get("uri").and_then(Value::as_str).ok_or((
        crate::protocol::INVALID_PARAMS,
        "Invalid params: resources/read needs a uri".to_owned(),
    ))?;
    let parsed = ResourceUri::parse(uri)?;
    require_read(ws)?;
    let file = match &parsed {
        ResourceUri::File { path, version } => ws.service.get(ws.who, path, *version).await,
        ResourceUri::InSnapshot { snapshot, path } => {
            ws.service.get_in_snapshot(ws.who, snapshot, path).await
        }
    }
    .map_err(|e| failure(e, uri))?;
    Ok(json!({ "contents": [contents(uri, file)] }))
}

/// The templates `resources/templates/list` answers (RFC 6570).
pub const FILE_TEMPLATE: &str = "workspace:///{+path}";
pub const VERSION_TEMPLATE: &str = "workspace:///{+path}{?version}";
pub const SNAPSHOT_TEMPLATE: &str = "workspace://snapshot/{snapshot}/{+path}";

pub fn templates() -> Value {
    json!({ "resourceTemplates": [
        {
            "uriTemplate": FILE_TEMPLATE,
            "name": "file",
            "title": "A file of the workspace",
            "description": "The current version of a file, by its path in the workspace (notes/a.md). Subscribe to it to hear when it changes.",
        },
        {
            "uriTemplate": VERSION_TEMPLATE,
            "name": "file-version",
            "title": "A retained version of a file",
            "description": "A file as one of its retained versions held it (version 1 is the first write).",
        },
        {
            "uriTemplate": SNAPSHOT_TEMPLATE,
            "name": "snapshot-file",
            "title": "A file in a snapshot",
            "description": "A file as a snapshot (a read-only point in time of the workspace) pinned it.",
        },
    ]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> FilePath {
        FilePath::parse(s).unwrap()
    }

    #[test]
    fn uris_round_trip_and_encode_what_a_uri_path_cannot_hold() {
        // Workspace paths hold only A-Z a-z 0-9 . _ / - today; the encoding is for the day
        // they hold more.
        assert_eq!(
            file_uri("notes/a b#1?.md"),
            "workspace:///notes/a%20b%231%3F.md"
        );
        assert_eq!(
            ResourceUri::parse(&file_uri("notes/a-b_1.md")).unwrap(),
            ResourceUri::File {
                path: path("notes/a-b_1.md"),
                version: None
            }
        );
        assert_eq!(
            ResourceUri::parse("workspace:///x/%61.txt?version=3").unwrap(),
            ResourceUri::File {
                path: path("x/a.txt"),
                version: Some(3)
            }
        );
        assert_eq!(
            ResourceUri::parse("workspace://snapshot/snap-1/a/b.md").unwrap(),
            ResourceUri::InSnapshot {
                snapshot: "snap-1".into(),
                path: path("a/b.md")
            }
        );
    }

    #[test]
    fn foreign_and_malformed_uris_are_invalid_params() {
        for bad in [
            "test://static-text",
            "workspace:",
            "workspace://",
            "workspace:///",
            "workspace:///a?version=0",
            "workspace:///a?version=x",
            "workspace:///a?v=1",
            "workspace:///../etc/passwd",
            "workspace:///a/%2e%2e/%2e%2e/b",
            "workspace:///%ff",
            "workspace://other/a",
            "workspace://snapshot/",
            "workspace://snapshot/id",
            "workspace://snapshot//a",
        ] {
            let e = ResourceUri::parse(bad).unwrap_err();
            assert_eq!(e.0, crate::protocol::INVALID_PARAMS, "{bad}: {e:?}");
        }
    }

    #[test]
    fn cursors_round_trip_and_bogus_ones_are_refused() {
        let c = encode_cursor(&path("a/b.md"));
        assert_eq!(decode_cursor(&c).unwrap(), path("a/b.md"));
        let other_tag = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("x1:a");
        for bad in ["", "xyz", "!!!", &other_tag] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
