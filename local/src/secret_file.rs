//! Secrets the local server generates once and keeps in its data directory, hex-encoded and
//! owner-only (0600, in a 0700 directory): the blob URL signing secret (`presign.key`) and
//! the session paging-token key (`session-token.key`). Kept across restarts, so URLs and
//! tokens it issued stay valid, and never shared between two data directories.

use std::io::Write;
use std::path::Path;

/// The secret in `data_dir/name`, or 32 fresh random bytes written there on first use. Two
/// processes starting at once agree: the file is created exclusively, and the loser reads
/// the winner's.
pub fn load_or_create(data_dir: &Path, name: &str) -> Result<Vec<u8>, String> {
    let path = data_dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let secret = hex::decode(text.trim())
                .map_err(|_| format!("{} is not a hex secret", path.display()))?;
            if secret.len() < 32 {
                return Err(format!("{} holds fewer than 32 bytes", path.display()));
            }
            return Ok(secret);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    workspace_store_embedded::private_dir(data_dir)
        .map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let secret = rand::random::<[u8; 32]>().to_vec();
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let write = opts.open(&path).and_then(|mut f| {
        f.write_all(hex::encode(&secret).as_bytes())
            .and_then(|()| f.sync_all())
    });
    match write {
        Ok(()) => Ok(secret),
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create(data_dir, name),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes `bytes` to `path` (replacing it), owner-only (0600).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path).and_then(|mut f| f.write_all(bytes))
}
