#!/usr/bin/env bash
# Runs every test of the project: formatting, the SAM template lint, clippy, and the whole
# cargo test suite (unit tests, the contract suite against every adapter including the AWS
# ones on a moto emulator started here, the local server as a real process on the embedded
# store and on moto, every recorded event through each function's bootstrap under the
# Runtime Interface Emulator from aws-sam-cli, and `sam build` of two functions for arm64).
# Needs only what a fresh machine has (cargo, python3); it installs the rest under ./.venv.
# Needs node and npm for the bench smoke (the MCP peer in bench/peer) and for axe-core in the
# console's browser suite (tests/console, Playwright driving Debian's chromium, which this
# installs with apt-get when it is missing).
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

# The console's browser tests (tests/console, run by `cargo test`) drive Debian's chromium:
# Playwright's own browser download cannot work here.
if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian's chromium for the console's browser tests (apt-get, as root)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "chromium is missing and this is not root: run 'sudo apt-get update && sudo apt-get install -y chromium', then again" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
  [ -x /usr/bin/chromium ] || { echo "apt-get installed no /usr/bin/chromium" >&2; exit 1; }
fi

# A one-off build (CI) gains nothing from incremental state, which is several GB here.
if [ "${CI:-}" = "true" ]; then export CARGO_INCREMENTAL=0; fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== sam validate --lint"
SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" \
  "$venv/bin/sam" validate --lint --template template.yaml

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== starting the AWS emulator (moto) on a free loopback port"
mkdir -p target
rm -f target/moto.port
"$venv/bin/python" tests/moto_server.py > target/moto.port 2> target/moto.log &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  port=$(head -n 1 target/moto.port 2>/dev/null || true)
  [ -n "$port" ] && break
  kill -0 "$moto_pid" 2>/dev/null || { cat target/moto.log; echo "moto did not start"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "moto did not report its port"; exit 1; }
export WORKSPACE_TEST_MOTO_URL="http://127.0.0.1:$port"
# SAM CLI, cargo-lambda and zig (for `sam build` in the function tests) live in the venv.
export PATH="$PWD/$venv/bin:$PATH"
# `sam build` makes arm64 functions (template.yaml); cargo needs that target's standard library.
if command -v rustup > /dev/null && ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  echo "== rustup target add aarch64-unknown-linux-gnu"
  rustup target add aarch64-unknown-linux-gnu
fi

# The benchmark suite in its smoke mode (tiny counts, a debug build): keeps bench/run.py
# working; the numbers in docs/performance.md come from its full run.
echo "== bench smoke"
"$venv/bin/python" bench/run.py --smoke

echo "== cargo test"
cargo test --workspace --locked
