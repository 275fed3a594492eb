//! What this machine last read or wrote of each path (etag, and the content's SHA-256 when
//! known), per deployment, in `state.json` beside the config. `put --safe` sends that etag
//! as `If-Match`; `sync` skips files whose hash and etag are unchanged.
//!
//! It is a cache: a missing or unreadable file is an empty state, and concurrent `ws` runs
//! may lose each other's entries. Both only make `--safe` refuse or `sync` re-check the
//! remote content, never overwrite anything.

use crate::config::{write_private, Settings};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub etag: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    /// deployment (URL and workspace) → path → entry
    #[serde(default)]
    deployments: BTreeMap<String, BTreeMap<String, Entry>>,
}

pub struct State {
    file_path: PathBuf,
    deployment: String,
    file: StateFile,
    changed: bool,
}

impl State {
    /// The state beside `config` for the deployment `settings` name.
    pub fn open(config: &Path, settings: &Settings) -> State {
        let file_path = config.with_file_name("state.json");
        let file = std::fs::read(&file_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        State {
            file_path,
            deployment: deployment_id(settings),
            file,
            changed: false,
        }
    }

    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.file.deployments.get(&self.deployment)?.get(path)
    }

    pub fn set(&mut self, path: &str, entry: Entry) {
        let paths = self
            .file
            .deployments
            .entry(self.deployment.clone())
            .or_default();
        if paths.get(path) != Some(&entry) {
            paths.insert(path.to_owned(), entry);
            self.changed = true;
        }
    }

    pub fn remove(&mut self, path: &str) {
        if let Some(paths) = self.file.deployments.get_mut(&self.deployment) {
            self.changed |= paths.remove(path).is_some();
        }
    }

    /// Writes the state back if it changed. A failure is only a warning: the command's own
    /// work is done, and a lost entry costs at most a re-check later.
    pub fn save(&mut self) {
        if !self.changed {
            return;
        }
        let bytes = serde_json::to_vec(&self.file).expect("strings serialize");
        match write_private(&self.file_path, &bytes) {
            Ok(()) => self.changed = false,
            Err(e) => eprintln!("ws: warning: cannot save {}: {e}", self.file_path.display()),
        }
    }
}

/// The URL and workspace; without a workspace the key decides it, so a digest of the key
/// stands in (never the key itself).
fn deployment_id(settings: &Settings) -> String {
    match &settings.workspace {
        Some(w) => format!("{} {w}", settings.url),
        None => {
            let digest = hex::encode(Sha256::digest(settings.key.as_bytes()));
            format!("{} key:{}", settings.url, &digest[..16])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(workspace: Option<&str>, key: &str) -> Settings {
        Settings {
            url: "http://h".into(),
            key: key.into(),
            workspace: workspace.map(str::to_owned),
        }
    }

    #[test]
    fn entries_are_kept_per_deployment_and_survive_a_reopen() {
        let dir = std::env::temp_dir().join(format!("ws-state-test-{}", std::process::id()));
        let config = dir.join("config.json");
        let a = settings(Some("a"), "k1");
        let entry = Entry {
            etag: "\"1-x\"".into(),
            sha256: None,
        };
        let mut s = State::open(&config, &a);
        s.set("p.md", entry.clone());
        s.save();
        assert_eq!(State::open(&config, &a).get("p.md"), Some(&entry));
        assert_eq!(
            State::open(&config, &settings(Some("b"), "k1")).get("p.md"),
            None
        );
        assert_eq!(
            State::open(&config, &settings(None, "k1")).get("p.md"),
            None
        );
        let text = std::fs::read_to_string(dir.join("state.json")).unwrap();
        assert!(!text.contains("k1"), "the key is never written: {text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
