//! The API's routes, with the caller's path and query values percent-encoded: the server
//! allows only unreserved characters in paths, so anything else goes through encoded and the
//! server refuses it (400) rather than the URL changing its meaning.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but the unreserved characters of RFC 3986.
const ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub const FILES: &str = "/v1/host/workspace/files";
pub const COMMITS: &str = "/v1/host/workspace/commits";
pub const UPLOADS: &str = "/v1/host/workspace/uploads";
pub const SNAPSHOTS: &str = "/v1/host/workspace/snapshots";
pub const FORKS: &str = "/v1/host/workspace/forks";
pub const EVENTS: &str = "/v1/host/workspace/events";
pub const SEARCH: &str = "/v1/host/workspace/search";
pub const DISCOVERY: &str = "/.well-known/openwop";

/// A workspace path, each segment encoded, the `/` between them kept.
fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|s| utf8_percent_encode(s, ENCODE).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

pub fn file(path: &str) -> String {
    format!("{FILES}/{}", encode_path(path))
}

pub fn versions(path: &str) -> String {
    format!("/v1/host/workspace/versions/{}", encode_path(path))
}

pub fn diff(path: &str) -> String {
    format!("/v1/host/workspace/diff/{}", encode_path(path))
}

pub fn snapshot(id: &str) -> String {
    format!("{SNAPSHOTS}/{}", utf8_percent_encode(id, ENCODE))
}

/// A fork's route, with `tail` (`/diff`, `/merge`, ...) after its id.
pub fn fork(id: &str, tail: &str) -> String {
    format!("{FORKS}/{}{tail}", utf8_percent_encode(id, ENCODE))
}

/// `route?k=v&...` for the pairs whose value is present (empty query: the route alone).
pub fn with_query(route: &str, pairs: &[(&str, Option<String>)]) -> String {
    let query: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .map(|v| format!("{k}={}", utf8_percent_encode(v, ENCODE)))
        })
        .collect();
    if query.is_empty() {
        route.to_owned()
    } else {
        format!("{route}?{}", query.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_slashes_and_encode_the_rest() {
        assert_eq!(file("a/b.md"), "/v1/host/workspace/files/a/b.md");
        assert_eq!(file("a b/c?d"), "/v1/host/workspace/files/a%20b/c%3Fd");
        assert_eq!(
            versions("x/y_z-1.txt"),
            "/v1/host/workspace/versions/x/y_z-1.txt"
        );
    }

    #[test]
    fn queries_leave_out_absent_values_and_encode_the_rest() {
        assert_eq!(with_query(FILES, &[("prefix", None)]), FILES);
        assert_eq!(
            with_query(
                "/r",
                &[
                    ("a", Some("x/y".into())),
                    ("b", None),
                    ("c", Some("1".into()))
                ]
            ),
            "/r?a=x%2Fy&c=1"
        );
    }
}
