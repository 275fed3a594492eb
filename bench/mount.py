"""Filesystem mounts against each other: what an agent's shell tools cost in a mounted folder.

  .venv/bin/python bench/mount.py                                  # every target, 3 rounds
  .venv/bin/python bench/mount.py --targets disk,rclone,s3fs --smoke   # 1 round, 100 files

Each target is a directory the workloads run in:

  disk    a plain temp directory on the local disk: the floor.
  rclone  `rclone mount` (v1.60, Debian's) of an S3 bucket, with `--vfs-cache-mode writes`.
  s3fs    `s3fs` (Debian's) of another bucket, default options.
  ws      the project's own FUSE mount (`ws mount`) of a local server (`workspace-local`).

Both peers talk to moto (`moto_server`), a Python S3 emulator on this machine: one Python
process, on the same cores as the mount and the workloads, answers every S3 request they make,
and that is what bounds them here. It is not AWS's S3 either way: a lone request on loopback
is quicker than one to AWS across a network (the footer gives moto's median 1 KiB PUT and GET,
measured in each run), but moto serves requests in Python under one GIL, competing with the
mount for the CPU, so any concurrent traffic is slower than AWS's would be. Read the peers'
columns as "over a local S3 emulator", not as what they reach on AWS.

Workloads, in this order, in a fresh folder per round (MOUNT/roundK), each timed with
perf_counter, the median of --rounds reported:

  untar      `tar -xf` of an archive of 1,000 small text files (100-2,000 bytes) in 10 folders
  git status `git status --porcelain -uall` over those 1,000 untracked files (repo made untimed)
  read       every file read (os.walk, open, read)
  grep       `grep -r -c WORD` over the tree
  write100   100 new files of 1 KiB each (open, write, close)

A workload that fails on a target shows "failed: reason" in its cell; nothing is dropped. A
target that cannot be set up (a missing binary, a mount that does not appear) fails every cell
and the script exits 1 after printing the table. Loopback only; every loop and every process
wait is bounded; mounts, servers and temp folders are removed even on failure.
"""

import argparse
import http.client
import io
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["disk", "rclone", "s3fs", "ws"]
WORKLOADS = ["untar", "git status", "read", "grep", "write100"]
LABELS = {
    "untar": "untar {n:,} small files (tar -xf)",
    "git status": "git status --porcelain -uall, {n:,} untracked files",
    "read": "read every file of the tree",
    "grep": "grep -r -c over the tree",
    "write100": "write 100 new files of 1 KiB",
}
GREP_WORD = "runbook"
WORDS = ("agent memory workspace deploy release rollback summary plan tool index search version "
         "snapshot fork merge conflict tenant bucket table stream event queue worker retry timeout "
         "budget latency cache session artifact policy secret token quota").split()
WS_KEY = "bench-key-mount-0123456789"
MOUNT_WAIT_S = 20
STEP_TIMEOUT_S = 900


class Failed(Exception):
    """A target or a workload that did not work, with a short reason for the table."""


def short(text, limit=90):
    """The last non-empty line of `text`, shortened and safe inside a Markdown cell."""
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    line = lines[-1] if lines else "no output"
    line = line.replace("|", "/")
    return line if len(line) <= limit else line[:limit - 1] + "…"


def tail(path):
    try:
        with open(path, errors="replace") as f:
            return short(f.read())
    except OSError:
        return "no log"


def sh(cmd, ok=(0,), **kw):
    """Run `cmd` (bounded); raise Failed with the last line of its stderr on another exit code."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, **kw)
    except subprocess.TimeoutExpired:
        raise Failed(f"{os.path.basename(cmd[0])} timed out after {STEP_TIMEOUT_S} s")
    if p.returncode not in ok:
        raise Failed(f"{os.path.basename(cmd[0])} exit {p.returncode}: {short(p.stderr or p.stdout)}")
    return p


# --- the tree ------------------------------------------------------------------------------

def make_archive(folder, n):
    """A tar of `n` files of 100-2,000 bytes of text under tree/d00..d09/, deterministic, every
    name of [A-Za-z0-9._-] and starting with a letter (the project's path rule). Returns the
    archive's path and the tree's total bytes."""
    rng = random.Random(11)
    path = os.path.join(folder, "tree.tar")
    total = 0
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        def add(name, data=None):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 1_700_000_000, 0, 0, "root", "root"
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        add("tree")
        for d in range(10):
            add(f"tree/d{d:02}")
        for i in range(n):
            size = rng.randint(100, 2000)
            words = []
            while sum(len(w) + 1 for w in words) < size:
                words.append(rng.choice(WORDS))
            data = (" ".join(words) + "\n")[-size:].encode()
            total += len(data)
            add(f"tree/d{i % 10:02}/file{i:04}.txt", data)
    return path, total


# --- processes and mounts ------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f if len(line.split()) > 1)


def stop_process(p, timeout=30):
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(timeout=10)


def fusermount():
    return shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount3"


class Fuse:
    """A FUSE filesystem served by a foreground process; `stop` unmounts and ends it."""

    def __init__(self, name, cmd, mountpoint, log, env=None, unmount=None):
        self.name, self.mountpoint, self.log, self.unmount_cmd = name, mountpoint, log, unmount
        self.p = None
        with open(log, "w") as out:
            self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                      env=env, start_new_session=True)
        deadline = time.monotonic() + MOUNT_WAIT_S
        while not mounted(mountpoint):
            if self.p.poll() is not None:
                raise Failed(f"{name} exited ({self.p.returncode}) before mounting: {tail(log)}")
            if time.monotonic() > deadline:
                raise Failed(f"{name}: no mount at {mountpoint} after {MOUNT_WAIT_S} s: {tail(log)}")
            time.sleep(0.1)

    def stop(self):
        if self.unmount_cmd and mounted(self.mountpoint):
            subprocess.run(self.unmount_cmd, capture_output=True, timeout=60)
        for flags in (["-u"], ["-uz"]):  # lazy unmount as the last resort (a busy mount)
            if not mounted(self.mountpoint):
                break
            subprocess.run([fusermount()] + flags + [self.mountpoint], capture_output=True, timeout=60)
        if self.p is not None:
            try:
                self.p.wait(timeout=60)  # rclone may still be uploading its write-back queue
            except subprocess.TimeoutExpired:
                stop_process(self.p)


class Moto:
    """moto_server on a free loopback port."""

    def __init__(self, log):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        exe = os.path.join(ROOT, ".venv", "bin", "moto_server")
        if not os.path.exists(exe):
            exe = shutil.which("moto_server")
        if not exe:
            raise Failed("no moto_server (.venv/bin/moto_server); pip install 'moto[server]'")
        with open(log, "w") as out:
            self.p = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(self.port)], stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/", timeout=2).read()
                break
            except OSError:
                if self.p.poll() is not None or time.monotonic() > deadline:
                    stop_process(self.p)
                    raise Failed(f"moto_server did not start: {tail(log)}")
                time.sleep(0.2)

    def bucket(self, name):
        # moto accepts unsigned requests: a plain PUT makes the bucket.
        req = urllib.request.Request(f"{self.url}/{name}", method="PUT", data=b"")
        try:
            urllib.request.urlopen(req, timeout=30).read()
        except OSError as e:
            raise Failed(f"creating bucket {name} on moto: {short(str(e))}")
        return name

    def latency(self, rounds=50):
        """Median ms of a 1 KiB PUT and of its GET on one kept-alive connection (unsigned)."""
        bucket = self.bucket("bench-probe")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        put, get = [], []
        try:
            for i in range(rounds):
                t = time.perf_counter()
                conn.request("PUT", f"/{bucket}/probe{i}", body=b"x" * 1024)
                conn.getresponse().read()
                put.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                conn.request("GET", f"/{bucket}/probe{i}")
                conn.getresponse().read()
                get.append((time.perf_counter() - t) * 1000)
        except OSError as e:
            raise Failed(f"probing moto: {short(str(e))}")
        finally:
            conn.close()
        return {"putMs": statistics.median(put), "getMs": statistics.median(get)}

    def stop(self):
        stop_process(self.p)


def need(tool, package):
    """The path of `tool`, installing Debian's `package` first if it is missing (as root)."""
    if shutil.which(tool) is None:
        print(f"installing {package} (apt-get)", file=sys.stderr)
        sh(["apt-get", "install", "-y", "-q", package], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    path = shutil.which(tool)
    if path is None:
        raise Failed(f"no {tool} after apt-get install {package}")
    return path


def version(cmd):
    try:
        return short(subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.splitlines()[0])
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def mount_rclone(work, moto, cleanups, versions):
    exe = need("rclone", "rclone")
    versions["rclone"] = "rclone " + version([exe, "version"]).split()[-1].lstrip("v").removesuffix("-DEV")
    bucket = moto.bucket("bench-rclone")
    mnt, cache = os.path.join(work, "mnt-rclone"), os.path.join(work, "cache-rclone")
    os.makedirs(mnt)
    # Without AWS_CA_BUNDLE: rclone 1.60's S3 SDK refuses to start when it is set ("unsupported
    # transport"), and the endpoint is plain HTTP on loopback anyway.
    env = {**{k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"},
           "RCLONE_CONFIG": os.path.join(work, "rclone.conf"),  # none: the remote is all env vars
           "RCLONE_CONFIG_BENCH_TYPE": "s3", "RCLONE_CONFIG_BENCH_PROVIDER": "Other",
           "RCLONE_CONFIG_BENCH_ENDPOINT": moto.url, "RCLONE_CONFIG_BENCH_REGION": "us-east-1",
           "RCLONE_CONFIG_BENCH_ACCESS_KEY_ID": "test", "RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY": "test",
           "RCLONE_CONFIG_BENCH_ENV_AUTH": "false"}
    # --vfs-cache-mode writes: without a local write cache rclone streams each file straight to
    # S3 and refuses what that cannot do (opening for read and write, seeking while writing,
    # writing to an existing file), which tar and git need. Its writes are then uploaded in
    # the background after close (--vfs-write-back, 5 s), so write times here are local ones.
    fs = Fuse("rclone", [exe, "mount", f"bench:{bucket}", mnt, "--vfs-cache-mode", "writes",
                         "--cache-dir", cache], mnt, os.path.join(work, "rclone.log"), env=env)
    cleanups.append(fs.stop)
    return mnt


def mount_s3fs(work, moto, cleanups, versions):
    exe = need("s3fs", "s3fs")
    versions["s3fs"] = "s3fs " + next((w.lstrip("V") for w in version([exe, "--version"]).split()
                                       if w.startswith("V1") or w.startswith("V2")), "?")
    bucket = moto.bucket("bench-s3fs")
    mnt = os.path.join(work, "mnt-s3fs")
    os.makedirs(mnt)
    passwd = os.path.join(work, "s3fs.passwd")
    fd = os.open(passwd, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("test:test\n")
    fs = Fuse("s3fs", [exe, bucket, mnt, "-f", "-o", f"url={moto.url}", "-o", "use_path_request_style",
                       "-o", f"passwd_file={passwd}", "-o", "endpoint=us-east-1"],
              mnt, os.path.join(work, "s3fs.log"))
    cleanups.append(fs.stop)
    return mnt


def start_server(bin_dir, data_dir, log):
    """workspace-local on a free port (as bench/run.py's Server); returns (process, base URL)."""
    exe = os.path.join(bin_dir, "workspace-local")
    if not os.path.exists(exe):
        raise Failed(f"no {exe}; build it: cargo build -p ws -p workspace-local")
    env = {"PATH": os.environ.get("PATH", ""), "WORKSPACE_ADDR": "127.0.0.1:0", "WORKSPACE_DATA_DIR": data_dir,
           "WORKSPACE_API_KEYS": f"{WS_KEY}=bench/mount", "WORKSPACE_MAX_FILES": "5000", "RUST_LOG": "warn"}
    p = subprocess.Popen([exe], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=open(log, "w"), text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        for line in p.stdout:  # bounded: the server's stdout ends when it exits
            if line.startswith("workspace-local listening on "):
                base = line.split()[-1]
                break
            if time.monotonic() > deadline:
                raise Failed("workspace-local did not start in 60 s")
        else:
            raise Failed(f"workspace-local exited: {tail(log)}")
    except BaseException:
        stop_process(p)
        raise
    # Keep draining stdout so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    return p, base


def mount_ws(work, bin_dir, cleanups, versions):
    ws = os.path.join(bin_dir, "ws")
    if not os.path.exists(ws):
        raise Failed(f"no {ws}; build it: cargo build -p ws -p workspace-local")
    probe = subprocess.run([ws, "mount", "--help"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        first = next((x for x in probe.stderr.splitlines() if x.strip()), "no output")
        raise Failed(f"{os.path.relpath(ws, ROOT)} has no `mount` subcommand yet ({short(first, 60)})")
    versions["ws"] = version([ws, "--version"])
    server, base = start_server(bin_dir, os.path.join(work, "ws-data"), os.path.join(work, "ws-server.log"))
    cleanups.append(lambda: stop_process(server))
    mnt, cache = os.path.join(work, "mnt-ws"), os.path.join(work, "cache-ws")
    os.makedirs(mnt)
    fs = Fuse("ws mount", [ws, "--url", base, "--key", WS_KEY, "mount", mnt, "--foreground", "--cache-dir", cache],
              mnt, os.path.join(work, "ws-mount.log"), unmount=[ws, "unmount", mnt])
    cleanups.append(fs.stop)
    return mnt, base


def freshness(mnt, base, samples=5):
    """Seconds from a PUT through the API (answered) until the mount shows the new bytes, with
    the mount's default --refresh-ms (1 s): the bound docs/mount.md states. Bounded: 30 s each."""
    out = []
    for i in range(samples):
        body = json.dumps({"content": f"fresh {i}"}).encode()
        req = urllib.request.Request(f"{base}/v1/host/workspace/files/fresh/f{i}.txt", method="PUT", data=body,
                                     headers={"Authorization": f"Bearer {WS_KEY}", "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=30).read()
        t = time.perf_counter()
        path = os.path.join(mnt, "fresh", f"f{i}.txt")
        while True:
            try:
                with open(path) as f:
                    if f.read() == f"fresh {i}":
                        break
            except OSError:
                pass
            if time.perf_counter() - t > 30:
                raise Failed(f"fresh/f{i}.txt not in the mount after 30 s")
            time.sleep(0.01)
        out.append(time.perf_counter() - t)
    return out


# --- workloads -----------------------------------------------------------------------------

def git_env(home):
    return {**os.environ, "HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def round_workloads(mnt, k, archive, n, total, home):
    """The workloads of round k in MOUNT/roundK, in order: {workload: seconds or Failed}."""
    here = os.path.join(mnt, f"round{k}")
    tree = os.path.join(here, "tree")
    # The repository lives beside the tree (--git-dir), not in tree/.git: the project's paths
    # may not start with a dot, and every peer gets the same layout.
    git = ["git", "-c", "safe.directory=*", f"--git-dir={os.path.join(here, 'repo')}", f"--work-tree={tree}"]
    out = {}

    def step(name, fn):
        t = time.perf_counter()
        try:
            fn()
            out[name] = time.perf_counter() - t
        except Failed as e:
            out[name] = e
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            out[name] = Failed(short(f"{type(e).__name__}: {e}"))

    try:
        os.makedirs(here)
    except OSError as e:
        return {w: Failed(f"mkdir round{k}: {short(str(e))}") for w in WORKLOADS}

    step("untar", lambda: sh(["tar", "-xf", archive, "-C", here]))
    try:
        sh(git + ["init", "-q", "--template="], env=git_env(home))  # untimed
        status_ready = None
    except Failed as e:
        status_ready = Failed(f"git init: {e}")

    def status():
        if status_ready:
            raise status_ready
        lines = sh(git + ["status", "--porcelain", "-uall"], env=git_env(home)).stdout.splitlines()
        if len(lines) != n:
            raise Failed(f"git status listed {len(lines)} of {n} files")
    step("git status", status)

    def read():
        files = size = 0
        for d, dirs, names in os.walk(tree):
            dirs.sort()
            for name in names:
                with open(os.path.join(d, name), "rb") as f:
                    size += len(f.read())
                files += 1
        if (files, size) != (n, total):
            raise Failed(f"read {files} files, {size} bytes; expected {n}, {total}")
    step("read", read)

    def grep():
        lines = sh(["grep", "-r", "-c", GREP_WORD, tree], ok=(0, 1)).stdout.splitlines()
        if len(lines) != n:
            raise Failed(f"grep counted in {len(lines)} of {n} files")
    step("grep", grep)

    w = os.path.join(here, "w")
    try:
        os.makedirs(w)  # untimed
    except OSError as e:
        out["write100"] = Failed(f"mkdir w: {short(str(e))}")
        return out
    block = (("write " * 200)[:1023] + "\n").encode()

    def write100():
        for i in range(100):
            with open(os.path.join(w, f"file{i:03}.txt"), "wb") as f:
                f.write(block)
    step("write100", write100)
    return out


def measure(mnt, rounds, archive, n, total, home):
    """{workload: {"ms": [...], "median": ms} or {"failed": reason}} over `rounds` rounds."""
    runs = [round_workloads(mnt, k, archive, n, total, home) for k in range(1, rounds + 1)]
    result = {}
    for w in WORKLOADS:
        got = [r.get(w, Failed("not run")) for r in runs]
        bad = [g for g in got if isinstance(g, Failed)]
        if bad:
            result[w] = {"failed": str(bad[0])}
        else:
            ms = [g * 1000 for g in got]
            result[w] = {"ms": ms, "median": statistics.median(ms)}
    return result


# --- the table -----------------------------------------------------------------------------

def fmt_ms(ms):
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


def table(results, targets, n):
    head = ["Workload"]
    for t in targets:
        if t == "disk":
            head.append("disk (ms)")
        else:
            head += [f"{t} ms", f"{t} × disk"]
            if t == "ws":
                head.append("ws × best peer")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in WORKLOADS:
        def median(t):
            return results.get(t, {}).get(w, {}).get("median")
        row = [LABELS[w].format(n=n)]
        floor = median("disk")
        for t in targets:
            cell = results[t][w]
            value = fmt_ms(cell["median"]) if "median" in cell else f"failed: {cell['failed']}"
            if t == "disk":
                row.append(value)
                continue
            row.append(value)
            m = median(t)
            row.append(f"{m / floor:.1f}×" if m is not None and floor else "")
            if t == "ws":
                peers = [median(p) for p in ("rclone", "s3fs") if median(p) is not None]
                row.append(f"{m / min(peers):.2f}×" if m is not None and peers else "")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def fs_type(path):
    """The type of the filesystem holding `path` (the longest mount prefix)."""
    path, best = os.path.realpath(path), ("", "?")
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and (path == parts[1] or path.startswith(parts[1].rstrip("/") + "/")) \
                    and len(parts[1]) > len(best[0]):
                best = (parts[1], parts[2])
    return best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated, of " + ",".join(TARGETS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"), help="ws and workspace-local")
    ap.add_argument("--json", help="write the raw numbers here")
    ap.add_argument("--smoke", action="store_true", help="1 round, 100 files instead of 1,000")
    a = ap.parse_args()
    targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown or not targets:
        ap.error(f"unknown targets {unknown}; choose from {TARGETS}")
    rounds = 1 if a.smoke else max(1, a.rounds)
    n = 100 if a.smoke else 1000
    bin_dir = os.path.abspath(a.bin_dir)
    # A SIGTERM unwinds through the finally blocks below as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    results, versions = {}, {}
    cleanups = []  # run last-in first-out: mounts before the servers under them
    work = tempfile.mkdtemp(prefix="bench-mount-")
    moto = None
    try:
        src, home = os.path.join(work, "src"), os.path.join(work, "home")
        os.makedirs(src)
        os.makedirs(home)
        archive, total = make_archive(src, n)
        for t in targets:
            print(f"{t}: {rounds} round{'s' if rounds > 1 else ''} of {n:,} files", file=sys.stderr)
            mark = len(cleanups)
            try:
                if t == "disk":
                    mnt = os.path.join(work, "disk")
                    os.makedirs(mnt)
                elif t == "ws":
                    mnt, base = mount_ws(work, bin_dir, cleanups, versions)
                else:
                    if moto is None:  # one emulator for both peers, stopped at the very end
                        moto = Moto(os.path.join(work, "moto.log"))
                        versions["motoLatency"] = moto.latency()
                        versions["moto"] = version([sys.executable, "-c", "import moto; print(moto.__version__)"])
                    mnt = (mount_rclone if t == "rclone" else mount_s3fs)(work, moto, cleanups, versions)
                results[t] = measure(mnt, rounds, archive, n, total, home)
                if t == "ws":
                    seen = freshness(mnt, base)
                    versions["wsFreshness"] = {"medianS": statistics.median(seen), "maxS": max(seen)}
            except Failed as e:
                print(f"{t}: FAILED: {e}", file=sys.stderr)
                results[t] = {w: {"failed": str(e)} for w in WORKLOADS}
                results[t]["setupFailed"] = str(e)
            finally:
                # Unmount this target now, so the next one runs alone on the machine.
                while len(cleanups) > mark:
                    try:
                        cleanups.pop()()
                    except Exception as e:  # keep cleaning up
                        print(f"cleanup: {e}", file=sys.stderr)
    finally:
        while cleanups:
            try:
                cleanups.pop()()
            except Exception as e:
                print(f"cleanup: {e}", file=sys.stderr)
        if moto is not None:
            moto.stop()
        left = [line.split()[1] for line in open("/proc/self/mounts") if work in line]
        if left:
            print(f"mounts left behind (not removing {work}): {left}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    setup_failed = [t for t in targets if "setupFailed" in results[t]]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
          f"disk: {fs_type(tempfile.gettempdir())} ({tempfile.gettempdir()}); {n:,} files of 100-2,000 bytes, "
          f"median of {rounds} round{'s' if rounds > 1 else ''}\n")
    print(table(results, targets, n))
    peers = [t for t in targets if t in ("rclone", "s3fs")]
    if peers:
        lat = versions.get("motoLatency")
        lat = f"; moto's own median 1 KiB PUT {lat['putMs']:.1f} ms, GET {lat['getMs']:.1f} ms" if lat else ""
        print(f"\npeers: {', '.join(versions.get(t, t) for t in peers)} over moto {versions.get('moto', '?')}, "
              f"a Python S3 emulator on this machine (one process, sharing the cores with the mount): it bounds "
              f"the peers{lat} on one connection. rclone (--vfs-cache-mode writes) uploads after close, s3fs on close.")
    fresh = versions.get("wsFreshness")
    if fresh:
        print(f"\nws freshness: a PUT through the API shows in the mount after {fresh['medianS']:.2f} s median, "
              f"{fresh['maxS']:.2f} s at most of 5 (--refresh-ms 1000; the stated bound is 2 s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"files": n, "bytes": total, "rounds": rounds, "versions": versions, "results": results},
                      f, indent=2)
    if setup_failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
