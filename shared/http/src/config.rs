//! Settings every transport reads from the environment the same way.

use workspace_core::{Limits, Result, WorkspaceError};

/// Reads an integer setting; absent means the default, anything unparsable is an error
/// that names the variable.
pub fn env_u64(get: &impl Fn(&str) -> Option<String>, name: &str, default: u64) -> Result<u64> {
    match get(name) {
        None => Ok(default),
        Some(v) if v.trim().is_empty() => Ok(default),
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            WorkspaceError::validation(format!("{name} must be a whole number, got '{v}'"))
        }),
    }
}

/// The limits from `WORKSPACE_MAX_FILE_BYTES`, `WORKSPACE_MAX_FILES`,
/// `WORKSPACE_MAX_VERSIONS` and `WORKSPACE_MAX_UPLOAD_BYTES`.
pub fn limits_from_env(get: &impl Fn(&str) -> Option<String>) -> Result<Limits> {
    let d = Limits::default();
    Limits {
        max_file_bytes: env_u64(get, "WORKSPACE_MAX_FILE_BYTES", d.max_file_bytes)?,
        max_files: env_u64(get, "WORKSPACE_MAX_FILES", d.max_files)?,
        max_versions: env_u64(get, "WORKSPACE_MAX_VERSIONS", d.max_versions)?,
        max_upload_bytes: env_u64(get, "WORKSPACE_MAX_UPLOAD_BYTES", d.max_upload_bytes)?,
    }
    .validated()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_overrides_and_errors() {
        let none = |_: &str| None;
        assert_eq!(limits_from_env(&none).unwrap(), Limits::default());
        let some = |k: &str| (k == "WORKSPACE_MAX_FILES").then(|| "7".to_owned());
        assert_eq!(limits_from_env(&some).unwrap().max_files, 7);
        let bad = |k: &str| (k == "WORKSPACE_MAX_VERSIONS").then(|| "ten".to_owned());
        assert!(limits_from_env(&bad)
            .unwrap_err()
            .to_string()
            .contains("WORKSPACE_MAX_VERSIONS"));
        let zero = |k: &str| (k == "WORKSPACE_MAX_FILE_BYTES").then(|| "0".to_owned());
        assert!(limits_from_env(&zero).is_err());
    }
}
