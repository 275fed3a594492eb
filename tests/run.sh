#!/usr/bin/env bash
# Runs every test of the project: formatting, the SAM template lint, clippy, and the whole
# cargo test suite (unit tests, the contract suite against every adapter including the AWS
# ones on a moto emulator started here, the Lambda handlers on recorded events, and the
# local server as a real process).
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

echo "== starting the AWS emulator (moto) on a free loopback port"
mkdir -p target
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" > target/moto.log 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true' EXIT
python3 - "$port" <<'WAIT'
import sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/moto-api/"
for _ in range(300):
    try:
        urllib.request.urlopen(url, timeout=1)
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit("moto did not answer on " + url)
WAIT
export WORKSPACE_TEST_MOTO_URL="http://127.0.0.1:$port"
# cargo-lambda (for `cargo lambda watch` / `invoke` in the function tests) lives in the venv.
export PATH="$PWD/$venv/bin:$PATH"

echo "== cargo test"
cargo test --workspace --locked
