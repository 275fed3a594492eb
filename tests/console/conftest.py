"""The console's browser tests (issue 27): Playwright for Python driving Debian's chromium,
headless, against the local server (`workspace-local`) as a real process.

One server for the whole run, on a free loopback port over its own temporary data
directory, with keys made for this run (random, so a key found anywhere it must not be is
certainly a leak). Each test works in a workspace of its own: the tenant-wide key names it
in the sign-in form's "Workspace" field (or a bound key is bound to it), so tests never see
each other's files.

Every browser context a test opens goes through `ctx`, which watches it for the whole test:
dialogs, uncaught errors, console errors, Content-Security-Policy violations (console
messages and `securitypolicyviolation` events, recorded by an init script, which runs
whatever the policy), a key in any request URL or in a cookie, a console answer without the
policy header, and a flag a payload that ran would set. Any of these fails the test.

The binary is `$WORKSPACE_LOCAL_BIN` (the cargo wrapper `tests/tests/console_browser.rs`
builds it), else `target/debug/workspace-local`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCREENSHOTS = ROOT / "target" / "console-screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Small, so an upload of a few hundred KiB takes the two-step upload.
MAX_FILE_BYTES = 65536
TENANT = "acme"
# The flag any payload of the hostile fixtures sets if it ever runs.
PWNED = "__pwned"
VIEWPORT = {"width": 1100, "height": 800}
TIMEOUT_MS = 15_000
expect.set_options(timeout=TIMEOUT_MS)


def _key(name: str) -> str:
    return f"console-{name}-{secrets.token_hex(12)}"


@dataclass
class Server:
    base: str
    tenant_key: str
    # Managed keys, made with `workspace-local keys create` before the start.
    hostile_key: str
    hostile_principal: str
    read_only_key: str
    # Tenant-wide managed keys of two agents (principals agent:planner, agent:researcher).
    agents: dict
    # Keys bound to one workspace each (WORKSPACE_API_KEYS): name -> key.
    bound: dict
    process: subprocess.Popen
    log: list = field(default_factory=list)

    def keys(self) -> list[str]:
        return [self.tenant_key, self.hostile_key, self.read_only_key, *self.agents.values(), *self.bound.values()]

    def api(self, workspace: str | None = None, key: str | None = None) -> "Api":
        return Api(self.base, key or self.tenant_key, workspace)


class ApiError(Exception):
    def __init__(self, status: int, body: bytes):
        super().__init__(f"{status}: {body[:500]!r}")
        self.status = status
        self.body = body


class Api:
    """The public HTTP API through urllib, as another client (an agent) would call it."""

    FILES = "/v1/host/workspace/files"
    WS = "/v1/host/workspace"

    def __init__(self, base: str, key: str, workspace: str | None):
        self.base = base
        self.key = key
        self.workspace = workspace

    def call(self, method: str, url: str, body=None, headers=None, raw: bytes | None = None):
        """(status, headers, body bytes); a status of 400 or more raises ApiError."""
        h = {"Authorization": f"Bearer {self.key}"}
        if self.workspace:
            h["X-Workspace-Id"] = self.workspace
        data = raw
        if body is not None:
            h["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        h.update(headers or {})
        full = url if url.startswith("http") else self.base + url
        req = urllib.request.Request(full, method=method, data=data, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, e.read()) from None

    def json(self, method: str, url: str, body=None, headers=None):
        _, _, b = self.call(method, url, body=body, headers=headers)
        return json.loads(b) if b else None

    @staticmethod
    def path_url(base: str, path: str) -> str:
        return base + "/" + "/".join(urllib.parse.quote(s, safe="") for s in path.split("/"))

    def put(self, path: str, content: str, content_type: str | None = None, if_match=None):
        body = {"content": content}
        if content_type:
            body["contentType"] = content_type
        headers = {"If-Match": if_match} if if_match else None
        return self.json("PUT", self.path_url(self.FILES, path), body, headers)

    def get(self, path: str, **query):
        q = ("?" + urllib.parse.urlencode(query)) if query else ""
        return self.json("GET", self.path_url(self.FILES, path) + q)

    def content(self, path: str) -> str:
        return self.get(path)["content"]

    def status(self, path: str) -> int:
        try:
            self.call("GET", self.path_url(self.FILES, path))
            return 200
        except ApiError as e:
            return e.status

    def bytes_of(self, path: str) -> bytes:
        """A file's bytes, inline or through its download URL."""
        f = self.get(path)
        if "download" in f:
            d = f["download"]
            req = urllib.request.Request(d["url"], method=d.get("method", "GET"), headers=d.get("headers") or {})
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.read()
        if "contentBase64" in f:
            import base64

            return base64.b64decode(f["contentBase64"])
        return f["content"].encode()


def _start_server() -> Server:
    binary = Path(os.environ.get("WORKSPACE_LOCAL_BIN") or ROOT / "target" / "debug" / "workspace-local")
    assert binary.exists(), f"{binary} is missing: `cargo build -p workspace-local` (or set WORKSPACE_LOCAL_BIN)"
    data = Path(tempfile.mkdtemp(prefix="console-tests-"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "WORKSPACE_DATA_DIR": str(data),
        "RUST_LOG": "warn",
        "NO_COLOR": "1",
    }

    def managed(*args: str) -> str:
        out = subprocess.run(
            [str(binary), "keys", "create", "--tenant", TENANT, *args],
            env=env, capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 0, f"keys create {args}: {out.stdout}{out.stderr}"
        return out.stdout.splitlines()[0].strip()

    # A principal that is markup: every place a principal shows must show it as text.
    hostile_principal = f'<img src=x onerror="window.{PWNED}=1;alert(7)">'
    hostile_key = managed("--principal", hostile_principal)
    read_only_key = managed("--read-only", "--principal", "reader")
    agents = {name: managed("--principal", f"agent:{name}") for name in ("planner", "researcher")}
    tenant_key = _key("tenant")
    bound = {"bound-one": _key("bound")}
    spec = ",".join([f"{tenant_key}={TENANT}", *(f"{k}={TENANT}/{w}" for w, k in bound.items())])
    env.update(
        WORKSPACE_ADDR="127.0.0.1:0",
        WORKSPACE_API_KEYS=spec,
        WORKSPACE_MAX_FILE_BYTES=str(MAX_FILE_BYTES),
    )
    proc = subprocess.Popen(
        [str(binary)], env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    log: list[str] = []
    found: list[str] = []

    def read(stream, tag):
        for line in stream:
            log.append(f"{tag}{line.rstrip()}")
            m = re.match(r"workspace-local listening on (http://\S+)", line)
            if m:
                found.append(m.group(1))

    threading.Thread(target=read, args=(proc.stdout, ""), daemon=True).start()
    threading.Thread(target=read, args=(proc.stderr, "stderr: "), daemon=True).start()
    server = Server(found[0] if found else "", tenant_key, hostile_key, hostile_principal,
                    read_only_key, agents, bound, proc, log)
    server.data = data  # type: ignore[attr-defined]
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        if found:
            try:
                with urllib.request.urlopen(found[0] + "/health", timeout=2) as r:
                    if r.status == 200:
                        server.base = found[0]
                        return server
            except OSError:
                pass
        time.sleep(0.05)
    _stop_server(server)
    raise AssertionError("workspace-local did not become healthy:\n" + "\n".join(log))


def _stop_server(server: Server) -> None:
    p = server.process
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
    shutil.rmtree(getattr(server, "data", ""), ignore_errors=True)


@pytest.fixture(scope="session")
def server():
    s = _start_server()
    try:
        yield s
    finally:
        _stop_server(s)


@pytest.fixture(scope="session")
def browser():
    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: `apt-get install -y chromium` (tests/run.sh installs it)"
    )
    # launch() gives the browser a fresh temporary profile (user data dir) of its own,
    # removed when it closes; a persistent context would allow only one context.
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


_ws_counter = [0]


@pytest.fixture
def ws(request) -> str:
    """A workspace of this test's own."""
    _ws_counter[0] += 1
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return f"t{_ws_counter[0]}-{name}"


@pytest.fixture
def api(server, ws) -> Api:
    return server.api(ws)


# Runs in every page before its own scripts, whatever the CSP: records each violation the
# browser reports, and says so on the console (which the test hears).
INIT_SCRIPT = """
(() => {
  window.__cspViolations = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    const v = { directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample, source: e.sourceFile, line: e.lineNumber };
    window.__cspViolations.push(v);
    console.error('securitypolicyviolation ' + JSON.stringify(v));
  });
})();
"""

# What Chromium itself logs for an answer of 4xx/5xx the console asked for and handles
# (a 409 of a save that lost the race, a 404 of a missing file): not script errors.
BENIGN_CONSOLE = re.compile(
    r"^Failed to load resource: the server responded with a status of (4\d\d|5\d\d)"
)


class Watch:
    """What every context of the run saw, checked after each test and over the whole run."""

    def __init__(self, server: Server):
        self.server = server
        self.problems: list[str] = []
        self.requests = 0
        self.console_answers = 0
        self.contexts = []

    def attach(self, context) -> None:
        keys = self.server.keys()

        def on_request(req):
            self.requests += 1
            url = req.url
            for k in keys:
                if k in url or urllib.parse.quote(k) in url:
                    self.problems.append(f"a key in a request URL: {req.method} {url}")

        def on_response(resp):
            path = urllib.parse.urlsplit(resp.url).path
            if resp.url.startswith(self.server.base) and (path == "/console" or path.startswith("/console/")):
                self.console_answers += 1
                csp = resp.headers.get("content-security-policy", "")
                if "default-src 'self'" not in csp or "script-src 'self'" not in csp:
                    self.problems.append(f"no Content-Security-Policy on {resp.status} {resp.url}: {csp!r}")

        def on_page(page: Page):
            page.set_default_timeout(TIMEOUT_MS)

            def on_console(msg):
                text = msg.text
                if "Content Security Policy" in text or "securitypolicyviolation" in text:
                    self.problems.append(f"CSP violation on {page.url}: {text}")
                elif msg.type == "error" and not BENIGN_CONSOLE.match(text):
                    self.problems.append(f"console error on {page.url}: {text}")

            def on_dialog(d):
                self.problems.append(f"a dialog opened ({d.type}): {d.message}")
                d.dismiss()

            page.on("console", on_console)
            page.on("dialog", on_dialog)
            page.on("pageerror", lambda e: self.problems.append(f"uncaught error on {page.url}: {e}"))

        context.on("request", on_request)
        context.on("response", on_response)
        context.on("page", on_page)
        self.contexts.append(context)

    def check_context(self, context) -> None:
        for c in context.cookies():
            self.problems.append(f"a cookie was set: {c['name']}={c['value'][:40]}")
            for k in self.server.keys():
                if k in c["value"]:
                    self.problems.append(f"a key in cookie {c['name']}")
        for page in context.pages:
            try:
                flag = page.evaluate(f"() => [window.{PWNED}, (window.__cspViolations || []).length]")
            except Exception:  # a page closing or navigating away: nothing to read
                continue
            if flag[0] is not None:
                self.problems.append(f"a payload ran on {page.url} (window.{PWNED} = {flag[0]!r})")
            if flag[1]:
                self.problems.append(f"{flag[1]} CSP violation(s) recorded on {page.url}")


@pytest.fixture(scope="session")
def watch(server):
    w = Watch(server)
    yield w
    # Over the whole run: the listeners really saw traffic, and nothing was left unreported.
    assert w.requests > 0 and w.console_answers > 0, "the watch saw no traffic"
    assert not w.problems, "\n".join(w.problems)


@pytest.fixture
def ctx(browser, watch):
    """new_context(**options): a browser context watched for the whole test."""
    made = []
    start = len(watch.problems)

    def new_context(**options):
        options.setdefault("viewport", VIEWPORT)
        options.setdefault("color_scheme", "light")
        c = browser.new_context(**options)
        c.set_default_timeout(TIMEOUT_MS)
        c.add_init_script(INIT_SCRIPT)
        watch.attach(c)
        made.append(c)
        return c

    yield new_context
    for c in made:
        watch.check_context(c)
        c.close()
    problems = watch.problems[start:]
    # Reported here, for this test; dropped so the run's summary counts each once.
    del watch.problems[start:]
    assert not problems, "\n".join(problems)


@pytest.fixture
def page(ctx) -> Page:
    return ctx().new_page()


def open_console(page: Page, server: Server, hash_: str = "") -> None:
    page.goto(server.base + "/console" + hash_)


def sign_in(page: Page, server: Server, workspace: str | None = None, key: str | None = None) -> None:
    """Signs in through the form: the tenant-wide key and a workspace, or a bound key."""
    if not page.url.startswith(server.base + "/console"):
        open_console(page, server)
    page.get_by_label("API key or token").fill(key or server.tenant_key)
    if workspace:
        page.get_by_label("Workspace (only for a tenant-wide key; optional)").fill(workspace)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("navigation", name="Screens").wait_for()


def go(page: Page, hash_: str) -> None:
    """Moves to a screen as a person following a link would (the page is not reloaded)."""
    page.evaluate("(h) => { window.location.hash = h; }", hash_)


def link(screen: str, **params) -> str:
    q = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"#/{screen}" + (f"?{q}" if q else "")


def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def ensure_axe() -> Path:
    """axe-core from npm (tests/console/package-lock.json), installed with `npm ci` when missing."""
    axe = HERE / "node_modules" / "axe-core" / "axe.min.js"
    if not axe.exists():
        npm = shutil.which("npm")
        assert npm, "npm is needed to install axe-core for the accessibility tests (tests/console/package.json)"
        out = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"npm ci in tests/console failed:\n{out.stdout}\n{out.stderr}"
    assert axe.exists(), axe
    return axe


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """A skipped test is a test that did not run: the run fails."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped") and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
