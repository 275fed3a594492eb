//! The one route table. Every Lambda function serves the rows that name it, the local server
//! serves them all, and a test holds this table equal to the routes in template.yaml.

use http::Method;

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
    /// MCP Streamable HTTP (stateless JSON-RPC), served by the "mcp" function.
    Mcp,
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
    /// `workspace.updated` of the caller's workspace as server-sent events (the local
    /// server; on AWS, EventBridge).
    WorkspaceEvents,
    // The workspace service for agent sessions (`sessions/`).
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
    /// Whether the route answers without a credential (health and discovery); every other
    /// route authenticates before its body is read. template.yaml gives exactly these
    /// `Authorizer: NONE` (a test holds the two equal).
    pub fn public(&self) -> bool {
        matches!(
            self.route,
            Route::Health
                | Route::Discovery
                | Route::Capabilities
                | Route::OpenApi
                | Route::McpHealth
                | Route::ConsolePage
                | Route::ConsoleAsset
        )
    }
}

impl Route {
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
                | Route::WorkspaceEvents
        )
    }
}

/// The function behind API Gateway's `$default` route, which receives every request no row
/// matches; it answers from this table like the local server (404, or 405 with `Allow`).
pub const UNMATCHED_FUNCTION: &str = "get";

pub const ROUTES: &[RouteSpec] = &[
    RouteSpec {
        method: Method::GET,
        pattern: "/health",
        route: Route::Health,
        function: "get",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/.well-known/openwop",
        route: Route::Discovery,
        function: "get",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/host/capabilities",
        route: Route::Capabilities,
        function: "get",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/openapi.json",
        route: Route::OpenApi,
        function: "get",
    },
    RouteSpec {
        method: Method::GET,
        pattern: FILES,
        route: Route::ListFiles,
        function: "list",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/host/workspace/changes",
        route: Route::ListChanges,
        function: "list",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/host/workspace/search",
        route: Route::Search,
        function: "search",
    },
    RouteSpec {
        method: Method::GET,
        pattern: FILE,
        route: Route::GetFile,
        function: "get",
    },
    RouteSpec {
        method: Method::PUT,
        pattern: FILE,
        route: Route::PutFile,
        function: "put",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: FILE,
        route: Route::DeleteFile,
        function: "delete",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/mcp",
        route: Route::Mcp,
        function: "mcp",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/mcp/health",
        route: Route::McpHealth,
        function: "mcp",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/v1/host/workspace/memory",
        route: Route::Memory,
        function: "mcp",
    },
    // RFC 0019: the cache in its own function, blobs in theirs (see README, "Blob storage").
    RouteSpec {
        method: Method::GET,
        pattern: CACHE_ENTRY,
        route: Route::CacheGet,
        function: "cache",
    },
    RouteSpec {
        method: Method::PUT,
        pattern: CACHE_ENTRY,
        route: Route::CachePut,
        function: "cache",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: CACHE_ENTRY,
        route: Route::CacheDelete,
        function: "cache",
    },
    RouteSpec {
        method: Method::GET,
        pattern: BLOBS,
        route: Route::BlobList,
        function: "blob",
    },
    // Before the greedy key row, as API Gateway prefers the more specific route.
    RouteSpec {
        method: Method::POST,
        pattern: PRESIGN,
        route: Route::BlobPresign,
        function: "presign",
    },
    RouteSpec {
        method: Method::GET,
        pattern: BLOB,
        route: Route::BlobGet,
        function: "blob",
    },
    RouteSpec {
        method: Method::PUT,
        pattern: BLOB,
        route: Route::BlobPut,
        function: "blob",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: BLOB,
        route: Route::BlobDelete,
        function: "blob",
    },
    // History and diff only read: the read-only `get` function serves them. A restore is a
    // write through the put path: the `put` function, which already holds those rights.
    RouteSpec {
        method: Method::GET,
        pattern: VERSIONS,
        route: Route::ListVersions,
        function: "get",
    },
    RouteSpec {
        method: Method::POST,
        pattern: VERSIONS,
        route: Route::RestoreVersion,
        function: "put",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: VERSIONS,
        route: Route::EraseVersion,
        function: "put",
    },
    RouteSpec {
        method: Method::GET,
        pattern: DIFF,
        route: Route::Diff,
        function: "get",
    },
    // Snapshots, checkpoints and run records (pins on heads, snapshot records, a kept
    // checkpoint's copies): their own function. Reads through a snapshot go to `list` and
    // `get`.
    RouteSpec {
        method: Method::POST,
        pattern: SNAPSHOTS,
        route: Route::CreateSnapshot,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: SNAPSHOTS,
        route: Route::ListSnapshots,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: SNAPSHOT,
        route: Route::GetSnapshot,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: SNAPSHOT,
        route: Route::DeleteSnapshot,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/v1/host/workspace/snapshots/{id}/restore",
        route: Route::RestoreSnapshot,
        function: "snapshots",
    },
    // Forks: a fork's base is a snapshot of the parent, so they live with snapshots (and
    // a merge writes files, so this function has the S3 client too).
    RouteSpec {
        method: Method::POST,
        pattern: FORKS,
        route: Route::CreateFork,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: FORKS,
        route: Route::ListForks,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: FORK,
        route: Route::GetFork,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: FORK,
        route: Route::DiscardFork,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/host/workspace/forks/{id}/diff",
        route: Route::ForkDiff,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/v1/host/workspace/forks/{id}/merge",
        route: Route::MergeFork,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/v1/host/workspace/forks/{id}/rebase",
        route: Route::RebaseFork,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/v1/runs",
        route: Route::CreateRun,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/runs",
        route: Route::ListRuns,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/runs/{runId}",
        route: Route::GetRun,
        function: "snapshots",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/v1/host/workspace/uploads",
        route: Route::StartUpload,
        function: "put",
    },
    // A stream only a long-lived process can hold: on Lambda `get` answers it 501 and
    // names EventBridge instead.
    RouteSpec {
        method: Method::GET,
        pattern: "/v1/host/workspace/events",
        route: Route::WorkspaceEvents,
        function: "get",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/workspaces",
        route: Route::CreateWorkspace,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/workspaces",
        route: Route::ListWorkspaces,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/workspaces/{id}",
        route: Route::GetWorkspace,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: "/workspaces/{id}",
        route: Route::DeleteWorkspace,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::POST,
        pattern: "/workspaces/{id}/artifacts",
        route: Route::UploadArtifact,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/workspaces/{id}/artifacts",
        route: Route::ListArtifacts,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/workspaces/{id}/artifacts/{artifactId}",
        route: Route::GetArtifact,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/workspaces/{id}/sessions",
        route: Route::ListSessions,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/workspaces/{id}/sessions/{sessionId}/history",
        route: Route::SessionHistory,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::DELETE,
        pattern: "/workspaces/{id}/sessions/{sessionId}",
        route: Route::DeleteSession,
        function: "workspaces",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/console",
        route: Route::ConsolePage,
        function: "console",
    },
    RouteSpec {
        method: Method::GET,
        pattern: "/console/{asset+}",
        route: Route::ConsoleAsset,
        function: "console",
    },
];

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
