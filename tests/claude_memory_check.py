"""Runs examples/claude_memory.py, the memory-tool example of docs/memory-tool.md, unchanged,
with the official Anthropic Python SDK against a scripted stand-in for the Messages API (the
model is the only fake) and the real workspace server: each `tool_use` of `memory` the "model" sends
must come back as the `tool_result` the workspace answered.

  claude_memory_check.py --base URL --key KEY      (run by local/tests/memory.rs)
"""

import argparse
import importlib.util
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What the "model" does, turn by turn: a tool call, and the tool_result it must get back.
SCRIPT = [
    ({"command": "view", "path": "/memories"},
     "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories", False),
    ({"command": "create", "path": "/memories/user.md", "file_text": "prefers: tea\n"},
     "File created successfully at: /memories/user.md", False),
    ({"command": "create", "path": "/memories/user.md", "file_text": "again"},
     "File /memories/user.md already exists", True),
]


class FakeMessagesApi(BaseHTTPRequestHandler):
    turn = 0
    failures = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        tools = body.get("tools", [])
        if tools != [{"type": "memory_20250818", "name": "memory"}]:
            FakeMessagesApi.failures.append(f"tools declared: {tools}")
        n = FakeMessagesApi.turn
        if n > 0:
            _, want_content, want_error = SCRIPT[n - 1]
            last = body["messages"][-1]["content"][0]
            got = (last.get("type"), last.get("tool_use_id"), last.get("content"), last.get("is_error"))
            want = ("tool_result", f"toolu_{n}", want_content, want_error)
            if got != want:
                FakeMessagesApi.failures.append(f"turn {n}: tool_result {got!r}, expected {want!r}")
        FakeMessagesApi.turn += 1
        if n < len(SCRIPT):
            content = [{"type": "tool_use", "id": f"toolu_{n + 1}", "name": "memory", "input": SCRIPT[n][0]}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": "I'll remember that you prefer tea."}]
            stop = "end_turn"
        out = json.dumps({"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"],
                          "content": content, "stop_reason": stop, "stop_sequence": None,
                          "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--key", required=True)
    a = p.parse_args()
    api = ThreadingHTTPServer(("127.0.0.1", 0), FakeMessagesApi)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    os.environ.update({
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{api.server_address[1]}",
        "ANTHROPIC_API_KEY": "not-a-real-key",
        "WORKSPACE_URL": a.base,
        "WORKSPACE_KEY": a.key,
    })
    spec = importlib.util.spec_from_file_location("claude_memory", os.path.join(ROOT, "examples", "claude_memory.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    reply = example.chat("Remember that I prefer tea")
    api.shutdown()
    if reply != "I'll remember that you prefer tea.":
        FakeMessagesApi.failures.append(f"final reply {reply!r}")
    if FakeMessagesApi.turn != len(SCRIPT) + 1:
        FakeMessagesApi.failures.append(f"{FakeMessagesApi.turn} model turns, expected {len(SCRIPT) + 1}")
    if FakeMessagesApi.failures:
        print("FAILED:\n" + "\n".join(FakeMessagesApi.failures), file=sys.stderr)
        sys.exit(1)
    print("the docs/memory-tool.md example forwarded every memory call and returned every answer")


if __name__ == "__main__":
    main()
