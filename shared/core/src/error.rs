//! The one error type of the domain. The HTTP layer maps each kind to a status and an
//! envelope code; the domain itself never speaks HTTP.

use crate::capability::CapabilityCode;

/// What went wrong, in terms a client can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The request is malformed: bad path, bad header, bad body, bad parameter.
    #[error("{0}")]
    Validation(String),
    /// No credential, or one we do not know.
    #[error("{0}")]
    Unauthenticated(String),
    /// The credential is known but may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// No such file, version, or route.
    #[error("{0}")]
    NotFound(String),
    /// A precondition (If-Match, If-None-Match, idempotency key reuse) failed.
    /// `current_version` is the live version, 0 when the file does not exist.
    #[error("{message}")]
    Conflict {
        message: String,
        current_version: u64,
    },
    /// A body or the workspace itself is over a configured limit.
    #[error("{message}")]
    TooLarge { message: String, limit: u64 },
    /// The route exists in the contract but this deployment does not provide it.
    #[error("{0}")]
    NotProvided(String),
    /// A part this deployment can have is not there now (the embedding model of search by
    /// meaning): the message says how to put it in place.
    #[error("{0}")]
    Unavailable(String),
    /// A blob or cache refusal with its own envelope code (openwop RFC 0019).
    #[error("{message}")]
    Capability {
        code: CapabilityCode,
        message: String,
        /// The limit that was exceeded, for `details.limit`.
        limit: Option<u64>,
    },
    /// A backend failed. The message is for logs; clients get a generic text.
    #[error("{0}")]
    Internal(String),
}

impl CapabilityCode {
    /// The refusal with this code.
    pub fn error(self, message: impl Into<String>) -> WorkspaceError {
        WorkspaceError::Capability {
            code: self,
            message: message.into(),
            limit: None,
        }
    }

    /// The refusal with this code, naming the limit that was exceeded.
    pub fn over_limit(self, message: impl Into<String>, limit: u64) -> WorkspaceError {
        WorkspaceError::Capability {
            code: self,
            message: message.into(),
            limit: Some(limit),
        }
    }
}

impl WorkspaceError {
    pub fn validation(msg: impl Into<String>) -> Self {
        Self::Validation(msg.into())
    }
    pub fn not_found(msg: impl Into<String>) -> Self {
        Self::NotFound(msg.into())
    }
    pub fn internal(msg: impl std::fmt::Display) -> Self {
        Self::Internal(msg.to_string())
    }
}

pub type Result<T, E = WorkspaceError> = std::result::Result<T, E>;
