//! The one error type of `ws`: what failed, the server's (or the system's) reason, what to do
//! about it, and the exit code a script can branch on.

use std::fmt;

/// The families of failure, one exit code each (cli/README.md, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 409, 412: someone else wrote first.
    Conflict,
    /// 404, 410.
    NotFound,
    /// 401, 403, or no stored credential.
    Auth,
    /// 400, 413, 415, 422, bad arguments, an unreadable local file.
    BadInput,
    /// 5xx, connection refused, timeouts.
    Server,
}

impl Kind {
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Conflict => 1,
            Kind::NotFound => 2,
            Kind::Auth => 3,
            Kind::BadInput => 4,
            Kind::Server => 5,
        }
    }

    pub fn from_status(status: u16) -> Kind {
        match status {
            409 | 412 => Kind::Conflict,
            404 | 410 => Kind::NotFound,
            401 | 403 => Kind::Auth,
            // A timeout or throttle is the server's state, not the request's fault.
            408 | 429 => Kind::Server,
            400..=499 => Kind::BadInput,
            _ => Kind::Server,
        }
    }
}

#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    /// What `ws` was doing ("cannot write a/b.md").
    pub what: String,
    /// Why: the server's message, or the system's.
    pub detail: String,
    pub hint: Option<String>,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The envelope's `details` (say, a conflict's `currentVersion`), when it had some
    /// (boxed: most errors have none, and every `Result` carries the error's size).
    pub details: Option<Box<serde_json::Value>>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: Kind, what: impl Into<String>, detail: impl fmt::Display) -> Error {
        Error {
            kind,
            what: what.into(),
            detail: detail.to_string(),
            hint: None,
            status: None,
            details: None,
        }
    }

    pub fn bad_input(what: impl Into<String>, detail: impl fmt::Display) -> Error {
        Error::new(Kind::BadInput, what, detail)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Error {
        self.hint = Some(hint.into());
        self
    }

    /// Replaces the hint only for errors of `kind` (a command knows better than the client
    /// what to suggest for, say, a 404 of a snapshot).
    pub fn hint_for(self, kind: Kind, hint: impl Into<String>) -> Error {
        if self.kind == kind {
            self.with_hint(hint)
        } else {
            self
        }
    }
}

impl Error {
    /// The conflict's `details.currentVersion`, when the server gave it.
    pub fn current_version(&self) -> Option<u64> {
        self.details.as_ref()?["currentVersion"].as_u64()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ws: {}: {}", self.what, self.detail)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_documented_exit_codes() {
        let code = |s| Kind::from_status(s).exit_code();
        assert_eq!(
            [409, 412, 404, 410, 401, 403, 400, 413, 415, 422, 500, 501, 503].map(code),
            [1, 1, 2, 2, 3, 3, 4, 4, 4, 4, 5, 5, 5]
        );
    }

    #[test]
    fn display_names_what_why_and_the_hint() {
        let e = Error::new(Kind::Conflict, "cannot write a.md", "stale etag").with_hint("retry");
        assert_eq!(
            e.to_string(),
            "ws: cannot write a.md: stale etag\nhint: retry"
        );
    }
}
