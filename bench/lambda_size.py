#!/usr/bin/env python3
"""Size and init time of every Lambda function against its floor.

A function's floor (bench/floors) builds the same AWS clients the function builds and
answers 200: what the function cannot be smaller, or start faster, than. For each function
this prints the arm64 zip that `sam build` ships (built the way SAM builds it:
`cargo lambda build --release --arm64 --bin <fn>` in the function's CodeUri, the workspace
root, where cargo resolves the features of every member together), the AWS SDK crates in its
dependency tree, and its init time under a fake Lambda Runtime API (spawn to the first
`GET .../runtime/invocation/next`, median of --runs, function and floor interleaved in one
run) on the x86_64 release build of the same package and profile.

The functions are read from template.yaml (every AWS::Serverless::Function: its
`BuildProperties.Binary` and `CodeUri`); the script stops if a package under functions/ is
missing from the template or the template names a function the workspace does not build.

    .venv/bin/python bench/lambda_size.py            # build, measure, print the table
    .venv/bin/python bench/lambda_size.py --no-build # measure what was built before
    .venv/bin/python bench/lambda_size.py --only fn-get,fn-list  # some functions only
    .venv/bin/python bench/lambda_size.py --only fn-list --sending-floors  # and the floors that send

`--sending-floors` also builds, for the HTTP floors with DynamoDB (and S3), a floor that sends
one request per client on every event (`floor-http-dynamodb-sending`, ...): what a function
that calls its clients at all cannot be smaller than, since a floor that only builds its
clients links no request path. It prints each function against that floor too (zip only).

Needs cargo-lambda and ziglang (tests/run.sh installs both into .venv) and the
aarch64-unknown-linux-gnu Rust target (cargo-lambda adds it). A benchmark, not a test of
the test run (a release build of every function takes about half an hour here): it measures,
prints the targets beside the numbers, and exits 1 when a function misses its cap or its
init ratio.
"""

import argparse
import http.server
import json
import os
import re
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARM_DIR = ROOT / "target" / "bench-lambda" / "arm64"
SDKS = ["s3", "dynamodb", "eventbridge"]
# Targets (issue 41, restating issue 13): init within INIT_RATIO of the floor, and each
# arm64 zip under the cap of its kind. The zip-to-floor ratio is printed, not held.
INIT_RATIO = 1.15
CAP_S3_DYNAMODB, CAP_DYNAMODB = 3.0e6, 2.7e6
# Functions that must redact what they write with the regex engine (WSR-1's secret shapes).
CAP_REDACTING, REDACTING = 3.5e6, {"fn-put", "fn-snapshots", "fn-workspaces", "fn-index", "fn-indexer"}
# Functions that link SQLite (the search index) and run users' regexes.
CAP_SQLITE_REGEX, SQLITE_REGEX = 4.5e6, {"fn-search", "fn-mcp"}


def cap_of(binary: str, sdks: list[str]) -> tuple[float, str]:
    """The zip cap of a function, and the kind that sets it."""
    if binary in SQLITE_REGEX:
        return CAP_SQLITE_REGEX, "SQLite and users' regexes"
    if binary in REDACTING:
        return CAP_REDACTING, "redacts with the regex engine"
    if "s3" in sdks:
        return CAP_S3_DYNAMODB, "S3 and DynamoDB" if "dynamodb" in sdks else "S3 (no DynamoDB)"
    # DynamoDB only, or (the console) no AWS client at all: the smallest cap.
    return CAP_DYNAMODB, "DynamoDB only" if sdks else "no AWS client"


def run(cmd, cwd=ROOT):
    print("+", f"(cd {Path(cwd).relative_to(ROOT)} &&)" if Path(cwd) != ROOT else "", " ".join(cmd),
          file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def functions():
    """Binary -> package folder of every function in template.yaml, checked against
    functions/*: each package there has a function in the template, built at the root."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # CloudFormation's short tags (!Ref, !GetAtt, !Sub ...): their values do not matter here.
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=Loader)
    found = {}
    for name, res in template["Resources"].items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        binary = res["Metadata"]["BuildProperties"]["Binary"]
        found[binary] = res["Properties"]["CodeUri"]
    packages = {}
    for manifest in sorted((ROOT / "functions").glob("*/Cargo.toml")):
        m = re.search(r'^name\s*=\s*"([^"]+)"', manifest.read_text(), re.M)
        packages[m.group(1)] = manifest.parent.relative_to(ROOT).as_posix()
    problems = [f"{p} ({d}) is not a function in template.yaml" for p, d in packages.items() if p not in found]
    problems += [f"template.yaml builds {b}, which no package under functions/ defines" for b in found if b not in packages]
    problems += [f"{b}: CodeUri {found[b]!r}, not the workspace root '.' (this script builds there, as sam build does)"
                 for b in found if found[b].rstrip("/") not in (".", "")]
    if problems:
        raise SystemExit("bench/lambda_size.py: template.yaml and functions/ disagree:\n  " + "\n  ".join(problems))
    return {b: ROOT / packages[b] for b in sorted(found)}


def tree(package):
    out = subprocess.run(
        ["cargo", "tree", "-p", package, "-e", "normal", "--prefix", "none"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return {line.split(" ")[0] for line in out.splitlines() if line}


def floor_of(folder, crates):
    """The floor that builds the same clients under the same runtime crate (lambda_http for
    API Gateway events, lambda_runtime for the rest, as the function's manifest says). A
    function without an AWS client (fn-console) gets the bare floor, `floor-http`."""
    sdks = [s for s in SDKS if f"aws-sdk-{s}" in crates]
    manifest = (folder / "Cargo.toml").read_text()
    kind = "http" if "lambda_http" in manifest else "events"
    return "floor-" + "-".join([kind] + sdks), sdks


def build(binaries):
    """binaries: binary -> its package folder. Each is built at the workspace root (its
    CodeUri), as `sam build` does, into the workspace's target/."""
    for b in binaries:
        run(["cargo", "lambda", "build", "--release", "--arm64", "--output-format", "zip",
             "--lambda-dir", str(ARM_DIR), "--bin", b])
    # x86_64, same profile, for init times on this machine.
    for b in binaries:
        run(["cargo", "build", "--release", "--bin", b])


class Runtime(http.server.BaseHTTPRequestHandler):
    """Just enough of the Lambda Runtime API to see a bootstrap ask for its first event."""

    first_next = None

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path.endswith("/runtime/invocation/next") and Runtime.first_next is None:
            Runtime.first_next = time.perf_counter()
        # Never answer: the process is killed once it has asked.

    def log_message(self, *args):
        pass


def init_ms(binary, port):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": binary,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_LOG_GROUP_NAME": "bench",
        "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_EC2_METADATA_DISABLED": "true",
        "RUST_LOG": "warn",
        "WORKSPACE_TABLE": "t",
        "WORKSPACE_BUCKET": "b",
        "WORKSPACE_CACHE_TABLE": "c",
        "WORKSPACE_BLOB_S3_BUCKET": "bb",
        "WORKSPACE_EVENT_BUS": "e",
        "WORKSPACE_SESSION_TOKEN_KEY": "bench-session-token-key-0123456789abcdef",
    }
    Runtime.first_next = None
    start = time.perf_counter()
    proc = subprocess.Popen([str(ROOT / "target" / "release" / binary)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = start + 10
        while Runtime.first_next is None:
            if proc.poll() is not None:
                raise SystemExit(f"{binary} exited ({proc.returncode}) before asking for an event")
            if time.perf_counter() > deadline:
                raise SystemExit(f"{binary} never asked for an event")
            time.sleep(0.0002)
        return (Runtime.first_next - start) * 1000
    finally:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-build", action="store_true", help="measure the binaries built before")
    ap.add_argument("--runs", type=int, default=15, help="init samples per binary (median)")
    ap.add_argument("--only", metavar="FN,...", help="measure these functions (and their floors) only")
    ap.add_argument("--sending-floors", action="store_true",
                    help="also build the floors that send one request per client, and compare")
    args = ap.parse_args()

    rows = []
    folders = functions()  # every function, checked against template.yaml
    only = set(args.only.split(",")) if args.only else set(folders)
    if only - set(folders):
        raise SystemExit(f"--only: no such function: {', '.join(sorted(only - set(folders)))}")
    for fn in sorted(only):
        crates = tree(fn)
        floor, sdks = floor_of(folders[fn], crates)
        rows.append({"fn": fn, "floor": floor, "sdks": sdks,
                     "sdk_crates": sorted(c for c in crates if c.startswith("aws-sdk-"))})
    floors = sorted({r["floor"] for r in rows})
    sending = {f: f + "-sending" for f in floors
               if args.sending_floors and (ROOT / "bench" / "floors" / "src" / "bin" / f"{f}-sending.rs").exists()}
    folders.update({f: ROOT / "bench" / "floors" for f in floors + list(sending.values())})
    binaries = [r["fn"] for r in rows] + floors  # timed for init
    built = binaries + list(sending.values())  # sized
    if not args.no_build:
        build({b: folders[b] for b in built})

    size = {b: (ARM_DIR / b / "bootstrap.zip").stat().st_size for b in built}

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Runtime)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    samples = {b: [] for b in binaries}
    for _ in range(args.runs):
        for b in binaries:  # interleaved, so drift hits function and floor alike
            samples[b].append(init_ms(b, port))
    server.shutdown()
    init = {b: statistics.median(v) for b, v in samples.items()}

    ok = True
    print("| function | arm64 zip | cap | kind | floor | floor zip | zip ratio | AWS SDK crates | init ms | floor init ms | init ratio | missed |")
    print("|---|---:|---:|---|---|---:|---:|---|---:|---:|---:|---|")
    for r in rows:
        f, fl = r["fn"], r["floor"]
        zr, ir = size[f] / size[fl], init[f] / init[fl]
        cap, kind = cap_of(f, r["sdks"])
        missed = [name for name, bad in [
            (f"init > {INIT_RATIO}×", ir > INIT_RATIO),
            (f"zip > {cap / 1e6} MB", size[f] > cap),
        ] if bad]
        ok &= not missed
        print(f"| {f} | {size[f] / 1e6:.2f} MB | {cap / 1e6} MB | {kind} | {fl} | {size[fl] / 1e6:.2f} MB | {zr:.2f} | "
              f"{', '.join(r['sdk_crates'])} | {init[f]:.1f} | {init[fl]:.1f} | {ir:.2f} | {'; '.join(missed) or 'none'} |")
    print(f"\ntargets: init ≤ {INIT_RATIO}× floor; zip ≤ {CAP_DYNAMODB / 1e6} MB (DynamoDB only), "
          f"{CAP_S3_DYNAMODB / 1e6} MB (S3 and DynamoDB), {CAP_REDACTING / 1e6} MB ({', '.join(sorted(REDACTING))}), "
          f"{CAP_SQLITE_REGEX / 1e6} MB ({', '.join(sorted(SQLITE_REGEX))}); {'all met' if ok else 'some missed'}")
    if sending:
        print("\n| floor | zip | the same floor sending one request per client | its zip | ratio |")
        print("|---|---:|---|---:|---:|")
        for fl, fs in sorted(sending.items()):
            print(f"| {fl} | {size[fl] / 1e6:.2f} MB | {fs} | {size[fs] / 1e6:.2f} MB | {size[fs] / size[fl]:.2f} |")
        print("\n| function | arm64 zip | floor that sends | its zip | zip ratio |")
        print("|---|---:|---|---:|---:|")
        for r in rows:
            f, fs = r["fn"], sending.get(r["floor"])
            if fs:
                print(f"| {f} | {size[f] / 1e6:.2f} MB | {fs} | {size[fs] / 1e6:.2f} MB | {size[f] / size[fs]:.2f} |")
    print(json.dumps({"zipBytes": size, "initMsMedian": init}), file=sys.stderr)
    if not ok:
        sys.exit("lambda_size: a function is over its cap or its init is over its ratio (the table says which)")


if __name__ == "__main__":
    main()
