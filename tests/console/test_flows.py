"""One test per flow a person runs in the console (issue 27, "Tests that must exist")."""

from __future__ import annotations

import hashlib
import os
import re

from playwright.sync_api import expect

from conftest import MAX_FILE_BYTES, go, link, open_console, shot, sign_in


def storage(page) -> dict:
    return page.evaluate(
        "() => ({ session: Object.fromEntries(Object.entries(sessionStorage)),"
        " local: Object.fromEntries(Object.entries(localStorage)) })"
    )


def test_sign_in_and_out_forgets_the_key(page, server, api, ws):
    api.put("readme.md", "hello\n")
    open_console(page, server)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    # A wrong key: the API's own message, and nothing kept.
    page.get_by_label("API key or token").fill("not-a-key-of-this-server-0000")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unauthenticated: unknown or revoked API key")
    assert storage(page) == {"session": {}, "local": {}}

    # A tenant-wide key without a workspace: the picker asks for one.
    page.get_by_label("API key or token").fill(server.tenant_key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Choose a workspace")).to_be_visible()
    page.get_by_label("Workspace", exact=True).fill(ws)
    page.get_by_role("button", name="Open workspace").click()
    expect(page.get_by_test_id("workspace")).to_have_text(ws)
    expect(page.get_by_role("link", name="readme.md")).to_be_visible()
    s = storage(page)
    assert server.tenant_key in s["session"].values(), s
    assert server.tenant_key not in str(s["local"])

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    s = storage(page)
    assert server.tenant_key not in str(s), s
    assert s == {"session": {}, "local": {}}, s
    # A reload does not bring it back.
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    # A key bound to one workspace signs straight in.
    bound_ws, bound_key = next(iter(server.bound.items()))
    server.api(key=bound_key).put("bound.md", "mine\n")
    sign_in(page, server, key=bound_key)
    expect(page.get_by_test_id("workspace")).to_have_text("(the key\u2019s own)")
    expect(page.get_by_role("link", name="bound.md")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert bound_key not in str(storage(page))


def test_browse_folders_and_page_past_the_first_page(page, server, api, ws):
    # 205 files at the root (the screen loads 200 a page) and a folder.
    for i in range(205):
        api.put(f"f{i:03d}.txt", f"file {i}\n")
    api.put("docs/guide/intro.md", "# Intro\n")
    api.put("docs/faq.md", "# FAQ\n")
    sign_in(page, server, ws)
    expect(page.get_by_text("200 file(s) loaded; more follow.")).to_be_visible()
    # Paths come in order: docs/... first, so page one ends at f197.
    expect(page.get_by_role("link", name="f197.txt")).to_be_visible()
    expect(page.get_by_role("link", name="f198.txt")).to_have_count(0)
    page.get_by_role("button", name="Load more").click()
    expect(page.get_by_text("207 file(s) loaded.")).to_be_visible()
    expect(page.get_by_role("link", name="f204.txt")).to_be_visible()
    expect(page.get_by_role("button", name="Load more")).to_have_count(0)
    shot(page, "light-files-many")

    # The filter narrows what is loaded.
    page.get_by_label("Filter loaded files").fill("f20")
    expect(page.locator("table.list tbody tr")).to_have_count(5)
    page.get_by_label("Filter loaded files").fill("")

    # Into a folder and back by the breadcrumbs.
    page.get_by_role("link", name="docs/").click()
    expect(page.get_by_role("link", name="guide/")).to_be_visible()
    expect(page.get_by_role("link", name="faq.md")).to_be_visible()
    page.get_by_role("link", name="guide/").click()
    page.get_by_role("link", name="intro.md").click()
    expect(page.get_by_role("heading", name="docs/guide/intro.md")).to_be_visible()
    page.go_back()
    page.go_back()
    page.get_by_role("navigation", name="Folder").get_by_role("link", name="workspace").click()
    expect(page.get_by_role("link", name="f000.txt")).to_be_visible()


def test_view_a_file_with_line_numbers_and_an_image(page, server, api, ws):
    api.put("memory/notes.md", "# Notes\nsecond line\nthird line\n")
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5e2a5b70000000049454e44ae426082"
    )
    api.json("PUT", api.path_url(api.FILES, "pic.png"),
             {"contentBase64": __import__("base64").b64encode(png).decode(), "contentType": "image/png"})
    sign_in(page, server, ws)
    page.get_by_role("link", name="memory/").click()
    page.get_by_role("link", name="notes.md").click()
    expect(page.get_by_role("heading", name="memory/notes.md")).to_be_visible()
    content = page.get_by_role("region", name="File content")
    expect(content.locator("tr")).to_have_count(3)
    expect(content.locator("tr").nth(1)).to_have_text("2second line")
    expect(page.get_by_text(re.compile(r"version 1 · 3\d B · text/markdown"))).to_be_visible()
    expect(page.get_by_role("link", name="Download")).to_be_visible()
    go(page, link("file", path="pic.png"))
    expect(page.get_by_role("img", name="Preview of pic.png")).to_be_visible()
    assert page.get_by_role("img", name="Preview of pic.png").evaluate("(i) => i.naturalWidth") == 1


def test_edit_and_save(page, server, api, ws):
    api.put("plan.md", "step 1\n")
    sign_in(page, server, ws)
    page.get_by_role("link", name="plan.md").click()
    page.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Content of plan.md (version 1)")
    expect(editor).to_have_value("step 1\n")
    editor.fill("step 1\nstep 2\n")
    expect(page.get_by_text("Unsaved changes")).to_be_visible()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Saved as version 2.")).to_be_visible()
    expect(page.get_by_role("region", name="File content")).to_contain_text("step 2")
    assert api.content("plan.md") == "step 1\nstep 2\n"
    assert api.get("plan.md")["version"] == 2

    # A new file, created only if the path is free.
    page.get_by_role("link", name="Files").click()
    page.get_by_role("link", name="New file").click()
    # A new screen moves the focus to <main> once it has rendered (for screen readers);
    # typing before that would lose the keystrokes to the focus move.
    expect(page.locator("#main")).to_be_focused()
    page.get_by_label("Path").fill("drafts/new.md")
    page.get_by_label("Content", exact=True).fill("fresh\n")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="drafts/new.md")).to_be_visible()
    assert api.content("drafts/new.md") == "fresh\n"


BASE_LINES = [f"line {i}" for i in range(1, 10)]


def test_conflict_flow_with_two_people_keeps_both_changes(ctx, server, api, ws):
    api.put("shared.md", "\n".join(BASE_LINES) + "\n")
    alice = ctx().new_page()
    bob = ctx().new_page()
    for p in (alice, bob):
        sign_in(p, server, ws)
        p.get_by_role("link", name="shared.md").click()
        p.get_by_role("button", name="Edit").click()
    # Both start from version 1: Alice changes lines 1 and 5, Bob lines 5 and 9.
    a = list(BASE_LINES)
    a[0], a[4] = "line 1 by alice", "line 5 by alice"
    b = list(BASE_LINES)
    b[4], b[8] = "line 5 by bob", "line 9 by bob"
    alice.get_by_label("Content of shared.md (version 1)").fill("\n".join(a) + "\n")
    bob.get_by_label("Content of shared.md (version 1)").fill("\n".join(b) + "\n")
    alice.get_by_role("button", name="Save", exact=True).click()
    expect(alice.get_by_text("Saved as version 2.")).to_be_visible()

    bob.get_by_role("button", name="Save", exact=True).click()
    expect(bob.get_by_role("heading", name=re.compile("Conflict: someone else saved version 2"))).to_be_visible()
    expect(bob.get_by_text("1 block(s) were changed on both sides: choose for each.")).to_be_visible()
    hunk = bob.get_by_role("group", name="Conflict 1")
    expect(hunk.get_by_text("line 5 by alice")).to_be_visible()
    expect(hunk.get_by_text("line 5 by bob")).to_be_visible()
    save = bob.get_by_role("button", name="Save merged")
    expect(save).to_be_disabled()
    # The parts that do not overlap are merged already.
    result = bob.get_by_role("region", name="Merged result")
    expect(result).to_contain_text("line 1 by alice")
    expect(result).to_contain_text("line 9 by bob")
    shot(bob, "light-conflict-two-people")
    hunk.get_by_role("radio", name="Take both").check()
    expect(save).to_be_enabled()
    save.click()
    expect(bob.get_by_text("Saved as version 3.")).to_be_visible()

    want = list(BASE_LINES)
    want[0] = "line 1 by alice"
    want[4:5] = ["line 5 by alice", "line 5 by bob"]
    want[-1] = "line 9 by bob"
    assert api.content("shared.md") == "\n".join(want) + "\n"
    # Alice's view hears of Bob's save.
    expect(alice.get_by_text(re.compile("Someone else saved version 3"))).to_be_visible()


def test_upload_a_large_file_with_progress(page, server, api, ws, tmp_path):
    data = os.urandom(MAX_FILE_BYTES * 5 + 123)
    sign_in(page, server, ws)
    # Remembers whether the progress bar ever showed and what it said (it goes when done).
    page.evaluate("""() => {
      window.__progress = [];
      new MutationObserver(() => {
        const p = document.querySelector('progress#upload-progress');
        if (p) window.__progress.push(Number(p.value));
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    }""")
    page.get_by_label("File to upload").set_input_files(
        files=[{"name": "blob.bin", "mimeType": "application/octet-stream", "buffer": data}]
    )
    page.get_by_label("Save as (path; default: this folder and the file's name)").fill("uploads/blob.bin")
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_role("heading", name="uploads/blob.bin")).to_be_visible()
    seen = page.evaluate("() => window.__progress")
    assert seen, "the progress bar never showed"
    assert seen[0] == 0 and max(seen) >= 99, seen
    expect(page.get_by_text(re.compile("over what is answered inline"))).to_be_visible()
    meta = api.get("uploads/blob.bin")
    assert meta["size"] == len(data) and meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert api.bytes_of("uploads/blob.bin") == data

    # A small one goes inline, through the same form.
    page.get_by_role("link", name="Files").click()
    page.get_by_label("File to upload").set_input_files(
        files=[{"name": "small.txt", "mimeType": "text/plain", "buffer": b"small text\n"}]
    )
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_role("heading", name="small.txt")).to_be_visible()
    assert api.content("small.txt") == "small text\n"


def test_delete_with_confirmation(page, server, api, ws):
    api.put("old/stale.md", "stale\n")
    api.put("old/keep.md", "keep\n")
    sign_in(page, server, ws)
    go(page, link("file", path="old/stale.md"))
    page.get_by_role("button", name="Delete").click()
    confirm = page.get_by_role("group", name="Delete old/stale.md?")
    expect(confirm).to_be_visible()
    # Cancel keeps it.
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_have_count(0)
    assert api.status("old/stale.md") == 200
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("button", name="Confirm delete").click()
    # Back in its folder, without it.
    expect(page.get_by_role("link", name="keep.md")).to_be_visible()
    expect(page.get_by_role("link", name="stale.md")).to_have_count(0)
    assert api.status("old/stale.md") == 404
    assert api.content("old/keep.md") == "keep\n"


def test_history_and_diff_of_two_chosen_versions(page, server, api, ws):
    api.put("log.md", "alpha\n")
    api.put("log.md", "alpha\nbeta\n")
    api.put("log.md", "alpha\nbeta\ngamma\n")
    api.put("log.md", "ALPHA\nbeta\ngamma\n")
    sign_in(page, server, ws)
    go(page, link("file", path="log.md"))
    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name="History of log.md")).to_be_visible()
    rows = page.get_by_role("table", name="Versions, newest first").locator("tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.first.locator("td").first).to_have_text("4")
    # Defaults: the last two versions.
    expect(page.get_by_label("From version")).to_have_value("3")
    expect(page.get_by_label("To version")).to_have_value("4")
    page.get_by_label("From version").select_option("1")
    page.get_by_label("To version").select_option("3")
    page.get_by_role("button", name="Show diff").click()
    diff = page.get_by_role("region", name="Diff")
    expect(diff).to_contain_text("+beta")
    expect(diff).to_contain_text("+gamma")
    expect(diff).not_to_contain_text("ALPHA")
    page.get_by_label("From version").select_option("2")
    page.get_by_label("To version").select_option("4")
    page.get_by_role("button", name="Show diff").click()
    expect(diff).to_contain_text("-alpha")
    expect(diff).to_contain_text("+ALPHA")
    expect(diff).to_contain_text("+gamma")
    # One version against itself.
    page.get_by_label("From version").select_option("2")
    page.get_by_label("To version").select_option("2")
    page.get_by_role("button", name="Show diff").click()
    expect(page.get_by_text("Versions 2 and 2 are identical.")).to_be_visible()


def test_restore_a_version(page, server, api, ws):
    api.put("config.json", '{"mode": "good"}\n')
    api.put("config.json", '{"mode": "broken"}\n')
    sign_in(page, server, ws)
    go(page, link("history", path="config.json"))
    page.get_by_role("button", name="Restore version 1").click()
    expect(page.get_by_text("Restored as version 3.")).to_be_visible()
    rows = page.get_by_role("table", name="Versions, newest first").locator("tbody tr")
    expect(rows).to_have_count(3)
    assert api.content("config.json") == '{"mode": "good"}\n'
    assert api.get("config.json")["version"] == 3
    # Nothing was lost: the broken version is still there.
    assert api.get("config.json", version=2)["content"] == '{"mode": "broken"}\n'
    # And a deleted file comes back from its history.
    api.call("DELETE", api.path_url(api.FILES, "config.json"))
    page.reload()
    expect(page.get_by_role("cell", name="deleted")).to_be_visible()
    page.get_by_role("button", name="Restore version 3").click()
    expect(page.get_by_text(re.compile(r"Restored as version \d+\."))).to_be_visible()
    assert api.content("config.json") == '{"mode": "good"}\n'


def test_snapshot_browse_and_restore_with_preview(page, server, api, ws):
    api.put("a.md", "a before\n")
    api.put("b.md", "b stays\n")
    sign_in(page, server, ws)
    page.get_by_role("navigation", name="Screens").get_by_role("link", name="Snapshots").click()
    page.get_by_label("Label").fill("before the run")
    page.get_by_label("Keep until deleted").check()
    page.get_by_role("button", name="Create snapshot").click()
    expect(page.get_by_text(re.compile(r"Snapshot \S+ holds 2 file\(s\)\."))).to_be_visible()
    # The run changes a, adds c.
    api.put("a.md", "a after\n")
    api.put("c.md", "c is new\n")

    page.get_by_role("link", name="before the run").click()
    expect(page.get_by_role("heading", name="Snapshot before the run")).to_be_visible()
    expect(page.get_by_text("kept until deleted")).to_be_visible()
    page.get_by_role("link", name="Browse as of this snapshot").click()
    expect(page.get_by_role("heading", name=re.compile("Files as of snapshot"))).to_be_visible()
    expect(page.get_by_role("link", name="c.md")).to_have_count(0)
    page.get_by_role("link", name="a.md").click()
    expect(page.get_by_role("region", name="File content")).to_have_text("1a before")
    expect(page.get_by_role("button", name="Edit")).to_have_count(0)
    page.go_back()
    page.go_back()

    page.get_by_role("button", name="Preview restore").click()
    preview = page.get_by_role("region", name="Restoring would change")
    expect(preview.get_by_role("heading", name="Written back (1)")).to_be_visible()
    expect(preview.get_by_role("heading", name="Deleted (created since) (1)")).to_be_visible()
    expect(preview.get_by_role("listitem")).to_have_text(["a.md", "c.md"])
    expect(preview.get_by_text("1 file(s) are unchanged")).to_be_visible()
    # The preview changed nothing.
    assert api.content("a.md") == "a after\n" and api.status("c.md") == 200
    preview.get_by_role("button", name="Restore this snapshot").click()
    expect(page.get_by_text("Restored 1, deleted 1, unchanged 1.")).to_be_visible()
    assert api.content("a.md") == "a before\n"
    assert api.status("c.md") == 404
    assert api.content("b.md") == "b stays\n"


def test_fork_merge_with_a_per_path_choice(page, server, api, ws):
    api.put("plan.md", "plan v1\n")
    api.put("notes.md", "notes v1\n")
    api.put("todo.md", "todo v1\n")
    sign_in(page, server, ws)
    page.get_by_role("navigation", name="Screens").get_by_role("link", name="Forks").click()
    page.get_by_label("Fork label").fill("sub-agent 1")
    page.get_by_role("button", name="Create fork").click()
    expect(page.get_by_role("heading", name="Fork sub-agent 1")).to_be_visible()
    forks = api.json("GET", api.WS + "/forks")["forks"]
    assert len(forks) == 1 and forks[0]["label"] == "sub-agent 1"
    fork = server.api(forks[0]["workspaceId"])
    # Both sides change plan.md and notes.md; only the fork changes todo.md.
    fork.put("plan.md", "plan by the fork\n")
    fork.put("notes.md", "notes by the fork\n")
    fork.put("todo.md", "todo by the fork\n")
    api.put("plan.md", "plan by the parent\n")
    api.put("notes.md", "notes by the parent\n")

    page.get_by_role("button", name="Check merge").click()
    conflicts = page.get_by_role("region", name="Conflicts to resolve")
    expect(conflicts).to_be_visible()
    expect(conflicts.get_by_role("group")).to_have_count(2)
    conflicts.get_by_role("radiogroup", name="Resolution for plan.md").get_by_role("radio", name="Fork").check()
    conflicts.get_by_role("radiogroup", name="Resolution for notes.md").get_by_role("radio", name="Parent").check()
    conflicts.get_by_role("button", name="Merge with these choices").click()
    expect(page.get_by_text(re.compile(r"Merged: \d+ change\(s\) applied to the parent\."))).to_be_visible()
    assert api.content("plan.md") == "plan by the fork\n"
    assert api.content("notes.md") == "notes by the parent\n"
    assert api.content("todo.md") == "todo by the fork\n"


def test_fork_merge_with_edited_text(page, server, api, ws):
    api.put("plan.md", "plan v1\n")
    fork_id = api.json("POST", api.WS + "/forks", {"label": "editing"})["workspaceId"]
    server.api(fork_id).put("plan.md", "plan by the fork\n")
    api.put("plan.md", "plan by the parent\n")
    sign_in(page, server, ws)
    go(page, link("fork", id=fork_id))
    page.get_by_role("button", name="Check merge").click()
    group = page.get_by_role("radiogroup", name="Resolution for plan.md")
    expect(group.get_by_role("radio", name="Edit")).to_be_checked()
    text = page.get_by_label("Merged text of plan.md")
    expect(text).to_have_value(re.compile("plan by the parent[\\s\\S]*plan by the fork"))
    text.fill("plan by both\n")
    page.get_by_role("button", name="Merge with these choices").click()
    expect(page.get_by_text(re.compile(r"Merged: \d+ change\(s\) applied"))).to_be_visible()
    assert api.content("plan.md") == "plan by both\n"


def test_live_update_from_a_write_outside_the_browser(page, server, api, ws):
    api.put("watched.md", "first\n")
    api.put("other.md", "other\n")
    sign_in(page, server, ws)
    expect(page.get_by_text("Live: changes show as they happen")).to_be_visible()
    # The list is loaded before the agent writes, as a person would see it: a list that
    # loads after the write already shows it, and the screen rightly announces nothing.
    expect(page.get_by_role("link", name="other.md")).to_be_visible()
    # The Files screen says so, without a reload.
    api.put("other.md", "other, changed by an agent\n")
    notice = page.get_by_role("status").filter(has_text="other.md was changed by apikey:1 (version 2).")
    expect(notice).to_be_visible()
    notice.get_by_role("button", name="Refresh the list").click()
    expect(notice).to_have_count(0)

    # An open file says so, and shows the new version on request.
    page.get_by_role("link", name="watched.md").click()
    expect(page.get_by_role("region", name="File content")).to_have_text("1first")
    api.put("watched.md", "second\n")
    expect(page.get_by_text("Someone else saved version 2 (apikey:1).")).to_be_visible()
    page.get_by_role("button", name="Show the new version").click()
    expect(page.get_by_role("region", name="File content")).to_have_text("1second")

    # An open editor with unsaved text is never overwritten.
    page.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Content of watched.md (version 2)")
    editor.fill("my unsaved words\n")
    api.put("watched.md", "third, by the agent\n")
    expect(page.get_by_text(re.compile("Someone else saved version 3.*Your unsaved text stays here"))).to_be_visible()
    expect(editor).to_have_value("my unsaved words\n")
    # Saving then shows both to merge; discarding mine loads theirs.
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("heading", name=re.compile("Conflict: someone else saved version 3"))).to_be_visible()
    page.get_by_role("button", name="Discard mine").click()
    expect(page.get_by_role("region", name="File content")).to_have_text("1third, by the agent")
    assert api.content("watched.md") == "third, by the agent\n"


def tab_to(page, name: str, role: str | None = None, limit: int = 60) -> None:
    """Presses Tab until the focused element's text or label is `name` (and its role)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        got = page.evaluate(
            """() => { const e = document.activeElement; if (!e) return null;
              const label = e.labels && e.labels.length ? e.labels[0].textContent : '';
              return { text: (e.getAttribute('aria-label') || e.textContent || label || '').trim(),
                       label: label.trim(), tag: e.tagName.toLowerCase(), type: e.type || '' }; }"""
        )
        if got and name in (got["text"], got["label"]):
            if role is None or role == got["tag"]:
                return
    raise AssertionError(f"Tab never reached {name!r}")


def test_keyboard_only_save(page, server, api, ws):
    api.put("keys.md", "typed by hand\n")
    open_console(page, server)
    # Sign in: focus starts on the page; Tab into the form, type, Enter.
    tab_to(page, "API key or token", "input")
    page.keyboard.type(server.tenant_key)
    page.keyboard.press("Tab")
    page.keyboard.type(ws)
    page.keyboard.press("Enter")
    expect(page.get_by_role("link", name="keys.md")).to_be_visible()
    tab_to(page, "keys.md", "a")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="keys.md")).to_be_visible()
    tab_to(page, "Edit", "button")
    page.keyboard.press("Enter")
    # Where Tab leaves the caret in a textarea is the browser's choice (Chromium: the end).
    tab_to(page, "Content of keys.md (version 1)", "textarea")
    page.keyboard.type("a line added by keyboard")
    page.keyboard.press("Enter")
    tab_to(page, "Save", "button")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Saved as version 2.")).to_be_visible()
    assert api.content("keys.md") in (
        "typed by hand\na line added by keyboard\n",
        "a line added by keyboard\ntyped by hand\n",
    )
    # The focus is visible where it lands (an outline or a box shadow).
    tab_to(page, "History", "a")
    style = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth, s.boxShadow]; }"
    )
    assert style[0] != "none" or style[2] != "none", style


def test_a_refused_save_shows_the_api_message(page, server, api, ws):
    api.put("locked.md", "read only here\n")
    # A read-only key (tenant-wide) names the workspace at sign-in; its save is refused.
    sign_in(page, server, ws, key=server.read_only_key)
    page.get_by_role("link", name="locked.md").click()
    page.get_by_role("button", name="Edit").click()
    page.get_by_label("Content of locked.md (version 1)").fill("changed\n")
    page.get_by_role("button", name="Save", exact=True).click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("forbidden")
    # The person's text is still there to copy, and nothing was written.
    expect(page.get_by_label("Content of locked.md (version 1)")).to_have_value("changed\n")
    assert api.content("locked.md") == "read only here\n"
