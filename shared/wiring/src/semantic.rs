//! Search by meaning: the embedding model a process searches with, or why it has none
//! (then `semantic` and `hybrid` answer 503 with that reason, and the other modes work).

use crate::Settings;
use workspace_core::service::Semantic;

/// Where the local server looks for the model when `WORKSPACE_MODEL_DIR` is unset: where
/// `workspace-local models install` puts it.
pub fn local_model_dir(s: &Settings) -> std::path::PathBuf {
    s.model_dir
        .clone()
        .unwrap_or_else(|| s.local.data_dir.join("models").join("all-minilm-l6-v2"))
}

/// Loads the model from `dir`; `how_to_install` is said when it is not there.
#[cfg(feature = "semantic")]
pub fn load(dir: &std::path::Path, how_to_install: &str) -> Semantic {
    if !dir.exists() {
        return Semantic::Off(format!(
            "the embedding model is not installed ({} does not exist): {how_to_install}",
            dir.display()
        ));
    }
    match workspace_embed::MiniLm::load(dir) {
        Ok(model) => Semantic::On(std::sync::Arc::new(model)),
        Err(e) => Semantic::Off(format!(
            "the embedding model at {} cannot be loaded ({e}): {how_to_install}",
            dir.display()
        )),
    }
}

/// Built without the model's engine: always off.
#[cfg(not(feature = "semantic"))]
pub fn load(_dir: &std::path::Path, _how_to_install: &str) -> Semantic {
    Semantic::Off("this build has no embedding engine".to_owned())
}

/// The local server's: from `WORKSPACE_MODEL_DIR` or the data directory.
pub fn local(s: &Settings) -> Semantic {
    let dir = local_model_dir(s);
    let how = format!(
        "run `workspace-local models install --dir {}` and restart the server",
        dir.parent().unwrap_or(&dir).display()
    );
    load(&dir, &how)
}

/// A Lambda function's: from `WORKSPACE_MODEL_DIR` (the model layer's folder).
pub fn on_lambda(s: &Settings) -> Semantic {
    match &s.model_dir {
        Some(dir) => load(
            dir,
            "put the installed model's folder (workspace-local models install) in a layer the function has, and name it in WORKSPACE_MODEL_DIR",
        ),
        None => Semantic::Off(
            "this function carries no embedding model (WORKSPACE_MODEL_DIR is unset: docs/search.md, On Lambda)"
                .to_owned(),
        ),
    }
}

/// What discovery says of it.
pub fn advertised(semantic: &Semantic) -> Result<String, String> {
    match semantic {
        Semantic::On(e) => Ok(e.model_id().to_owned()),
        Semantic::Off(why) => Err(why.clone()),
    }
}
