"""Drives the workspace MCP server through the official Python MCP SDK (a real client) and
asserts what an agent sees. Run by local/tests/mcp.rs against the real `workspace-local`:

  http:  mcp_client.py http  --base URL --key K --evil-key K2 --read-only-key K3 --scoped-key K4
  stdio: mcp_client.py stdio --bin PATH --data-dir DIR

Exits non-zero with the first failed check."""

import argparse
import sys
import time

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

DENIED = "Error: Access denied. Path must be within /workspace"
TOOLS = {
    "read_file": (["path"], {"path", "head", "tail", "offset", "limit"}),
    "write_file": (["path", "content"], {"path", "content", "expected_version"}),
    "list_directory": (["path"], {"path"}),
    "create_directory": (["path"], {"path"}),
    "get_file_info": (["path"], {"path"}),
    "search_files": (["path", "pattern"], {"path", "pattern", "max_results"}),
    "delete_file": (["path"], {"path", "expected_version"}),
    "move_file": (["source", "destination"], {"source", "destination"}),
    "edit_file": (["path", "old_text", "new_text"], {"path", "old_text", "new_text", "replace_all", "expected_version"}),
    "grep": (["pattern"], {"pattern", "path", "glob", "max_results"}),
    "search": (["query"], {"query", "mode", "path", "glob", "ignore_case", "max_results"}),
    "memory": (["command"], {"command", "path", "view_range", "file_text", "old_str", "new_str",
                             "insert_line", "insert_text", "old_path", "new_path"}),
    "fork_workspace": ([], {"label", "ttl_seconds"}),
    "fork_diff": (["fork_id"], {"fork_id", "prefix"}),
    "merge_fork": (["fork_id"], {"fork_id", "strategy", "resolutions", "apply", "discard_fork"}),
    "discard_fork": (["fork_id"], {"fork_id"}),
    "wait_for_changes": ([], {"since", "prefix", "timeout_seconds"}),
}


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def eq(got, want, what=""):
    check(got == want, f"{what}\n  got:  {got!r}\n  want: {want!r}")


class Agent:
    def __init__(self, session):
        self.s = session

    async def call(self, name, **args):
        r = await self.s.call_tool(name, args)
        text = "".join(c.text for c in r.content if c.type == "text")
        return text, r.is_error

    async def ok(self, name, **args):
        text, err = await self.call(name, **args)
        check(not err, f"{name} {args} failed: {text}")
        return text

    async def err(self, name, **args):
        text, err = await self.call(name, **args)
        check(err and text.startswith("Error: "), f"{name} {args} should fail with Error:, got {err} {text!r}")
        return text


async def tool_list(s):
    listed = await s.list_tools()
    got = {t.name: t for t in listed.tools}
    eq(sorted(got), sorted(TOOLS), "tool names")
    for name, (required, params) in TOOLS.items():
        schema = got[name].input_schema
        eq(schema["type"], "object", name)
        eq(set(schema["properties"]), params, f"{name} parameters")
        eq(schema.get("required"), required, f"{name} required")
    eq(got["read_file"].input_schema["properties"]["head"]["type"], "number", "head type")
    eq(got["write_file"].input_schema["properties"]["content"]["type"], "string", "content type")
    eq(got["edit_file"].input_schema["properties"]["replace_all"]["type"], "boolean", "replace_all type")


async def every_tool(a):
    """Each tool's success and error texts, on an empty workspace."""
    eq(await a.ok("list_directory", path="/workspace"), "Directory is empty: /workspace")
    eq(await a.ok("write_file", path="notes/a.md", content="1\n2\n3\n4\n5\n"),
       "Successfully wrote 10 bytes to notes/a.md\nVersion: 1")
    eq(await a.ok("read_file", path="/workspace/notes/a.md"), "1\n2\n3\n4\n5\n")
    eq(await a.ok("read_file", path="notes/a.md", head=2), "1\n2\n")
    eq(await a.ok("read_file", path="notes/a.md", tail=2), "4\n5\n")
    eq(await a.ok("read_file", path="notes/a.md", offset=2, limit=2), "2\n3\n")
    eq(await a.err("read_file", path="notes/a.md", head=1, tail=1),
       "Error: Cannot specify both 'head' and 'tail' parameters")
    eq(await a.err("read_file", path="notes/missing.md"), "Error: File not found: notes/missing.md")

    eq(await a.ok("create_directory", path="docs"), "Successfully created directory: docs")
    eq(await a.ok("create_directory", path="/workspace/docs"), "Directory already exists: /workspace/docs")
    check("a file exists" in await a.err("create_directory", path="notes/a.md"), "create_directory over a file")
    eq(await a.ok("list_directory", path="."), "Contents of .:\n\n[DIR] docs\n[DIR] notes")
    eq(await a.ok("list_directory", path="docs"), "Directory is empty: docs")
    eq(await a.ok("list_directory", path="notes"), "Contents of notes:\n\n[FILE] a.md")
    eq(await a.err("list_directory", path="nope"), "Error: Directory not found: nope")

    info = (await a.ok("get_file_info", path="notes/a.md")).split("\n")
    eq(info[:3], ["Path: notes/a.md", "Type: file", "Size: 10 bytes"])
    check(info[3].startswith("Created: ") and info[4].startswith("Modified: "), info)
    eq(info[5], "Version: 1")
    check(info[6].startswith('ETag: "1-'), info)
    check((await a.ok("get_file_info", path="notes")).startswith("Path: notes\nType: directory\n"), "dir info")
    eq(await a.err("get_file_info", path="zz.md"), "Error: File not found: zz.md")

    for p in ["src/main.rs", "src/lib/util.rs", "README.md", "b1.txt"]:
        await a.ok("write_file", path=p, content=f"// {p}\nTODO one\n")
    eq(await a.ok("search_files", path=".", pattern="*.md"), "Found 1 match(es) for '*.md':\n\n[FILE] README.md")
    eq(await a.ok("search_files", path="/workspace", pattern="**/*.rs"),
       "Found 2 match(es) for '**/*.rs':\n\n[FILE] src/lib/util.rs\n[FILE] src/main.rs")
    eq(await a.ok("search_files", path=".", pattern="{README,b?}.{md,txt}"),
       "Found 2 match(es) for '{README,b?}.{md,txt}':\n\n[FILE] README.md\n[FILE] b1.txt")
    eq(await a.ok("search_files", path="src", pattern="[lm]*"),
       "Found 2 match(es) for '[lm]*':\n\n[DIR] src/lib\n[FILE] src/main.rs")
    check("(showing the first 1 of" in await a.ok("search_files", path=".", pattern="**", max_results=1), "cap")
    eq(await a.ok("search_files", path=".", pattern="*.py"), "No matches found for pattern '*.py' in .")

    eq(await a.ok("grep", pattern="TODO", glob="**/*.rs"),
       "Found 2 match(es) for 'TODO':\n\nsrc/lib/util.rs:2: TODO one\nsrc/main.rs:2: TODO one")
    eq(await a.ok("grep", pattern="^// s", path="src/main.rs"), "Found 1 match(es) for '^// s':\n\nsrc/main.rs:1: // src/main.rs")
    eq(await a.ok("grep", pattern="nothing-like-this"), "No matches found for 'nothing-like-this' in /workspace")

    # edit: ambiguity refused, exact edit, replace_all; versions reported
    await a.ok("write_file", path="e.txt", content="one two one")
    check("matches 2 places" in await a.err("edit_file", path="e.txt", old_text="one", new_text="1"), "ambiguous edit")
    eq(await a.ok("edit_file", path="e.txt", old_text="two", new_text="2"), "Successfully edited e.txt: 1 replacement(s)\nVersion: 2")
    eq(await a.ok("edit_file", path="e.txt", old_text="one", new_text="1", replace_all=True, expected_version=2),
       "Successfully edited e.txt: 2 replacement(s)\nVersion: 3")
    # expected_version conflicts name the current version and change nothing
    for tool, args in [("write_file", {"content": "lost"}), ("edit_file", {"old_text": "1", "new_text": "x"}), ("delete_file", {})]:
        text = await a.err(tool, path="e.txt", expected_version=2, **args)
        check("current version is 3" in text, f"{tool}: {text}")
    eq(await a.ok("read_file", path="e.txt"), "1 2 1")
    check("current version is 3" in await a.err("write_file", path="e.txt", content="x", expected_version=0), "create-only")
    eq(await a.ok("write_file", path="e.txt", content="v4", expected_version=3), "Successfully wrote 2 bytes to e.txt\nVersion: 4")

    # move and delete
    eq(await a.err("move_file", source="e.txt", destination="README.md"), "Error: Destination already exists: README.md")
    eq(await a.ok("move_file", source="e.txt", destination="moved/e.txt"), "Successfully moved e.txt to moved/e.txt\nVersion: 1")
    eq(await a.err("read_file", path="e.txt"), "Error: File not found: e.txt")
    eq(await a.ok("delete_file", path="moved/e.txt", expected_version=1), "Successfully deleted moved/e.txt (it was at version 1)")
    eq(await a.err("delete_file", path="moved/e.txt"), "Error: File not found: moved/e.txt")

    # traversal, every tool
    for p in ["../../../etc/passwd", "/etc/passwd", "../outside.txt", "/workspace/../etc/passwd"]:
        for tool, args in [("read_file", {"path": p}), ("write_file", {"path": p, "content": "x"}),
                           ("list_directory", {"path": p}), ("create_directory", {"path": p}),
                           ("get_file_info", {"path": p}), ("search_files", {"path": p, "pattern": "*"}),
                           ("delete_file", {"path": p}), ("edit_file", {"path": p, "old_text": "a", "new_text": "b"}),
                           ("move_file", {"source": "README.md", "destination": p}), ("grep", {"pattern": "x", "path": p})]:
            eq(await a.err(tool, **args), DENIED, f"{tool} {p}")
    for pattern in ["../*", "../../etc/passwd", "**/../../*"]:
        eq(await a.err("search_files", path=".", pattern=pattern), DENIED, pattern)
        eq(await a.err("grep", pattern="root", glob=pattern), DENIED, pattern)
    check("passwd" not in await a.ok("search_files", path=".", pattern="**"), "nothing outside listed")


async def memory_tool(a):
    """Claude's memory tool as an MCP tool: the reference implementation's answers."""
    text, err = await a.call("memory", command="view", path="/memories")
    eq((text, err), ("Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories", False))
    eq(await a.call("memory", command="create", path="/memories/me.md", file_text="likes: tea\n"),
       ("File created successfully at: /memories/me.md", False))
    eq(await a.call("memory", command="str_replace", path="/memories/me.md", old_str="tea", new_str="coffee"),
       ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tlikes: coffee\n     2\t", False))
    eq(await a.call("memory", command="view", path="/memories/me.md"),
       ("Here's the content of /memories/me.md with line numbers:\n     1\tlikes: coffee\n     2\t", False))
    eq(await a.call("memory", command="create", path="/memories/me.md", file_text="x"),
       ("File /memories/me.md already exists", True))
    eq(await a.call("memory", command="view", path="/memories/../etc/passwd"),
       ("Path /memories/../etc/passwd would escape /memories directory", True))
    # The memory is an ordinary workspace file.
    eq(await a.ok("read_file", path="memories/me.md"), "likes: coffee\n")


async def fork_tools(a):
    """Fork, compare, dry-run, merge and discard through the tools."""
    created = await a.ok("fork_workspace", label="client check")
    fork = created.split()[2]
    check("~" in fork, created)
    eq(await a.ok("fork_diff", fork_id=fork),
       f"Nothing changed on either side since fork {fork} was made (or last merged).")
    await a.ok("write_file", path="fork-check.md", content="in the workspace\n")
    check("fork-check.md: fork unchanged, workspace added" in await a.ok("fork_diff", fork_id=fork), "diff")
    dry = await a.ok("merge_fork", fork_id=fork)
    check(dry.startswith("Dry run: merging fork") and "nothing to apply" in dry, dry)
    check((await a.err("merge_fork", fork_id="nope")).startswith("Error: "), "unknown fork")
    eq(await a.ok("discard_fork", fork_id=fork), f"Discarded fork {fork}; this workspace is untouched.")


async def search_tool(a):
    """Ranked search: the best file first as path@version with its lines; every write seen."""
    await a.ok("write_file", path="kb/deploy.md", content="How to deploy\nDeploying twice is safe; deploys are idempotent.\n")
    await a.ok("write_file", path="kb/other.md", content="One deploy note.\n")
    found = await a.ok("search", query="deploying")
    head = found.split("\n")
    check(head[0].startswith("Found 2 file(s) for 'deploying', best first"), found)
    eq(head[2].split(" ")[0], "kb/deploy.md@1", "best hit first, at its version")
    check("  2: Deploying twice is safe; deploys are idempotent." in found, found)
    # A write is found by the next search, and the old text no longer is.
    await a.ok("write_file", path="kb/other.md", content="Rollback steps.\n")
    check("kb/other.md" not in await a.ok("search", query="deploy"), "overwritten text is gone")
    check("kb/other.md@2" in await a.ok("search", query="rollback"), "new text found at its version")
    exact = await a.ok("search", query="safe;", mode="exact", path="kb", glob="*.md")
    check("kb/deploy.md@1" in exact and "  2: Deploying" in exact, exact)
    check((await a.ok("search", query="zebra")).startswith("No matches found for 'zebra' in /workspace ("), "no match")
    check("not a valid regular expression" in await a.err("search", query="(", mode="regex"), "bad regex")
    eq(await a.err("search", query="x", path="../etc"), DENIED, "escape")


def cursor_of(text):
    for line in text.split("\n"):
        if line.startswith("Cursor: "):
            return line[len("Cursor: "):]
    raise AssertionError(f"no cursor in {text!r}")


def reported(text):
    """The "<operation> <path> version <n>" of each change a wait answered."""
    out = []
    for line in text.split("\n")[1:]:
        if line.startswith("Cursor: ") or line.startswith("More "):
            break
        out.append(" ".join(line.split(" ")[1:5]))
    return out


async def wait_while(waiter, write, **wait_args):
    """Runs wait_for_changes on `waiter` while `write()` commits a change 0.3 s later:
    (text, seconds the wait took)."""
    got = {}

    async def wait():
        started = time.monotonic()
        got["text"] = await waiter.ok("wait_for_changes", **wait_args)
        got["took"] = time.monotonic() - started

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.sleep(0.3)
        await write()
    return got["text"], got["took"]


async def wait_tool(a, write):
    """wait_for_changes: a change another writer commits while it waits is answered at once
    (well before the timeout), each change once across cursors; a timeout answers no changes
    with a cursor. `write(path, content)` commits through another client."""
    text, took = await wait_while(a, lambda: write("watch/a.md", "one"), timeout_seconds=10)
    check(took < 5, f"answered after {took:.1f} s: {text}")
    eq(reported(text), ["put watch/a.md version 1"], text)
    check(text.startswith("1 change(s), oldest first:\n"), text)
    cursor = cursor_of(text)
    started = time.monotonic()
    none = await a.ok("wait_for_changes", since=cursor, timeout_seconds=1)
    took = time.monotonic() - started
    check(none.startswith("No changes within 1 s.\n") and 0.9 < took < 4, f"{took:.1f} s: {none}")
    await write("watch/a.md", "two")
    nxt = await a.ok("wait_for_changes", since=cursor_of(none), timeout_seconds=5)
    eq(reported(nxt), ["put watch/a.md version 2"], nxt)
    check((await a.err("wait_for_changes", timeout_seconds=26)).startswith("Error: Parameter 'timeout_seconds' must be at most 25"), "bound")


async def http_mode(args):
    url = f"{args.base}/mcp"

    def client(key):
        return create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})

    # Protocol version negotiation: the oldest handshake version is echoed.
    async with client(args.key) as raw:
        r = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
            headers={"Accept": "application/json, text/event-stream"})
        eq(r.status_code, 200)
        eq(r.json()["result"]["protocolVersion"], "2024-11-05", "negotiated")
        eq((await raw.get(f"{args.base}/mcp/health")).json()["service"], "workspace-tool")
    async with create_mcp_http_client() as anon:
        eq((await anon.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})).status_code, 401, "no key")

    async with client(args.key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            eq(init.protocol_version, "2025-11-25", "client's version accepted")
            eq(init.server_info.name, "workspace-tool")
            await s.send_ping()
            await tool_list(s)
            a = Agent(s)
            await every_tool(a)
            await memory_tool(a)
            await fork_tools(a)
            await search_tool(a)
            # Writes through MCP are versions on the HTTP API, and redacted (WSR-1).
            secret = "AKIAIOSFODNN7EXAMPLE"
            w = await a.ok("write_file", path="mem/keys.env", content=f"aws={secret}\n")
            check("redacted" in w, w)
            await a.ok("write_file", path="mem/keys.env", content=f"aws={secret}\nmore\n")
            async with client(args.key) as http:
                got = (await http.get(f"{args.base}/v1/host/workspace/files/mem/keys.env")).json()
                eq(got["version"], 2, "version over HTTP")
                check(secret not in got["content"] and "[REDACTED:aws-access-key-id]" in got["content"], got)
                v1 = (await http.get(f"{args.base}/v1/host/workspace/files/mem/keys.env?version=1")).json()
                check(secret not in v1["content"], v1)
                # and an HTTP write is what MCP reads
                await http.put(f"{args.base}/v1/host/workspace/files/from-http.md", json={"content": "via http"})
            eq(await a.ok("read_file", path="from-http.md"), "via http")

    # Isolation: the sibling tenant sees none of it through any tool.
    async with client(args.evil_key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            e = Agent(s)
            eq(await e.ok("list_directory", path="/workspace"), "Directory is empty: /workspace")
            eq(await e.ok("search_files", path=".", pattern="**"), "No matches found for pattern '**' in .")
            eq(await e.ok("grep", pattern="."), "No matches found for '.' in /workspace")
            check((await e.ok("search", query="deploy")).startswith("No matches found"), "search isolated")
            for tool, targs in [("read_file", {"path": "README.md"}), ("get_file_info", {"path": "README.md"}),
                                ("list_directory", {"path": "src"}), ("delete_file", {"path": "README.md"}),
                                ("edit_file", {"path": "README.md", "old_text": "T", "new_text": "x"}),
                                ("move_file", {"source": "README.md", "destination": "stolen.md"})]:
                text = await e.err(tool, **targs)
                check("TODO" not in text and "not found" in text, f"{tool}: {text}")

    # A read-only credential reads but cannot write through any tool.
    async with client(args.read_only_key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = Agent(s)
            check("TODO one" in await r.ok("read_file", path="README.md"), "read-only reads")
            for tool, targs in [("write_file", {"path": "ro.md", "content": "x"}), ("create_directory", {"path": "ro"}),
                                ("delete_file", {"path": "README.md"}), ("move_file", {"source": "README.md", "destination": "r.md"}),
                                ("edit_file", {"path": "README.md", "old_text": "TODO", "new_text": "x"})]:
                check("workspace:write" in await r.err(tool, **targs), tool)
            for margs in [{"command": "create", "path": "/memories/ro.md", "file_text": "x"},
                          {"command": "delete", "path": "/memories/me.md"}]:
                text, err = await r.call("memory", **margs)
                check(err and "workspace:write" in text, f"memory {margs}: {text}")
            eq((await r.call("memory", command="view", path="/memories/me.md"))[1], False, "read-only views")
            check("TODO one" in await r.ok("read_file", path="README.md"), "unchanged")

    async def http_write(key, path, content):
        async with client(key) as http:
            resp = await http.put(f"{args.base}/v1/host/workspace/files/{path}", json={"content": content})
            check(resp.status_code in (200, 201), f"PUT {path}: {resp.status_code} {resp.text}")

    # Waiting for changes: another client's write ends the wait; read-only keys may wait.
    async with client(args.key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await wait_tool(Agent(s), lambda p, c: http_write(args.key, p, c))
    async with client(args.read_only_key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            text, took = await wait_while(Agent(s), lambda: http_write(args.key, "watch/ro.md", "x"), timeout_seconds=10)
            eq(reported(text), ["put watch/ro.md version 1"], text)
            check(took < 5, f"read-only wait answered after {took:.1f} s")
    # A key scoped to watch/** never sees a change outside it: not while it waits, not later.
    async with client(args.scoped_key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            sc = Agent(s)
            start = cursor_of(await sc.ok("wait_for_changes", timeout_seconds=0))
            text, took = await wait_while(sc, lambda: http_write(args.key, "outside/secret.md", "hidden"),
                                          since=start, timeout_seconds=2)
            check(text.startswith("No changes within 2 s.\n") and "outside" not in text, text)
            check(took >= 1.9, f"a change out of scope ended the wait after {took:.1f} s")

            async def both():
                await http_write(args.key, "outside/secret.md", "hidden 2")
                await http_write(args.key, "watch/in-scope.md", "shown")
            text, _ = await wait_while(sc, both, since=start, timeout_seconds=10)
            eq(reported(text), ["put watch/in-scope.md version 1"], text)
            for extra in [{}, {"prefix": "outside/"}]:
                text = await sc.ok("wait_for_changes", since="2000-01-01T00:00:00Z", timeout_seconds=0, **extra)
                check("outside" not in text, text)


async def stdio_mode(args):
    params = StdioServerParameters(command=args.bin, args=["mcp", "--tenant", "acme", "--workspace", "stdio"],
                                   env={"WORKSPACE_DATA_DIR": args.data_dir, "RUST_LOG": "warn"})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        init = await s.initialize()
        eq(init.server_info.name, "workspace-tool")
        await tool_list(s)
        await every_tool(Agent(s))
        await memory_tool(Agent(s))
        await fork_tools(Agent(s))
        await search_tool(Agent(s))
        # On stdio the other writer is the same session (the database admits one process):
        # its write is answered while the wait runs beside it.
        a = Agent(s)

        async def stdio_write(path, content):
            await a.ok("write_file", path=path, content=content)
        await wait_tool(a, stdio_write)
    # The high-level Client probes the 2026-07-28 `server/discover` first ("auto" mode) and
    # falls back to the initialize handshake, which this server speaks.
    async with Client(params) as c:
        r = await c.call_tool("read_file", {"path": "README.md"})
        check(not r.is_error and "TODO one" in r.content[0].text, r)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["http", "stdio"])
    p.add_argument("--base")
    p.add_argument("--key")
    p.add_argument("--evil-key")
    p.add_argument("--read-only-key")
    p.add_argument("--scoped-key")
    p.add_argument("--bin")
    p.add_argument("--data-dir")
    args = p.parse_args()
    anyio.run(http_mode if args.mode == "http" else stdio_mode, args)
    print(f"mcp client checks passed ({args.mode})")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
