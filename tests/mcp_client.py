"""Drives the workspace MCP server through the official Python MCP SDK (a real client) and
asserts what an agent sees: the tools, and the files as resources (listing in pages, reads
of text, blobs, versions and snapshots, templates, completion, scopes, subscriptions and
their notifications, logging/setLevel). Run by local/tests/mcp.rs against the real
`workspace-local`:

  http:  mcp_client.py http  --base URL --key K --evil-key K2 --read-only-key K3 --scoped-key K4
  stdio: mcp_client.py stdio --bin PATH --data-dir DIR

Exits non-zero with the first failed check."""

import argparse
import base64
import sys
import time
import warnings
from contextlib import asynccontextmanager

import anyio
from mcp import Client, ClientSession, MCPDeprecationWarning, MCPError, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# resources/subscribe and logging/setLevel are 2025-era methods (this server speaks
# 2025-11-25); the SDK warns that the 2026-07-28 revision drops them.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

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
    "commit": (["operations"], {"operations"}),
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

    # commit: several changes in one step, or none
    await a.ok("write_file", path="c/1.md", content="one")
    await a.ok("write_file", path="c/2.md", content="two")
    eq(await a.ok("commit", operations=[
        {"op": "write", "path": "c/3.md", "content": "three", "expected_version": 0},
        {"op": "delete", "path": "c/2.md", "expected_version": 1},
        {"op": "move", "source": "/workspace/c/1.md", "destination": "c/4.md"},
    ]), "Committed 3 operation(s):\nwrote c/3.md version 1\ndeleted c/2.md\nmoved /workspace/c/1.md to c/4.md version 1")
    eq(await a.err("commit", operations=[
        {"op": "delete", "path": "c/4.md"},
        {"op": "write", "path": "c/3.md", "content": "lost", "expected_version": 0},
    ]), "Error: Version conflict on c/3.md: the current version is 1, not the expected 0; read the file again and retry. Nothing was applied.")
    eq(await a.ok("read_file", path="c/4.md"), "one")
    eq(await a.ok("commit", operations=[{"op": "delete", "path": "c/3.md"}, {"op": "delete", "path": "c/4.md"}]),
       "Committed 2 operation(s):\ndeleted c/3.md\ndeleted c/4.md")

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


# Resources, completion, subscriptions and logging (shared/mcp/src/resources.rs,
# completion.rs, sessions.rs).

FILE_T = "workspace:///{+path}"
VERSION_T = "workspace:///{+path}{?version}"
SNAPSHOT_T = "workspace://snapshot/{snapshot}/{+path}"
NOT_FOUND, ACCESS_DENIED, INVALID_PARAMS = -32002, -32003, -32602
UPDATED, LIST_CHANGED = "notifications/resources/updated", "notifications/resources/list_changed"
# 100 files and a directory of 5: listing takes two pages, and `res/` completes to 101
# entries, one more than an answer holds. Sorted, as the server sorts paths.
RES_FILES = [f"res/f{i:03}.txt" for i in range(100)] + [f"res/sub/s{i}.txt" for i in range(5)]


def uri(path):
    return f"workspace:///{path}"


async def fails(call, code, what):
    """Awaits `call`, which must fail with the JSON-RPC error `code`; its message."""
    try:
        got = await call
    except MCPError as e:
        eq(e.code, code, f"{what}: {e.message}")
        return e.message
    raise AssertionError(f"{what} should fail with {code}, answered {got!r}")


def capabilities(init):
    c = init.capabilities
    check(c.resources is not None and c.resources.subscribe and c.resources.list_changed, f"resources: {c}")
    check(c.completions is not None and c.logging is not None, f"completions, logging: {c}")


class Inbox:
    """A session's message_handler: the resource notifications it received, as (method, uri)."""

    def __init__(self):
        self.got = []

    async def __call__(self, message):
        method = getattr(message, "method", "")
        if method.startswith("notifications/resources/"):
            self.got.append((method, getattr(message.params, "uri", None)))

    async def expect(self, want, what, within=2.0, then=0.25):
        """Exactly `want` arrived: waits up to `within` s for that many, then `then` s more
        for any extra. Forgets them."""
        deadline = time.monotonic() + within
        while len(self.got) < len(want) and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        await anyio.sleep(then)
        got, self.got = self.got, []
        eq(got, want, what)


async def all_resources(s):
    """resources/list walked page by page: (every resource, pages). Each page holds at most
    100; the whole is sorted by path, no path twice, no directory marker, each resource
    named and titled after its path."""
    out, cursor, pages = [], None, 0
    while True:
        page = await s.list_resources(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        pages += 1
        check(len(page.resources) <= 100, f"page {pages} holds {len(page.resources)}")
        out += page.resources
        if page.next_cursor is None:
            break
        check(page.next_cursor != cursor and pages < 20, f"cursor {page.next_cursor!r} after page {pages}")
        cursor = page.next_cursor
    names = [r.name for r in out]
    eq(names, sorted(set(names)), "listed by path, each once")
    for r in out:
        eq((r.uri, r.title), (uri(r.name), r.name.rsplit("/", 1)[-1]), r.name)
        check(not r.name.endswith("/.keep"), f"a directory marker listed: {r.name}")
        check(r.mime_type and r.size is not None and r.annotations and r.annotations.last_modified, r)
    return out, pages


async def listing(s, expected):
    """1: exactly the >100 live files `expected` (no markers), over several pages; a cursor
    resources/list did not answer is -32602. The resources, by path."""
    listed, pages = await all_resources(s)
    names = [r.name for r in listed]
    check(pages >= 2, f"{len(names)} resources in {pages} page(s)")
    eq(names, expected, "every live file listed")
    eq([n for n in names if n.startswith("res/")], RES_FILES, "res/")
    for bogus in ["bogus", "", base64.urlsafe_b64encode(b"x1:res/f001.txt").decode()]:
        await fails(s.list_resources(params=types.PaginatedRequestParams(cursor=bogus)), INVALID_PARAMS, f"cursor {bogus!r}")
    return {r.name: r for r in listed}


async def reads(s, write):
    """2: a text file with its type, an older version, a percent-encoded path; a missing
    file or version is -32002, a URI not of this server's forms -32602."""
    await write("txt/note.md", "one\n")
    await write("txt/note.md", "two\n")
    got = (await s.read_resource(uri("txt/note.md"))).contents
    eq(len(got), 1, "one content")
    check(isinstance(got[0], types.TextResourceContents), got)
    eq((got[0].uri, got[0].mime_type, got[0].text), (uri("txt/note.md"), "text/markdown", "two\n"), "text read")
    old = (await s.read_resource(uri("txt/note.md?version=1"))).contents[0]
    eq((old.uri, old.text), (uri("txt/note.md?version=1"), "one\n"), "version 1")
    eq((await s.read_resource("workspace:///txt/n%6Fte.md")).contents[0].text, "two\n", "percent-encoded")
    for missing in ["txt/none.md", "txt/note.md?version=3", "no/such/dir.md"]:
        await fails(s.read_resource(uri(missing)), NOT_FOUND, missing)
    for bad in ["test://static-text", "workspace:///../etc/passwd", uri("txt/note.md?version=0"),
                "workspace://other/txt/note.md", "workspace://snapshot/only-an-id", "workspace:///"]:
        await fails(s.read_resource(bad), INVALID_PARAMS, bad)


async def templates(s):
    """3: exactly the three templates."""
    got = await s.list_resource_templates()
    eq([(t.uri_template, t.name) for t in got.resource_templates],
       [(FILE_T, "file"), (VERSION_T, "file-version"), (SNAPSHOT_T, "snapshot-file")], "templates")
    eq(got.next_cursor, None, "one page of templates")


async def completes(s, template, typed, name="path", context=None):
    """completion/complete of a template's argument: (values, total, hasMore)."""
    ref = types.ResourceTemplateReference(type="ref/resource", uri=template)
    c = (await s.complete(ref, {"name": name, "value": typed}, context)).completion
    return c.values, c.total, c.has_more


async def completion(s):
    """5: the entries one level under what was typed (directories end in /), at most 100,
    with the total and hasMore past that; nothing for what can start no path; a template's
    snapshot path needs the snapshot; an unknown prompt or template is -32602."""
    res = [p for p in RES_FILES if "/sub/" not in p]
    eq(await completes(s, FILE_T, "res/"), (res, 101, True), "res/: 100 of 101")
    eq(await completes(s, VERSION_T, "res/s"), (["res/sub/"], 1, False), "res/s")
    eq(await completes(s, FILE_T, "res/sub"), (["res/sub/"], 1, False), "res/sub")
    eq(await completes(s, FILE_T, "res/sub/"), (RES_FILES[100:], 5, False), "res/sub/")
    eq(await completes(s, FILE_T, "res/f09"), (res[90:], 10, False), "res/f09")
    top, total, more = await completes(s, FILE_T, "")
    check({"res/", "txt/", "docs/", "README.md"} <= set(top) and (total, more) == (len(top), False), top)
    check(all(v.endswith("/") != ("/" not in v) for v in top), f"one level: {top}")
    for nothing in ["nope/", "res/zz", "../", "/etc"]:
        eq(await completes(s, FILE_T, nothing), ([], 0, False), nothing)
    eq(await completes(s, FILE_T, "res/", name="version"), ([], 0, False), "no values for version")
    eq(await completes(s, SNAPSHOT_T, "res/"), ([], 0, False), "which snapshot's paths is not known")
    await fails(s.complete(types.ResourceTemplateReference(type="ref/resource", uri="workspace:///{x}"),
                           {"name": "path", "value": ""}), INVALID_PARAMS, "unknown template")
    await fails(s.complete(types.PromptReference(type="ref/prompt", name="summarize"), {"name": "topic", "value": ""}),
                INVALID_PARAMS, "an unknown prompt")


async def logging_level(s):
    """8: logging/setLevel takes RFC 5424's levels and refuses others."""
    check(isinstance(await s.set_logging_level("info"), types.EmptyResult), "setLevel info")
    # The SDK's types admit only valid levels: build the request unchecked.
    loud = types.SetLevelRequest(params=types.SetLevelRequestParams.model_construct(level="loud"))
    await fails(s.send_request(loud, types.EmptyResult), INVALID_PARAMS, "level loud")


async def resources_over_stdio(s, a, inbox):
    """Resources and completion on stdio, where every write is a tool call. Subscriptions
    first: the process's one client has not listed the resources yet."""
    # 7: a subscribed file's writes are notified (its creation too); after unsubscribing
    # they are not; a creation changes the list only once the client listed it.
    await s.subscribe_resource(uri("sub/s.md"))
    await a.ok("write_file", path="sub/s.md", content="1")
    await inbox.expect([(UPDATED, uri("sub/s.md"))], "subscribed file created (not listed: no list_changed)")
    await a.ok("write_file", path="sub/s.md", content="2")
    await inbox.expect([(UPDATED, uri("sub/s.md"))], "subscribed file written")
    await s.unsubscribe_resource(uri("sub/s.md"))
    await a.ok("write_file", path="sub/s.md", content="3")
    await a.ok("write_file", path="sub/other.md", content="x")
    await inbox.expect([], "unsubscribed; a creation before listing", within=0, then=0.5)
    await s.list_resources()
    await a.ok("write_file", path="sub/new.md", content="x")
    await inbox.expect([(LIST_CHANGED, None)], "created after listing")
    await a.ok("write_file", path="sub/new.md", content="y")
    await a.ok("delete_file", path="sub/new.md")
    await inbox.expect([(LIST_CHANGED, None)], "an update is no list change, a delete is")
    await fails(s.subscribe_resource(uri("sub/s.md?version=1")), INVALID_PARAMS, "a version never changes")

    for p in RES_FILES:
        await a.ok("write_file", path=p, content=f"{p}\n")
    # docs/ holds only its marker (every_tool made it), which is no resource.
    eq(await a.ok("create_directory", path="docs"), "Directory already exists: docs")
    found = await a.ok("search_files", path=".", pattern="**", max_results=1000)
    files = [line[len("[FILE] "):] for line in found.split("\n") if line.startswith("[FILE] ")]
    await listing(s, sorted(files))
    await reads(s, lambda p, c: a.ok("write_file", path=p, content=c))
    await templates(s)
    await completion(s)
    await logging_level(s)
    inbox.got.clear()


async def resources_over_http(args, client):
    """Resources, completion, snapshots, scopes and subscriptions over Streamable HTTP; the
    workspace's files are written through the HTTP file API."""
    base, url = args.base, f"{args.base}/mcp"

    @asynccontextmanager
    async def session(key, inbox=None):
        async with client(key) as hc, streamable_http_client(url, http_client=hc) as (read, write):
            async with ClientSession(read, write, message_handler=inbox) as s:
                capabilities(await s.initialize())
                yield s

    async with client(args.key) as http:
        async def put(path, content=None, raw=None):
            body = {"content": content} if raw is None else {"contentBase64": base64.b64encode(raw).decode()}
            r = await http.put(f"{base}/v1/host/workspace/files/{path}", json=body)
            check(r.status_code in (200, 201), f"PUT {path}: {r.status_code} {r.text}")

        async def live_files():
            """The HTTP listing (markers included): {path: file}."""
            out, token = {}, None
            while True:
                page = (await http.get(f"{base}/v1/host/workspace/files", params={"nextToken": token} if token else {})).json()
                out.update((f["path"], f) for f in page["files"])
                token = page.get("nextToken")
                if not token:
                    return out

        raw = bytes([0, 0xFF, 0xFE, 0x80]) + b" not UTF-8\x00"
        async with session(args.key) as s:
            async with anyio.create_task_group() as tg:
                for p in RES_FILES:
                    tg.start_soon(put, p, f"{p}\n")
            files = await live_files()
            check("docs/.keep" in files, "a directory marker (every_tool made docs/) to leave out")
            listed = await listing(s, sorted(p for p in files if not p.endswith("/.keep")))
            for name, r in listed.items():
                f = files[name]
                eq((r.size, r.mime_type, r.annotations.last_modified), (f["size"], f["contentType"], f["updatedAt"]), name)
            await reads(s, put)
            # Bytes that are not UTF-8 are a base64 blob (a tool cannot write them: HTTP only).
            await put("bin/blob.bin", raw=raw)
            blob = (await s.read_resource(uri("bin/blob.bin"))).contents[0]
            check(isinstance(blob, types.BlobResourceContents), blob)
            eq((blob.uri, blob.mime_type, base64.b64decode(blob.blob)), (uri("bin/blob.bin"), "application/octet-stream", raw))
            await templates(s)
            await completion(s)
            await logging_level(s)

            # 4: a snapshot reads as it was pinned, whatever the live file became.
            await put("snap/pinned.md", "before\n")
            made = await http.post(f"{base}/v1/host/workspace/snapshots", json={})
            eq(made.status_code, 201, made.text)
            snap = made.json()["snapshotId"]
            await put("snap/pinned.md", "after\n")
            await put("snap/later.md", "later\n")
            pinned = f"workspace://snapshot/{snap}/snap/pinned.md"
            got = (await s.read_resource(pinned)).contents[0]
            eq((got.uri, got.mime_type, got.text), (pinned, "text/markdown", "before\n"), "pinned")
            eq((await s.read_resource(uri("snap/pinned.md"))).contents[0].text, "after\n", "live")
            await fails(s.read_resource(f"workspace://snapshot/{snap}/snap/later.md"), NOT_FOUND, "created after it")
            await fails(s.read_resource("workspace://snapshot/s0-none/snap/pinned.md"), NOT_FOUND, "no such snapshot")
            # 5: a snapshot's paths and the snapshot ids complete.
            eq(await completes(s, SNAPSHOT_T, "snap/", context={"snapshot": snap}), (["snap/pinned.md"], 1, False),
               "paths in the snapshot")
            ids, total, more = await completes(s, SNAPSHOT_T, snap[:6], name="snapshot")
            check(snap in ids and all(i.startswith(snap[:6]) for i in ids) and (total, more) == (len(ids), False), ids)
            eq(await completes(s, SNAPSHOT_T, "zz", name="snapshot"), ([], 0, False), "no such id")
            eq(await completes(s, SNAPSHOT_T, "", context={"snapshot": "s0-none"}), ([], 0, False),
               "an unknown snapshot's paths complete to nothing")

        # 6: the read-only key lists and reads all of it; the key scoped to watch/** lists
        # only watch/ and is refused (-32003) past it; another tenant's key sees nothing.
        async with session(args.read_only_key) as ro:
            await listing(ro, sorted(p for p in await live_files() if not p.endswith("/.keep")))
            eq((await ro.read_resource(uri("txt/note.md?version=1"))).contents[0].text, "one\n", "read-only reads")
            eq(base64.b64decode((await ro.read_resource(uri("bin/blob.bin"))).contents[0].blob), raw, "read-only blob")
            eq((await ro.read_resource(pinned)).contents[0].text, "before\n", "read-only snapshot")
        async with session(args.scoped_key) as sc:
            watch = [p for p in sorted(await live_files()) if p.startswith("watch/")]
            check(len(watch) >= 2, f"files in scope: {watch}")
            got, _ = await all_resources(sc)
            eq([r.name for r in got], watch, "the scoped key lists its globs' files")
            eq((await sc.read_resource(uri(watch[0]))).contents[0].uri, uri(watch[0]), "read in scope")
            await fails(sc.read_resource(uri("watch/none.md")), NOT_FOUND, "missing in scope")
            for outside in [uri("txt/note.md"), uri("txt/note.md?version=1"), pinned]:
                message = await fails(sc.read_resource(outside), ACCESS_DENIED, outside)
                check(message.startswith("Access denied") and "watch/**" in message, message)
            eq(await completes(sc, FILE_T, ""), (["watch/"], 1, False), "scoped completion")
            eq(await completes(sc, FILE_T, "txt/"), ([], 0, False), "scoped completion outside")
        async with session(args.evil_key) as ev:
            page = await ev.list_resources()
            eq((page.resources, page.next_cursor), ([], None), "another tenant lists nothing")
            for theirs in [uri("txt/note.md"), uri("txt/note.md?version=1"), uri("bin/blob.bin"), pinned]:
                await fails(ev.read_resource(theirs), NOT_FOUND, f"another tenant reads {theirs}")
            eq(await completes(ev, FILE_T, ""), ([], 0, False), "another tenant completes nothing")
            check(snap not in (await completes(ev, SNAPSHOT_T, "", name="snapshot"))[0], "nor snapshot ids")

        # 7: subscriptions ride the session's GET stream. The main key's session and the
        # scoped key's listen at once; another tenant's session, subscribed to the same
        # path and listing, hears nothing of this workspace.
        await put("live/x.md", "1")
        mi, si, ei = Inbox(), Inbox(), Inbox()
        async with session(args.key, mi) as s, session(args.scoped_key, si) as sc, session(args.evil_key, ei) as ev:
            await s.subscribe_resource(uri("live/x.md"))
            await sc.list_resources()
            await sc.subscribe_resource(uri("watch/w.md"))  # not there yet
            await ev.list_resources()
            await ev.subscribe_resource(uri("live/x.md"))
            await fails(sc.subscribe_resource(uri("live/x.md")), ACCESS_DENIED, "scoped key subscribes outside")
            await fails(s.subscribe_resource(uri("live/x.md?version=1")), INVALID_PARAMS, "a version never changes")
            await fails(s.subscribe_resource("test://watched-resource"), INVALID_PARAMS, "a foreign URI")
            await put("live/x.md", "2")
            await mi.expect([(UPDATED, uri("live/x.md"))], "the subscribed file, written over HTTP: once")
            await s.unsubscribe_resource(uri("live/x.md"))
            await put("live/x.md", "3")
            await mi.expect([], "unsubscribed", within=0, then=1.0)
            await s.list_resources()
            await put("outside/created.md", "x")
            await mi.expect([(LIST_CHANGED, None)], "a file created after listing")
            await put("watch/w.md", "w")
            await mi.expect([(LIST_CHANGED, None)], "another created")
            await si.expect([(UPDATED, uri("watch/w.md")), (LIST_CHANGED, None)],
                            "scoped: its subscribed file created, nothing of live/ or outside/", then=0)
            await put("watch/w.md", "w2")
            await si.expect([(UPDATED, uri("watch/w.md"))], "scoped: its file updated")
            eq(mi.got, [], "an update is no list change")
            resp = await http.delete(f"{base}/v1/host/workspace/files/live/x.md")
            eq(resp.status_code, 204, resp.text)
            await mi.expect([(LIST_CHANGED, None)], "a file deleted after listing")
            eq(si.got, [], "scoped: a delete outside its globs")
            eq(ei.got, [], "another tenant hears nothing")
            await s.unsubscribe_resource(uri("never/subscribed.md"))  # nothing to do, no error


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

    await resources_over_http(args, client)


async def stdio_mode(args):
    params = StdioServerParameters(command=args.bin, args=["mcp", "--tenant", "acme", "--workspace", "stdio"],
                                   env={"WORKSPACE_DATA_DIR": args.data_dir, "RUST_LOG": "warn"})
    inbox = Inbox()
    async with stdio_client(params) as (read, write), ClientSession(read, write, message_handler=inbox) as s:
        init = await s.initialize()
        eq(init.server_info.name, "workspace-tool")
        capabilities(init)
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
        await resources_over_stdio(s, a, inbox)
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
