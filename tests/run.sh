#!/usr/bin/env bash
# Runs every test of the project: formatting, the SAM template lint, clippy, and the whole
# cargo test suite (unit tests, the contract suite against every adapter, the Lambda
# handlers on recorded events, and the local server as a real process).
# Needs only what a fresh machine has (cargo, python3); it installs the rest under ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
req=tests/requirements.txt
if [ ! -x "$venv/bin/sam" ] || ! cmp -s "$req" "$venv/.installed-requirements"; then
  echo "== installing Python test tools into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.installed-requirements"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== sam validate --lint"
SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" \
  "$venv/bin/sam" validate --lint --template template.yaml

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked
