"""The reference values of shared/embed/tests/pinned.rs, from an implementation that shares
no code with it: all-MiniLM-L6-v2 as sentence-transformers runs it (Transformer, mean
Pooling, Normalize), written out in numpy over the model's own files.

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install numpy tokenizers safetensors
    /tmp/refvenv/bin/python bench/semantic/reference_embed.py <model dir>

<model dir> holds config.json, tokenizer.json and model.safetensors (what
`workspace-local models install` puts in <dir>/all-minilm-l6-v2). Prints the first 8
components of each sentence's vector and every pairwise cosine similarity, as Rust.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

SENTENCES = [
    "The cat sits outside",
    "A man is playing guitar",
    "The new movie is awesome",
    "how do I retry a failed payment",
]
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json


def erf(x):
    # Exact GELU needs erf; numpy has none. math.erf element by element, in float64.
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def linear(x, weights, name):
    # torch's Linear: y = x W^T + b
    return x @ weights[name + ".weight"].T + weights[name + ".bias"]


def encode(ids, cfg, w):
    """One text's token ids (a 1-D array) to its final hidden states (len, hidden)."""
    eps = cfg["layer_norm_eps"]
    heads = cfg["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][np.arange(n)]
        + w["embeddings.token_type_embeddings.weight"][np.zeros(n, dtype=np.int64)]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    hidden = x.shape[-1]
    d = hidden // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = linear(x, w, p + "attention.self.query").reshape(n, heads, d).transpose(1, 0, 2)
        k = linear(x, w, p + "attention.self.key").reshape(n, heads, d).transpose(1, 0, 2)
        v = linear(x, w, p + "attention.self.value").reshape(n, heads, d).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        scores = scores - scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(1, 0, 2).reshape(n, hidden)
        attn = linear(ctx, w, p + "attention.output.dense")
        x = layer_norm(
            attn + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        h = linear(x, w, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        h = linear(h, w, p + "output.dense")
        x = layer_norm(h + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def main():
    model = Path(sys.argv[1])
    cfg = json.loads((model / "config.json").read_text())
    assert cfg["hidden_act"] == "gelu" and cfg["position_embedding_type"] == "absolute"
    # Everything in float64: the reference should not carry float32 rounding of its own.
    w = {k: v.astype(np.float64) for k, v in load_file(str(model / "model.safetensors")).items()}
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_SEQ_LENGTH)
    vectors = []
    for s in SENTENCES:
        ids = np.array(tok.encode(s).ids, dtype=np.int64)
        states = encode(ids, cfg, w)
        # Mean pooling over the tokens (one text: no padding, every token counts), then
        # unit length.
        v = states.mean(0)
        vectors.append(v / np.linalg.norm(v))
        print(f"// {s!r}: {len(ids)} tokens {ids.tolist()}")
    print("const FIRST8: [[f32; 8]; 4] = [")
    for v in vectors:
        print("    [" + ", ".join(f"{x:.7f}" for x in v[:8]) + "],")
    print("];")
    print("const COSINES: [(usize, usize, f32); 6] = [")
    for i in range(len(vectors)):
        for j in range(i + 1, len(vectors)):
            print(f"    ({i}, {j}, {float(vectors[i] @ vectors[j]):.7f}),")
    print("];")


if __name__ == "__main__":
    main()
