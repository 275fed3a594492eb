//! Configurable limits, advertised in discovery and enforced by the service.

use crate::error::{Result, WorkspaceError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file body, in UTF-8 bytes. Kept well under Lambda's 6 MB payload cap so the
    /// 413 is ours, not AWS's.
    pub max_file_bytes: u64,
    /// Most live files in one workspace.
    pub max_files: u64,
    /// Most retained versions per path (the latest always survives).
    pub max_versions: u64,
    /// Largest two-step upload (advertised; inline bodies are bounded by `max_file_bytes`).
    pub max_upload_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 1_048_576,
            max_files: 1000,
            max_versions: 20,
            max_upload_bytes: 100 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// Every limit must be an integer >= 1.
    pub fn validated(self) -> Result<Self> {
        for (name, v) in [
            ("maxFileBytes", self.max_file_bytes),
            ("maxFiles", self.max_files),
            ("maxVersions", self.max_versions),
            ("maxUploadBytes", self.max_upload_bytes),
        ] {
            if v == 0 {
                return Err(WorkspaceError::validation(format!(
                    "{name} must be at least 1"
                )));
            }
        }
        Ok(self)
    }
}

/// A listing's page size, the same rule on every listing: `default` when the caller gives
/// none, the caller's if it is within 1..=`max`, otherwise 400 (never a silent clamp).
pub fn page_limit(given: Option<usize>, default: usize, max: usize) -> Result<usize> {
    match given {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(WorkspaceError::validation(format!(
            "limit must be between 1 and {max}"
        ))),
    }
}

#[cfg(test)]
mod page_limit_tests {
    use super::page_limit;

    #[test]
    fn one_rule_for_every_listing() {
        assert_eq!(page_limit(None, 20, 100).unwrap(), 20);
        assert_eq!(page_limit(Some(1), 20, 100).unwrap(), 1);
        assert_eq!(page_limit(Some(100), 20, 100).unwrap(), 100);
        assert!(page_limit(Some(101), 20, 100).is_err());
        assert!(page_limit(Some(0), 20, 100).is_err());
    }
}
