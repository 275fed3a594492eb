//! Property-based fuzzing of the tools: random tool names, hostile paths and glob patterns,
//! and mistyped arguments through the JSON-RPC entry point. Nothing panics, every call is
//! answered, every refusal is text starting with `Error:` with `isError` set, and nothing
//! outside the caller's workspace is ever touched (the sibling tenant stays empty).

use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::{Arc, OnceLock};
use workspace_core::ports::{FromCommittedState, RandomIds, SystemClock};
use workspace_core::{Identity, Limits, PathPrefix, Scope, WorkspaceService};
use workspace_mcp::{handle_payload, Reply, Workspace};
use workspace_store_memory::{MemoryBodies, MemoryMeta};

fn service() -> &'static WorkspaceService {
    static S: OnceLock<WorkspaceService> = OnceLock::new();
    S.get_or_init(|| {
        let meta = Arc::new(MemoryMeta::default());
        WorkspaceService::new(
            meta,
            Arc::new(MemoryBodies::default()),
            Arc::new(FromCommittedState),
            Arc::new(SystemClock),
            Arc::new(RandomIds),
            Limits::default(),
        )
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static R: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    R.get_or_init(|| tokio::runtime::Runtime::new().expect("runtime"))
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/".to_owned()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("/workspace".to_owned()),
        Just("/etc/passwd".to_owned()),
        Just("*".to_owned()),
        Just("**".to_owned()),
        Just("{a,b}".to_owned()),
        Just("[".to_owned()),
        Just("\\".to_owned()),
        Just("%2e".to_owned()),
        Just(".keep".to_owned()),
        "[a-z0-9_-]{1,6}",
        "\\PC{1,3}",
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..8).prop_map(|v| v.concat())
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        Just(json!([1, 2])),
    ]
}

const NAMES: &[&str] = &[
    "path",
    "content",
    "head",
    "tail",
    "offset",
    "limit",
    "pattern",
    "max_results",
    "source",
    "destination",
    "old_text",
    "new_text",
    "replace_all",
    "expected_version",
    "glob",
    "command",
    "view_range",
    "file_text",
    "old_str",
    "new_str",
    "insert_line",
    "insert_text",
    "old_path",
    "new_path",
    "since",
    "prefix",
    "timeout_seconds",
];

fn tool() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(workspace_mcp::tools::TOOL_NAMES).prop_map(str::to_owned),
        "\\PC{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn every_call_is_answered_and_refusals_are_error_text(
        name in tool(),
        args in prop::collection::vec((prop::sample::select(NAMES), value()), 0..6),
    ) {
        let who = Identity::read_write(Scope::parse("acme", "main").unwrap(), "fuzz");
        let ws = Workspace { service: service(), who: &who };
        let mut arguments: serde_json::Map<String, Value> =
            args.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        if name == "wait_for_changes" {
            // Answer at once: random counts often are small whole numbers, and each would
            // wait that long (its bounds: tests/wait.rs).
            arguments.insert("timeout_seconds".to_owned(), json!(0));
        }
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}});
        let reply = runtime().block_on(handle_payload(&ws, msg.to_string().as_bytes()));
        let Reply::Json(r) = reply else { panic!("no answer: {reply:?}") };
        if let Some(result) = r.get("result") {
            let text = result["content"][0]["text"].as_str().expect("text content");
            let is_error = result["isError"].as_bool().expect("isError");
            if name == "memory" {
                // Claude's memory tool answers in its own texts (no `Error:` prefix).
                prop_assert!(!text.is_empty());
            } else {
                prop_assert_eq!(is_error, text.starts_with("Error:"), "{}", text);
            }
        } else {
            prop_assert!(r["error"]["code"].is_i64(), "{}", r);
        }
        let evil = Identity::read_write(Scope::parse("acme-evil", "main").unwrap(), "mallory");
        let page = runtime()
            .block_on(service().list(&evil, &PathPrefix::default(), None, None))
            .expect("list");
        prop_assert!(page.files.is_empty());
    }
}
