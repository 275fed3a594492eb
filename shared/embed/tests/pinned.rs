//! Pins the model's output to an independent implementation (numpy), and checks what the
//! search relies on: unit vectors, the input order, padding that changes nothing, and long
//! texts cut to the model's limit. Needs the installed model: tests/run.sh installs it and
//! sets WORKSPACE_MODEL_DIR.

use std::path::PathBuf;
use std::sync::OnceLock;
use workspace_core::search::Embedder;
use workspace_embed::MiniLm;

fn model_dir() -> PathBuf {
    let dir = std::env::var_os("WORKSPACE_MODEL_DIR").expect(
        "WORKSPACE_MODEL_DIR is not set: these tests need the installed model. tests/run.sh \
         installs it (`workspace-local models install --dir D`) and sets \
         WORKSPACE_MODEL_DIR=D/all-minilm-l6-v2",
    );
    PathBuf::from(dir)
}

fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| MiniLm::load(&model_dir()).expect("load the model"))
}

const SENTENCES: [&str; 4] = [
    "The cat sits outside",
    "A man is playing guitar",
    "The new movie is awesome",
    "how do I retry a failed payment",
];

// Printed by bench/semantic/reference_embed.py (numpy, float64) from the same files. That
// script also gives sentence-transformers' published scores for this model: 0.8939 for "The
// new movie is awesome" / "The new movie is so great", 0.2838 for "The cat sits outside" /
// "The dog plays in the garden".
const FIRST8: [[f32; 8]; 4] = [
    [
        0.1391911, 0.0030291, 0.0470147, 0.0395738, -0.0479985, -0.0068115, 0.0150527, 0.0333766,
    ],
    [
        0.0226613, -0.0013886, -0.0056135, -0.0670217, -0.1556007, -0.0027019, 0.0789106,
        -0.0129570,
    ],
    [
        -0.1004432, -0.0773927, -0.0013741, -0.0484606, 0.0045568, -0.0523166, -0.0009660,
        -0.0034156,
    ],
    [
        0.0075652, 0.0264330, 0.0561231, -0.0073109, -0.0619840, -0.0222898, -0.0077923, -0.0388913,
    ],
];
const COSINES: [(usize, usize, f32); 6] = [
    (0, 1, 0.0363304),
    (0, 2, -0.0246801),
    (0, 3, -0.0184937),
    (1, 2, 0.0092951),
    (1, 3, 0.0158665),
    (2, 3, -0.0889889),
];

/// float32 inference against the float64 reference differs by about 1e-6.
const TOLERANCE: f32 = 1e-4;

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f32::max)
}

#[test]
fn matches_the_numpy_reference() {
    let m = model();
    assert_eq!(m.dims(), 384);
    assert_eq!(m.model_id(), "all-minilm-l6-v2@53aa51172d14");
    let vectors = m.embed(&SENTENCES).unwrap();
    assert_eq!(vectors.len(), 4);
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(v.len(), 384);
        let norm = dot(v, v).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{:?}: norm {norm}", SENTENCES[i]);
        for (k, (got, want)) in v.iter().zip(FIRST8[i]).enumerate() {
            assert!(
                (got - want).abs() < TOLERANCE,
                "{:?}[{k}]: {got}, reference {want}",
                SENTENCES[i]
            );
        }
    }
    for (i, j, want) in COSINES {
        let got = dot(&vectors[i], &vectors[j]);
        assert!(
            (got - want).abs() < TOLERANCE,
            "cos({:?}, {:?}) = {got}, reference {want}",
            SENTENCES[i],
            SENTENCES[j]
        );
    }
}

/// Texts of many lengths, more than one internal batch (32), so some are padded and the
/// length sort reorders them.
fn mixed_texts() -> Vec<String> {
    let words = "agents write files then search them by meaning while versions keep \
                 every change so a fork can be merged back after review"
        .split(' ')
        .collect::<Vec<_>>();
    (0..70)
        .map(|i| {
            let n = 1 + (i * 37) % 90;
            (0..n)
                .map(|k| words[(i + k) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .chain(SENTENCES.iter().map(|s| s.to_string()))
        .collect()
}

#[test]
fn a_batch_gives_the_vectors_of_one_text_at_a_time() {
    let m = model();
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = m.embed(&refs).unwrap();
    let single: Vec<Vec<f32>> = refs
        .iter()
        .map(|t| m.embed(&[t]).unwrap().remove(0))
        .collect();
    let diff = max_diff(&batched, &single);
    assert!(diff < 1e-5, "padding changed a vector by {diff}");
}

#[test]
fn answers_in_the_input_order() {
    let m = model();
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let forward = m.embed(&refs).unwrap();
    let reversed: Vec<&str> = refs.iter().rev().copied().collect();
    let mut backward = m.embed(&reversed).unwrap();
    backward.reverse();
    assert!(max_diff(&forward, &backward) < 1e-5);
    // Different texts give different vectors, so the comparison above is not vacuous.
    assert!(dot(&forward[0], &forward[1]) < 0.999);
    assert!(m.embed(&[]).unwrap().is_empty());
}

#[test]
fn a_long_text_is_cut_to_the_token_limit() {
    let m = model();
    // Words of one token each.
    let words = ["storage", "versions", "search", "merge", "agents"];
    let text = |same: usize, len: usize| {
        (0..len)
            .map(|i| {
                let k = if i < same { i } else { i * 3 + 1 };
                words[k % words.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let long = text(5000, 5000);
    // Another text past the first 254 words, which with [CLS] and [SEP] fill the 256 tokens
    // the model reads: cut, both are the same text.
    let same = text(254, 5000);
    // Another from the 254th word on, within the limit (tokenizer.json alone would cut at
    // 128 and make these the same too).
    let differs = text(253, 5000);
    assert_ne!(long, same);
    let vectors = m.embed(&[&long, &same, &differs, "search"]).unwrap();
    assert!((dot(&vectors[0], &vectors[0]).sqrt() - 1.0).abs() < 1e-5);
    assert!(max_diff(&vectors[..1], &vectors[1..2]) < 1e-6);
    assert!(max_diff(&vectors[..1], &vectors[2..3]) > 1e-4);
    assert!(dot(&vectors[0], &vectors[3]) < 0.999);
}

#[test]
fn load_refuses_altered_weights() {
    let dir = model_dir();
    let bad = tempfile::tempdir().unwrap();
    for name in ["config.json", "tokenizer.json"] {
        std::fs::copy(dir.join(name), bad.path().join(name)).unwrap();
    }
    let missing = MiniLm::load(bad.path()).err().expect("no weights: refused");
    let message = missing.to_string();
    assert!(message.contains("model.safetensors"), "{message}");
    assert!(
        message.contains("workspace-local models install"),
        "{message}"
    );

    std::fs::write(bad.path().join("model.safetensors"), b"not the weights").unwrap();
    let altered = MiniLm::load(bad.path())
        .err()
        .expect("altered weights: refused");
    let message = altered.to_string();
    assert!(message.contains("model.safetensors"), "{message}");
    assert!(message.contains("is not the pinned one"), "{message}");
    assert!(
        message.contains("workspace-local models install"),
        "{message}"
    );
    assert!(workspace_embed::verify(bad.path()).is_err());
    assert!(workspace_embed::verify(&dir).is_ok());
}
