//! The `changes_since_snapshot` prompt over the real service on the in-memory adapter: what
//! it names as added, deleted and changed, the diffs it carries, its bounds and refusals,
//! and the completion of its arguments.

use async_trait::async_trait;
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_core::ports::{EventSink, RandomIds, SystemClock, WorkspaceEvent};
use workspace_core::{Access, Identity, Limits, PathScope, Result, Scope, WorkspaceService};
use workspace_mcp::{handle_payload, Reply, Workspace};
use workspace_store_memory::{MemoryBodies, MemoryMeta};

struct NoEvents;

#[async_trait]
impl EventSink for NoEvents {
    async fn publish(&self, _: WorkspaceEvent) -> Result<()> {
        Ok(())
    }
}

fn service() -> WorkspaceService {
    WorkspaceService::new(
        Arc::new(MemoryMeta::default()),
        Arc::new(MemoryBodies::default()),
        Arc::new(NoEvents),
        Arc::new(SystemClock),
        Arc::new(RandomIds),
        Limits::default(),
    )
}

async fn rpc(svc: &WorkspaceService, who: &Identity, method: &str, params: Value) -> Value {
    let ws = Workspace { service: svc, who };
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let Reply::Json(r) = handle_payload(&ws, msg.to_string().as_bytes()).await else {
        panic!("no JSON reply")
    };
    r
}

async fn tool(svc: &WorkspaceService, who: &Identity, name: &str, args: Value) {
    let r = rpc(
        svc,
        who,
        "tools/call",
        json!({"name": name, "arguments": args}),
    )
    .await;
    assert_eq!(r["result"]["isError"], false, "{r}");
}

async fn write(svc: &WorkspaceService, who: &Identity, path: &str, content: &str) {
    tool(
        svc,
        who,
        "write_file",
        json!({"path": path, "content": content}),
    )
    .await;
}

#[tokio::test]
async fn changes_since_a_snapshot_name_each_change_with_its_diff() {
    let svc = service();
    let who = Identity::read_write(Scope::parse("acme", "main").unwrap(), "agent");
    write(&svc, &who, "notes/keep.md", "same\n").await;
    write(&svc, &who, "notes/edit.md", "line one\nline two\n").await;
    write(&svc, &who, "notes/gone.md", "bye\n").await;
    write(&svc, &who, "other/x.md", "x\n").await;
    let snap = svc.create_snapshot(&who).await.unwrap();
    write(&svc, &who, "notes/edit.md", "line one\nline 2\n").await;
    write(&svc, &who, "notes/new.md", "hello\n").await;
    write(&svc, &who, "other/x.md", "changed elsewhere\n").await;
    tool(&svc, &who, "delete_file", json!({"path": "notes/gone.md"})).await;

    let listed = rpc(&svc, &who, "prompts/list", json!({})).await;
    assert_eq!(
        listed["result"]["prompts"][0]["name"],
        "changes_since_snapshot"
    );
    let r = rpc(
        &svc,
        &who,
        "prompts/get",
        json!({"name": "changes_since_snapshot",
               "arguments": {"snapshot": snap.id, "prefix": "notes/"}}),
    )
    .await;
    let msg = &r["result"]["messages"][0];
    assert_eq!(msg["role"], "user", "{r}");
    let text = msg["content"]["text"].as_str().unwrap();
    assert!(text.contains("Added (1):\n- notes/new.md\n"), "{text}");
    assert!(text.contains("Deleted (1):\n- notes/gone.md\n"), "{text}");
    assert!(text.contains("Changed (1):\n- notes/edit.md\n"), "{text}");
    assert!(text.contains("-line two\n+line 2\n"), "{text}");
    assert!(
        !text.contains("keep.md") && !text.contains("other/"),
        "{text}"
    );

    // Refusals: an unknown prompt, a missing or unknown snapshot.
    for params in [
        json!({"name": "nope"}),
        json!({"name": "changes_since_snapshot"}),
        json!({"name": "changes_since_snapshot", "arguments": {"snapshot": "snap-none"}}),
    ] {
        let r = rpc(&svc, &who, "prompts/get", params.clone()).await;
        assert_eq!(r["error"]["code"], -32602, "{params}: {r}");
    }
    // A key limited to other/ sees none of notes/ through the prompt.
    let scoped = Identity {
        paths: PathScope::new(vec!["other/**".into()], vec![]).unwrap(),
        ..who.clone()
    };
    let r = rpc(
        &svc,
        &scoped,
        "prompts/get",
        json!({"name": "changes_since_snapshot", "arguments": {"snapshot": snap.id}}),
    )
    .await;
    let text = r["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Changed (1):\n- other/x.md\n"), "{text}");
    assert!(!text.contains("notes/"), "{text}");
    // A credential without read access gets nothing.
    let blind = Identity {
        access: Access {
            read: false,
            ..Access::READ_WRITE
        },
        ..who.clone()
    };
    let r = rpc(
        &svc,
        &blind,
        "prompts/get",
        json!({"name": "changes_since_snapshot", "arguments": {"snapshot": snap.id}}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32003, "{r}");

    // Its arguments complete: snapshot ids, and directories for the prefix.
    let r = rpc(
        &svc,
        &who,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "changes_since_snapshot"},
               "argument": {"name": "snapshot", "value": ""}}),
    )
    .await;
    assert_eq!(r["result"]["completion"]["values"], json!([snap.id]), "{r}");
    let r = rpc(
        &svc,
        &who,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "changes_since_snapshot"},
               "argument": {"name": "prefix", "value": ""}}),
    )
    .await;
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["notes/", "other/"]),
        "{r}"
    );
}

#[tokio::test]
async fn many_changes_are_bounded() {
    let svc = service();
    let who = Identity::read_write(Scope::parse("acme", "main").unwrap(), "agent");
    for i in 0..30 {
        write(&svc, &who, &format!("d/f{i:02}.md"), "old\n").await;
    }
    let snap = svc.create_snapshot(&who).await.unwrap();
    for i in 0..30 {
        write(&svc, &who, &format!("d/f{i:02}.md"), "new\n").await;
    }
    for i in 0..120 {
        write(&svc, &who, &format!("n/{i:03}.md"), "added\n").await;
    }
    let r = rpc(
        &svc,
        &who,
        "prompts/get",
        json!({"name": "changes_since_snapshot", "arguments": {"snapshot": snap.id}}),
    )
    .await;
    let text = r["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Added (120):\n"), "{text}");
    assert!(text.contains("- … and 20 more\n"), "{text}");
    assert_eq!(text.matches("```diff").count(), 20, "{text}");
    assert!(text.contains("(10 more changed files without their diff.)"));
}
