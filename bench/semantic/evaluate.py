"""Retrieval quality of the workspace search: keyword, semantic and hybrid modes over the
same corpus and judged queries (bench/semantic/README.md).

  python3.11 bench/semantic/evaluate.py --check                 # validate corpus and queries (seconds)
  python3.11 bench/semantic/evaluate.py --out /tmp/semantic.json   # build (debug), run every mode
  python3.11 bench/semantic/evaluate.py --bin-dir target/local --modes keyword --out r.json

The run starts the local server as bench/run.py does (its Server class: a temporary data
dir, a free loopback port, fixed API keys), passing this process's environment through
(WORKSPACE_MODEL_DIR for the semantic modes), writes the corpus into one workspace, then
asks every query in every mode with limit=10 and scores the order of the hits: recall@5 and
nDCG@10 per kind of query and overall, and p50/p95 latency per mode. A mode the server
refuses (400: no such mode yet; 503: no model installed) is reported as unavailable.
"""

import argparse
import concurrent.futures
import importlib.util
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
import textcheck  # noqa: E402

MODES = ["keyword", "semantic", "hybrid"]
KINDS = ["paraphrase", "identifier", "mixed"]
LIMIT = 10          # hits asked for per query
RECALL_AT = 5
NDCG_AT = 10
# The search API's own limits (docs/search.md): a query over them is a 400, not a miss.
MAX_QUERY_BYTES = 1024
MAX_QUERY_WORDS = 32
# The first search in a mode may build its whole index (embedding every file on the CPU
# for the semantic ones); it is not timed with the others and may take long.
FIRST_SEARCH_TIMEOUT_S = 3600
SEARCH_TIMEOUT_S = 120


def load_queries(path=os.path.join(HERE, "queries.json")):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# --- checking ---------------------------------------------------------------------------

def check(files, doc):
    """Every problem with the corpus and the judged queries, as strings (none: all good)."""
    problems = []
    if len(files) < 2000:
        problems.append(f"corpus: {len(files)} files, fewer than 2,000")
    for path, text in files.items():
        if len(text.encode()) > corpus.MAX_FILE:
            problems.append(f"corpus: {path} is over {corpus.MAX_FILE} bytes")
        if not text.startswith("# "):
            problems.append(f"corpus: {path} has no heading")
    queries = doc["queries"]
    if len(queries) < 200:
        problems.append(f"queries: {len(queries)}, fewer than 200")
    counts = {k: sum(q["kind"] == k for q in queries) for k in KINDS}
    for kind, n in counts.items():
        # "Roughly a third each": no kind under a quarter of the queries.
        if n < len(queries) / 4:
            problems.append(f"queries: only {n} of kind {kind}")
    ids = set()
    for q in queries:
        qid = q.get("id")
        if qid in ids:
            problems.append(f"{qid}: duplicate id")
        ids.add(qid)
        if q.get("kind") not in KINDS:
            problems.append(f"{qid}: kind {q.get('kind')!r} is not one of {KINDS}")
        text = q.get("query", "")
        words = re.findall(r"\w+", text)
        if not words or len(text.encode()) > MAX_QUERY_BYTES or len(words) > MAX_QUERY_WORDS:
            problems.append(f"{qid}: the query must have 1-{MAX_QUERY_WORDS} words and at most "
                            f"{MAX_QUERY_BYTES} bytes")
        rel = q.get("relevant") or []
        if not rel:
            problems.append(f"{qid}: no relevant path")
        if len({r["path"] for r in rel}) != len(rel):
            problems.append(f"{qid}: a relevant path is listed twice")
        for r in rel:
            if r["path"] not in files:
                problems.append(f"{qid}: relevant path {r['path']} is not in the corpus")
            if r.get("grade") not in (1, 2):
                problems.append(f"{qid}: grade of {r['path']} must be 1 or 2")
        if rel and max(r.get("grade", 0) for r in rel) != 2:
            problems.append(f"{qid}: no relevant path of grade 2 (the file the query is about)")
        if q.get("kind") == "paraphrase":
            # No keyword shared with any file judged relevant, so a word match cannot find it.
            for r in rel:
                if r["path"] in files:
                    shared = textcheck.shared_words(text, files[r["path"]])
                    if shared:
                        problems.append(f"{qid}: paraphrase shares {shared} with {r['path']}")
        quoted = re.fullmatch(r'"(.+)"', text.strip())
        if q.get("kind") == "identifier" and quoted and rel and rel[0]["path"] in files:
            # A quoted phrase is quoted from the file: it must be there, word for word.
            if " ".join(quoted.group(1).split()) not in " ".join(files[rel[0]["path"]].split()):
                problems.append(f"{qid}: the quoted phrase is not in {rel[0]['path']}")
    # The paraphrase check is only as good as its stemmer: compare it with FTS5's on every
    # word of the paraphrases and their files, where this Python's sqlite3 has FTS5.
    para = [q for q in queries if q.get("kind") == "paraphrase"]
    texts = [q["query"] for q in para] + [files[r["path"]] for q in para for r in q["relevant"] if r["path"] in files]
    for word, ours, theirs in textcheck.fts5_differences(texts) or []:
        problems.append(f"stemmer: {word!r} is {ours!r} here but {theirs} in SQLite FTS5")
    return problems, counts


# --- scoring ----------------------------------------------------------------------------

def unique_paths(hits):
    """Paths in the order of the hits, each once at its first rank (a semantic hit may be one
    passage of a file that another hit already named)."""
    seen, out = set(), []
    for h in hits:
        if h["path"] not in seen:
            seen.add(h["path"])
            out.append(h["path"])
    return out


def recall_at(ranked, grades, k):
    return sum(1 for p in ranked[:k] if p in grades) / len(grades)


def ndcg_at(ranked, grades, k):
    """Graded gain 2^g - 1 (grade 2 counts 3, grade 1 counts 1), log2 discount."""
    dcg = sum((2 ** grades.get(p, 0) - 1) / math.log2(i + 2) for i, p in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def percentile(values, p):
    """Nearest-rank percentile."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


# --- the server -------------------------------------------------------------------------

def bench_run():
    """bench/run.py as a module, for its Server and keys (it has no side effects on import)."""
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(ROOT, "bench", "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def request(base, key, method, path, body=None, timeout=SEARCH_TIMEOUT_S):
    """(status, decoded JSON or None): HTTP errors are answers here, not exceptions."""
    req = urllib.request.Request(base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {key}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            data = r.read()
            return r.status, (json.loads(data) if data else None)
    except urllib.error.HTTPError as e:
        data = e.read()
        try:
            return e.code, json.loads(data)
        except ValueError:
            return e.code, {"raw": data.decode(errors="replace")[:300]}


def error_text(answer):
    """A short description of an error answer, whatever its shape."""
    if not isinstance(answer, dict):
        return str(answer)[:300]
    # The server's envelope: {"error": "<code>", "message": "<text>", "details"?: {...}}.
    parts = [str(answer[k]) for k in ("error", "message") if answer.get(k)]
    return (": ".join(parts) or json.dumps(answer))[:1000]


def upload(base, key, files, clients):
    def put(item):
        path, text = item
        status, answer = request(base, key, "PUT", "/v1/host/workspace/files/" + urllib.parse.quote(path),
                                 {"content": text})
        if status not in (200, 201):
            raise SystemExit(f"PUT {path}: {status} {error_text(answer)}")
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(put, files.items()))


def search(base, key, mode, q, timeout=SEARCH_TIMEOUT_S):
    params = urllib.parse.urlencode({"q": q, "mode": mode, "limit": LIMIT})
    t = time.perf_counter()
    status, answer = request(base, key, "GET", "/v1/host/workspace/search?" + params, timeout=timeout)
    return status, answer, (time.perf_counter() - t) * 1000


def evaluate_mode(base, key, mode, queries):
    """The mode's scores, or why it is unavailable."""
    # The first query, untimed, brings the mode's index up to date (and tells whether the
    # server has the mode at all).
    t = time.perf_counter()
    try:
        status, answer, _ = search(base, key, mode, queries[0]["query"], timeout=FIRST_SEARCH_TIMEOUT_S)
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        return {"status": "unavailable", "error": f"first search failed: {e}"}
    first_s = time.perf_counter() - t
    if status != 200:
        return {"status": "unavailable", "httpStatus": status, "error": error_text(answer)}
    answered_as = (answer.get("index") or {}).get("mode")
    if answered_as != mode:
        # A server that ignored the mode would be scored as another one.
        return {"status": "unavailable", "error": f"asked for mode={mode}, answered as {answered_as!r}"}
    # What the index held when the first search answered (every file indexed, none skipped?).
    index = answer.get("index")
    per_query, latencies, errors = [], [], []
    for q in queries:
        grades = {r["path"]: r["grade"] for r in q["relevant"]}
        try:
            status, answer, ms = search(base, key, mode, q["query"])
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            status, answer, ms = None, {"error": str(e)}, None
        if status == 200:
            latencies.append(ms)
            hits = answer.get("hits", [])
            ranked = unique_paths(hits)
        else:
            errors.append({"id": q["id"], "httpStatus": status, "error": error_text(answer)})
            hits, ranked = [], []
        per_query.append({
            "id": q["id"], "kind": q["kind"], "ms": ms,
            "recall@5": recall_at(ranked, grades, RECALL_AT), "ndcg@10": ndcg_at(ranked, grades, NDCG_AT),
            "hits": len(hits), "paths": len(ranked), "ranked": ranked,
        })
    by_kind = {}
    for kind in KINDS + ["all"]:
        rows = [r for r in per_query if kind == "all" or r["kind"] == kind]
        by_kind[kind] = {
            "queries": len(rows),
            "recall@5": sum(r["recall@5"] for r in rows) / len(rows),
            "ndcg@10": sum(r["ndcg@10"] for r in rows) / len(rows),
        }
    return {
        "status": "ok",
        "firstSearchSeconds": round(first_s, 3),
        "index": index,
        "latencyMs": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)} if latencies else None,
        "errors": errors,
        # Semantic and hybrid hits may repeat a path (passages): fewer paths than hits.
        "meanPathsPerAnswer": sum(r["paths"] for r in per_query) / len(per_query),
        "metrics": by_kind,
        "perQuery": per_query,
    }


def unavailable(r):
    return f"unavailable (HTTP {r['httpStatus']})" if r.get("httpStatus") else "unavailable"


def table(results):
    lines = ["| Mode | Kind | Queries | Recall@5 | nDCG@10 |", "|---|---|---|---|---|"]
    for mode, r in results.items():
        if r["status"] != "ok":
            lines.append(f"| {mode} | {unavailable(r)} | | | |")
            continue
        for kind in KINDS + ["all"]:
            m = r["metrics"][kind]
            lines.append(f"| {mode} | {kind} | {m['queries']} | {m['recall@5']:.3f} | {m['ndcg@10']:.3f} |")
    lines += ["", "| Mode | p50 ms | p95 ms | first search s | errors | paths per answer |", "|---|---|---|---|---|---|"]
    for mode, r in results.items():
        if r["status"] != "ok":
            lines.append(f"| {mode} | unavailable | | | | |")
            continue
        lat = r["latencyMs"] or {"p50": float("nan"), "p95": float("nan")}
        lines.append(f"| {mode} | {lat['p50']:.2f} | {lat['p95']:.2f} | {r['firstSearchSeconds']:.2f} | "
                     f"{len(r['errors'])} | {r['meanPathsPerAnswer']:.2f} |")
    # Why a mode is unavailable, in the server's words (too long for a table cell).
    lines += [f"\n{mode}: {r['error']}" for mode, r in results.items() if r["status"] != "ok"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only validate the corpus and the queries")
    ap.add_argument("--queries", default=os.path.join(HERE, "queries.json"), help="the judged queries")
    ap.add_argument("--bin-dir", help="folder holding workspace-local (default: build the debug one)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, default all three")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--clients", type=int, default=4, help="parallel PUTs while loading the corpus")
    a = ap.parse_args()

    t0 = time.perf_counter()
    files = corpus.build()
    doc = load_queries(a.queries)
    problems, counts = check(files, doc)
    size = sum(len(t.encode()) for t in files.values())
    digest = corpus.digest(files)
    print(f"corpus: {len(files):,} files, {size:,} bytes, sha256 {digest[:16]}…; queries: "
          + ", ".join(f"{n} {k}" for k, n in counts.items()), file=sys.stderr)
    if digest != doc.get("corpus_sha256"):
        # Not fatal: the checks above hold for this corpus; another Python makes another one.
        print(f"note: this corpus is not the one the queries were judged on (sha256 "
              f"{str(doc.get('corpus_sha256'))[:16]}…, CPython {doc.get('corpus_python')}); this is CPython "
              f"{platform.python_version()} on {platform.system()}", file=sys.stderr)
    if problems:
        for p in problems:
            print("problem:", p, file=sys.stderr)
        raise SystemExit(f"{len(problems)} problem(s) in the corpus or the queries")
    if a.check:
        print(f"ok ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
        return

    modes = [m for m in a.modes.split(",") if m]
    if a.bin_dir:
        bin_dir = os.path.abspath(a.bin_dir)
    else:
        subprocess.run(["cargo", "build", "--locked", "-p", "workspace-local"], check=True, cwd=ROOT)
        bin_dir = os.path.join(ROOT, "target", "debug")
    run = bench_run()
    key = run.KEYS["main"]
    # This process's environment goes through (WORKSPACE_MODEL_DIR and whatever else the
    # semantic modes read), but not what the harness sets itself, nor RUST_LOG: the server's
    # own log level keeps its output small.
    own = {"WORKSPACE_ADDR", "WORKSPACE_DATA_DIR", "WORKSPACE_API_KEYS", "RUST_LOG", "PATH"}
    env = {k: v for k, v in os.environ.items() if k not in own}
    env["WORKSPACE_MAX_FILES"] = str(max(20000, len(files)))
    results = {}
    with tempfile.TemporaryDirectory() as data:
        server = run.Server(bin_dir, data, extra=env)
        # Keep reading its standard output, so a chatty server never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in server.p.stdout], daemon=True).start()
        try:
            # Discovery says which modes this server has and, without a model, why not.
            _, discovery = request(server.base, key, "GET", "/.well-known/openwop")
            advertised = (discovery or {}).get("search")
            t = time.perf_counter()
            upload(server.base, key, files, a.clients)
            upload_s = time.perf_counter() - t
            print(f"uploaded in {upload_s:.1f} s", file=sys.stderr)
            for mode in modes:
                t = time.perf_counter()
                results[mode] = evaluate_mode(server.base, key, mode, doc["queries"])
                print(f"{mode}: {results[mode]['status']} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        finally:
            server.stop()
    total_s = time.perf_counter() - t0
    print(table(results))
    if a.out:
        out = {
            "meta": {
                "python": platform.python_version(), "machine": platform.machine(), "cores": os.cpu_count(),
                "binDir": bin_dir, "corpusFiles": len(files), "corpusBytes": size, "corpusSha256": digest,
                "queries": counts, "limit": LIMIT, "uploadSeconds": round(upload_s, 2),
                "totalSeconds": round(total_s, 2),
                "modelDir": os.environ.get("WORKSPACE_MODEL_DIR"),
                "discoverySearch": advertised,
            },
            "modes": results,
        }
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
