//! What the mount must tell a person: each conflict (and each write it could not commit),
//! as a line in the mount's log and a JSON line in `conflicts.jsonl` in its cache folder,
//! which `ws mount --status` reads.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct Journal {
    file: PathBuf,
    lock: Mutex<()>,
}

/// Why a record was made.
#[derive(Debug, Clone, Copy)]
pub enum What {
    /// The file changed in the workspace since it was opened; the mount's bytes are in `copy`.
    Write,
    /// A rename of a file that changed (or a target that appeared) in the workspace.
    Rename,
    /// An unlink of a file that changed in the workspace.
    Unlink,
    /// Bytes the workspace refused or could not be reached for, kept on this machine.
    Unsaved,
}

impl What {
    fn as_str(self) -> &'static str {
        match self {
            What::Write => "write",
            What::Rename => "rename",
            What::Unlink => "unlink",
            What::Unsaved => "unsaved",
        }
    }
}

impl Journal {
    pub fn new(file: PathBuf) -> Journal {
        Journal {
            file,
            lock: Mutex::new(()),
        }
    }

    /// Logs `message` (stderr: the mount's log) and records it.
    pub fn record(
        &self,
        what: What,
        path: &str,
        kept_at: Option<&str>,
        server_version: Option<u64>,
        message: &str,
    ) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        eprintln!("ws mount: {} conflict on {path}: {message}", what.as_str());
        let line = json!({
            "time": workspace_core::model::format_time(now_ms()),
            "kind": what.as_str(),
            "path": path,
            "keptAt": kept_at,
            "serverVersion": server_version,
            "message": message,
        });
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = written {
            eprintln!("ws mount: cannot record it in {}: {e}", self.file.display());
        }
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Every record in `file`, oldest first (unreadable lines skipped).
pub fn read(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
