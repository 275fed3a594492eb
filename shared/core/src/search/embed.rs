//! Search by meaning: the port of an in-process embedding model (the engine is
//! `workspace-embed`: all-MiniLM-L6-v2 run by candle on the CPU), and the passages a file's
//! text is cut into before it is embedded.

use crate::error::Result;

/// An embedding model, loaded once per process and shared.
pub trait Embedder: Send + Sync {
    /// Names the model and its weights (e.g. `all-minilm-l6-v2@<sha256 prefix>`): vectors of
    /// another model are never compared with this one's (an index made by another is rebuilt).
    fn model_id(&self) -> &str;
    /// Length of each vector.
    fn dims(&self) -> usize;
    /// One unit-length vector per text, in order. A text longer than the model's token limit
    /// is embedded from its first tokens (passages are cut to fit, so this is rare).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}
