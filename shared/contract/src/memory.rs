//! Contract cases for Claude's memory tool (`POST /v1/host/workspace/memory`): every
//! command and every answer text of the reference implementation, memories as ordinary
//! versioned files, isolation, read-only keys, and concurrent edits that never lose one.

use crate::harness::{Harness, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY};
use http::Method;
use serde_json::{json, Value};

const MEMORY: &str = "/v1/host/workspace/memory";

impl Harness {
    /// One tool call: `(content, isError)`; the call itself must answer 200.
    pub async fn memory(&self, key: &str, input: Value) -> (String, bool) {
        let reply = self
            .call(Method::POST, MEMORY, Some(key))
            .json(&input)
            .send()
            .await;
        let v = reply.assert_ok();
        (
            v["content"].as_str().expect("content").to_owned(),
            v["isError"].as_bool().expect("isError"),
        )
    }

    async fn memory_ok(&self, input: Value) -> String {
        let (text, is_error) = self.memory(KEY_A, input.clone()).await;
        assert!(!is_error, "{input} → {text}");
        text
    }

    async fn memory_err(&self, input: Value) -> String {
        let (text, is_error) = self.memory(KEY_A, input.clone()).await;
        assert!(is_error, "{input} → {text}");
        text
    }
}

fn create(path: &str, text: &str) -> Value {
    json!({"command": "create", "path": path, "file_text": text})
}

pub async fn memory_commands_answer_like_the_reference_implementation(h: Harness) {
    // An empty memory directory.
    assert_eq!(
        h.memory_ok(json!({"command": "view", "path": "/memories"})).await,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories"
    );
    // create, byte for byte (CRLF and a missing final newline are kept).
    let text = "# Prefs\r\nlikes: coffee\nnotes: none";
    assert_eq!(
        h.memory_ok(create("/memories/prefs.md", text)).await,
        "File created successfully at: /memories/prefs.md"
    );
    assert_eq!(
        h.get(KEY_A, "memories/prefs.md").await.assert_ok()["content"],
        text
    );
    assert_eq!(
        h.memory_err(create("/memories/prefs.md", "again")).await,
        "File /memories/prefs.md already exists"
    );

    // view of a file, whole and ranged.
    let body = "one\ntwo\nthree\nfour\nfive\n";
    h.memory_ok(create("/memories/notes/list.md", body)).await;
    assert_eq!(
        h.memory_ok(json!({"command": "view", "path": "/memories/notes/list.md"})).await,
        "Here's the content of /memories/notes/list.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n     6\t"
    );
    assert_eq!(
        h.memory_ok(json!({"command": "view", "path": "/memories/notes/list.md", "view_range": [2, 3]})).await,
        "Here's the content of /memories/notes/list.md with line numbers:\n     2\ttwo\n     3\tthree"
    );
    assert_eq!(
        h.memory_ok(
            json!({"command": "view", "path": "/memories/notes/list.md", "view_range": [5, -1]})
        )
        .await,
        "Here's the content of /memories/notes/list.md with line numbers:\n     5\tfive\n     6\t"
    );

    // str_replace: the snippet, not found, several.
    assert_eq!(
        h.memory_ok(json!({"command": "str_replace", "path": "/memories/notes/list.md", "old_str": "four", "new_str": "FOUR"})).await,
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     2\ttwo\n     3\tthree\n     4\tFOUR\n     5\tfive\n     6\t"
    );
    assert_eq!(
        h.memory_err(json!({"command": "str_replace", "path": "/memories/notes/list.md", "old_str": "seven", "new_str": "x"})).await,
        "No replacement was performed, old_str `seven` did not appear verbatim in /memories/notes/list.md."
    );
    assert_eq!(
        h.memory_err(json!({"command": "str_replace", "path": "/memories/notes/list.md", "old_str": "o", "new_str": "0"})).await,
        "No replacement was performed. Multiple occurrences of old_str `o` in lines: 1, 2. Please ensure it is unique"
    );
    // insert: after line 1, at the end, out of range.
    assert_eq!(
        h.memory_ok(json!({"command": "insert", "path": "/memories/notes/list.md", "insert_line": 1, "insert_text": "one and a half\n"})).await,
        "The file /memories/notes/list.md has been edited."
    );
    h.memory_ok(json!({"command": "insert", "path": "/memories/notes/list.md", "insert_line": 6, "insert_text": "six"})).await;
    assert_eq!(
        h.get(KEY_A, "memories/notes/list.md").await.assert_ok()["content"],
        "one\none and a half\ntwo\nthree\nFOUR\nfive\nsix\n"
    );
    assert_eq!(
        h.memory_err(json!({"command": "insert", "path": "/memories/notes/list.md", "insert_line": 8, "insert_text": "x"})).await,
        "Invalid `insert_line` parameter: 8. It should be within the range [0, 7]."
    );
    // Every edit is a version of the file.
    assert_eq!(
        h.get(KEY_A, "memories/notes/list.md").await.assert_ok()["version"],
        4
    );

    // A directory: two levels deep, hidden items skipped, sizes like the SDK's.
    h.memory_ok(create("/memories/notes/deep/er/x.md", "x"))
        .await;
    h.memory_ok(create("/memories/.hidden/h.md", "h")).await;
    h.memory_ok(create("/memories/notes/.draft.md", "d")).await;
    let list_len = "one\none and a half\ntwo\nthree\nFOUR\nfive\nsix\n".len();
    let total = text.len() + list_len + 1 + 1 + 1;
    assert_eq!(
        h.memory_ok(json!({"command": "view", "path": "/memories"})).await,
        format!(
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n\
             {total}B\t/memories\n{}B\t/memories/notes/\n1B\t/memories/notes/deep/\n{list_len}B\t/memories/notes/list.md\n{}B\t/memories/prefs.md",
            list_len + 2,
            text.len()
        )
    );
    assert_eq!(
        h.memory_ok(json!({"command": "view", "path": "/memories/notes/deep"})).await,
        "Here're the files and directories up to 2 levels deep in /memories/notes/deep, excluding hidden items:\n1B\t/memories/notes/deep\n1B\t/memories/notes/deep/er/\n1B\t/memories/notes/deep/er/x.md"
    );
    assert_eq!(
        h.memory_err(json!({"command": "str_replace", "path": "/memories/notes", "old_str": "a", "new_str": "b"})).await,
        "The path /memories/notes is not a file."
    );
    assert_eq!(
        h.memory_err(create("/memories/notes", "x")).await,
        "File /memories/notes already exists"
    );

    // rename: a file, a directory, onto something, from nothing. A rename copies first,
    // so at maxFiles it is refused with the quota's reason and changes nothing.
    let full = h.state(KEY_A).await;
    let refused = h
        .memory_err(json!({"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/people/me.md"}))
        .await;
    assert!(refused.contains("maxFiles"), "{refused}");
    assert_eq!(h.state(KEY_A).await, full);
    h.memory_ok(json!({"command": "delete", "path": "/memories/.hidden"}))
        .await;
    assert_eq!(
        h.memory_ok(json!({"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/people/me.md"})).await,
        "Successfully renamed /memories/prefs.md to /memories/people/me.md"
    );
    assert_eq!(
        h.get(KEY_A, "memories/people/me.md").await.assert_ok()["content"],
        text
    );
    h.get(KEY_A, "memories/prefs.md")
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.memory_err(json!({"command": "rename", "old_path": "/memories/notes/list.md", "new_path": "/memories/people/me.md"})).await,
        "The destination /memories/people/me.md already exists"
    );
    assert_eq!(
        h.memory_err(json!({"command": "rename", "old_path": "/memories/nope.md", "new_path": "/memories/new.md"})).await,
        "The path /memories/nope.md does not exist"
    );
    h.memory_ok(json!({"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/archive/notes"})).await;
    assert_eq!(
        h.get(KEY_A, "memories/archive/notes/deep/er/x.md")
            .await
            .assert_ok()["content"],
        "x"
    );
    assert_eq!(
        h.memory_err(json!({"command": "view", "path": "/memories/notes/list.md"}))
            .await,
        "The path /memories/notes/list.md does not exist. Please provide a valid path."
    );

    // delete: a file, a directory, the root, nothing.
    assert_eq!(
        h.memory_ok(json!({"command": "delete", "path": "/memories/people/me.md"}))
            .await,
        "Successfully deleted /memories/people/me.md"
    );
    h.memory_ok(json!({"command": "delete", "path": "/memories/archive"}))
        .await;
    h.get(KEY_A, "memories/archive/notes/list.md")
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.memory_err(json!({"command": "delete", "path": "/memories"}))
            .await,
        "Cannot delete the /memories directory itself"
    );
    assert_eq!(
        h.memory_err(json!({"command": "delete", "path": "/memories/archive"}))
            .await,
        "The path /memories/archive does not exist"
    );

    // Paths outside /memories, and every way of escaping it.
    for path in ["/etc/passwd", "/memoriesX/a", "memories/a"] {
        assert_eq!(
            h.memory_err(json!({"command": "view", "path": path})).await,
            format!("Path must start with /memories, got: {path}")
        );
    }
    for path in [
        "/memories/../workspace.md",
        "/memories/%2e%2e%2fsecret",
        "/memories/a/..%2F..%2Fb",
        "/memories/..\\x",
    ] {
        assert_eq!(
            h.memory_err(create(path, "x")).await,
            format!("Path {path} would escape /memories directory")
        );
    }
    // Input the tool does not take is an answer the model can read; a body that is not
    // JSON is the caller's 400.
    assert!(h
        .memory_err(json!({"command": "chmod", "path": "/memories"}))
        .await
        .starts_with("Invalid memory tool input"));
    assert!(h
        .memory_err(json!({"command": "create", "path": "/memories/x"}))
        .await
        .contains("file_text"));
    h.call(Method::POST, MEMORY, Some(KEY_A))
        .body("view /memories")
        .send()
        .await
        .assert_error(400, "validation_error");
    // Over maxFileBytes: the workspace's limit, as an answer.
    let big = "x".repeat(usize::try_from(crate::harness::LIMITS.max_file_bytes).unwrap() + 1);
    let refused = h.memory_err(create("/memories/huge.md", &big)).await;
    assert!(refused.contains("maxFileBytes"), "{refused}");
    h.get(KEY_A, "memories/huge.md")
        .await
        .assert_error(404, "not_found");
}

pub async fn memories_stay_in_their_workspace_and_read_only_keys_change_nothing(h: Harness) {
    h.memory_ok(create("/memories/secret.md", "A's memory\n"))
        .await;
    let before = h.state(KEY_A).await;
    for key in [KEY_OTHER, KEY_EVIL] {
        let (listing, _) = h
            .memory(key, json!({"command": "view", "path": "/memories"}))
            .await;
        assert!(!listing.contains("secret.md"), "{listing}");
        let (text, is_error) = h
            .memory(
                key,
                json!({"command": "view", "path": "/memories/secret.md"}),
            )
            .await;
        assert!(is_error && !text.contains("A's memory"), "{text}");
        let (_, is_error) = h
            .memory(key, json!({"command": "str_replace", "path": "/memories/secret.md", "old_str": "A", "new_str": "B"}))
            .await;
        assert!(is_error);
        let (_, is_error) = h
            .memory(
                key,
                json!({"command": "delete", "path": "/memories/secret.md"}),
            )
            .await;
        assert!(is_error);
    }
    // A read-only key views, and every changing command is refused.
    let (text, is_error) = h
        .memory(
            KEY_READ_ONLY,
            json!({"command": "view", "path": "/memories/secret.md"}),
        )
        .await;
    assert!(!is_error && text.contains("A's memory"), "{text}");
    for input in [
        create("/memories/new.md", "x"),
        json!({"command": "str_replace", "path": "/memories/secret.md", "old_str": "A", "new_str": "B"}),
        json!({"command": "insert", "path": "/memories/secret.md", "insert_line": 0, "insert_text": "x"}),
        json!({"command": "delete", "path": "/memories/secret.md"}),
        json!({"command": "rename", "old_path": "/memories/secret.md", "new_path": "/memories/b.md"}),
    ] {
        h.call(Method::POST, MEMORY, Some(KEY_READ_ONLY))
            .json(&input)
            .send()
            .await
            .assert_error(403, "forbidden");
    }
    assert_eq!(h.state(KEY_A).await, before);
}

pub async fn concurrent_memory_edits_are_never_lost(h: Harness) {
    let slots: String = (0..8).map(|i| format!("slot-{i}: open\n")).collect();
    h.memory_ok(create("/memories/shared.md", &slots)).await;
    let app = h.app.clone();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let app = app.clone();
            let input = if i < 8 {
                json!({"command": "str_replace", "path": "/memories/shared.md", "old_str": format!("slot-{i}: open"), "new_str": format!("slot-{i}: done by {i}")})
            } else {
                json!({"command": "insert", "path": "/memories/shared.md", "insert_line": 0, "insert_text": format!("marker-{i}")})
            };
            tokio::spawn(async move {
                let req = http::Request::builder()
                    .method(Method::POST)
                    .uri(MEMORY)
                    .header("authorization", format!("Bearer {KEY_A}"))
                    .body(bytes::Bytes::from(input.to_string()))
                    .unwrap();
                let resp = app.handle(req, workspace_http::PathForm::Encoded).await;
                let v: Value = serde_json::from_slice(resp.body()).unwrap();
                (resp.status().as_u16(), v)
            })
        })
        .collect();
    for t in tasks {
        let (status, v) = t.await.expect("task");
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["isError"], false, "every edit is acknowledged: {v}");
    }
    let content = h.get(KEY_A, "memories/shared.md").await.assert_ok()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..8 {
        assert!(
            content.contains(&format!("slot-{i}: done by {i}\n")),
            "{content}"
        );
    }
    for i in 8..16 {
        assert!(content.contains(&format!("marker-{i}\n")), "{content}");
    }
    assert_eq!(content.lines().count(), 16, "{content}");
}
