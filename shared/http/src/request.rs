//! Reading what a request carries: the file path (decoded exactly once), query parameters,
//! precondition headers and the JSON body. Each malformed piece is a 400, never a guess.

use http::request::Parts;
use http::HeaderName;
use std::collections::HashMap;
use workspace_core::{Result, WorkspaceError};

/// How the transport hands over the request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathForm {
    /// The request URI's path, as sent on the wire (the local server): the file path is
    /// percent-decoded exactly once.
    Encoded,
    /// The path as the gateway decoded it (API Gateway HTTP APIs' `rawPath`), used instead
    /// of the URI, which lambda_http rebuilds with dot segments resolved. Not decoded again:
    /// a `%` left in it is a literal `%`, which no valid path contains.
    Decoded(String),
}

/// Query parameters. A parameter given twice is refused rather than silently picking one;
/// parameters no route knows are ignored.
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(parts: &Parts) -> Result<Self> {
        let mut map = HashMap::new();
        if let Some(q) = parts.uri.query() {
            for (k, v) in form_urlencoded::parse(q.as_bytes()) {
                if map.insert(k.to_string(), v.to_string()).is_some() {
                    return Err(WorkspaceError::validation(format!(
                        "query parameter '{k}' is given more than once"
                    )));
                }
            }
        }
        Ok(Self(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A listing's `limit` (a positive integer), as a count.
    pub fn limit(&self) -> Result<Option<usize>> {
        Ok(self
            .positive("limit")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
    }

    /// A positive integer parameter.
    pub fn positive(&self, name: &str) -> Result<Option<u64>> {
        self.get(name)
            .map(|v| {
                v.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    WorkspaceError::validation(format!(
                        "{name} must be a positive integer, got '{}'",
                        v.escape_debug()
                    ))
                })
            })
            .transpose()
    }
}

/// A header that holds one value, as text. API Gateway joins a header sent on several
/// lines into one comma-separated value, so a repeat is refused the same way on every
/// transport: a second line, or a comma in the value, is a 400.
pub fn single_header<'a>(parts: &'a Parts, name: &HeaderName) -> Result<Option<&'a str>> {
    let once = || {
        WorkspaceError::validation(format!(
            "header {name} must be sent once, and its value may hold no comma"
        ))
    };
    let mut values = parts.headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(once());
    }
    let text = first.to_str().map_err(|_| {
        WorkspaceError::validation(format!("header {name} must be printable ASCII"))
    })?;
    if text.contains(',') {
        return Err(once());
    }
    Ok(Some(text))
}

/// A list-valued header (RFC 9110 §5.3): every line it was sent on, joined with ",", which
/// is how API Gateway hands repeated headers to a function, so both transports see the same
/// value.
pub fn list_header(parts: &Parts, name: &HeaderName) -> Result<Option<String>> {
    let mut joined: Option<String> = None;
    for value in parts.headers.get_all(name) {
        let text = value.to_str().map_err(|_| {
            WorkspaceError::validation(format!("header {name} must be printable ASCII"))
        })?;
        match joined.as_mut() {
            Some(j) => {
                j.push(',');
                j.push_str(text);
            }
            None => joined = Some(text.to_owned()),
        }
    }
    Ok(joined)
}

/// The decoded query pairs, in order, repeats kept (what signed URLs are verified over).
pub fn query_pairs(parts: &Parts) -> Vec<(String, String)> {
    parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}
