#!/usr/bin/env bash
# `sam local invoke` and `sam local start-api` for real, in a container engine, the way
# docs/operations.md "Develop with SAM" shows them, against the moto emulator:
#
#   1. a container engine: Docker when `docker info` answers, else Debian's podman as root
#      (installed with apt-get when missing), served on a socket under target/sam-local/
#      and named by DOCKER_HOST; runc, cgroupfs and ulimits of 1024 in a containers.conf
#      named by CONTAINERS_CONF (see docs/operations.md "sam local on podman"); function
#      containers reach moto through tests/sam_local/relay.py on the bridge's gateway;
#   2. a stand-in for the Lambda base image SAM asks for
#      (public.ecr.aws/lambda/provided:al2023-x86_64), imported from this host's files,
#      because no container registry is reachable (hence --skip-pull-image everywhere);
#   3. what `sam build` would make, for x86_64 and without cross-compiling: this host's
#      debug builds of fn-put, fn-get and fn-authorizer as the bootstraps of a copy of
#      template.yaml (tests/sam_local/prepare_build.py);
#   4. moto (tests/moto_server.py, or WORKSPACE_TEST_MOTO_URL), the resources
#      `workspace-local provision` creates, an API key, then `sam local invoke PutFunction`
#      and `GetFunction` with the recorded events and `sam local start-api` with the API-key
#      authorizer, each answer checked.
#
# Every step fails the run on error and prints one summary line. Idempotent; everything it
# starts (moto, the podman service, sam start-api, containers) is stopped on exit.
#
#   bash tests/sam_local/run.sh
#
# WORKSPACE_SAM_LOCAL_ENGINE=podman forces podman where Docker also answers.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$root/target/sam-local
venv=$root/.venv
sam=$venv/bin/sam
mkdir -p "$work"
export SAM_CLI_TELEMETRY=0 AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
unset AWS_SESSION_TOKEN AWS_PROFILE

# The image SAM 1.170 builds its invoke image from, for Runtime provided.al2023 on x86_64
# (samcli/local/docker/lambda_image.py: public.ecr.aws/lambda/<runtime:tag>-<arch>, since
# provided.al2023 has images for both architectures), and the image it builds FROM it
# (`ADD aws-lambda-rie /var/rapid/`), reused while it exists.
base_image=public.ecr.aws/lambda/provided:al2023-x86_64
rapid_image=public.ecr.aws/lambda/provided:al2023-rapid-x86_64
bins=(fn-put fn-get fn-authorizer)

run_start=$(date +%s.%N)
step_start=$run_start
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(date +%s.%N)"; }
begin() { step_start=$(date +%s.%N); step_name=$1; }
ok() { echo "ok   ${step_name} ($(elapsed "$step_start")s): $*"; }
fail() { echo "FAIL ${step_name:-setup}: $*" >&2; exit 1; }

# ----------------------------------------------------------------------- cleanup
pids=()             # background processes started here (each its own process group)
engine=""           # docker | podman
containers_before=""
cleanup() {
  local rc=$?
  set +e
  if [ -n "$engine" ]; then
    # The function containers SAM started in this run (SAM labels them).
    for c in $($engine ps -aq --filter label=sam.cli.container.type=lambda 2>/dev/null); do
      grep -qx "$c" <<<"$containers_before" || $engine rm -f "$c" >/dev/null 2>&1
    done
  fi
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do [ -n "${pids[i]}" ] && stop "${pids[i]}"; done
  if [ "$rc" -ne 0 ]; then echo "sam local run FAILED after $(elapsed "$run_start")s (logs in $work/)" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Stops a process spawned below and its group: SIGTERM, SIGKILL after 10 s.
stop() {
  local pid=$1 dog
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  (sleep 10; kill -KILL -- "-$pid" 2>/dev/null) &
  dog=$!
  wait "$pid" 2>/dev/null || true
  kill "$dog" 2>/dev/null || true
  wait "$dog" 2>/dev/null || true
  return 0
}

# Starts "$@" in its own process group (so cleanup reaches its children), output to $1.
spawn() {
  local out=$1
  shift
  setsid "$@" >"$out" 2>"$out.err" &
  pids+=("$!")
}

# --------------------------------------------------------------- 1. the engine
begin "container engine"
if [ "${WORKSPACE_SAM_LOCAL_ENGINE:-}" != podman ] && command -v docker >/dev/null \
  && docker info >/dev/null 2>&1; then
  engine=docker
  ok "Docker ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
else
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null \
    || ! command -v iptables >/dev/null; then
    [ "$(id -u)" -eq 0 ] || fail "no Docker engine and no podman: as root, run 'apt-get install -y --no-install-recommends podman runc iptables uidmap'"
    echo "== installing podman, runc and iptables (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends podman runc iptables uidmap >"$work/apt.log" 2>&1 \
      || { apt-get update -q >>"$work/apt.log" 2>&1 \
        && apt-get install -y -q --no-install-recommends podman runc iptables uidmap >>"$work/apt.log" 2>&1; } \
      || { tail -20 "$work/apt.log" >&2; fail "apt-get install podman failed"; }
  fi
  [ "$(id -u)" -eq 0 ] || fail "podman is used as root here (rootless podman needs subuids and another network setup)"
  # crun (podman's default runtime) fails in this sandbox ("cgroups in hybrid mode not
  # supported"); the sandbox refuses the default ulimits (no CAP_SYS_RESOURCE). Containers
  # created through the Docker API land on podman's bridge (netavark, which needs iptables)
  # whatever containers.conf's netns says.
  cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/podman/storage"
runroot = "$work/podman/run"
EOF
  export CONTAINERS_CONF=$work/containers.conf CONTAINERS_STORAGE_CONF=$work/storage.conf
  sock=$work/podman.sock
  rm -f "$sock"
  spawn "$work/podman-service.log" podman system service --time=0 "unix://$sock"
  export DOCKER_HOST=unix://$sock
  for _ in $(seq 1 100); do
    [ -S "$sock" ] && curl -sf --unix-socket "$sock" http://d/_ping >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/podman-service.log.err" >&2; fail "podman system service exited"; }
    sleep 0.1
  done
  curl -sf --unix-socket "$sock" http://d/_ping >/dev/null || fail "podman's API socket did not answer"
  engine=podman
  ok "podman $(podman version --format '{{.Client.Version}}') as root on $DOCKER_HOST (runc, netavark bridge)"
fi
containers_before=$($engine ps -aq --filter label=sam.cli.container.type=lambda 2>/dev/null || true)

# ------------------------------------------------------- 2. the stand-in base image
begin "stand-in base image"
rie=$("$venv/bin/python" -c 'import samcli,os; print(os.path.join(os.path.dirname(samcli.__file__), "local", "rapid", "aws-lambda-rie-x86_64"))')
[ -x "$rie" ] || fail "no $rie in the aws-sam-cli package"
rootfs=$work/standin/rootfs
rm -rf "$rootfs"
mkdir -p "$rootfs"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,usr/local/bin,etc/ssl/certs,etc/pki/tls/certs,tmp,var/task,var/runtime,var/rapid,var/lang/bin,opt,proc,sys,dev,root}
chmod 1777 "$rootfs/tmp"
for d in bin sbin lib lib64; do ln -s "usr/$d" "$rootfs/$d"; done
# The host's path of a shared library -> the same path in the merged-/usr rootfs.
put_lib() {
  local p=$1 rel
  rel=${p#/usr/}
  rel=${rel#/}
  mkdir -p "$rootfs/usr/$(dirname "$rel")"
  cp -L "$p" "$rootfs/usr/$rel"
}
# glibc (its libraries, not its gconv modules or tools) and libgcc_s: what a Rust binary
# built for x86_64-unknown-linux-gnu loads.
for p in $(dpkg -L libc6 libgcc-s1 | grep -E '^(/usr)?/lib(64)?/(x86_64-linux-gnu/)?[^/]+\.so(\.[0-9]+)*$'); do
  [ -e "$p" ] && put_lib "$p"
done
put_lib /lib64/ld-linux-x86-64.so.2
# A shell and the few tools SAM's own image build runs (`RUN mv ... && chmod +x ...`).
for t in dash mv chmod cp rm mkdir cat ls env ln; do
  cp -L "$(command -v "$t")" "$rootfs/usr/bin/$t"
  for p in $(ldd "$(command -v "$t")" | grep -o '/[^ ]*\.so[^ ]*'); do
    [ -e "$rootfs/usr/${p#/usr/}" ] || put_lib "$p"
  done
done
ln -s dash "$rootfs/usr/bin/sh"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
ln -s ../../../ssl/certs/ca-certificates.crt "$rootfs/etc/pki/tls/certs/ca-bundle.crt"
cp "$rie" "$rootfs/usr/local/bin/aws-lambda-rie"
printf 'root:x:0:0:root:/root:/bin/sh\nsbx_user1051:x:993:990::/home/sbx_user1051:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nsbx_user1051:x:990:\nnobody:x:65534:\n' >"$rootfs/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
glibc=$(dpkg-query -W -f '${Version}' libc6)
printf 'NAME="sam-local stand-in for public.ecr.aws/lambda/provided:al2023"\nID=sam-local-standin\nVERSION_ID="%s"\nPRETTY_NAME="stand-in from Debian %s files (glibc %s), not Amazon Linux 2023"\n' \
  "$glibc" "$(cat /etc/debian_version)" "$glibc" >"$rootfs/etc/os-release"
# The real image's entrypoint, same behaviour: the handler is the one argument; the runtime
# is /var/runtime/bootstrap, else the function's bootstrap; under the RIE when no Runtime
# API is given. (SAM replaces the entrypoint with /var/rapid/aws-lambda-rie anyway.)
cat >"$rootfs/lambda-entrypoint.sh" <<'EOF'
#!/bin/sh
if [ $# -ne 1 ]; then
  echo "entrypoint requires the handler name to be the first argument" 1>&2
  exit 142
fi
export _HANDLER="$1"
RUNTIME_ENTRYPOINT=/var/runtime/bootstrap
[ -x "$RUNTIME_ENTRYPOINT" ] || RUNTIME_ENTRYPOINT="$LAMBDA_TASK_ROOT/bootstrap"
if [ -z "${AWS_LAMBDA_RUNTIME_API}" ]; then
  exec /usr/local/bin/aws-lambda-rie "$RUNTIME_ENTRYPOINT"
else
  exec "$RUNTIME_ENTRYPOINT"
fi
EOF
chmod 755 "$rootfs/lambda-entrypoint.sh"
changes=(
  'ENV LANG=en_US.UTF-8'
  'ENV TZ=:/etc/localtime'
  'ENV PATH=/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin'
  'ENV LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib'
  'ENV LAMBDA_TASK_ROOT=/var/task'
  'ENV LAMBDA_RUNTIME_DIR=/var/runtime'
  'WORKDIR /var/task'
  'ENTRYPOINT ["/lambda-entrypoint.sh"]'
  'CMD ["bootstrap"]'
)
tarball=$work/standin/rootfs.tar
tar -C "$rootfs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$tarball" .
digest=$( (sha256sum <"$tarball"; printf '%s\n' "${changes[@]}") | sha256sum | cut -c1-32)
have=$($engine image inspect --format '{{index .Config.Labels "sam-local-standin"}}' "$base_image" 2>/dev/null || true)
if [ "$have" = "$digest" ]; then
  ok "$base_image is current (label $digest, $(du -h "$tarball" | cut -f1) rootfs)"
else
  change_args=()
  for c in "${changes[@]}" "LABEL sam-local-standin=$digest"; do change_args+=(--change "$c"); done
  $engine import "${change_args[@]}" "$tarball" "$base_image" >"$work/import.log" 2>&1 \
    || { cat "$work/import.log" >&2; fail "$engine import failed"; }
  # SAM reuses its rapid image while it exists: rebuild it from the new base.
  $engine rmi -f "$rapid_image" >/dev/null 2>&1 || true
  ok "imported $base_image from host files (glibc $glibc, $(du -h "$tarball" | cut -f1))"
fi
$engine run --rm --entrypoint /bin/sh "$base_image" -c 'ls /lib64/ld-linux-x86-64.so.2 >/dev/null' \
  || fail "the stand-in image does not run"

# ------------------------------------------------ 3. the functions, as sam build would
begin "bootstraps"
cargo build --quiet --bin fn-put --bin fn-get --bin fn-authorizer --bin workspace-local \
  || fail "cargo build"
build=$work/build
summary=$("$venv/bin/python" tests/sam_local/prepare_build.py template.yaml "$build" target/debug "${bins[@]}") \
  || fail "prepare_build.py"
ok "$summary in $build/template.yaml (x86_64)"

# ------------------------------------------------------ 4. moto, resources, a key
begin "moto and resources"
if [ -n "${WORKSPACE_TEST_MOTO_URL:-}" ]; then
  moto=$WORKSPACE_TEST_MOTO_URL
else
  spawn "$work/moto.port" "$venv/bin/python" tests/moto_server.py
  port=""
  for _ in $(seq 1 300); do
    port=$(head -n 1 "$work/moto.port" 2>/dev/null || true)
    [ -n "$port" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/moto.port.err" >&2; fail "moto did not start"; }
    sleep 0.1
  done
  [ -n "$port" ] || fail "moto did not report its port"
  moto=http://127.0.0.1:$port
fi
moto_port=${moto##*:}
moto_port=${moto_port%%/*}
# Where a function's container reaches moto: SAM leaves it on the engine's default bridge
# (`--docker-network host` does nothing in SAM 1.170), so through a relay on the bridge's
# gateway address (tests/sam_local/relay.py).
if [ "$engine" = podman ]; then
  gw=$(podman network inspect podman --format '{{range .Subnets}}{{.Gateway}}{{end}}')
else
  gw=$(docker network inspect bridge --format '{{(index .IPAM.Config 0).Gateway}}')
fi
[ -n "$gw" ] || fail "no gateway address for $engine's default network"
spawn "$work/relay.port" "$venv/bin/python" tests/sam_local/relay.py "$gw" 127.0.0.1 "$moto_port"
for _ in $(seq 1 100); do [ -s "$work/relay.port" ] && break; sleep 0.1; done
[ -s "$work/relay.port" ] || { cat "$work/relay.port.err" >&2; fail "the relay did not start"; }
container_moto=http://$gw:$(head -n 1 "$work/relay.port")
# Fresh names per run, so a shared moto (WORKSPACE_TEST_MOTO_URL) starts empty for us.
sfx=sl$(date +%s)$$
export AWS_ENDPOINT_URL=$moto WORKSPACE_TABLE=workspace-meta-$sfx WORKSPACE_BUCKET=workspace-bodies-$sfx \
  WORKSPACE_CACHE_TABLE=workspace-cache-$sfx WORKSPACE_BLOB_S3_BUCKET=workspace-blobs-$sfx \
  WORKSPACE_EVENT_BUS=workspace-events-$sfx
./target/debug/workspace-local provision >"$work/provision.log" 2>&1 \
  || { cat "$work/provision.log" >&2; fail "workspace-local provision"; }
key=$(./target/debug/workspace-local keys create --tenant t --workspace w 2>"$work/keys.log" | head -n 1)
[ -n "$key" ] || { cat "$work/keys.log" >&2; fail "workspace-local keys create printed no key"; }
env_json=$work/env.json
"$venv/bin/python" - "$root/events/env.json" "$env_json" "$container_moto" <<'EOF'
import json, os, sys
src, dst, endpoint = sys.argv[1:]
with open(src) as f:
    env = json.load(f)
p = env["Parameters"]
p["AWS_ENDPOINT_URL"] = endpoint
for name in ("WORKSPACE_TABLE", "WORKSPACE_BUCKET", "WORKSPACE_CACHE_TABLE",
             "WORKSPACE_BLOB_S3_BUCKET", "WORKSPACE_EVENT_BUS"):
    p[name] = os.environ[name]
with open(dst, "w") as f:
    json.dump(env, f, indent=2)
EOF
unset AWS_ENDPOINT_URL
# Every sam local command first asks STS for the account id (AWS::AccountId); with no
# internet that costs ~6 s of timeouts per command. moto answers it at once.
export AWS_ENDPOINT_URL_STS=$moto
ok "moto $moto (containers: $container_moto), provisioned *-$sfx, key for t/w, $env_json"

# ----------------------------------------------------------- 5. sam local invoke
sam_common=(--env-vars "$env_json" --docker-network host --skip-pull-image -t "$build/template.yaml")
# Checks a Lambda answer (stdout of sam local invoke) with Python; prints the detail line.
check() {
  "$venv/bin/python" - "$@" <<'EOF'
import json, sys
out, kind = open(sys.argv[1]).read(), sys.argv[2]
lines = [l for l in out.splitlines() if l.strip().startswith("{")]
if not lines:
    sys.exit(f"no JSON answer in {sys.argv[1]}: {out[-2000:]!r}")
r = json.loads(lines[-1])
status = r.get("statusCode")
body = json.loads(r.get("body") or "null")
if status != 200:
    sys.exit(f"statusCode {status}: {r}")
if kind == "put":
    # tests/tests/lambda_invoke.rs: 200 and version 1 for events/put-file.json on a fresh table.
    if body.get("version") != 1 or body.get("path", "notes/today.md") != "notes/today.md":
        sys.exit(f"PUT answered {body}")
    print(f"200, path {body.get('path')}, version {body['version']}")
else:
    # ... and the GET of events/get-file.json sees its content.
    if body.get("content") != "hello" or body.get("version", 1) != 1:
        sys.exit(f"GET answered {body}")
    print(f"200, path {body.get('path')}, version {body.get('version')}, content {body['content']!r}")
EOF
}
begin "sam local invoke PutFunction"
"$sam" local invoke PutFunction -e events/put-file.json "${sam_common[@]}" \
  >"$work/invoke-put.out" 2>"$work/invoke-put.err" \
  || { tail -30 "$work/invoke-put.err" >&2; fail "sam local invoke PutFunction exited non-zero"; }
detail=$(check "$work/invoke-put.out" put) || { tail -30 "$work/invoke-put.err" >&2; fail "$detail"; }
ok "$detail"

begin "sam local invoke GetFunction"
"$sam" local invoke GetFunction -e events/get-file.json "${sam_common[@]}" \
  >"$work/invoke-get.out" 2>"$work/invoke-get.err" \
  || { tail -30 "$work/invoke-get.err" >&2; fail "sam local invoke GetFunction exited non-zero"; }
detail=$(check "$work/invoke-get.out" get) || { tail -30 "$work/invoke-get.err" >&2; fail "$detail"; }
ok "$detail"

# ------------------------------------------------------- 6. sam local start-api
begin "sam local start-api"
api_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
api=http://127.0.0.1:$api_port
spawn "$work/start-api.log" "$sam" local start-api "${sam_common[@]}" --host 127.0.0.1 --port "$api_port" \
  --parameter-overrides "Authorizer=ApiKeyAuthorizer JwtIssuer=https://issuer.example.com/ JwtAudience=agent-workspace"
api_pid=${pids[-1]}
code=""
for _ in $(seq 1 600); do
  code=$(curl -s -o "$work/health.json" -w '%{http_code}' "$api/health" 2>/dev/null || true)
  [ "$code" = 200 ] && break
  kill -0 "$api_pid" 2>/dev/null || { tail -30 "$work/start-api.log.err" >&2; fail "sam local start-api exited"; }
  sleep 0.2
done
[ "$code" = 200 ] || { tail -30 "$work/start-api.log.err" >&2; fail "GET /health answered '$code' (not 200) after 120 s"; }
ok "$api/health 200 (a GetFunction container)"

# An unauthenticated route needs no key; an authenticated one does.
file=$api/v1/host/workspace/files/notes/sam-local.md
content="written through sam local start-api"
begin "start-api PUT with the key"
code=$(curl -s -o "$work/api-put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $key" \
  -H 'content-type: application/json' --data "{\"content\":\"$content\",\"contentType\":\"text/markdown\"}" "$file")
[ "$code" = 200 ] || { cat "$work/api-put.json" >&2; tail -30 "$work/start-api.log.err" >&2; fail "PUT answered $code"; }
version=$("$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$work/api-put.json")
[ "$version" = 1 ] || fail "PUT answered version $version, not 1: $(cat "$work/api-put.json")"
ok "200, version 1 (authorizer container, then PutFunction)"

begin "start-api GET with the key"
code=$(curl -s -o "$work/api-get.json" -w '%{http_code}' -H "Authorization: Bearer $key" "$file")
[ "$code" = 200 ] || { cat "$work/api-get.json" >&2; fail "GET answered $code"; }
got=$("$venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["content"])' "$work/api-get.json")
[ "$got" = "$content" ] || fail "GET answered content '$got'"
ok "200, content '$got'"

begin "start-api without a key, with a wrong key"
no_key=$(curl -s -o "$work/api-nokey.json" -w '%{http_code}' "$file")
bad_key=$(curl -s -o "$work/api-badkey.json" -w '%{http_code}' -H "Authorization: Bearer not-a-key" "$file")
case "$no_key" in 401 | 403) ;; *) fail "GET without a key answered $no_key: $(cat "$work/api-nokey.json")" ;; esac
case "$bad_key" in 401 | 403) ;; *) fail "GET with a wrong key answered $bad_key: $(cat "$work/api-badkey.json")" ;; esac
ok "no key: $no_key $(tr -d '\n' <"$work/api-nokey.json"); wrong key: $bad_key $(tr -d '\n' <"$work/api-badkey.json")"

begin "stop start-api"
stop "$api_pid"
pids=("${pids[@]/$api_pid/}")
ok "stopped"

echo "sam local: every step passed in $(elapsed "$run_start")s (engine $engine)"
