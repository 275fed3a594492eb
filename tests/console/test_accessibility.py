"""Accessibility (issue 27): axe-core, from npm for the tests only (tests/console/package.json,
installed with `npm ci` when missing), reports no serious or critical violation on any
screen, in the light theme and in the dark one (the system's, emulated). The run saves a
screenshot of each screen to target/console-screenshots/.

axe is put into the page with `page.evaluate` of axe.min.js's text: the console's policy
(`script-src 'self'`) blocks an injected <script> element (what `add_script_tag` makes), and
an evaluation through the DevTools protocol is not subject to it, so no context needs
`bypass_csp` and the policy stays whole (and watched) here too."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from conftest import ensure_axe, go, link, open_console, shot, sign_in

AXE_RUN = """async () => {
  const r = await axe.run(document, { resultTypes: ['violations'] });
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                   nodes: v.nodes.slice(0, 5).map((n) => [n.target.join(' '), n.failureSummary]) }));
}"""


class Audit:
    def __init__(self, page, scheme: str):
        self.page = page
        self.scheme = scheme
        self.source = ensure_axe().read_text()
        self.found: dict[str, list] = {}
        self.screens: list[str] = []

    def __call__(self, screen: str) -> None:
        page = self.page
        # Let the screen settle (its calls answered, no "Loading…").
        page.wait_for_load_state("networkidle")
        if not page.evaluate("() => typeof window.axe === 'object'"):
            page.evaluate(self.source)
        bad = page.evaluate(AXE_RUN)
        if bad:
            self.found[screen] = bad
        self.screens.append(screen)
        shot(page, f"{self.scheme}-{screen}")

    def check(self) -> None:
        lines = []
        for screen, bad in self.found.items():
            for v in bad:
                lines.append(f"[{self.scheme}] {screen}: {v['impact']} {v['id']} ({v['help']}): {v['nodes']}")
        assert not lines, "axe found serious or critical violations:\n" + "\n".join(lines)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_screen_has_no_serious_accessibility_violation(ctx, server, scheme):
    # A workspace like a team's (its screenshots go in the README and docs/console.md): agents'
    # memory, plans and run logs, written by two agents and a person.
    ws = f"research-team-{scheme}"
    api = server.api(ws)
    planner = server.api(ws, key=server.agents["planner"])
    researcher = server.api(ws, key=server.agents["researcher"])
    lines = [f"line {i}" for i in range(1, 8)]
    api.put("memory/notes.md", "\n".join(lines) + "\n")
    researcher.put("memory/sources.md", "".join(f"- source {i}: https://example.org/{i}\n" for i in range(40)))
    researcher.put("memory/preferences.md", "# Preferences\n- cite primary sources\n- British spelling\n")
    planner.put("plans/release.md", "# Release plan\n1. freeze\n2. test\n3. ship\n")
    planner.put("runs/2026-11-24/summary.md", "# Run summary\nAll 12 tasks done.\n")
    researcher.put("runs/2026-11-24/findings.json", '{"findings": 3}\n')
    api.put("README.md", "# Research team workspace\n")
    planner.put("plan.md", "plan v1\n")
    planner.put("plan.md", "plan v2\nwith more\n")
    api.json("POST", api.WS + "/snapshots", {"label": "before the run", "keep": True})
    fork_id = api.json("POST", api.WS + "/forks", {"label": "sub-agent"})["workspaceId"]
    server.api(fork_id).put("plan.md", "plan by the fork\n")
    planner.put("plan.md", "plan by the parent\n")
    reg = api.json("POST", "/workspaces", {"workspaceScope": "local", "localPath": f"/home/{ws}"})["workspaceId"]
    api.json("POST", f"/workspaces/{reg}/artifacts", {
        "sessionId": "session-1", "artifactType": "session_history",
        "messages": [{"role": "user", "content": "hello", "timestamp": "2026-01-01T00:00:00Z", "messageId": "m1"},
                     {"role": "assistant", "content": "hi", "timestamp": "2026-01-01T00:00:01Z", "messageId": "m2"}],
    })
    api.json("POST", f"/workspaces/{reg}/artifacts", {
        "sessionId": "session-1", "artifactType": "tool_output", "artifactName": "out.txt",
        "contentType": "text/plain", "contentBase64": "aGVsbG8K",
    })

    page = ctx(color_scheme=scheme).new_page()
    audit = Audit(page, scheme)
    open_console(page, server)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    audit("sign-in")
    sign_in(page, server, ws)
    expect(page.get_by_role("link", name="plan.md")).to_be_visible()
    assert page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
    # An agent writes meanwhile: the list says so (the notice is audited too).
    expect(page.get_by_text("Live: changes show as they happen")).to_be_visible()
    researcher.put("agent-log.md", "an agent was here\n")
    notice = page.get_by_role("status").filter(has_text="agent-log.md was changed").get_by_role("button", name="Refresh the list")
    expect(notice).to_be_visible()
    audit("files-notice")
    notice.click()
    expect(notice).to_have_count(0)
    audit("files")

    go(page, link("file", path="memory/notes.md"))
    expect(page.get_by_role("region", name="File content")).to_be_visible()
    audit("file")
    page.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Content of memory/notes.md (version 1)")
    changed = list(lines)
    changed[3] = "line 4 by me"
    editor.fill("\n".join(changed) + "\n")
    audit("edit")
    theirs = list(lines)
    theirs[3] = "line 4 by the agent"
    researcher.put("memory/notes.md", "\n".join(theirs) + "\n")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("Conflict: someone else saved"))).to_be_visible()
    expect(page.get_by_role("button", name="Save merged")).to_be_visible()
    audit("conflict")
    page.get_by_role("radio", name="Take yours").check()
    audit("conflict-chosen")

    go(page, link("history", path="plan.md"))
    page.get_by_label("From version").select_option("1")
    page.get_by_role("button", name="Show diff").click()
    expect(page.get_by_role("region", name="Diff")).to_be_visible()
    audit("history")

    page.get_by_role("navigation", name="Screens").get_by_role("link", name="Snapshots").click()
    expect(page.get_by_role("link", name="before the run")).to_be_visible()
    audit("snapshots")
    page.get_by_role("link", name="before the run").click()
    page.get_by_role("button", name="Preview restore").click()
    expect(page.get_by_role("region", name="Restoring would change")).to_be_visible()
    audit("snapshot")

    page.get_by_role("navigation", name="Screens").get_by_role("link", name="Changes").click()
    expect(page.get_by_role("table", name="Every committed change, newest first").get_by_role("link").first).to_be_visible()
    audit("changes")

    page.get_by_role("navigation", name="Screens").get_by_role("link", name="Forks").click()
    expect(page.get_by_role("link", name="sub-agent")).to_be_visible()
    audit("forks")
    page.get_by_role("link", name="sub-agent").click()
    page.get_by_role("button", name="Check merge").click()
    expect(page.get_by_role("region", name="Conflicts to resolve")).to_be_visible()
    audit("fork")

    page.get_by_role("navigation", name="Screens").get_by_role("link", name="Sessions").click()
    page.get_by_role("link", name=reg).click()
    expect(page.get_by_role("link", name="session-1")).to_be_visible()
    audit("sessions")
    page.get_by_role("link", name="session-1").click()
    page.get_by_role("button", name="out.txt").click()
    expect(page.locator("pre.artifact")).to_have_text("hello\n")
    audit("session")

    go(page, link("new"))
    expect(page.get_by_role("heading", name="New file")).to_be_visible()
    audit("new-file")

    assert len(audit.screens) == 16
    audit.check()


def test_every_screen_reads_at_200_percent_zoom(ctx, server):
    # 200% zoom of a 1280×800 window is a 640×400 CSS-pixel viewport: every screen reflows
    # into it with no sideways scrolling (WCAG 1.4.10), its controls still reachable.
    ws = "zoom-200"
    api = server.api(ws)
    api.put("memory/a-rather-long-file-name-that-has-to-wrap-somewhere-in-a-narrow-view.md", "x\n" * 40)
    api.put("plan.md", "plan v1\n")
    api.put("plan.md", "plan v2\n")
    snap = api.json("POST", api.WS + "/snapshots", {"label": "checkpoint"})["snapshotId"]
    fork = api.json("POST", api.WS + "/forks", {"label": "sub-agent"})["forkId"]
    page = ctx(viewport={"width": 640, "height": 400}).new_page()
    sign_in(page, server, ws)
    screens = [
        ("files", link("files")),
        ("file", link("file", path="plan.md")),
        ("history", link("history", path="plan.md")),
        ("snapshots", link("snapshots")),
        ("snapshot", link("snapshot", id=snap)),
        ("changes", link("changes")),
        ("forks", link("forks")),
        ("fork", link("fork", id=fork)),
        ("sessions", link("sessions")),
        ("new", link("new")),
    ]
    wide = []
    for name, hash_ in screens:
        go(page, hash_)
        page.locator("main h1").first.wait_for()
        # Let the screen's calls answer and render (the event stream keeps one request open,
        # so the network is never idle).
        page.wait_for_timeout(400)
        over = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        if over > 1:
            wide.append(f"{name}: {over}px wider than the viewport")
        shot(page, f"zoom-200-{name}")
    assert not wide, "screens that scroll sideways at 200% zoom:\n" + "\n".join(wide)
    # The navigation and sign-out stay reachable.
    expect(page.get_by_role("navigation", name="Screens").get_by_role("link", name="Files")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
