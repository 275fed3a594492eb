//! The one route table. Every Lambda function serves the rows that name it, the local server
//! serves them all, and a test holds this table equal to the routes in template.yaml.

use http::Method;
use workspace_core::{Access, Result, WorkspaceError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    Health,
    Discovery,
    Capabilities,
    /// The OpenAPI document of this table (`crate::openapi`).
    OpenApi,
    ListFiles,
    /// The workspace's change log.
    ListChanges,
    GetFile,
    PutFile,
    DeleteFile,
    /// MCP Streamable HTTP: JSON-RPC messages, served by the "mcp" function.
    Mcp,
    /// A session's server-to-client stream (`GET /mcp`): the local server's sessions only;
    /// 405 where there are none (Lambda).
    McpStream,
    /// The end of a session (`DELETE /mcp`); 405 where there are none.
    McpEnd,
    /// The MCP function's own health document (`service: workspace-tool`).
    McpHealth,
    /// One call of Claude's memory tool (served with MCP: the agent-tool function).
    Memory,
    CacheGet,
    CachePut,
    CacheDelete,
    BlobList,
    BlobGet,
    BlobPut,
    BlobDelete,
    BlobPresign,
    ListVersions,
    RestoreVersion,
    /// Erase a past version from history (`workspace:admin`).
    EraseVersion,
    Diff,
    CreateSnapshot,
    ListSnapshots,
    GetSnapshot,
    /// Roll the workspace back to a snapshot.
    RestoreSnapshot,
    DeleteSnapshot,
    /// Forks (`workspace_core::forks`): a private copy of the workspace, its three-way
    /// diff, and the merge back.
    CreateFork,
    ListForks,
    GetFork,
    DiscardFork,
    ForkDiff,
    MergeFork,
    RebaseFork,
    /// Ranked keyword, exact and regex search over the workspace (`workspace_core::search`).
    Search,
    /// Run records (RFC 0059 §D): a run is a snapshot that names its workflow.
    CreateRun,
    ListRuns,
    GetRun,
    StartUpload,
    /// Puts, deletes and moves of several paths, all or nothing (`crate::commits`).
    Commit,
    /// `workspace.updated` of the caller's workspace as server-sent events (the local
    /// server; on AWS, EventBridge).
    WorkspaceEvents,
    // The session service (`SessionService`) (`sessions/`).
    CreateWorkspace,
    ListWorkspaces,
    GetWorkspace,
    DeleteWorkspace,
    UploadArtifact,
    ListArtifacts,
    GetArtifact,
    ListSessions,
    SessionHistory,
    DeleteSession,
    /// The web console's page (`workspace-console`), served by the "console" function.
    ConsolePage,
    /// The console's assets (and the page again as `index.html`).
    ConsoleAsset,
}

/// One row: method + API Gateway path pattern → route, and the function that serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub method: Method,
    /// In API Gateway syntax; a trailing `{path+}` is greedy, a trailing `{id}` is one
    /// segment.
    pub pattern: &'static str,
    pub route: Route,
    /// The package under `functions/` (and the SAM function) that serves this row.
    pub function: &'static str,
    /// The credential it needs ([`Needs`]).
    pub needs: Needs,
}

const FILES: &str = "/v1/host/workspace/files";
const FILE: &str = "/v1/host/workspace/files/{path+}";
const CACHE_ENTRY: &str = "/v1/host/cache/{key}";
const BLOBS: &str = "/v1/host/blob/{bucket}";
const BLOB: &str = "/v1/host/blob/{bucket}/{key+}";
const PRESIGN: &str = "/v1/host/blob/{bucket}/presign";
const VERSIONS: &str = "/v1/host/workspace/versions/{path+}";
const DIFF: &str = "/v1/host/workspace/diff/{path+}";
const SNAPSHOTS: &str = "/v1/host/workspace/snapshots";
const SNAPSHOT: &str = "/v1/host/workspace/snapshots/{id}";
const FORKS: &str = "/v1/host/workspace/forks";
const FORK: &str = "/v1/host/workspace/forks/{id}";

impl RouteSpec {
    /// Whether the route answers without a credential (health, discovery, the OpenAPI
    /// document, the console); every other route authenticates before its body is read.
    /// template.yaml's HTTP API secures every other route in its OpenAPI body (a test
    /// holds the two equal).
    pub fn public(&self) -> bool {
        self.needs == Needs::Nothing
    }
}

/// What a route needs of the caller's credential: one column of the table, checked once
/// before the route's handler runs (`App::handle`), by [`Needs::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// No credential (public).
    Nothing,
    /// A valid credential; the handler decides per call what it may do (MCP: each tool
    /// checks the scope it needs, so a read-only key lists and reads).
    Credential,
    /// `workspace:read`.
    Read,
    /// `workspace:write`.
    Write,
    /// `workspace:admin` (erasing history).
    Admin,
}

impl Needs {
    /// Whether `access` is enough; 403 naming the missing scope when it is not. Also the
    /// check of handlers whose need depends on the call (a presigned PUT, a memory command
    /// that writes, an MCP tool).
    pub fn check(self, access: Access) -> Result<()> {
        let (ok, scope, may_not) = match self {
            Needs::Nothing | Needs::Credential => return Ok(()),
            Needs::Read => (access.read, "read", "read files"),
            Needs::Write => (access.write, "write", "change files"),
            Needs::Admin => (access.admin, "admin", "erase history"),
        };
        if ok {
            Ok(())
        } else {
            Err(WorkspaceError::Forbidden(format!(
                "this credential may not {may_not}: it needs the workspace:{scope} scope"
            )))
        }
    }
}

/// One [`RouteSpec`] per line: `METHOD pattern => Route, "function", Needs;`.
macro_rules! rows {
    ($($method:ident $pattern:expr => $route:ident, $function:literal, $needs:ident;)*) => {
        &[$(RouteSpec {
            method: Method::$method,
            pattern: $pattern,
            route: Route::$route,
            function: $function,
            needs: Needs::$needs,
        }),*]
    };
}

impl Route {
    /// The route's OpenAPI `operationId` (a test holds it equal to the document's): a
    /// bounded name for it in logs and metrics.
    pub fn operation_id(self) -> &'static str {
        match self {
            Route::Health => "health",
            Route::Discovery => "discovery",
            Route::Capabilities => "capabilities",
            Route::OpenApi => "openapi",
            Route::ListFiles => "listFiles",
            Route::ListChanges => "listChanges",
            Route::Search => "search",
            Route::GetFile => "getFile",
            Route::PutFile => "putFile",
            Route::DeleteFile => "deleteFile",
            Route::Mcp => "mcp",
            Route::McpStream => "mcpStream",
            Route::McpEnd => "mcpEnd",
            Route::McpHealth => "mcpHealth",
            Route::Memory => "memory",
            Route::CacheGet => "cacheGet",
            Route::CachePut => "cachePut",
            Route::CacheDelete => "cacheDelete",
            Route::BlobList => "blobList",
            Route::BlobPresign => "blobPresign",
            Route::BlobGet => "blobGet",
            Route::BlobPut => "blobPut",
            Route::BlobDelete => "blobDelete",
            Route::ListVersions => "listVersions",
            Route::RestoreVersion => "restoreVersion",
            Route::EraseVersion => "eraseVersion",
            Route::Diff => "diff",
            Route::CreateSnapshot => "createSnapshot",
            Route::ListSnapshots => "listSnapshots",
            Route::GetSnapshot => "getSnapshot",
            Route::DeleteSnapshot => "deleteSnapshot",
            Route::RestoreSnapshot => "restoreSnapshot",
            Route::CreateFork => "createFork",
            Route::ListForks => "listForks",
            Route::GetFork => "getFork",
            Route::DiscardFork => "discardFork",
            Route::ForkDiff => "forkDiff",
            Route::MergeFork => "mergeFork",
            Route::RebaseFork => "rebaseFork",
            Route::CreateRun => "createRun",
            Route::ListRuns => "listRuns",
            Route::GetRun => "getRun",
            Route::StartUpload => "startUpload",
            Route::Commit => "commit",
            Route::WorkspaceEvents => "workspaceEvents",
            Route::CreateWorkspace => "createWorkspace",
            Route::ListWorkspaces => "listWorkspaces",
            Route::GetWorkspace => "getWorkspace",
            Route::DeleteWorkspace => "deleteWorkspace",
            Route::UploadArtifact => "uploadArtifact",
            Route::ListArtifacts => "listArtifacts",
            Route::GetArtifact => "getArtifact",
            Route::ListSessions => "listSessions",
            Route::SessionHistory => "sessionHistory",
            Route::DeleteSession => "deleteSession",
            Route::ConsolePage => "consolePage",
            Route::ConsoleAsset => "consoleAsset",
        }
    }

    /// The workspace API for agent sessions (`crate::sessions`): its caller is a tenant and
    /// a principal (the credential's grant), not one workspace's identity.
    pub fn acts_on_tenant(self) -> bool {
        matches!(
            self,
            Route::CreateWorkspace
                | Route::ListWorkspaces
                | Route::GetWorkspace
                | Route::DeleteWorkspace
                | Route::UploadArtifact
                | Route::ListArtifacts
                | Route::GetArtifact
                | Route::ListSessions
                | Route::SessionHistory
                | Route::DeleteSession
        )
    }

    /// A body of raw bytes, never read as a JSON object that could name a scope.
    pub fn body_is_opaque(self) -> bool {
        matches!(self, Route::BlobPut)
    }

    /// Whether the route answers the "mcp" protocol: MCP's transport rules apply (a browser
    /// `Origin` outside the allow-list is refused with 403 before anything else, as the
    /// Streamable HTTP transport requires against DNS rebinding).
    pub fn checks_origin(self) -> bool {
        matches!(self, Route::Mcp | Route::McpStream | Route::McpEnd)
    }

    /// Whether the route serves a path-scoped credential (`workspace_core::PathScope`): the
    /// routes over the workspace's files, which check every path they name and filter
    /// every path they return by it. The others (cache, blobs, the workspace and session
    /// API) have no file paths to limit such a credential to, so they refuse it with 403;
    /// a new route refuses it too until it is added here.
    pub fn takes_path_scoped_keys(self) -> bool {
        matches!(
            self,
            Route::ListFiles
                | Route::ListChanges
                | Route::Search
                | Route::GetFile
                | Route::PutFile
                | Route::DeleteFile
                | Route::Mcp
                | Route::McpStream
                | Route::McpEnd
                | Route::Memory
                | Route::ListVersions
                | Route::RestoreVersion
                | Route::EraseVersion
                | Route::Diff
                | Route::CreateSnapshot
                | Route::ListSnapshots
                | Route::GetSnapshot
                | Route::RestoreSnapshot
                | Route::DeleteSnapshot
                | Route::CreateRun
                | Route::ListRuns
                | Route::GetRun
                | Route::StartUpload
                | Route::Commit
                | Route::WorkspaceEvents
        )
    }
}

/// The function behind API Gateway's `$default` route, which receives every request no row
/// matches; it answers from this table like the local server (404, or 405 with `Allow`).
pub const UNMATCHED_FUNCTION: &str = "get";

/// The table itself: `METHOD pattern => route, "function", needs;`, one row per line.
pub const ROUTES: &[RouteSpec] = rows! {
    GET    "/health" => Health, "get", Nothing;
    GET    "/.well-known/openwop" => Discovery, "get", Nothing;
    GET    "/v1/host/capabilities" => Capabilities, "get", Nothing;
    GET    "/openapi.json" => OpenApi, "get", Nothing;
    GET    FILES => ListFiles, "list", Read;
    GET    "/v1/host/workspace/changes" => ListChanges, "list", Read;
    GET    "/v1/host/workspace/search" => Search, "search", Read;
    GET    FILE => GetFile, "get", Read;
    PUT    FILE => PutFile, "put", Write;
    DELETE FILE => DeleteFile, "delete", Write;
    POST   "/mcp" => Mcp, "mcp", Credential;
    GET    "/mcp" => McpStream, "mcp", Read;
    DELETE "/mcp" => McpEnd, "mcp", Credential;
    GET    "/mcp/health" => McpHealth, "mcp", Nothing;
    POST   "/v1/host/workspace/memory" => Memory, "mcp", Read;
    // RFC 0019: the cache in its own function, blobs in theirs (see docs/blobs-and-cache.md).
    GET    CACHE_ENTRY => CacheGet, "cache", Read;
    PUT    CACHE_ENTRY => CachePut, "cache", Write;
    DELETE CACHE_ENTRY => CacheDelete, "cache", Write;
    GET    BLOBS => BlobList, "blob", Read;
    // Before the greedy key row, as API Gateway prefers the more specific route.
    POST   PRESIGN => BlobPresign, "presign", Read;
    GET    BLOB => BlobGet, "blob", Read;
    PUT    BLOB => BlobPut, "blob", Write;
    DELETE BLOB => BlobDelete, "blob", Write;
    // History and diff only read: the read-only `get` function serves them. A restore is a
    // write through the put path: the `put` function, which already holds those rights.
    GET    VERSIONS => ListVersions, "get", Read;
    POST   VERSIONS => RestoreVersion, "put", Write;
    DELETE VERSIONS => EraseVersion, "put", Admin;
    GET    DIFF => Diff, "get", Read;
    // Snapshots, checkpoints and run records (pins on heads, snapshot records, a kept
    // checkpoint's copies): their own function. Reads through a snapshot go to `list` and
    // `get`.
    POST   SNAPSHOTS => CreateSnapshot, "snapshots", Write;
    GET    SNAPSHOTS => ListSnapshots, "snapshots", Read;
    GET    SNAPSHOT => GetSnapshot, "snapshots", Read;
    DELETE SNAPSHOT => DeleteSnapshot, "snapshots", Write;
    POST   "/v1/host/workspace/snapshots/{id}/restore" => RestoreSnapshot, "snapshots", Write;
    // Forks: a fork's base is a snapshot of the parent, so they live with snapshots (and
    // a merge writes files, so this function has the S3 client too).
    POST   FORKS => CreateFork, "snapshots", Write;
    GET    FORKS => ListForks, "snapshots", Read;
    GET    FORK => GetFork, "snapshots", Read;
    DELETE FORK => DiscardFork, "snapshots", Write;
    GET    "/v1/host/workspace/forks/{id}/diff" => ForkDiff, "snapshots", Read;
    POST   "/v1/host/workspace/forks/{id}/merge" => MergeFork, "snapshots", Write;
    POST   "/v1/host/workspace/forks/{id}/rebase" => RebaseFork, "snapshots", Write;
    POST   "/v1/runs" => CreateRun, "snapshots", Write;
    GET    "/v1/runs" => ListRuns, "snapshots", Read;
    GET    "/v1/runs/{runId}" => GetRun, "snapshots", Read;
    POST   "/v1/host/workspace/uploads" => StartUpload, "put", Write;
    // Several paths at once: the `put` function holds every right it needs (a put's,
    // a delete's, and a move's copy in S3).
    POST   "/v1/host/workspace/commits" => Commit, "put", Write;
    // A stream only a long-lived process can hold: on Lambda `get` answers it 501 and
    // names EventBridge instead.
    GET    "/v1/host/workspace/events" => WorkspaceEvents, "get", Read;
    POST   "/workspaces" => CreateWorkspace, "workspaces", Write;
    GET    "/workspaces" => ListWorkspaces, "workspaces", Read;
    GET    "/workspaces/{id}" => GetWorkspace, "workspaces", Read;
    DELETE "/workspaces/{id}" => DeleteWorkspace, "workspaces", Write;
    POST   "/workspaces/{id}/artifacts" => UploadArtifact, "workspaces", Write;
    GET    "/workspaces/{id}/artifacts" => ListArtifacts, "workspaces", Read;
    GET    "/workspaces/{id}/artifacts/{artifactId}" => GetArtifact, "workspaces", Read;
    GET    "/workspaces/{id}/sessions" => ListSessions, "workspaces", Read;
    GET    "/workspaces/{id}/sessions/{sessionId}/history" => SessionHistory, "workspaces", Read;
    DELETE "/workspaces/{id}/sessions/{sessionId}" => DeleteSession, "workspaces", Write;
    GET    "/console" => ConsolePage, "console", Nothing;
    GET    "/console/{asset+}" => ConsoleAsset, "console", Nothing;
};

/// The outcome of matching a request path against the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Matched<'a> {
    /// A row matched; `tail` is what the parameters captured (the path is already decoded).
    Route {
        spec: &'static RouteSpec,
        tail: Option<&'a str>,
    },
    /// The path exists but not with this method.
    MethodNotAllowed {
        allowed: Vec<Method>,
    },
    NotFound,
}

/// Matches API Gateway syntax: literal segments, `{name}` (one non-empty segment) and a final
/// greedy `{name+}` (the rest, at least one character). The tail is everything from the
/// first parameter on; handlers split it.
fn match_pattern<'a>(pattern: &str, path: &'a str) -> Option<Option<&'a str>> {
    let Some(open) = pattern.find('{') else {
        return (pattern == path).then_some(None);
    };
    let tail = path.strip_prefix(&pattern[..open])?;
    let mut rest = tail;
    for (i, piece) in pattern[open..].split('/').enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('/')?;
        }
        // A greedy parameter captures at least one character, as in API Gateway, which
        // sends `/files/` to no route: 404 on every transport.
        if piece.starts_with('{') && piece.ends_with("+}") {
            return (!rest.is_empty()).then_some(Some(tail));
        }
        let (segment, after) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let ok = if piece.starts_with('{') {
            !segment.is_empty()
        } else {
            segment == piece
        };
        if !ok {
            return None;
        }
        rest = after;
    }
    rest.is_empty().then_some(Some(tail))
}

pub fn match_route<'a>(method: &Method, path: &'a str) -> Matched<'a> {
    let mut allowed = Vec::new();
    for spec in ROUTES {
        if let Some(tail) = match_pattern(spec.pattern, path) {
            if spec.method == *method {
                return Matched::Route { spec, tail };
            }
            allowed.push(spec.method.clone());
        }
    }
    if allowed.is_empty() {
        Matched::NotFound
    } else {
        Matched::MethodNotAllowed { allowed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_read_and_changes_need_write_unless_the_handler_decides_per_call() {
        // Rows whose need depends on the call: the handler checks the rest with
        // `Needs::check` (an MCP tool, a memory command that writes, a presigned PUT); and
        // the end of one's own MCP session, which changes no file.
        let per_call = [Route::Mcp, Route::Memory, Route::BlobPresign, Route::McpEnd];
        for row in ROUTES {
            let want = if row.public() || per_call.contains(&row.route) {
                continue;
            } else if row.method == Method::GET {
                Needs::Read
            } else if row.route == Route::EraseVersion {
                Needs::Admin
            } else {
                Needs::Write
            };
            assert_eq!(row.needs, want, "{} {}", row.method, row.pattern);
        }
    }

    #[test]
    fn needs_are_checked_against_the_credentials_access() {
        let read_only = Access::READ_ONLY;
        assert!(Needs::Read.check(read_only).is_ok());
        assert!(Needs::Credential.check(read_only).is_ok());
        let refused = Needs::Write.check(read_only).unwrap_err().to_string();
        assert!(refused.contains("workspace:write"), "{refused}");
        let refused = Needs::Admin
            .check(Access::READ_WRITE)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("workspace:admin"), "{refused}");
    }

    #[test]
    fn greedy_tail_and_exact_rows() {
        let m = match_route(&Method::GET, "/v1/host/workspace/files/a/b.md");
        assert!(
            matches!(m, Matched::Route { spec, tail: Some("a/b.md") } if spec.route == Route::GetFile)
        );
        let m = match_route(&Method::GET, "/v1/host/workspace/files");
        assert!(matches!(m, Matched::Route { spec, tail: None } if spec.route == Route::ListFiles));
        assert_eq!(
            match_route(&Method::GET, "/v1/host/workspace/files/"),
            Matched::NotFound
        );
        assert_eq!(match_route(&Method::GET, "/nope"), Matched::NotFound);
        assert!(matches!(
            match_route(&Method::POST, "/v1/host/workspace/files/a"),
            Matched::MethodNotAllowed { .. }
        ));
        let m = match_route(&Method::GET, "/v1/host/workspace/snapshots/abc");
        assert!(
            matches!(m, Matched::Route { spec, tail: Some("abc") } if spec.route == Route::GetSnapshot)
        );
        assert_eq!(
            match_route(&Method::GET, "/v1/host/workspace/snapshots/a/b"),
            Matched::NotFound
        );
        let m = match_route(&Method::POST, "/v1/host/workspace/versions/a/b.md");
        assert!(
            matches!(m, Matched::Route { spec, tail: Some("a/b.md") } if spec.route == Route::RestoreVersion)
        );
    }

    #[test]
    fn single_segment_parameters_and_literals() {
        fn route<'a>(m: &Method, p: &'a str) -> Option<(Route, Option<&'a str>)> {
            match match_route(m, p) {
                Matched::Route { spec, tail } => Some((spec.route, tail)),
                _ => None,
            }
        }
        assert_eq!(
            route(&Method::GET, "/v1/host/cache/k1"),
            Some((Route::CacheGet, Some("k1")))
        );
        assert_eq!(route(&Method::GET, "/v1/host/cache/a/b"), None);
        assert_eq!(route(&Method::GET, "/v1/host/cache/"), None);
        assert_eq!(
            route(&Method::GET, "/v1/host/blob/default"),
            Some((Route::BlobList, Some("default")))
        );
        assert_eq!(
            route(&Method::POST, "/v1/host/blob/default/presign"),
            Some((Route::BlobPresign, Some("default/presign")))
        );
        assert_eq!(
            route(&Method::GET, "/v1/host/blob/default/presign"),
            Some((Route::BlobGet, Some("default/presign")))
        );
        assert_eq!(
            route(&Method::PUT, "/v1/host/blob/default/a/b.bin"),
            Some((Route::BlobPut, Some("default/a/b.bin")))
        );
        assert!(matches!(
            match_route(&Method::POST, "/v1/host/blob/default/a"),
            Matched::MethodNotAllowed { .. }
        ));
    }

    #[test]
    fn named_segments_match_one_non_empty_segment() {
        let m = match_route(&Method::GET, "/workspaces/w1/sessions/s1/history");
        assert!(
            matches!(m, Matched::Route { spec, tail: Some("w1/sessions/s1/history") } if spec.route == Route::SessionHistory)
        );
        let m = match_route(&Method::DELETE, "/workspaces/w1");
        assert!(matches!(m, Matched::Route { spec, .. } if spec.route == Route::DeleteWorkspace));
        for none in [
            "/workspaces//artifacts",
            "/workspaces/w1/artifacts/a/b",
            "/workspaces/w1/x",
        ] {
            assert_eq!(match_route(&Method::GET, none), Matched::NotFound, "{none}");
        }
        assert!(matches!(
            match_route(&Method::PUT, "/workspaces/w1"),
            Matched::MethodNotAllowed { .. }
        ));
    }
}
