//! The browser origins MCP's routes accept. A browser sends `Origin` with every
//! cross-origin request and a page cannot forge it, so a server that checks it keeps a
//! web page (or a DNS-rebound name) from driving MCP with whatever the browser can reach;
//! the Streamable HTTP transport requires the check, with 403 for an origin not allowed.
//! A request without `Origin` (every non-browser client) is not affected.
//!
//! The allow-list is `WORKSPACE_MCP_ALLOWED_ORIGINS` (empty by default: no browser
//! origin), to which the local server adds its own public origin, where its console runs.

use crate::envelope::{error_response, HttpResponse};
use crate::routes::Route;
use http::request::Parts;
use http::StatusCode;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedOrigins(Vec<String>);

/// `scheme://host[:port]` in one spelling: lower case, no default port, no trailing `/`;
/// `None` for anything else (a path, a query, another scheme, `null`).
pub fn normalize(origin: &str) -> Option<String> {
    let o = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, rest) = o.split_once("://")?;
    let default_port = match scheme {
        "http" => ":80",
        "https" => ":443",
        _ => return None,
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return None;
    }
    let host = rest.strip_suffix(default_port).unwrap_or(rest);
    Some(format!("{scheme}://{host}"))
}

impl AllowedOrigins {
    /// The list from its setting (comma-separated origins); `Err` names a bad entry.
    pub fn parse(list: &str) -> Result<AllowedOrigins, String> {
        let mut out = AllowedOrigins::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            out.allow(entry)?;
        }
        Ok(out)
    }

    /// Adds one origin (`http://127.0.0.1:8787`).
    pub fn allow(&mut self, origin: &str) -> Result<(), String> {
        let o = normalize(origin).ok_or_else(|| {
            format!(
                "'{}' is not an origin: scheme://host[:port], http or https, no path",
                origin.escape_debug()
            )
        })?;
        if !self.0.contains(&o) {
            self.0.push(o);
        }
        Ok(())
    }

    pub fn allows(&self, origin: &str) -> bool {
        normalize(origin).is_some_and(|o| self.0.contains(&o))
    }

    /// The 403 for a request to an MCP route whose `Origin` is present and not allowed.
    pub fn refuse(&self, route: Route, parts: &Parts) -> Option<HttpResponse> {
        if !route.checks_origin() {
            return None;
        }
        let values: Vec<_> = parts.headers.get_all(http::header::ORIGIN).iter().collect();
        if values.is_empty() {
            return None;
        }
        let origin = match values.as_slice() {
            [one] => one.to_str().ok(),
            _ => None,
        };
        if origin.is_some_and(|o| self.allows(o)) {
            return None;
        }
        Some(error_response(
            StatusCode::FORBIDDEN,
            "origin_forbidden",
            &format!(
                "requests from the browser origin {} may not use MCP here; a deployment allows origins with WORKSPACE_MCP_ALLOWED_ORIGINS (the McpAllowedOrigins parameter on AWS)",
                origin.unwrap_or("(several Origin headers)").escape_debug()
            ),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(origins: &[&str]) -> Parts {
        let mut b = http::Request::builder();
        for o in origins {
            b = b.header("origin", *o);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn origins_are_compared_in_one_spelling() {
        let list = AllowedOrigins::parse("http://127.0.0.1:8787, https://Console.Example.com:443/")
            .unwrap();
        assert!(list.allows("http://127.0.0.1:8787"));
        assert!(list.allows("https://console.example.com"));
        assert!(!list.allows("http://127.0.0.1:8788"));
        assert!(!list.allows("http://console.example.com"));
        assert!(!list.allows("null"));
        assert!(AllowedOrigins::parse("http://x/path").is_err());
        assert!(AllowedOrigins::parse("ftp://x").is_err());
        assert!(AllowedOrigins::parse("*").is_err());
    }

    #[test]
    fn only_a_present_foreign_origin_on_an_mcp_route_is_refused() {
        let list = AllowedOrigins::parse("http://localhost:3000").unwrap();
        assert!(list.refuse(Route::Mcp, &parts(&[])).is_none());
        assert!(list
            .refuse(Route::Mcp, &parts(&["http://localhost:3000"]))
            .is_none());
        let refused = list
            .refuse(Route::Mcp, &parts(&["http://evil.example.com"]))
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert!(list.refuse(Route::McpStream, &parts(&["null"])).is_some());
        assert!(list
            .refuse(
                Route::Mcp,
                &parts(&["http://localhost:3000", "http://evil.example.com"])
            )
            .is_some());
        // Other routes keep their own rules (bearer keys, no cookies).
        assert!(list
            .refuse(Route::GetFile, &parts(&["http://evil.example.com"]))
            .is_none());
        assert!(AllowedOrigins::default()
            .refuse(Route::Mcp, &parts(&["http://localhost:3000"]))
            .is_some());
    }
}
