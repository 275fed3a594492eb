//! Where `ws` keeps the credential (`<config dir>/ws/config.json`, or `$WS_CONFIG`) and how
//! flags, environment and that file combine into the settings of one run.

use crate::cli::Global;
use crate::error::{Error, Kind, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The stored credential. The key is a secret: the file is created 0600 and nothing prints it.
#[derive(Default, Clone, Serialize, Deserialize)]
pub struct Stored {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
}

/// What a run talks to.
#[derive(Clone)]
pub struct Settings {
    /// The deployment's base URL, without a trailing `/`.
    pub url: String,
    pub key: String,
    /// Sent as `X-Workspace-Id` (needed by tenant-wide credentials).
    pub workspace: Option<String>,
}

// By hand, for both: the derived ones would print the key.
impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored")
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "<hidden>"))
            .field("workspace", &self.workspace)
            .finish()
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("url", &self.url)
            .field("key", &"<hidden>")
            .field("workspace", &self.workspace)
            .finish()
    }
}

pub fn config_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("WS_CONFIG").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    dirs::config_dir()
        .map(|d| d.join("ws").join("config.json"))
        .ok_or_else(|| {
            Error::bad_input("cannot find a config directory", "no home directory")
                .with_hint("set WS_CONFIG to the file to use")
        })
}

pub fn load(path: &Path) -> Result<Stored> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::bad_input(format!("cannot read {}", path.display()), e)
                .with_hint("run `ws login` to write it again")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Stored::default()),
        Err(e) => Err(Error::bad_input(
            format!("cannot read {}", path.display()),
            e,
        )),
    }
}

pub fn save(path: &Path, stored: &Stored) -> Result<()> {
    let mut text = serde_json::to_vec_pretty(stored).expect("plain strings serialize");
    text.push(b'\n');
    write_private(path, &text)
        .map_err(|e| Error::bad_input(format!("cannot write {}", path.display()), e))
}

/// Replaces `path` with `bytes`, readable by the owner only. The mode is set when the file
/// is created (a temporary beside it, then renamed over), so the secret is never readable by
/// others, not even for an instant, and a crash never leaves half a file.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Flags and environment (clap merged those) first, then the stored file.
pub fn resolve(global: &Global, stored: Stored) -> Result<Settings> {
    let url = global.url.clone().or(stored.url);
    let key = global.key.clone().or(stored.key);
    let (Some(url), Some(key)) = (url, key) else {
        return Err(Error::new(
            Kind::Auth,
            "no credential",
            "no URL and key given and none stored",
        )
        .with_hint("run `ws login --url URL --key KEY` (or set WS_URL and WS_KEY)"));
    };
    Ok(Settings {
        url: normalize_url(&url)?,
        key,
        workspace: global.workspace.clone().or(stored.workspace),
    })
}

pub fn normalize_url(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(Error::bad_input(
            format!("bad URL {url:?}"),
            "it must start with http:// or https://",
        ));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_key() {
        let s = Settings {
            url: "http://h".into(),
            key: "secret-key-1234".into(),
            workspace: None,
        };
        let stored = Stored {
            key: Some("secret-key-1234".into()),
            ..Stored::default()
        };
        assert!(!format!("{s:?} {stored:?}").contains("secret"));
    }

    #[test]
    fn urls_lose_their_trailing_slash_and_need_a_scheme() {
        assert_eq!(
            normalize_url("http://127.0.0.1:8787/").unwrap(),
            "http://127.0.0.1:8787"
        );
        assert_eq!(
            normalize_url("https://x.example/prod").unwrap(),
            "https://x.example/prod"
        );
        assert_eq!(
            normalize_url("127.0.0.1:8787").unwrap_err().kind,
            Kind::BadInput
        );
    }

    #[cfg(unix)]
    #[test]
    fn private_files_are_0600_from_the_start_and_replaced_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("ws-config-test-{}", std::process::id()));
        let path = dir.join("nested").join("config.json");
        write_private(&path, b"one").unwrap();
        write_private(&path, b"two").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
