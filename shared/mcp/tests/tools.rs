//! The tools over the real service on the in-memory adapter: every tool's success and error
//! texts, and that writes are versions, events and redaction like an HTTP PUT. (The same
//! tools through a real MCP client against the real server: local/tests/mcp.rs.)

use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use workspace_core::ports::{EventSink, Operation, RandomIds, SystemClock, WorkspaceEvent};
use workspace_core::{Access, FilePath, Identity, Limits, Result, Scope, WorkspaceService};
use workspace_mcp::paths::ACCESS_DENIED;
use workspace_mcp::{handle_payload, Reply, Workspace};
use workspace_store_memory::{MemoryBodies, MemoryMeta};

#[derive(Default, Clone)]
struct Events(Arc<Mutex<Vec<WorkspaceEvent>>>);

#[async_trait]
impl EventSink for Events {
    async fn publish(&self, event: WorkspaceEvent) -> Result<()> {
        self.0.lock().unwrap().push(event);
        Ok(())
    }
}

struct Fixture {
    service: WorkspaceService,
    events: Events,
    acme: Identity,
    evil: Identity,
    reader: Identity,
}

fn fixture() -> Fixture {
    let meta = Arc::new(MemoryMeta::default());
    let events = Events::default();
    let service = WorkspaceService::new(
        meta.clone(),
        Arc::new(MemoryBodies::default()),
        Arc::new(events.clone()),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    );
    let acme = Identity::read_write(Scope::parse("acme", "main").unwrap(), "agent-1");
    let evil = Identity::read_write(Scope::parse("acme-evil", "main").unwrap(), "evil");
    let reader = Identity {
        access: Access::READ_ONLY,
        ..acme.clone()
    };
    Fixture {
        service,
        events,
        acme,
        evil,
        reader,
    }
}

impl Fixture {
    /// Calls a tool as `who`: (text, isError).
    async fn call_as(&self, who: &Identity, tool: &str, args: Value) -> (String, bool) {
        let ws = Workspace {
            service: &self.service,
            who,
        };
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}});
        let Reply::Json(r) = handle_payload(&ws, msg.to_string().as_bytes()).await else {
            panic!("no JSON reply")
        };
        let result = &r["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"));
        (text.to_owned(), result["isError"].as_bool().unwrap())
    }

    async fn ok(&self, tool: &str, args: Value) -> String {
        let (text, err) = self.call_as(&self.acme, tool, args.clone()).await;
        assert!(!err, "{tool} {args} failed: {text}");
        text
    }

    async fn err(&self, tool: &str, args: Value) -> String {
        let (text, err) = self.call_as(&self.acme, tool, args.clone()).await;
        assert!(err, "{tool} {args} should fail: {text}");
        assert!(text.starts_with("Error: "), "{text}");
        text
    }
}

#[tokio::test]
async fn write_then_read_with_head_tail_offset_limit() {
    let f = fixture();
    let w = f
        .ok(
            "write_file",
            json!({"path": "notes/a.md", "content": "1\n2\n3\n4\n5\n"}),
        )
        .await;
    assert_eq!(w, "Successfully wrote 10 bytes to notes/a.md\nVersion: 1");
    assert_eq!(
        f.ok("read_file", json!({"path": "/workspace/notes/a.md"}))
            .await,
        "1\n2\n3\n4\n5\n"
    );
    assert_eq!(
        f.ok("read_file", json!({"path": "notes/a.md", "head": 2}))
            .await,
        "1\n2\n"
    );
    assert_eq!(
        f.ok("read_file", json!({"path": "notes/a.md", "tail": 2}))
            .await,
        "4\n5\n"
    );
    assert_eq!(
        f.ok("read_file", json!({"path": "notes/a.md", "tail": 99}))
            .await,
        "1\n2\n3\n4\n5\n"
    );
    assert_eq!(
        f.ok(
            "read_file",
            json!({"path": "notes/a.md", "offset": 2, "limit": 2})
        )
        .await,
        "2\n3\n"
    );
    assert_eq!(
        f.ok("read_file", json!({"path": "notes/a.md", "offset": 5}))
            .await,
        "5\n"
    );
    assert_eq!(
        f.err(
            "read_file",
            json!({"path": "notes/a.md", "head": 1, "tail": 1})
        )
        .await,
        "Error: Cannot specify both 'head' and 'tail' parameters"
    );
    assert!(f
        .err("read_file", json!({"path": "notes/a.md", "offset": 9}))
        .await
        .contains("past the end"));
    assert_eq!(
        f.err("read_file", json!({"path": "notes/b.md"})).await,
        "Error: File not found: notes/b.md"
    );
    assert_eq!(
        f.err("read_file", json!({"path": "notes"})).await,
        "Error: Not a file: notes is a directory"
    );
    let w2 = f
        .ok("write_file", json!({"path": "notes/a.md", "content": "x"}))
        .await;
    assert_eq!(w2, "Successfully wrote 1 bytes to notes/a.md\nVersion: 2");
}

#[tokio::test]
async fn traversal_is_denied_everywhere() {
    let f = fixture();
    f.ok("write_file", json!({"path": "inside.txt", "content": "x"}))
        .await;
    for p in [
        "../../../etc/passwd",
        "/etc/passwd",
        "../outside.txt",
        "/workspace/../x",
        "a/../../x",
    ] {
        for (tool, args) in [
            ("read_file", json!({"path": p})),
            ("write_file", json!({"path": p, "content": "x"})),
            ("list_directory", json!({"path": p})),
            ("create_directory", json!({"path": p})),
            ("get_file_info", json!({"path": p})),
            ("search_files", json!({"path": p, "pattern": "*"})),
            ("delete_file", json!({"path": p})),
            (
                "move_file",
                json!({"source": "inside.txt", "destination": p}),
            ),
            ("move_file", json!({"source": p, "destination": "y.txt"})),
            (
                "edit_file",
                json!({"path": p, "old_text": "a", "new_text": "b"}),
            ),
            ("grep", json!({"pattern": "x", "path": p})),
        ] {
            assert_eq!(f.err(tool, args).await, ACCESS_DENIED, "{tool} {p}");
        }
    }
    for pattern in ["../*", "../../etc/*", "**/../../*", "/etc/*"] {
        assert_eq!(
            f.err("search_files", json!({"path": ".", "pattern": pattern}))
                .await,
            ACCESS_DENIED
        );
        assert_eq!(
            f.err("grep", json!({"pattern": "x", "glob": pattern}))
                .await,
            ACCESS_DENIED
        );
    }
    assert_eq!(
        f.ok("read_file", json!({"path": "inside.txt"})).await,
        "x",
        "nothing changed"
    );
}

#[tokio::test]
async fn directories_are_virtual_plus_markers() {
    let f = fixture();
    assert_eq!(
        f.ok("list_directory", json!({"path": "/workspace"})).await,
        "Directory is empty: /workspace"
    );
    f.ok(
        "write_file",
        json!({"path": "src/lib.rs", "content": "fn a() {}\n"}),
    )
    .await;
    f.ok("write_file", json!({"path": "README.md", "content": "hi"}))
        .await;
    assert_eq!(
        f.ok("create_directory", json!({"path": "docs"})).await,
        "Successfully created directory: docs"
    );
    assert_eq!(
        f.ok("create_directory", json!({"path": "docs"})).await,
        "Directory already exists: docs"
    );
    assert_eq!(
        f.ok("create_directory", json!({"path": "src"})).await,
        "Directory already exists: src"
    );
    assert!(f
        .err("create_directory", json!({"path": "README.md"}))
        .await
        .contains("a file exists"));
    assert!(f
        .err("create_directory", json!({"path": "README.md/x"}))
        .await
        .contains("is a file"));
    assert_eq!(
        f.ok("list_directory", json!({"path": "."})).await,
        "Contents of .:\n\n[FILE] README.md\n[DIR] docs\n[DIR] src"
    );
    assert_eq!(
        f.ok("list_directory", json!({"path": "docs"})).await,
        "Directory is empty: docs"
    );
    assert_eq!(
        f.err("list_directory", json!({"path": "nope"})).await,
        "Error: Directory not found: nope"
    );
    assert_eq!(
        f.err("list_directory", json!({"path": "README.md"})).await,
        "Error: Not a directory: README.md"
    );
    assert!(f
        .err("write_file", json!({"path": "src", "content": "x"}))
        .await
        .contains("is a directory"));
    assert!(f
        .err("write_file", json!({"path": "README.md/x", "content": "x"}))
        .await
        .contains("is a file"));
}

#[tokio::test]
async fn file_info_for_files_and_directories() {
    let f = fixture();
    f.ok("write_file", json!({"path": "a/b.txt", "content": "12345"}))
        .await;
    f.ok("write_file", json!({"path": "a/b.txt", "content": "123"}))
        .await;
    let info = f.ok("get_file_info", json!({"path": "a/b.txt"})).await;
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines[0], "Path: a/b.txt");
    assert_eq!(lines[1], "Type: file");
    assert_eq!(lines[2], "Size: 3 bytes");
    assert!(
        lines[3].starts_with("Created: 20") && lines[4].starts_with("Modified: 20"),
        "{info}"
    );
    assert_eq!(lines[5], "Version: 2");
    assert!(lines[6].starts_with("ETag: \"2-"), "{info}");
    let dir = f.ok("get_file_info", json!({"path": "a"})).await;
    assert!(
        dir.starts_with("Path: a\nType: directory\nSize: 3 bytes\nCreated: "),
        "{dir}"
    );
    assert_eq!(
        f.err("get_file_info", json!({"path": "zz"})).await,
        "Error: File not found: zz"
    );
}

#[tokio::test]
async fn globs_search_paths() {
    let f = fixture();
    for p in [
        "a.md",
        "b.txt",
        "docs/c.md",
        "docs/deep/d.md",
        "docs/e.rs",
        "x?.md",
    ] {
        f.ok(
            "write_file",
            json!({"path": p.replace('?', "1"), "content": "x"}),
        )
        .await;
    }
    assert_eq!(
        f.ok("search_files", json!({"path": ".", "pattern": "*.md"}))
            .await,
        "Found 2 match(es) for '*.md':\n\n[FILE] a.md\n[FILE] x1.md"
    );
    assert_eq!(
        f.ok("search_files", json!({"path": "/workspace", "pattern": "**/*.md"})).await,
        "Found 4 match(es) for '**/*.md':\n\n[FILE] a.md\n[FILE] docs/c.md\n[FILE] docs/deep/d.md\n[FILE] x1.md"
    );
    assert_eq!(
        f.ok(
            "search_files",
            json!({"path": "docs", "pattern": "*.{md,rs}"})
        )
        .await,
        "Found 2 match(es) for '*.{md,rs}':\n\n[FILE] docs/c.md\n[FILE] docs/e.rs"
    );
    assert_eq!(
        f.ok("search_files", json!({"path": ".", "pattern": "[ab].*"}))
            .await,
        "Found 2 match(es) for '[ab].*':\n\n[FILE] a.md\n[FILE] b.txt"
    );
    assert_eq!(
        f.ok("search_files", json!({"path": ".", "pattern": "x?.md"}))
            .await,
        "Found 1 match(es) for 'x?.md':\n\n[FILE] x1.md"
    );
    assert_eq!(
        f.ok("search_files", json!({"path": ".", "pattern": "d*"}))
            .await,
        "Found 1 match(es) for 'd*':\n\n[DIR] docs"
    );
    let capped = f
        .ok(
            "search_files",
            json!({"path": ".", "pattern": "**", "max_results": 2}),
        )
        .await;
    assert!(capped.contains("(showing the first 2 of"), "{capped}");
    assert_eq!(
        f.ok("search_files", json!({"path": ".", "pattern": "*.py"}))
            .await,
        "No matches found for pattern '*.py' in ."
    );
    assert!(f
        .err("search_files", json!({"path": ".", "pattern": "a[b"}))
        .await
        .starts_with("Error: Invalid pattern"));
}

#[tokio::test]
async fn grep_answers_lines_with_numbers() {
    let f = fixture();
    f.ok(
        "write_file",
        json!({"path": "src/a.rs", "content": "fn main() {\n    todo!()\n}\n"}),
    )
    .await;
    f.ok(
        "write_file",
        json!({"path": "notes.md", "content": "TODO: write\nnothing\n"}),
    )
    .await;
    assert_eq!(
        f.ok("grep", json!({"pattern": "(?i)todo"})).await,
        "Found 2 match(es) for '(?i)todo':\n\nnotes.md:1: TODO: write\nsrc/a.rs:2:     todo!()"
    );
    assert_eq!(
        f.ok("grep", json!({"pattern": "todo", "glob": "**/*.rs"}))
            .await,
        "Found 1 match(es) for 'todo':\n\nsrc/a.rs:2:     todo!()"
    );
    assert_eq!(
        f.ok("grep", json!({"pattern": "fn", "path": "src/a.rs"}))
            .await,
        "Found 1 match(es) for 'fn':\n\nsrc/a.rs:1: fn main() {"
    );
    assert_eq!(
        f.ok("grep", json!({"pattern": "zzz", "path": "src"})).await,
        "No matches found for 'zzz' in src"
    );
    assert!(f
        .err("grep", json!({"pattern": "("}))
        .await
        .starts_with("Error: Invalid regular expression"));
}

#[tokio::test]
async fn edit_move_delete_and_expected_versions() {
    let f = fixture();
    f.ok(
        "write_file",
        json!({"path": "a.txt", "content": "one two one"}),
    )
    .await;
    let amb = f
        .err(
            "edit_file",
            json!({"path": "a.txt", "old_text": "one", "new_text": "1"}),
        )
        .await;
    assert!(amb.contains("matches 2 places"), "{amb}");
    assert!(f
        .err(
            "edit_file",
            json!({"path": "a.txt", "old_text": "three", "new_text": "3"})
        )
        .await
        .contains("not found"));
    assert_eq!(
        f.ok(
            "edit_file",
            json!({"path": "a.txt", "old_text": "two", "new_text": "2"})
        )
        .await,
        "Successfully edited a.txt: 1 replacement(s)\nVersion: 2"
    );
    assert_eq!(
        f.ok("edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "1", "replace_all": true, "expected_version": 2})).await,
        "Successfully edited a.txt: 2 replacement(s)\nVersion: 3"
    );
    assert_eq!(f.ok("read_file", json!({"path": "a.txt"})).await, "1 2 1");
    // Stale versions name the current one, and change nothing.
    let stale = f
        .err(
            "write_file",
            json!({"path": "a.txt", "content": "lost", "expected_version": 2}),
        )
        .await;
    assert!(stale.contains("current version is 3"), "{stale}");
    let stale = f.err("edit_file", json!({"path": "a.txt", "old_text": "1", "new_text": "x", "replace_all": true, "expected_version": 1})).await;
    assert!(stale.contains("current version is 3"), "{stale}");
    let stale = f
        .err(
            "delete_file",
            json!({"path": "a.txt", "expected_version": 1}),
        )
        .await;
    assert!(stale.contains("current version is 3"), "{stale}");
    let exists = f
        .err(
            "write_file",
            json!({"path": "a.txt", "content": "new", "expected_version": 0}),
        )
        .await;
    assert!(exists.contains("current version is 3"), "{exists}");
    assert_eq!(f.ok("read_file", json!({"path": "a.txt"})).await, "1 2 1");
    assert!(f
        .ok(
            "write_file",
            json!({"path": "a.txt", "content": "v4", "expected_version": 3})
        )
        .await
        .ends_with("Version: 4"));
    assert!(f
        .ok(
            "write_file",
            json!({"path": "n.txt", "content": "n", "expected_version": 0})
        )
        .await
        .ends_with("Version: 1"));
    let missing = f
        .err(
            "write_file",
            json!({"path": "m.txt", "content": "n", "expected_version": 2}),
        )
        .await;
    assert!(
        missing.contains("does not exist (current version 0"),
        "{missing}"
    );

    // move: refuses an existing destination, then moves.
    assert_eq!(
        f.err(
            "move_file",
            json!({"source": "a.txt", "destination": "n.txt"})
        )
        .await,
        "Error: Destination already exists: n.txt"
    );
    assert_eq!(
        f.ok(
            "move_file",
            json!({"source": "a.txt", "destination": "dir/b.txt"})
        )
        .await,
        "Successfully moved a.txt to dir/b.txt\nVersion: 1"
    );
    assert_eq!(
        f.err("read_file", json!({"path": "a.txt"})).await,
        "Error: File not found: a.txt"
    );
    assert_eq!(f.ok("read_file", json!({"path": "dir/b.txt"})).await, "v4");
    assert_eq!(
        f.err("move_file", json!({"source": "zz", "destination": "y"}))
            .await,
        "Error: File not found: zz"
    );

    assert_eq!(
        f.ok(
            "delete_file",
            json!({"path": "dir/b.txt", "expected_version": 1})
        )
        .await,
        "Successfully deleted dir/b.txt (it was at version 1)"
    );
    assert_eq!(
        f.err("delete_file", json!({"path": "dir/b.txt"})).await,
        "Error: File not found: dir/b.txt"
    );
}

#[tokio::test]
async fn writes_are_versions_events_and_redaction_like_put() {
    let f = fixture();
    let secret = "AKIAIOSFODNN7EXAMPLE";
    let w = f
        .ok(
            "write_file",
            json!({"path": "env.txt", "content": format!("key={secret}\n")}),
        )
        .await;
    assert!(w.contains("redacted"), "{w}");
    let read = f.ok("read_file", json!({"path": "env.txt"})).await;
    assert!(
        !read.contains(secret) && read.contains("[REDACTED:aws-access-key-id]"),
        "{read}"
    );
    // The stored body, read through the service as HTTP GET does.
    let stored = f
        .service
        .get(&f.acme, &FilePath::parse("env.txt").unwrap(), None)
        .await
        .unwrap();
    assert_eq!(stored.meta.version, 1);
    assert!(!String::from_utf8_lossy(&stored.content).contains(secret));
    f.ok("delete_file", json!({"path": "env.txt"})).await;
    let events = f.events.0.lock().unwrap().clone();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (
            events[0].operation,
            events[0].version,
            events[0].path.as_str()
        ),
        (Operation::Put, 1, "env.txt")
    );
    assert_eq!(events[0].principal, "agent-1");
    assert_eq!(events[1].operation, Operation::Delete);
}

#[tokio::test]
async fn another_tenant_sees_nothing_and_read_only_cannot_write() {
    let f = fixture();
    f.ok(
        "write_file",
        json!({"path": "secret/plan.md", "content": "acme only"}),
    )
    .await;
    let evil = &f.evil;
    for (tool, args) in [
        ("read_file", json!({"path": "secret/plan.md"})),
        ("get_file_info", json!({"path": "secret/plan.md"})),
        ("list_directory", json!({"path": "secret"})),
        ("delete_file", json!({"path": "secret/plan.md"})),
        (
            "edit_file",
            json!({"path": "secret/plan.md", "old_text": "acme", "new_text": "evil"}),
        ),
        (
            "move_file",
            json!({"source": "secret/plan.md", "destination": "mine.md"}),
        ),
    ] {
        let (text, err) = f.call_as(evil, tool, args).await;
        assert!(err && !text.contains("acme only"), "{tool}: {text}");
    }
    for (tool, args) in [
        ("list_directory", json!({"path": "."})),
        ("search_files", json!({"path": ".", "pattern": "**"})),
        ("grep", json!({"pattern": "acme"})),
    ] {
        let (text, err) = f.call_as(evil, tool, args).await;
        assert!(
            !text.contains("plan") && !text.contains("secret"),
            "{tool}: {text} {err}"
        );
    }
    for (tool, args) in [
        ("write_file", json!({"path": "x.md", "content": "x"})),
        ("create_directory", json!({"path": "d"})),
        ("delete_file", json!({"path": "secret/plan.md"})),
        (
            "move_file",
            json!({"source": "secret/plan.md", "destination": "y.md"}),
        ),
        (
            "edit_file",
            json!({"path": "secret/plan.md", "old_text": "acme", "new_text": "x"}),
        ),
    ] {
        let (text, err) = f.call_as(&f.reader, tool, args).await;
        assert!(err && text.contains("workspace:write"), "{tool}: {text}");
    }
    let (text, err) = f
        .call_as(&f.reader, "read_file", json!({"path": "secret/plan.md"}))
        .await;
    assert_eq!((text.as_str(), err), ("acme only", false));
}

#[tokio::test]
async fn protocol_negotiates_lists_and_refuses_garbage() {
    let f = fixture();
    let ws = Workspace {
        service: &f.service,
        who: &f.acme,
    };
    let send = |v: Value| v.to_string();
    for (asked, got) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let msg = json!({"jsonrpc": "2.0", "id": "i", "method": "initialize",
            "params": {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let Reply::Json(r) = handle_payload(&ws, send(msg).as_bytes()).await else {
            panic!()
        };
        assert_eq!(r["id"], "i");
        assert_eq!(r["result"]["protocolVersion"], got);
        assert_eq!(r["result"]["serverInfo"]["name"], "workspace-tool");
        assert!(r["result"]["capabilities"]["tools"].is_object());
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        handle_payload(&ws, send(note).as_bytes()).await,
        Reply::Accepted
    );
    let Reply::Json(r) = handle_payload(&ws, br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).await
    else {
        panic!()
    };
    assert_eq!(r, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    let Reply::Json(r) = handle_payload(&ws, br#"{"jsonrpc":"2.0","id":8,"method":"nope"}"#).await
    else {
        panic!()
    };
    assert_eq!(r["error"]["code"], -32601);
    let Reply::Json(r) = handle_payload(
        &ws,
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"rm_rf"}}"#,
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r["error"]["code"], -32602);
    let Reply::Invalid(r) = handle_payload(&ws, b"{not json").await else {
        panic!()
    };
    assert_eq!(r["error"]["code"], -32700);
    let Reply::Json(r) = handle_payload(&ws, br#"{"id":1,"method":"ping"}"#).await else {
        panic!()
    };
    assert_eq!(r["error"]["code"], -32600);
    let Reply::Json(r) = handle_payload(&ws, br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]"#).await else { panic!() };
    assert_eq!(r.as_array().map(Vec::len), Some(1));
    let Reply::Json(r) =
        handle_payload(&ws, br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await
    else {
        panic!()
    };
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, workspace_mcp::tools::TOOL_NAMES);
    let Reply::Json(r) = handle_payload(&ws, br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{}}}"#).await else { panic!() };
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Error: Missing required parameter 'path'"
    );
}

#[tokio::test]
async fn batches_are_bounded_in_messages_and_answer_bytes() {
    use workspace_mcp::protocol::{MAX_BATCH_ANSWER_BYTES, MAX_BATCH_MESSAGES};
    let f = fixture();
    let ws = Workspace {
        service: &f.service,
        who: &f.acme,
    };
    let pings = |n: usize| {
        let batch: Vec<Value> = (0..n)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "ping"}))
            .collect();
        Value::Array(batch).to_string()
    };
    let Reply::Json(r) = handle_payload(&ws, pings(MAX_BATCH_MESSAGES).as_bytes()).await else {
        panic!("a full batch is answered")
    };
    assert_eq!(r.as_array().map(Vec::len), Some(MAX_BATCH_MESSAGES));
    let Reply::Invalid(r) = handle_payload(&ws, pings(MAX_BATCH_MESSAGES + 1).as_bytes()).await
    else {
        panic!("one message over is refused whole")
    };
    assert_eq!(r["error"]["code"], -32600, "{r}");

    // Answers of about 1 MB each: those past the byte bound are not run.
    f.ok(
        "write_file",
        json!({"path": "big.md", "content": "a".repeat(1_000_000)}),
    )
    .await;
    let reads: Vec<Value> = (0..12)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "read_file", "arguments": {"path": "big.md"}}})
        })
        .collect();
    let Reply::Json(r) = handle_payload(&ws, Value::Array(reads).to_string().as_bytes()).await
    else {
        panic!("the batch is answered")
    };
    let answers = r.as_array().unwrap();
    assert_eq!(answers.len(), 12, "every request gets an answer");
    let not_run = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32600)
        .count();
    assert!(not_run >= 1, "some reads were not run");
    assert_eq!(answers[11]["id"], 11);
    let size = r.to_string().len();
    assert!(
        size < MAX_BATCH_ANSWER_BYTES + 1_100_000,
        "answer of {size} bytes"
    );
}

#[tokio::test]
async fn commit_applies_writes_deletes_and_moves_together_or_not_at_all() {
    let f = fixture();
    for (path, content) in [("a.md", "a1"), ("b.md", "b"), ("c.md", "c"), ("a.md", "a2")] {
        f.ok("write_file", json!({"path": path, "content": content}))
            .await;
    }
    let text = f
        .ok(
            "commit",
            json!({"operations": [
                {"op": "write", "path": "a.md", "content": "a3", "expected_version": 2},
                {"op": "write", "path": "/workspace/new/n.md", "content": "n", "expected_version": 0},
                {"op": "delete", "path": "b.md"},
                {"op": "move", "source": "c.md", "destination": "d/c.md"},
            ]}),
        )
        .await;
    assert_eq!(
        text,
        "Committed 4 operation(s):\nwrote a.md version 3\nwrote /workspace/new/n.md version 1\ndeleted b.md\nmoved c.md to d/c.md version 1"
    );
    assert_eq!(f.ok("read_file", json!({"path": "a.md"})).await, "a3");
    assert_eq!(f.ok("read_file", json!({"path": "new/n.md"})).await, "n");
    assert_eq!(f.ok("read_file", json!({"path": "d/c.md"})).await, "c");
    for gone in ["b.md", "c.md"] {
        let e = f.err("read_file", json!({"path": gone})).await;
        assert_eq!(e, format!("Error: File not found: {gone}"));
    }

    // One stale expected_version: nothing of the commit is applied.
    let e = f
        .err(
            "commit",
            json!({"operations": [
                {"op": "write", "path": "x.md", "content": "x"},
                {"op": "delete", "path": "d/c.md"},
                {"op": "write", "path": "a.md", "content": "stale", "expected_version": 2},
            ]}),
        )
        .await;
    assert_eq!(
        e,
        "Error: Version conflict on a.md: the current version is 3, not the expected 2; read the file again and retry. Nothing was applied."
    );
    let e = f
        .err(
            "commit",
            json!({"operations": [
                {"op": "write", "path": "x.md", "content": "x"},
                {"op": "write", "path": "new/n.md", "content": "again", "expected_version": 0},
            ]}),
        )
        .await;
    assert!(
        e.starts_with("Error: Version conflict on new/n.md: the current version is 1")
            && e.ends_with("Nothing was applied."),
        "{e}"
    );
    let e = f
        .err(
            "commit",
            json!({"operations": [
                {"op": "write", "path": "x.md", "content": "x"},
                {"op": "move", "source": "a.md", "destination": "d/c.md"},
            ]}),
        )
        .await;
    assert_eq!(
        e,
        "Error: Destination already exists: d/c.md. Nothing was applied."
    );
    let e = f
        .err(
            "commit",
            json!({"operations": [
                {"op": "write", "path": "x.md", "content": "x"},
                {"op": "delete", "path": "missing.md"},
            ]}),
        )
        .await;
    assert_eq!(e, "Error: File not found: missing.md. Nothing was applied.");
    let e = f
        .err(
            "commit",
            json!({"operations": [
                {"op": "write", "path": "x.md", "content": "x"},
                {"op": "delete", "path": "x.md"},
            ]}),
        )
        .await;
    assert!(e.ends_with("Nothing was applied."), "{e}");
    assert_eq!(
        f.err("read_file", json!({"path": "x.md"})).await,
        "Error: File not found: x.md"
    );
    assert_eq!(f.ok("read_file", json!({"path": "d/c.md"})).await, "c");
    assert_eq!(f.ok("read_file", json!({"path": "a.md"})).await, "a3");

    // Paths outside /workspace are refused, and nothing is applied.
    for op in [
        json!({"op": "write", "path": "../x.md", "content": "x"}),
        json!({"op": "delete", "path": "/etc/passwd"}),
        json!({"op": "move", "source": "a.md", "destination": "../../a.md"}),
    ] {
        let e = f
            .err(
                "commit",
                json!({"operations": [{"op": "write", "path": "y.md", "content": "y"}, op]}),
            )
            .await;
        assert!(e.starts_with(ACCESS_DENIED), "{e}");
    }
    assert_eq!(
        f.err("read_file", json!({"path": "y.md"})).await,
        "Error: File not found: y.md"
    );

    // Arguments: each wrong one named with its operation.
    assert_eq!(
        f.err(
            "commit",
            json!({"operations": [{"op": "write", "path": "y.md"}]})
        )
        .await,
        "Error: operations[0]: Missing required parameter 'content'"
    );
    assert_eq!(
        f.err(
            "commit",
            json!({"operations": [{"op": "copy", "path": "y.md"}]})
        )
        .await,
        "Error: operations[0]: 'op' must be write, delete or move, not 'copy'"
    );
    assert!(f
        .err("commit", json!({"operations": []}))
        .await
        .contains("at least one"));
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"op": "write", "path": format!("m{i}.md"), "content": "m"}))
        .collect();
    assert!(f
        .err("commit", json!({"operations": many}))
        .await
        .contains("at most 20"));

    // A read-only credential may not commit.
    let (text, err) = f
        .call_as(
            &f.reader,
            "commit",
            json!({"operations": [{"op": "write", "path": "r.md", "content": "r"}]}),
        )
        .await;
    assert!(err && text.contains("workspace:write"), "{text}");
}
