//! API keys for the local server: `WORKSPACE_API_KEYS` when set, otherwise one key generated
//! on first start and kept in the data directory, bound to tenant `local`, workspace `default`.

use std::io::Write;
use std::path::{Path, PathBuf};
use workspace_core::Scope;
use workspace_http::auth::ApiKeys;

pub const KEY_FILE: &str = "api-key";
pub const DEFAULT_TENANT: &str = "local";
pub const DEFAULT_WORKSPACE: &str = "default";

/// How the keys were found, for the start-up banner.
pub enum KeySource {
    Env,
    /// Generated now; the only time the key itself is printed.
    Generated {
        key: String,
        file: PathBuf,
    },
    Stored {
        file: PathBuf,
    },
}

pub fn load(spec: Option<&str>, data_dir: &Path) -> Result<(ApiKeys, KeySource), String> {
    if let Some(spec) = spec {
        let keys = ApiKeys::parse(spec).map_err(|e| e.to_string())?;
        if keys.is_empty() {
            return Err("WORKSPACE_API_KEYS is set but holds no key".to_owned());
        }
        return Ok((keys, KeySource::Env));
    }
    let file = data_dir.join(KEY_FILE);
    let scope = Scope::parse(DEFAULT_TENANT, DEFAULT_WORKSPACE).map_err(|e| e.to_string())?;
    let (key, source) = match std::fs::read_to_string(&file) {
        Ok(text) => {
            let key = text.trim().to_owned();
            if key.len() < 16 {
                return Err(format!(
                    "{} does not hold a valid key; delete it to generate a new one",
                    file.display()
                ));
            }
            (key, KeySource::Stored { file })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = format!("wsk_{}", hex::encode(rand::random::<[u8; 24]>()));
            write_private(&file, &key)
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            (key.clone(), KeySource::Generated { key, file })
        }
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let mut keys = ApiKeys::default();
    keys.add(&key, scope, "local-key".to_owned());
    Ok((keys, source))
}

/// Writes the key readable by the owner only.
fn write_private(file: &Path, key: &str) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(file)?;
    writeln!(f, "{key}")?;
    f.sync_all()
}
