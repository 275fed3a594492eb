"""MCP write and read latency, ours against the official MCP filesystem server, through the
official Python MCP client (the same client code for both, so its overhead cancels out of the
ratio). Called by bench/run.py; prints one JSON object.

  mcp_peer.py --ours-bin PATH --data-dir DIR --peer-dir DIR --base URL --key K --n N
"""

import argparse
import json
import statistics
import time

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CONTENT = "x" * 1024


def quantiles(ms):
    ms = sorted(ms)
    at = lambda q: ms[min(len(ms) - 1, max(0, int(len(ms) * q + 0.999999) - 1))]
    return {"p50Ms": at(0.50), "p99Ms": at(0.99), "meanMs": statistics.fmean(ms)}


async def measure(s, n, write_args, read_tool, read_args):
    await s.initialize()
    # A ping is a whole MCP round trip through the same client and transport with no tool
    # behind it: the part of every call that is the client's and the transport's, not the
    # server's work (the floor under any ratio of tool calls).
    pings, writes, reads = [], [], []
    for i in range(n):
        t = time.perf_counter()
        await s.send_ping()
        pings.append((time.perf_counter() - t) * 1000)
    for i in range(n):
        t = time.perf_counter()
        r = await s.call_tool("write_file", write_args(i))
        writes.append((time.perf_counter() - t) * 1000)
        assert not r.is_error, r
    for i in range(n):
        t = time.perf_counter()
        r = await s.call_tool(read_tool, read_args(i))
        reads.append((time.perf_counter() - t) * 1000)
        assert not r.is_error, r
    return {"ping": quantiles(pings), "write": quantiles(writes), "read": quantiles(reads)}


async def main(a):
    out = {}
    paths = lambda i: f"bench/m{i % 50}.md"
    ours = StdioServerParameters(command=a.ours_bin, args=["mcp", "--tenant", "bench", "--workspace", "stdio"],
                                 env={"WORKSPACE_DATA_DIR": a.data_dir, "RUST_LOG": "warn"})
    async with stdio_client(ours) as (r, w), ClientSession(r, w) as s:
        out["ours_stdio"] = await measure(s, a.n, lambda i: {"path": paths(i), "content": CONTENT},
                                          "read_file", lambda i: {"path": paths(i)})
    hc = create_mcp_http_client(headers={"Authorization": f"Bearer {a.key}"})
    async with hc, streamable_http_client(f"{a.base}/mcp", http_client=hc) as (r, w):
        async with ClientSession(r, w) as s:
            out["ours_http"] = await measure(s, a.n, lambda i: {"path": paths(i), "content": CONTENT},
                                             "read_file", lambda i: {"path": paths(i)})
    peer = StdioServerParameters(command="node", args=[a.peer_js, a.peer_dir])
    full = lambda i: f"{a.peer_dir}/m{i % 50}.md"
    async with stdio_client(peer) as (r, w), ClientSession(r, w) as s:
        out["peer_stdio"] = await measure(s, a.n, lambda i: {"path": full(i), "content": CONTENT},
                                          "read_text_file", lambda i: {"path": full(i)})
    print(json.dumps(out))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    for flag in ["--ours-bin", "--data-dir", "--peer-js", "--peer-dir", "--base", "--key"]:
        p.add_argument(flag, required=True)
    p.add_argument("--n", type=int, default=500)
    anyio.run(main, p.parse_args())
