//! The secret the local server signs blob URLs with: 32 random bytes, generated on first
//! start and kept in the data directory (`presign.key`, owner-only), so URLs it issued stay
//! valid across restarts and no two data directories share a secret.

use std::io::Write;
use std::path::Path;

pub const SECRET_FILE: &str = "presign.key";

pub fn load_or_create(data_dir: &Path) -> Result<Vec<u8>, String> {
    let path = data_dir.join(SECRET_FILE);
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
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let secret = workspace_core::signed_url::UrlSigner::generate_secret();
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
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create(data_dir),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}
