//! The one route table. Every Lambda function serves the rows that name it, the local server
//! serves them all, and a test holds this table equal to the routes in template.yaml.

use http::Method;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    Health,
    Discovery,
    Capabilities,
    ListFiles,
    GetFile,
    PutFile,
    DeleteFile,
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
}

/// One row: method + API Gateway path pattern → route, and the function that serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub method: Method,
    /// In API Gateway syntax; a trailing `{path+}` is greedy.
    pub pattern: &'static str,
    pub route: Route,
    /// The package under `functions/` (and the SAM function) that serves this row.
    pub function: &'static str,
}

const FILES: &str = "/v1/host/workspace/files";
const FILE: &str = "/v1/host/workspace/files/{path+}";

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
        pattern: FILES,
        route: Route::ListFiles,
        function: "list",
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
];

/// The outcome of matching a request path against the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Matched<'a> {
    /// A row matched; `tail` is what the greedy `{path+}` captured (still as received).
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

fn match_pattern<'a>(pattern: &str, path: &'a str) -> Option<Option<&'a str>> {
    // `{name}` segments match one non-empty segment; the tail is then the whole path, from
    // which the handler reads its parameters.
    if !pattern.ends_with("{path+}") && pattern.contains('{') {
        let (pat, got): (Vec<_>, Vec<_>) =
            (pattern.split('/').collect(), path.split('/').collect());
        let fits = pat.len() == got.len()
            && pat.iter().zip(&got).all(|(p, g)| {
                if p.starts_with('{') {
                    !g.is_empty()
                } else {
                    p == g
                }
            });
        return fits.then_some(Some(path));
    }
    match pattern.strip_suffix("{path+}") {
        // An empty tail still matches, so `/files/` gets the path rule's 400, not a 404.
        Some(prefix) => path.strip_prefix(prefix).map(Some),
        None => (pattern == path).then_some(None),
    }
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
        assert!(matches!(
            match_route(&Method::GET, "/v1/host/workspace/files/"),
            Matched::Route { tail: Some(""), .. }
        ));
        assert_eq!(match_route(&Method::GET, "/nope"), Matched::NotFound);
        assert!(matches!(
            match_route(&Method::POST, "/v1/host/workspace/files/a"),
            Matched::MethodNotAllowed { .. }
        ));
    }

    #[test]
    fn named_segments_match_one_non_empty_segment() {
        let m = match_route(&Method::GET, "/workspaces/w1/sessions/s1/history");
        assert!(
            matches!(m, Matched::Route { spec, tail: Some("/workspaces/w1/sessions/s1/history") } if spec.route == Route::SessionHistory)
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
