"""The benchmark suite: one command, one table, every ratio measured in the same run.

  .venv/bin/python bench/run.py            # the full run (builds the `local` profile)
  .venv/bin/python bench/run.py --smoke    # seconds, debug build: keeps the suite working

It measures the local server over HTTP (PUT, GET, a page of 100, with 1 and 16 clients),
listing scale (a page of 100 from 10,000 files against one from 100), and the MCP tools
over stdio and HTTP against the official MCP filesystem server (pinned in bench/peer,
installed there by this script) on the same machine, and the web console's first load in
Chromium (bench/console.py), then prints a Markdown table. Snapshots and forks are points
in history, so their time should not grow with the workspace: snapshot and fork creation in
workspaces of 10 / 1,000 / 100,000 files (goal: p50 within 1.5× the 10-file one and at most
5 ms), and merges of 1 / 10 / 100 changed files into workspaces of 1,000 and 100,000 files
(goal: the 100,000-file merge within 1.5× the 1,000-file one; 1 changed file at most 10 ms).
AWS calls per operation are not timed here: `shared/store-aws/tests/call_budget.rs` and
`fork_calls.rs` assert them on the emulator in every test run; with an emulator
configured (WORKSPACE_TEST_MOTO_URL) the full run adds the snapshot, fork and merge call
counts against workspace size (10 / 1,000 / 10,000 files) as rows. Search by meaning
(issue 48) on the search rows' corpus, with the model from WORKSPACE_MODEL_DIR (its rows
say skipped without it): semantic and hybrid p50/p99 next to keyword's (goal p50 ≤ 25 ms),
the rate of embedding the corpus, 100 changed files caught up (goal ≤ 2 s), PUT with the
model loaded against without (goal ≤ 1.3×), RSS at rest (goal ≤ 300 MB) and index size per
content byte, each with and without the model. Loopback only; every loop is bounded.

  WORKSPACE_MODEL_DIR=D .venv/bin/python bench/run.py --smoke --only semantic   # that section alone
  WORKSPACE_MODEL_DIR=D .venv/bin/python bench/run.py --only semantic --profile debug
      # the 10,000-file corpus on a debug build: its first search by meaning embeds every
      # passage first (about 47,000, mostly cut at the model's 256 tokens: the corpus's
      # made-up words are several tokens each; 6 to 9 a second in a debug build on 2 cores,
      # so 1.5 to 2 hours)
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = {
    "main": "bench-key-main-0123456789",
    "big": "bench-key-big-0123456789",
    "small": "bench-key-small-0123456789",
    "forks-0": "bench-key-forks-0-0123456789",
    "forks-1": "bench-key-forks-1-0123456789",
    "forks-2": "bench-key-forks-2-0123456789",
}


def run(cmd, cwd=ROOT):
    return subprocess.run(cmd, check=True, cwd=cwd)


def build(profile):
    args = ["cargo", "build", "--locked", "-p", "workspace-local", "-p", "bench-load"]
    if profile != "debug":
        args += ["--profile", profile]
    run(args)
    return os.path.join(ROOT, "target", profile)


def peer():
    d = os.path.join(ROOT, "bench", "peer")
    if not os.path.isdir(os.path.join(d, "node_modules")):
        run(["npm", "ci", "--no-audit", "--no-fund"], cwd=d)
    return os.path.join(d, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")


class Server:
    def __init__(self, bin_dir, data_dir, extra=None):
        env = {
            "PATH": os.environ.get("PATH", ""),
            "WORKSPACE_ADDR": "127.0.0.1:0",
            "WORKSPACE_DATA_DIR": data_dir,
            "WORKSPACE_API_KEYS": ",".join(f"{k}=bench/{w}" for w, k in KEYS.items()),
            "WORKSPACE_MAX_FILES": "20000",
            "RUST_LOG": "warn",
            **(extra or {}),
        }
        self.p = subprocess.Popen([os.path.join(bin_dir, "workspace-local")], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.time() + 60
        for line in self.p.stdout:
            if line.startswith("workspace-local listening on "):
                self.base = line.split()[-1]
                break
            if time.time() > deadline:
                raise SystemExit("the server did not start")
        else:
            raise SystemExit("the server exited")

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=30)


def load(bin_dir, base, key, op, clients, requests, paths=500, prefix="", text=False):
    out = subprocess.run([os.path.join(bin_dir, "bench-load"), "--base", base, "--key", key, "--op", op,
                          "--clients", str(clients), "--requests", str(requests), "--paths", str(paths),
                          "--prefix", prefix] + (["--text"] if text else []),
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    if r["errors"]:
        raise SystemExit(f"{op} x{clients}: {r['errors']} errors")
    return r


def call(base, key, method, path, body=None, workspace=None, accept=None, timeout=120):
    """One request to the server; the decoded JSON answer (None for an empty one)."""
    import urllib.request
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    if accept:
        req.add_header("Accept", accept)
    if workspace:
        req.add_header("X-Workspace-Id", workspace)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        data = r.read()
    return json.loads(data) if data else None


def p50_max(ms):
    ms = sorted(ms)
    return ms[len(ms) // 2], ms[-1]


def seed(base, key, paths, per, workspace=None):
    """Writes each of `paths` (a short text each) through the atomic multi-path commit route,
    `per` (discovery's maxCommitOperations) puts per request and 8 requests at once: 100,000
    files in 5,000 requests instead of 100,000 PUTs."""
    import concurrent.futures
    batches = [paths[i:i + per] for i in range(0, len(paths), per)]

    def commit(batch):
        call(base, key, "POST", "/v1/host/workspace/commits",
             {"operations": [{"op": "put", "path": p, "content": f"{p} {workspace or 'seed'}\n"} for p in batch]},
             workspace=workspace)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(commit, batches))


def fork_costs(bin_dir, sizes, merge_sizes, changed, rounds, settle_s):
    """Snapshot, fork and merge cost against workspace size, in ms (median and worst of
    `rounds`), on a server of their own (so 100,000 files neither slow the other rows nor
    stay on disk): taking a snapshot (POST /snapshots, then DELETE it untimed) and forking
    (POST /forks, then DELETE it untimed) in a workspace of each of `sizes` files, then
    merging `c` changed files (each a new version of an inherited file, written in a fresh
    fork) back into the workspaces of `merge_sizes` files, discarding the fork, for each `c`
    in `changed`. Timing starts `settle_s` after the seeding (see below)."""
    snapped, created, merged = {}, {}, {}
    keys = {size: KEYS[f"forks-{n}"] for n, size in enumerate(sizes)}
    with tempfile.TemporaryDirectory() as data:
        # The quota must hold the largest workspace (the default is 1,000 files).
        s = Server(bin_dir, data, extra={"WORKSPACE_MAX_FILES": str(max(sizes))})
        try:
            base = s.base
            per = call(base, keys[sizes[0]], "GET", "/.well-known/openwop")["workspace"]["maxCommitOperations"]
            for size, key in keys.items():
                t = time.perf_counter()
                seed(base, key, [f"bench/{i:06}.md" for i in range(size)], per)
                # A search first brings the index up to date: indexing the seed is not timed.
                call(base, key, "GET", "/v1/host/workspace/search?q=seed&limit=1")
                print(f"fork bench: {size:,} files seeded and indexed in {time.perf_counter() - t:.1f} s",
                      file=sys.stderr)
            # A fork's diff and merge read the parent's change log from 60 s before the fork's
            # base (COMMIT_SLACK_MS, shared/core/src/service/forks.rs): right after seeding,
            # every seeded path is in that window and each merge would read them all. Waiting
            # it out times them as in a workspace that was not just written in bulk (and lets
            # the queued index refreshes drain).
            time.sleep(settle_s)
            for size, key in keys.items():
                ms = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    snap = call(base, key, "POST", "/v1/host/workspace/snapshots", {})["snapshotId"]
                    ms.append((time.perf_counter() - t) * 1000)
                    call(base, key, "DELETE", f"/v1/host/workspace/snapshots/{snap}")
                snapped[size] = p50_max(ms)
                ms = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    fork = call(base, key, "POST", "/v1/host/workspace/forks", {})["workspaceId"]
                    ms.append((time.perf_counter() - t) * 1000)
                    call(base, key, "DELETE", f"/v1/host/workspace/forks/{fork}")
                created[size] = p50_max(ms)
            for size in merge_sizes:
                for c in changed:
                    ms = []
                    for _ in range(rounds):
                        fork = call(base, keys[size], "POST", "/v1/host/workspace/forks", {})["workspaceId"]
                        seed(base, keys[size], [f"bench/{i:06}.md" for i in range(c)], per, workspace=fork)
                        t = time.perf_counter()
                        out = call(base, keys[size], "POST", f"/v1/host/workspace/forks/{fork}/merge",
                                   {"discardFork": True})
                        ms.append((time.perf_counter() - t) * 1000)
                        if len(out["applied"]) != c:
                            raise SystemExit(f"merge applied {len(out['applied'])} of {c} changes")
                    merged[(size, c)] = p50_max(ms)
        finally:
            s.stop()
    return snapped, created, merged


def fork_aws_calls():
    """AWS calls of a snapshot and a fork of a workspace of 10 / 1,000 / 10,000 files, and
    of merging 1, 10 and 100 changed files into the 1,000- and 10,000-file ones, counted on
    the moto emulator by `shared/store-aws/tests/fork_calls.rs`
    (bench_fork_and_merge_calls_by_workspace_size); None without an emulator
    (WORKSPACE_TEST_MOTO_URL)."""
    if not os.environ.get("WORKSPACE_TEST_MOTO_URL"):
        return None
    out = subprocess.run(["cargo", "test", "--locked", "-p", "workspace-store-aws", "--all-features", "--test",
                          "fork_calls", "--", "--ignored", "--nocapture",
                          "bench_fork_and_merge_calls_by_workspace_size"],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout
    for line in out.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH "):])
    raise SystemExit("fork_calls printed no BENCH line")


WORDS = ("agent memory workspace deploy release rollback runbook summary plan tool index search "
         "version snapshot fork merge conflict tenant bucket table stream event queue worker "
         "retry timeout budget latency cache session artifact policy secret token quota").split()


def corpus(n, seed=7):
    """`n` files of about 2 KB each, a third each prose, code and Markdown, made from a
    vocabulary of common words and generated rare ones (so queries have a spread of
    frequencies). Deterministic."""
    import random
    rng = random.Random(seed)
    rare = [f"{rng.choice('bcdfgklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lmnrst')}"
            f"{rng.choice('aeiou')}{rng.choice('bdgkptx')}{i}" for i in range(4000)]
    vocab = WORDS * 20 + rare

    def sentence():
        return " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 14))).capitalize() + "."
    files = {}
    for i in range(n):
        kind = i % 3
        lines = []
        while sum(len(x) + 1 for x in lines) < 2000:
            if kind == 0:
                lines.append(" ".join(sentence() for _ in range(3)))
            elif kind == 1:
                a, b = rng.choice(vocab), rng.choice(vocab)
                lines.append(f"    let {a}_{i} = {b}(&ctx, {rng.randint(0, 999)})?; // {sentence()}")
            else:
                lines.append(rng.choice(["## ", "- ", "1. ", "> "]) + sentence())
        ext = ["txt", "rs", "md"][kind]
        files[f"kb/{i // 100:03}/{i}.{ext}"] = "\n".join(lines) + "\n"
    return files, rare


def quantile_ms(times):
    times = sorted(times)
    return times[len(times) // 2] * 1000, times[min(len(times) - 1, int(len(times) * 0.99))] * 1000


def fsync_floor(folder, n):
    """The durability floor on this disk: 1 KiB appended to a file, then fdatasync, p50/p99
    over n rounds. No durable write can cost less; the peer skips it."""
    times = []
    fd = os.open(os.path.join(folder, "fsync-floor"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for _ in range(n):
            t = time.perf_counter()
            os.write(fd, b"x" * 1024)
            os.fdatasync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
    return quantile_ms(times)


def search_costs(bin_dir, smoke):
    """Search over a generated workspace: keyword and exact p50/p99 against the MCP grep tool
    and ripgrep over the same files on disk (the floor); PUT with and without the index;
    the index's size against the content's."""
    import concurrent.futures
    import random
    import shutil
    import urllib.parse
    n = 300 if smoke else 10000
    queries = 10 if smoke else 100
    greps = 2 if smoke else 5
    files, rare = corpus(n)
    rng = random.Random(3)
    out = {"files": n, "bytes": sum(len(t.encode()) for t in files.values())}
    rg = shutil.which("rg", path=os.path.join(ROOT, ".venv", "bin")) or shutil.which("rg")
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as disk, \
            tempfile.TemporaryDirectory() as plain:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(disk, path)), exist_ok=True)
            with open(os.path.join(disk, path), "w") as f:
                f.write(text)
        s = Server(bin_dir, data)
        try:
            key = KEYS["main"]
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda kv: call(s.base, key, "PUT", f"/v1/host/workspace/files/{kv[0]}",
                                              {"content": kv[1]}), files.items()))

            def timed_search(params):
                t = time.perf_counter()
                call(s.base, key, "GET", "/v1/host/workspace/search?" + urllib.parse.urlencode(params))
                return time.perf_counter() - t
            keyword = [timed_search({"q": f"{rng.choice(WORDS)} {rng.choice(rare)}"}) for _ in range(queries)]
            texts = list(files.values())
            needles = []
            for _ in range(queries):
                t = rng.choice(texts)
                i = rng.randrange(0, len(t) - 16)
                needles.append(t[i:i + 12])
            exact = [timed_search({"q": q, "mode": "exact"}) for q in needles]
            out["keyword"], out["exact"] = quantile_ms(keyword), quantile_ms(exact)

            def grep(pattern):
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "grep", "arguments": {"pattern": pattern}}}
                t = time.perf_counter()
                call(s.base, key, "POST", "/mcp", body, accept="application/json, text/event-stream")
                return time.perf_counter() - t
            import re
            out["grep"] = quantile_ms([grep(re.escape(q)) for q in needles[:greps]])
            if rg:
                def ripgrep(q):
                    t = time.perf_counter()
                    subprocess.run([rg, "-F", "-c", q, disk], capture_output=True)
                    return time.perf_counter() - t
                out["rg"] = quantile_ms([ripgrep(q) for q in needles])
            out["index_bytes"] = sum(os.path.getsize(os.path.join(d, f))
                                     for d, _, fs in os.walk(os.path.join(data, "search")) for f in fs)
            put_n = 100 if smoke else 2000
            out["put_indexed"] = load(bin_dir, s.base, key, "put", 1, put_n, paths=500, prefix="bench/", text=True)
        finally:
            s.stop()
        s = Server(bin_dir, plain, extra={"WORKSPACE_SEARCH": "off"})
        try:
            out["put_plain"] = load(bin_dir, s.base, KEYS["main"], "put", 1, put_n, paths=500, prefix="bench/", text=True)
        finally:
            s.stop()
    return out


NO_MODEL = "skipped: no model (WORKSPACE_MODEL_DIR unset)"


def semantic_costs(bin_dir, smoke, files_n=None):
    """Search by meaning (issue 48) on the search rows' corpus, or None without a model
    (WORKSPACE_MODEL_DIR unset). Two servers, one after the other, on one data dir: the
    first, without the model, takes the corpus and indexes it by keyword (the "off" side of
    RSS, index size and PUT); the second loads the model, and its first search by meaning
    embeds the whole corpus (an index made while the model was off is rebuilt), timed on
    its own as the embedding rate, with no writes racing it. Then, on the second: keyword,
    semantic and hybrid p50/p99 on the same queries, RSS at rest, index size, 100 changed
    files caught up, and the PUT workload of the first server in a fresh workspace."""
    model = os.environ.get("WORKSPACE_MODEL_DIR")
    if not model:
        return None
    import concurrent.futures
    import random
    import shutil
    import sqlite3
    import urllib.parse
    # The smoke run (in every test run) embeds a few files only: a passage costs about 0.1 s
    # of CPU in the debug build.
    n = files_n or (40 if smoke else 10000)
    queries = 10 if smoke else 100
    put_n = 100 if smoke else 2000
    files, _ = corpus(n)
    rng = random.Random(11)
    key = KEYS["main"]
    # Questions an agent might ask, about ten words (the query's embedding is part of each
    # search's time, and grows with its length).
    forms = ["how do we {} the {} after a {}", "notes on the {} {} and its {}", "what is our {} for a {} {}",
             "the plan to {} a {} when the {} fails", "why did the {} {} miss its {}"]
    qs = [rng.choice(forms).format(*(rng.choice(WORDS) for _ in range(3))) for _ in range(queries)]

    def prose():
        text = ""
        while len(text) < 1024:
            text += " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + ". "
        return text[:1024]

    def search(s, params, timeout=120):
        t = time.perf_counter()
        r = call(s.base, key, "GET", "/v1/host/workspace/search?" + urllib.parse.urlencode(params), timeout=timeout)
        if r["index"]["mode"] != params.get("mode", "keyword"):
            raise SystemExit(f"asked for mode={params.get('mode')}, answered by {r['index']['mode']}")
        return time.perf_counter() - t, r

    def rss(s):
        # At rest: a few seconds after the last answer, so nothing is in flight. VmHWM is the
        # peak since the server started (for the model's server: while it embedded).
        time.sleep(3)
        with open(f"/proc/{s.p.pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        return int(status["VmRSS"].split()[0]) * 1024, int(status["VmHWM"].split()[0]) * 1024

    def index_file(data, name):
        # The workspace's index as one file: a copy of it and its write-ahead log, folded
        # together (the server may not have copied its log into the file yet). Also the
        # passages it stores, the bytes of their table and its index (SQLite's dbstat),
        # and its free pages (an index written by many small catch-ups leaves some).
        with tempfile.TemporaryDirectory() as tmp:
            for suffix in ["", "-wal"]:
                if os.path.exists(os.path.join(data, "search", name + suffix)):
                    shutil.copy(os.path.join(data, "search", name + suffix), os.path.join(tmp, "index" + suffix))
            db = sqlite3.connect(os.path.join(tmp, "index"))
            try:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                passages = db.execute("SELECT count(*) FROM passages").fetchone()[0]
                passage_bytes = db.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat "
                                           "WHERE name IN ('passages', 'passages_of_file')").fetchone()[0]
                free = db.execute("PRAGMA freelist_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
            finally:
                db.close()
            return {"bytes": os.path.getsize(os.path.join(tmp, "index")), "passages": passages,
                    "passage_bytes": passage_bytes, "free_bytes": free}

    out = {"files": len(files), "bytes": sum(len(t.encode()) for t in files.values()), "queries": queries}
    with tempfile.TemporaryDirectory() as data:
        # The server's environment is made, not inherited: without WORKSPACE_MODEL_DIR it
        # looks for the model in the new data dir, finds none, and indexes keywords only.
        s = Server(bin_dir, data)
        try:
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda kv: call(s.base, key, "PUT", f"/v1/host/workspace/files/{kv[0]}",
                                              {"content": kv[1]}), files.items()))
            search(s, {"q": "plan"}, timeout=3600)
            # The only index so far: the corpus workspace's.
            name = next(f for f in os.listdir(os.path.join(data, "search")) if f.endswith(".sqlite"))
            out["keyword_off"] = quantile_ms([search(s, {"q": q})[0] for q in qs])
            out["rss_off"] = rss(s)
            out["index_off"] = index_file(data, name)
            out["put_off"] = load(bin_dir, s.base, KEYS["forks-1"], "put", 1, put_n, paths=500, prefix="bench/", text=True)
        finally:
            s.stop()
        s = Server(bin_dir, data, extra={"WORKSPACE_MODEL_DIR": model})
        try:
            semantic = call(s.base, key, "GET", "/.well-known/openwop")["search"]["semantic"]
            if not semantic["supported"]:
                raise SystemExit(f"WORKSPACE_MODEL_DIR={model}: {semantic.get('reason')}")
            # Embeds every passage of the corpus before it answers: hours in a debug build
            # on 2 cores for 10,000 files, so no socket timeout short of that.
            out["embed_s"] = search(s, {"q": qs[0], "mode": "semantic"}, timeout=6 * 3600)[0]
            out["index_on"] = index_file(data, name)
            # Round-robin over the modes, so a slower stretch of the machine hits each alike.
            times = {m: [] for m in ["keyword", "semantic", "hybrid"]}
            hits = 0
            for q in qs:
                for m in times:
                    secs, r = search(s, {"q": q, "mode": m})
                    times[m].append(secs)
                    hits += m == "semantic" and len(r["hits"]) > 0
            if not hits:
                raise SystemExit("no search by meaning found anything")
            for m, t in times.items():
                out[m] = quantile_ms(t)
            out["rss_on"] = rss(s)
            # 100 files (spread over the corpus) overwritten with 1 KiB of new prose, one
            # PUT after another, then the next search by meaning, which applies whatever of
            # them the server's background refresher (started after each answer; it cannot
            # be switched off) has not applied yet. Timed from the first PUT's start and
            # from the last PUT's answer to the search's answer.
            changed = sorted(files)[::max(1, len(files) // 100)][:100]
            texts = [prose() for _ in changed]
            t0 = time.perf_counter()
            for path, text in zip(changed, texts):
                call(s.base, key, "PUT", f"/v1/host/workspace/files/{path}", {"content": text})
            t1 = time.perf_counter()
            r = search(s, {"q": qs[0], "mode": "semantic"}, timeout=3600)[1]
            t2 = time.perf_counter()
            if r["index"]["consistency"] != "fresh":
                raise SystemExit(f"the search after 100 writes answered {r['index']}")
            # How many passages that was (the rate below is theirs: the corpus's passages are
            # longer, its made-up words several tokens each, so its rate is lower).
            with tempfile.TemporaryDirectory() as tmp:
                for suffix in ["", "-wal"]:
                    src = os.path.join(data, "search", name + suffix)
                    if os.path.exists(src):
                        shutil.copy(src, os.path.join(tmp, "index" + suffix))
                db = sqlite3.connect(os.path.join(tmp, "index"))
                try:
                    marks = ",".join("?" * len(changed))
                    changed_passages = db.execute(
                        f"SELECT count(*) FROM passages JOIN files ON files.id = passages.file_id "
                        f"WHERE files.path IN ({marks})", changed).fetchone()[0]
                finally:
                    db.close()
            out["catch_up"] = {"changed": len(changed), "puts_s": t1 - t0, "total_s": t2 - t0, "after_s": t2 - t1,
                               "passages": changed_passages}
            # Last: the refresher embeds behind these PUTs (the cost measured), and its
            # backlog is left when the server stops.
            out["put_on"] = load(bin_dir, s.base, KEYS["forks-2"], "put", 1, put_n, paths=500, prefix="bench/", text=True)
        finally:
            s.stop()
    return out


def semantic_rows(sc, cores):
    """The table's rows for `semantic_costs`' answer (each says skipped without a model)."""
    whats = ["embedding the corpus (the first search by meaning)", "search semantic / keyword",
             "search hybrid / keyword", "catch up 100 changed files", "HTTP PUT 1 KiB of prose, semantic indexing on / off",
             "server RSS at rest, model loaded / not", "index size / content size, with passages / without",
             "the passages alone / content size"]
    if sc is None:
        return [f"| {w} | | | | {NO_MODEL} |" for w in whats]
    sf = f"{sc['files']:,} files, {sc['bytes'] / 1e6:.1f} MB"
    kw = sc["keyword"]
    ion, ioff = sc["index_on"], sc["index_off"]
    passages = ion["passages"]
    rows = [f"| embedding the corpus ({sf}): the first search by meaning after the server restarts with the model "
            f"rebuilds the keyword-only index with passages | | | {passages / sc['embed_s']:,.1f} passages/s | "
            f"{sc['embed_s']:,.0f} s, {passages:,} passages |",
            f"| search keyword, {sf}, same {sc['queries']} queries as below: model loaded / not | "
            f"{kw[0]:.2f} / {sc['keyword_off'][0]:.2f} | {kw[1]:.2f} / {sc['keyword_off'][1]:.2f} | | |"]
    for m in ["semantic", "hybrid"]:
        o = sc[m]
        rows.append(f"| search {m} (with the query's embedding), {sf} / keyword, same queries | {o[0]:.2f} / {kw[0]:.2f} | "
                    f"{o[1]:.2f} / {kw[1]:.2f} | | {o[0] / kw[0]:.1f}× keyword; goal p50 ≤ 25 ms |")
    cu = sc["catch_up"]
    rows.append(f"| catch up {cu['changed']} changed files (each overwritten with 1 KiB of prose, one PUT after another, "
                f"then a semantic search): first PUT's start → search's answer / last PUT's answer → search's answer "
                f"(one run; the background refresher embeds during the PUTs and cannot be switched off) | "
                f"{cu['total_s'] * 1000:,.0f} / {cu['after_s'] * 1000:,.0f} | | "
                f"{cu['passages'] / cu['total_s']:,.1f} passages/s | the {cu['changed']} PUTs alone: "
                f"{cu['puts_s'] * 1000:,.0f} ms; {cu['passages']} passages embedded; goal ≤ 2 s on 2 cores ({cores} here) |")
    on, off = sc["put_on"], sc["put_off"]
    rows.append(f"| HTTP PUT 1 KiB of prose, 1 client, into a new workspace beside the corpus: semantic indexing on / off "
                f"(model loaded / not; keywords indexed in both) | {on['p50Ms']:.2f} / {off['p50Ms']:.2f} | "
                f"{on['p99Ms']:.2f} / {off['p99Ms']:.2f} | | {on['p50Ms'] / off['p50Ms']:.2f}× p50 (goal ≤ 1.3×) |")
    (ron, hon), (roff, hoff) = sc["rss_on"], sc["rss_off"]
    rows.append(f"| server RSS at rest (VmRSS 3 s after the searches), model loaded / not; peak VmHWM in the ratio column | "
                f"{ron / 1e6:.0f} MB / {roff / 1e6:.0f} MB | | | peak {hon / 1e6:.0f} MB / {hoff / 1e6:.0f} MB; "
                f"goal at rest with the model ≤ 300 MB |")
    rows.append(f"| index size / content size (the corpus workspace's SQLite file, its log folded in), with passages / "
                f"without (free pages in the ratio column) | {ion['bytes'] / 1e6:.1f} MB / {ioff['bytes'] / 1e6:.1f} MB of "
                f"{sc['bytes'] / 1e6:.1f} MB | | | {ion['bytes'] / sc['bytes']:.2f}× / {ioff['bytes'] / sc['bytes']:.2f}× "
                f"(free {ion['free_bytes'] / 1e6:.1f} MB / {ioff['free_bytes'] / 1e6:.1f} MB) |")
    rows.append(f"| the passages alone ({passages:,}: their table and its index) / content size | "
                f"{ion['passage_bytes'] / 1e6:.2f} MB of {sc['bytes'] / 1e6:.1f} MB | | | "
                f"{ion['passage_bytes'] / sc['bytes']:.2f}×, {ion['passage_bytes'] / max(passages, 1):.0f} B a passage |")
    return rows


def rounds_note(a):
    return "2 rounds" if a.smoke else "7 rounds"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="tiny counts and a debug build")
    ap.add_argument("--only", choices=["semantic"], help="only this section's rows (search by meaning)")
    ap.add_argument("--profile", help="the cargo profile to build and measure (default: debug with --smoke, else local)")
    ap.add_argument("--semantic-files", type=int, help="files of the search-by-meaning corpus (default: 40 with --smoke, else 10,000)")
    a = ap.parse_args()
    n = 40 if a.smoke else 2000
    profile = a.profile or ("debug" if a.smoke else "local")
    bin_dir = build(profile)
    if a.only == "semantic":
        semantic = semantic_costs(bin_dir, a.smoke, a.semantic_files)
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
              f"{platform.release()}; build: {profile} profile{' (smoke)' if a.smoke else ''}\n")
        print("| What | p50 ms | p99 ms | per second | ratio |")
        print("|---|---|---|---|---|")
        print("\n".join(semantic_rows(semantic, os.cpu_count())))
        return
    peer_js = peer()
    rows = []
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as peer_dir:
        s = Server(bin_dir, data)
        try:
            base, key = s.base, KEYS["main"]
            http = {}
            for op in ["put", "get", "list"]:
                for clients in [1, 16]:
                    http[(op, clients)] = load(bin_dir, base, key, op, clients, n, prefix="bench/")
            # 20 paths rewritten n times: most of these writes prune a version past the 20
            # each path keeps (maxVersions), which the same commit does.
            rewrites = load(bin_dir, base, key, "put", 1, n, paths=20, prefix="bench/")
            big_files = 200 if a.smoke else 10000
            load(bin_dir, base, KEYS["big"], "put", 16, big_files, paths=big_files)
            load(bin_dir, base, KEYS["small"], "put", 16, 100, paths=100)
            pages = 20 if a.smoke else 500
            big = load(bin_dir, base, KEYS["big"], "list", 1, pages, prefix="bench/")
            small = load(bin_dir, base, KEYS["small"], "list", 1, pages, prefix="bench/")
            mcp = json.loads(subprocess.run(
                [sys.executable, os.path.join(ROOT, "bench", "mcp_peer.py"),
                 "--ours-bin", os.path.join(bin_dir, "workspace-local"), "--data-dir", data + "-mcp",
                 "--peer-js", peer_js, "--peer-dir", peer_dir, "--base", base, "--key", key,
                 "--n", str(20 if a.smoke else 500)],
                check=True, capture_output=True, text=True).stdout)
            fsync = fsync_floor(data, 50 if a.smoke else 1000)
            console = json.loads(subprocess.run(
                [sys.executable, os.path.join(ROOT, "bench", "console.py"), "--base", base,
                 "--key", KEYS["small"], "--rounds", str(3 if a.smoke else 15)],
                check=True, capture_output=True, text=True).stdout)
        finally:
            s.stop()
    # Snapshot, fork and merge cost against workspace size (merges into the two largest).
    fork_sizes = [5, 20] if a.smoke else [10, 1000, 100000]
    merge_sizes = fork_sizes[-2:]
    fork_changed = [1, 5] if a.smoke else [1, 10, 100]
    forks = fork_costs(bin_dir, fork_sizes, merge_sizes, fork_changed, 2 if a.smoke else 7, 0 if a.smoke else 62)
    search = search_costs(bin_dir, a.smoke)
    semantic = semantic_costs(bin_dir, a.smoke, a.semantic_files)
    aws_forks = None if a.smoke else fork_aws_calls()

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
          f"{platform.release()}; build: {profile} profile{' (smoke)' if a.smoke else ''}; {n} requests per HTTP row\n")
    print("| What | p50 ms | p99 ms | per second | ratio |")
    print("|---|---|---|---|---|")
    for (op, clients), r in http.items():
        what = {"put": "HTTP PUT 1 KiB", "get": "HTTP GET 1 KiB", "list": "HTTP list, page of 100"}[op]
        print(f"| {what}, {clients} client{'s' if clients > 1 else ''} | {r['p50Ms']:.2f} | {r['p99Ms']:.2f} | {r['perSecond']:,.0f} | |")
    print(f"| HTTP PUT 1 KiB, 1 client, 20 paths each rewritten {n // 20:,} times (past the 20 versions kept) | "
          f"{rewrites['p50Ms']:.2f} | {rewrites['p99Ms']:.2f} | {rewrites['perSecond']:,.0f} | |")
    print(f"| page of 100 from {big_files:,} files / from 100 | {big['p50Ms']:.2f} / {small['p50Ms']:.2f} | "
          f"{big['p99Ms']:.2f} / {small['p99Ms']:.2f} | | {big['p50Ms'] / small['p50Ms']:.2f}× (p50) |")
    snapped, created, merged = forks
    for what, costs, route in [("snapshot", snapped, "POST /snapshots"), ("fork", created, "POST /forks")]:
        first = costs[fork_sizes[0]][0]
        for size in fork_sizes:
            p50, worst = costs[size]
            ratio = (f"{p50 / first:.2f}× the {fork_sizes[0]:,}-file {what} (goal ≤ 1.5×, p50 ≤ 5 ms)"
                     if size != fork_sizes[0] else "")
            print(f"| {what} a workspace of {size:,} files ({route}; worst of {rounds_note(a)} in the p99 column) | "
                  f"{p50:.2f} | {worst:.2f} | | {ratio} |")
    fewer, more = merge_sizes
    for c in fork_changed:
        for size in merge_sizes:
            p50, worst = merged[(size, c)]
            ratio = f"{p50 / merged[(fewer, c)][0]:.2f}× the {fewer:,}-file merge (goal ≤ 1.5×)" if size == more else ""
            if c == 1:
                ratio = "; ".join(filter(None, [ratio, "goal p50 ≤ 10 ms"]))
            print(f"| merge {c:,} changed file{'s' if c > 1 else ''} into a workspace of {size:,} files "
                  f"(and discard the fork; worst of {rounds_note(a)} in the p99 column) | {p50:.2f} | {worst:.2f} | | {ratio} |")
    if aws_forks:
        for size in sorted(aws_forks["snapshot"], key=int):
            print(f"| AWS calls: snapshot / fork of a workspace of {int(size):,} files (moto) | | | | "
                  f"{aws_forks['snapshot'][size]:,} / {aws_forks['fork'][size]:,} calls, no S3 |")
        for c in map(str, fork_changed):
            sizes = sorted(aws_forks["merge"], key=int)
            calls = [aws_forks["merge"][n][c] for n in sizes]
            print(f"| AWS calls: merge {c} changed file{'s' if int(c) > 1 else ''} into a workspace of "
                  f"{' / '.join(f'{int(n):,}' for n in sizes)} files, discarding the fork (moto) | | | | "
                  f"{' / '.join(str(x['calls']) for x in calls)} calls ({' / '.join(str(x['s3']) for x in calls)} S3) |")
    print(f"| 1 KiB appended and fdatasync'd (the durability floor on this disk) | {fsync[0]:.2f} | {fsync[1]:.2f} | | |")
    pp = mcp["peer_stdio"]["ping"]
    for mode in ["stdio", "http"]:
        o = mcp[f"ours_{mode}"]["ping"]
        print(f"| MCP ping (no tool: the client and transport alone), ours over {mode} / peer over stdio | "
              f"{o['p50Ms']:.2f} / {pp['p50Ms']:.2f} | {o['p99Ms']:.2f} / {pp['p99Ms']:.2f} | | |")
    for op in ["write", "read"]:
        p = mcp["peer_stdio"][op]
        for mode in ["stdio", "http"]:
            o = mcp[f"ours_{mode}"][op]
            # Beyond the ping: what the server spends on the tool, each side's own ping taken
            # off its p50 (the part no server can make smaller is out of the ratio).
            own = o["p50Ms"] - mcp[f"ours_{mode}"]["ping"]["p50Ms"]
            peer_own = p["p50Ms"] - pp["p50Ms"]
            beyond = f"; beyond the ping {own:.2f} / {peer_own:.2f} = {own / peer_own:.2f}×" if peer_own > 0 else ""
            print(f"| MCP {op}_file 1 KiB, ours over {mode} / peer over stdio | {o['p50Ms']:.2f} / {p['p50Ms']:.2f} | "
                  f"{o['p99Ms']:.2f} / {p['p99Ms']:.2f} | | {o['p50Ms'] / p['p50Ms']:.2f}× p50, {o['p99Ms'] / p['p99Ms']:.2f}× p99"
                  f"{beyond} |")
    sf = f"{search['files']:,} files, {search['bytes'] / 1e6:.1f} MB"
    for what, k in [("keyword", "keyword"), ("exact", "exact")]:
        o = search[k]
        row = f"| search {what}, {sf}: ours"
        vals = [f"{o[0]:.2f}"]
        p99 = [f"{o[1]:.2f}"]
        ratio = ""
        if "rg" in search:
            row += " / ripgrep (floor)"
            vals.append(f"{search['rg'][0]:.2f}")
            p99.append(f"{search['rg'][1]:.2f}")
            ratio = f"{o[0] / search['rg'][0]:.2f}× rg"
        print(f"{row} | {' / '.join(vals)} | {' / '.join(p99)} | | {ratio} |")
    g = search["grep"]
    print(f"| MCP grep tool (a scan), same files / our exact search | {g[0]:.2f} / {search['exact'][0]:.2f} | {g[1]:.2f} | | "
          f"{g[0] / search['exact'][0]:.1f}× |")
    pi, pp = search["put_indexed"], search["put_plain"]
    print(f"| HTTP PUT 1 KiB of prose, index on / off (WORKSPACE_SEARCH=off) | {pi['p50Ms']:.2f} / {pp['p50Ms']:.2f} | "
          f"{pi['p99Ms']:.2f} / {pp['p99Ms']:.2f} | | {pi['p50Ms'] / pp['p50Ms']:.2f}× |")
    print(f"| index size / content size | {search['index_bytes'] / 1e6:.1f} MB / {search['bytes'] / 1e6:.1f} MB | | | "
          f"{search['index_bytes'] / search['bytes']:.2f}× |")
    print("\n".join(semantic_rows(semantic, os.cpu_count())))
    print(f"| console first load: page and assets ({console['firstLoadFiles']} files), raw / gzipped | "
          f"{console['firstLoadBytes'] / 1024:.1f} KiB / {console['firstLoadGzipBytes'] / 1024:.1f} KiB | | | "
          f"{console['firstLoadGzipBytes'] / (150 * 1024):.2f}× the 150 KB budget |")
    print(f"| console: navigation to a usable file list (signed in, cold cache, median of {console['rounds']}) | "
          f"{console['usableListP50Ms']:.0f} | | | |")
    print("\npeer: @modelcontextprotocol/server-filesystem (bench/peer/package.json); ours fsyncs every "
          "acknowledged write, the peer does not.")


if __name__ == "__main__":
    main()
