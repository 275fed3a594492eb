//! `wait_for_changes` over the real service on the in-memory adapter: it answers a change
//! made while it waits (well before its timeout), answers "No changes" with a cursor at its
//! timeout, reports each change once across cursors (even one committed late, stamped before
//! a change already reported), never shows a path the credential may not read, and lets a
//! read-only credential wait. (Through a real MCP client against the real server, over HTTP
//! and stdio: local/tests/mcp.rs.)

use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workspace_core::ports::{Clock, FromCommittedState, RandomIds, SystemClock};
use workspace_core::{Access, Identity, Limits, PathScope, Scope, WorkspaceService};
use workspace_mcp::tools::watch::{self, MAX_TIMEOUT_SECONDS};
use workspace_mcp::{handle_payload, Reply, Workspace};
use workspace_store_memory::{MemoryBodies, MemoryMeta};

/// The system clock, shifted by a settable offset: a writer whose change is stamped
/// earlier than it commits.
#[derive(Default)]
struct Shifted(AtomicI64);

impl Clock for Shifted {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.0.load(Ordering::SeqCst)
    }
}

struct Fixture {
    service: Arc<WorkspaceService>,
    clock: Arc<Shifted>,
    acme: Identity,
}

fn fixture() -> Fixture {
    let clock = Arc::new(Shifted::default());
    let service = WorkspaceService::new(
        Arc::new(MemoryMeta::default()),
        Arc::new(MemoryBodies::default()),
        Arc::new(FromCommittedState),
        clock.clone(),
        Arc::new(RandomIds),
        Limits::default(),
    );
    Fixture {
        service: Arc::new(service),
        clock,
        acme: Identity::read_write(Scope::parse("acme", "main").unwrap(), "agent-1"),
    }
}

/// Calls `tool` as `who`: (text, isError).
async fn call(
    service: &WorkspaceService,
    who: &Identity,
    tool: &str,
    args: Value,
) -> (String, bool) {
    let ws = Workspace { service, who };
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": tool, "arguments": args}});
    let Reply::Json(r) = handle_payload(&ws, msg.to_string().as_bytes()).await else {
        panic!("no JSON reply")
    };
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    (text.to_owned(), r["result"]["isError"].as_bool().unwrap())
}

impl Fixture {
    async fn write(&self, who: &Identity, path: &str, content: &str) {
        let (text, err) = call(
            &self.service,
            who,
            "write_file",
            json!({"path": path, "content": content}),
        )
        .await;
        assert!(!err, "{text}");
    }

    /// A wait that must succeed: its text.
    async fn wait(&self, who: &Identity, args: Value) -> String {
        let (text, err) = call(&self.service, who, watch::NAME, args.clone()).await;
        assert!(!err, "{args}: {text}");
        text
    }
}

fn cursor_of(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("Cursor: "))
        .unwrap_or_else(|| panic!("no cursor in {text:?}"))
        .to_owned()
}

/// The "<operation> <path> version <n>" of each reported change.
fn reported(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .take_while(|l| !l.starts_with("Cursor: ") && !l.starts_with("More "))
        .map(|l| l.split(' ').skip(1).take(4).collect::<Vec<_>>().join(" "))
        .collect()
}

#[tokio::test]
async fn a_change_made_while_waiting_is_answered_before_the_timeout() {
    let f = fixture();
    f.write(&f.acme, "before.md", "old").await;
    let (service, who) = (f.service.clone(), f.acme.clone());
    let started = Instant::now();
    let waiting = tokio::spawn(async move {
        call(&service, &who, watch::NAME, json!({"timeout_seconds": 10})).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    f.write(&f.acme, "notes/a.md", "hello").await;
    let (text, err) = waiting.await.unwrap();
    let took = started.elapsed();
    assert!(!err, "{text}");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert!(
        took >= Duration::from_millis(300),
        "answered before the change: {text}"
    );
    // "From now": the earlier write is not reported.
    assert_eq!(reported(&text), ["put notes/a.md version 1"], "{text}");
    assert!(text.starts_with("1 change(s), oldest first:\n"), "{text}");
    assert!(text.contains(" by agent-1 (5 bytes, etag \"1-"), "{text}");
    let line = text.lines().nth(1).unwrap();
    assert!(line.starts_with("20") && line.contains("Z put "), "{line}");

    // The cursor: the same change is never reported again; the next one is.
    let cursor = cursor_of(&text);
    let none = f
        .wait(&f.acme, json!({"since": cursor, "timeout_seconds": 0}))
        .await;
    assert!(none.starts_with("No changes within 0 s.\n"), "{none}");
    f.write(&f.acme, "notes/a.md", "hello again").await;
    // (Changes of one millisecond are listed by path; these are two.)
    tokio::time::sleep(Duration::from_millis(5)).await;
    call(
        &f.service,
        &f.acme,
        "delete_file",
        json!({"path": "before.md"}),
    )
    .await;
    let next = f
        .wait(
            &f.acme,
            json!({"since": cursor_of(&none), "timeout_seconds": 5}),
        )
        .await;
    assert_eq!(
        reported(&next),
        ["put notes/a.md version 2", "delete before.md version 2"],
        "{next}"
    );
}

#[tokio::test]
async fn a_timeout_answers_no_changes_with_a_cursor() {
    let f = fixture();
    let started = Instant::now();
    let text = f.wait(&f.acme, json!({"timeout_seconds": 1})).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(text.starts_with("No changes within 1 s.\n"), "{text}");
    let cursor = cursor_of(&text);
    assert!(cursor.starts_with("w1."), "{cursor}");
    // A change after that cursor is answered at once by the next call.
    f.write(&f.acme, "x.md", "x").await;
    let next = f
        .wait(&f.acme, json!({"since": cursor, "timeout_seconds": 0}))
        .await;
    assert_eq!(reported(&next), ["put x.md version 1"], "{next}");
}

#[tokio::test]
async fn a_change_committed_late_with_an_earlier_time_is_still_reported_once() {
    let f = fixture();
    f.write(&f.acme, "first.md", "1").await;
    let text = f
        .wait(
            &f.acme,
            json!({"since": "2000-01-01T00:00:00Z", "timeout_seconds": 0}),
        )
        .await;
    assert_eq!(reported(&text), ["put first.md version 1"], "{text}");
    // A writer whose change carries a time 3 s before the one already reported.
    f.clock.0.store(-3_000, Ordering::SeqCst);
    f.write(&f.acme, "late.md", "2").await;
    f.clock.0.store(0, Ordering::SeqCst);
    let late = f
        .wait(
            &f.acme,
            json!({"since": cursor_of(&text), "timeout_seconds": 0}),
        )
        .await;
    assert_eq!(reported(&late), ["put late.md version 1"], "{late}");
    let again = f
        .wait(
            &f.acme,
            json!({"since": cursor_of(&late), "timeout_seconds": 0}),
        )
        .await;
    assert!(again.starts_with("No changes"), "{again}");
}

#[tokio::test]
async fn a_path_scoped_credential_never_sees_other_paths() {
    let f = fixture();
    let scoped = Identity {
        paths: PathScope::new(vec!["notes/**".to_owned()], vec![]).unwrap(),
        ..f.acme.clone()
    };
    let start = cursor_of(&f.wait(&scoped, json!({"timeout_seconds": 0})).await);
    // Only a change outside its paths: the scoped wait times out with nothing.
    f.write(&f.acme, "secret/plan.md", "hidden").await;
    let text = f
        .wait(&scoped, json!({"since": start, "timeout_seconds": 1}))
        .await;
    assert!(text.starts_with("No changes within 1 s.\n"), "{text}");
    assert!(!text.contains("secret"), "{text}");
    // Then one inside: that one only.
    f.write(&f.acme, "secret/plan.md", "hidden 2").await;
    f.write(&f.acme, "notes/ok.md", "shown").await;
    let text = f
        .wait(&scoped, json!({"since": start, "timeout_seconds": 2}))
        .await;
    assert_eq!(reported(&text), ["put notes/ok.md version 1"], "{text}");
    assert!(!text.contains("secret"), "{text}");
    // Even asked for that prefix, or from the start of time.
    for args in [
        json!({"since": "2000-01-01T00:00:00Z", "prefix": "secret/", "timeout_seconds": 0}),
        json!({"since": "2000-01-01T00:00:00Z", "timeout_seconds": 0}),
    ] {
        let text = f.wait(&scoped, args).await;
        assert!(!text.contains("secret"), "{text}");
    }
}

#[tokio::test]
async fn read_only_may_wait_and_prefixes_filter() {
    let f = fixture();
    let reader = Identity {
        access: Access::READ_ONLY,
        ..f.acme.clone()
    };
    let (service, who) = (f.service.clone(), reader.clone());
    let waiting = tokio::spawn(async move {
        call(
            &service,
            &who,
            watch::NAME,
            json!({"prefix": "/workspace/docs/", "timeout_seconds": 10}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    f.write(&f.acme, "other.md", "not under docs").await;
    f.write(&f.acme, "docs/a.md", "under docs").await;
    let (text, err) = waiting.await.unwrap();
    assert!(!err, "{text}");
    assert_eq!(reported(&text), ["put docs/a.md version 1"], "{text}");
    // Another tenant waits on its own workspace only.
    let evil = Identity::read_write(Scope::parse("acme-evil", "main").unwrap(), "evil");
    let text = f
        .wait(
            &evil,
            json!({"since": "2000-01-01T00:00:00Z", "timeout_seconds": 0}),
        )
        .await;
    assert!(text.starts_with("No changes"), "{text}");
}

#[tokio::test]
async fn wrong_arguments_are_refused_and_waits_are_bounded() {
    let f = fixture();
    for (args, want) in [
        (
            json!({"timeout_seconds": MAX_TIMEOUT_SECONDS + 1}),
            "must be at most 25",
        ),
        (json!({"timeout_seconds": -1}), "whole number"),
        (
            json!({"since": "yesterday"}),
            "Parameter 'since' must be a cursor",
        ),
        (
            json!({"since": "w1.nope."}),
            "Parameter 'since' must be a cursor",
        ),
        (json!({"prefix": "../x"}), "Invalid prefix"),
    ] {
        let (text, err) = call(&f.service, &f.acme, watch::NAME, args.clone()).await;
        assert!(
            err && text.starts_with("Error: ") && text.contains(want),
            "{args}: {text}"
        );
    }
    // A payload's waits share one deadline: the tool answers by it whatever it was asked.
    let ws = Workspace {
        service: &f.service,
        who: &f.acme,
    };
    let started = Instant::now();
    let args = json!({"timeout_seconds": MAX_TIMEOUT_SECONDS});
    let out = workspace_mcp::tools::call_until(
        &ws,
        watch::NAME,
        args.as_object().unwrap(),
        tokio::time::Instant::now() + Duration::from_millis(300),
    )
    .await;
    assert!(
        !out.is_error && out.text.starts_with("No changes"),
        "{out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
