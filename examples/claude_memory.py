"""Durable, shared memory for Claude: every call of Claude's memory tool is executed by
Agent Workspace, so the memory survives redeploys and every worker of the workspace sees
the same one (versioned, redacted, announced like any file).

  pip install anthropic
  WORKSPACE_URL=http://127.0.0.1:8787 WORKSPACE_KEY=<workspace key> ANTHROPIC_API_KEY=<key> \
    python examples/claude_memory.py "Remember that I prefer tea"
"""

import json
import os
import sys
import urllib.request

import anthropic

WORKSPACE_URL = os.environ.get("WORKSPACE_URL", "http://127.0.0.1:8787")
WORKSPACE_KEY = os.environ["WORKSPACE_KEY"]
MODEL = os.environ.get("CLAUDE_MODEL", "claude-sonnet-4-5")


def run_memory(tool_input: dict) -> dict:
    """One memory tool call, executed by the workspace: {"content": ..., "isError": ...}.
    A 401/403/5xx raises: that is the deployment's problem, not the model's."""
    request = urllib.request.Request(
        f"{WORKSPACE_URL}/v1/host/workspace/memory",
        data=json.dumps(tool_input).encode(),
        headers={"Authorization": f"Bearer {WORKSPACE_KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def chat(prompt: str) -> str:
    client = anthropic.Anthropic()
    messages = [{"role": "user", "content": prompt}]
    while True:
        response = client.beta.messages.create(
            model=MODEL,
            max_tokens=2048,
            messages=messages,
            tools=[{"type": "memory_20250818", "name": "memory"}],
            betas=["context-management-2025-06-27"],
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return "".join(b.text for b in response.content if b.type == "text")
        results = []
        for block in response.content:
            if block.type == "tool_use" and block.name == "memory":
                answer = run_memory(block.input)
                results.append({
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": answer["content"],
                    "is_error": answer["isError"],
                })
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    print(chat(" ".join(sys.argv[1:]) or "What do you remember about me?"))
