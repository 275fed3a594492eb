//! The published contract of `workspace.updated` (`schemas/workspace-updated.schema.json`),
//! which every event a test produces is held to: from the moto rule through SQS, from the
//! local server's stream and webhooks, and the recorded sample in `events/`.

use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The schema file, from the repository root.
pub fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/workspace-updated.schema.json")
}

pub fn schema() -> Value {
    let text =
        std::fs::read_to_string(schema_path()).expect("schemas/workspace-updated.schema.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema())
            .expect("the schema is a valid draft 2020-12 schema")
    })
}

/// Every way `event` (a whole EventBridge envelope) breaks the contract.
pub fn violations(event: &Value) -> Vec<String> {
    validator()
        .iter_errors(event)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics with every violation when `event` breaks the contract.
pub fn assert_valid(event: &Value) {
    let errors = violations(event);
    assert!(
        errors.is_empty(),
        "workspace.updated breaks its schema: {errors:?}\n{event:#}"
    );
}
