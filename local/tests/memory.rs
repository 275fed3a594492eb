//! Claude's memory tool through the real `workspace-local` process: a transcript of the
//! commands a model sends in a session, each answer compared exactly, then the memory read
//! by a second worker and after a restart (durable), and as ordinary versioned files.

mod common;

use common::Server;
use reqwest::Client;
use serde_json::{json, Value};

const KEY: &str = "memory-transcript-key-0001";

async fn call(c: &Client, s: &Server, input: Value) -> (String, bool) {
    let r = c
        .post(s.url("/v1/host/workspace/memory"))
        .bearer_auth(KEY)
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    (
        v["content"].as_str().unwrap().to_owned(),
        v["isError"].as_bool().unwrap(),
    )
}

/// (tool input, expected content, expected isError)
fn transcript() -> Vec<(Value, &'static str, bool)> {
    vec![
        (
            json!({"command": "view", "path": "/memories"}),
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories",
            false,
        ),
        (
            json!({"command": "create", "path": "/memories/user/preferences.md", "file_text": "# Preferences\n- language: Rust\n- editor: helix\n"}),
            "File created successfully at: /memories/user/preferences.md",
            false,
        ),
        (
            json!({"command": "view", "path": "/memories/user/preferences.md"}),
            "Here's the content of /memories/user/preferences.md with line numbers:\n     1\t# Preferences\n     2\t- language: Rust\n     3\t- editor: helix\n     4\t",
            false,
        ),
        (
            json!({"command": "str_replace", "path": "/memories/user/preferences.md", "old_str": "- editor: helix", "new_str": "- editor: zed"}),
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t# Preferences\n     2\t- language: Rust\n     3\t- editor: zed\n     4\t",
            false,
        ),
        (
            json!({"command": "insert", "path": "/memories/user/preferences.md", "insert_line": 1, "insert_text": "- name: Ada"}),
            "The file /memories/user/preferences.md has been edited.",
            false,
        ),
        (
            json!({"command": "view", "path": "/memories/user/preferences.md", "view_range": [1, 3]}),
            "Here's the content of /memories/user/preferences.md with line numbers:\n     1\t# Preferences\n     2\t- name: Ada\n     3\t- language: Rust",
            false,
        ),
        (
            json!({"command": "create", "path": "/memories/progress/task-1.md", "file_text": "step 1 done\n"}),
            "File created successfully at: /memories/progress/task-1.md",
            false,
        ),
        (
            json!({"command": "rename", "old_path": "/memories/progress/task-1.md", "new_path": "/memories/progress/done/task-1.md"}),
            "Successfully renamed /memories/progress/task-1.md to /memories/progress/done/task-1.md",
            false,
        ),
        (
            json!({"command": "view", "path": "/memories"}),
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n69B\t/memories\n12B\t/memories/progress/\n12B\t/memories/progress/done/\n57B\t/memories/user/\n57B\t/memories/user/preferences.md",
            false,
        ),
        (
            json!({"command": "str_replace", "path": "/memories/user/preferences.md", "old_str": "- ", "new_str": "* "}),
            "No replacement was performed. Multiple occurrences of old_str `- ` in lines: 2, 3, 4. Please ensure it is unique",
            true,
        ),
        (
            json!({"command": "view", "path": "/memories/progress/task-1.md"}),
            "The path /memories/progress/task-1.md does not exist. Please provide a valid path.",
            true,
        ),
        (
            json!({"command": "delete", "path": "/memories/progress"}),
            "Successfully deleted /memories/progress",
            false,
        ),
        (
            json!({"command": "view", "path": "/memories/%2e%2e/workspace.md"}),
            "Path /memories/%2e%2e/workspace.md would escape /memories directory",
            true,
        ),
    ]
}

#[tokio::test]
async fn a_model_session_of_memory_commands_gets_the_reference_answers_and_memory_lasts() {
    let dir = tempfile::tempdir().unwrap();
    let env = [(
        "WORKSPACE_API_KEYS",
        "memory-transcript-key-0001=acme/agent",
    )];
    let c = Client::new();
    {
        let s = Server::start(dir.path(), &env).await;
        for (i, (input, content, is_error)) in transcript().into_iter().enumerate() {
            let got = call(&c, &s, input.clone()).await;
            assert_eq!(got, (content.to_owned(), is_error), "step {i}: {input}");
        }
        // A second worker (another client) sees the same memory at once.
        let other = Client::new();
        let (text, _) = call(
            &other,
            &s,
            json!({"command": "view", "path": "/memories/user/preferences.md"}),
        )
        .await;
        assert!(text.contains("- editor: zed"), "{text}");
    }
    // After a restart: still there, with its history (create and two edits: version 3).
    let s = Server::start(dir.path(), &env).await;
    let (text, is_error) = call(
        &c,
        &s,
        json!({"command": "view", "path": "/memories/user/preferences.md", "view_range": [2, 2]}),
    )
    .await;
    assert_eq!(
        (text.as_str(), is_error),
        ("Here's the content of /memories/user/preferences.md with line numbers:\n     2\t- name: Ada", false)
    );
    let file: Value = c
        .get(s.url("/v1/host/workspace/files/memories/user/preferences.md"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(file["version"], 3);
    assert_eq!(
        file["content"],
        "# Preferences\n- name: Ada\n- language: Rust\n- editor: zed\n"
    );
}

/// The example of docs/memory-tool.md (`examples/claude_memory.py`) with the official
/// Anthropic SDK: the model is scripted (`tests/claude_memory_check.py`), the workspace is
/// this server.
#[tokio::test]
async fn the_readme_example_gives_claude_this_memory_through_the_anthropic_sdk() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &[(
            "WORKSPACE_API_KEYS",
            "memory-transcript-key-0001=acme/agent",
        )],
    )
    .await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tokio::process::Command::new(root.join(".venv/bin/python"))
        .arg(root.join("tests/claude_memory_check.py"))
        .args(["--base", &s.url(""), "--key", KEY])
        .output()
        .await
        .expect("the venv's python (tests/run.sh installs it with the anthropic package)");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let file: Value = Client::new()
        .get(s.url("/v1/host/workspace/files/memories/user.md"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(file["content"], "prefers: tea\n");
}

#[test]
fn the_readme_shows_the_example_that_is_tested() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("docs/memory-tool.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/claude_memory.py")).unwrap();
    assert!(
        readme.contains(&format!("```python\n{example}```")),
        "docs/memory-tool.md's memory example differs from examples/claude_memory.py"
    );
}

/// `WORKSPACE_MEMORY_PREFIX` through the real process: `/memories/x` is the workspace file
/// `<prefix>/x` (nested prefix, trailing slash accepted), both ways, and nothing outside the
/// prefix is seen or touched by the memory tool, `memories/` included.
#[tokio::test]
async fn a_configured_memory_prefix_maps_memories_to_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(
        dir.path(),
        &[
            (
                "WORKSPACE_API_KEYS",
                "memory-transcript-key-0001=acme/agent",
            ),
            ("WORKSPACE_MEMORY_PREFIX", "agents/claude/mem/"),
        ],
    )
    .await;
    let c = Client::new();
    let file = |path: &str| s.url(&format!("/v1/host/workspace/files/{path}"));
    let read = |path: &'static str| {
        let c = c.clone();
        let url = file(path);
        async move {
            let r = c.get(url).bearer_auth(KEY).send().await.unwrap();
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            (status, v["content"].as_str().map(str::to_owned))
        }
    };
    // A file at the default prefix is outside this memory.
    let r = c
        .put(file("memories/elsewhere.md"))
        .bearer_auth(KEY)
        .json(&json!({"content": "not a memory here"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    assert_eq!(
        call(
            &c,
            &s,
            json!({"command": "create", "path": "/memories/x", "file_text": "remember x\n"})
        )
        .await,
        (
            "File created successfully at: /memories/x".to_owned(),
            false
        )
    );
    assert_eq!(
        read("agents/claude/mem/x").await,
        (200, Some("remember x\n".to_owned()))
    );
    assert_eq!(read("memories/x").await.0, 404);

    // A file written over HTTP under the prefix is a memory.
    let r = c
        .put(file("agents/claude/mem/notes/y.md"))
        .bearer_auth(KEY)
        .json(&json!({"content": "from http"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        call(
            &c,
            &s,
            json!({"command": "view", "path": "/memories/notes/y.md"})
        )
        .await,
        (
            "Here's the content of /memories/notes/y.md with line numbers:\n     1\tfrom http"
                .to_owned(),
            false
        )
    );
    assert_eq!(
        call(&c, &s, json!({"command": "view", "path": "/memories"})).await,
        (
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n20B\t/memories\n9B\t/memories/notes/\n9B\t/memories/notes/y.md\n11B\t/memories/x"
                .to_owned(),
            false
        )
    );
    assert_eq!(
        call(
            &c,
            &s,
            json!({"command": "view", "path": "/memories/elsewhere.md"})
        )
        .await,
        (
            "The path /memories/elsewhere.md does not exist. Please provide a valid path."
                .to_owned(),
            true
        )
    );

    // Edits, renames and deletes act on the prefix's files.
    let edited = call(
        &c,
        &s,
        json!({"command": "str_replace", "path": "/memories/x", "old_str": "x", "new_str": "z"}),
    )
    .await;
    assert!(!edited.1, "{edited:?}");
    assert_eq!(
        call(
            &c,
            &s,
            json!({"command": "rename", "old_path": "/memories/x", "new_path": "/memories/done/x"})
        )
        .await,
        (
            "Successfully renamed /memories/x to /memories/done/x".to_owned(),
            false
        )
    );
    assert_eq!(read("agents/claude/mem/x").await.0, 404);
    assert_eq!(
        read("agents/claude/mem/done/x").await,
        (200, Some("remember z\n".to_owned()))
    );
    assert_eq!(
        call(
            &c,
            &s,
            json!({"command": "delete", "path": "/memories/notes"})
        )
        .await,
        ("Successfully deleted /memories/notes".to_owned(), false)
    );
    assert_eq!(read("agents/claude/mem/notes/y.md").await.0, 404);
    assert_eq!(
        read("memories/elsewhere.md").await,
        (200, Some("not a memory here".to_owned()))
    );
}
