"""The console's first load, measured in a real browser (Debian's Chromium through
Playwright): the bytes the page and the assets it loads before the person can act take on
the wire (raw, and gzipped as a compressing proxy or CDN would send them), and the time
from navigation to a usable file list (a signed-in tab: the key already in sessionStorage),
median of `rounds` cold loads (a new browser context each: no cache).

  .venv/bin/python bench/console.py --base http://127.0.0.1:8787 --key KEY [--rounds 15]

Prints one JSON object; bench/run.py puts it in its table. Loopback only.
"""

import argparse
import gzip
import json
import statistics
import time

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def measure(base, key, rounds):
    loads = []
    first = None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            for _ in range(rounds):
                ctx = browser.new_context()
                ctx.add_init_script(
                    "sessionStorage.setItem('agent-workspace.token', %s)" % json.dumps(key))
                page = ctx.new_page()
                bodies = []
                page.on("response", lambda r, b=bodies: b.append(r))
                start = time.perf_counter()
                page.goto(base + "/console")
                page.locator("table.list tbody tr").first.wait_for()
                loads.append((time.perf_counter() - start) * 1000)
                if first is None:
                    first = {"raw": 0, "gzip": 0, "files": 0}
                    for r in bodies:
                        if "/console" not in r.url:
                            continue
                        body = r.body()
                        first["raw"] += len(body)
                        first["gzip"] += len(gzip.compress(body, 9))
                        first["files"] += 1
                ctx.close()
        finally:
            browser.close()
    return {"firstLoadBytes": first["raw"], "firstLoadGzipBytes": first["gzip"],
            "firstLoadFiles": first["files"], "usableListP50Ms": statistics.median(loads),
            "rounds": rounds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    print(json.dumps(measure(a.base, a.key, a.rounds)))


if __name__ == "__main__":
    main()
