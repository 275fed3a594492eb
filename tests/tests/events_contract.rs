//! The published contract of `workspace.updated`: the schema file, the same schema in the
//! stack's EventBridge schema registry, the recorded sample, and the envelope the local
//! server sends, all agree; and the schema refuses what breaks the contract.

use serde_json::{json, Value};
use workspace_contract::event_schema::{assert_valid, schema, violations};
use workspace_core::events::WorkspaceEvent;
use workspace_core::model::VersionRecord;
use workspace_tests::root;
use yaml_rust2::YamlLoader;

fn sample() -> Value {
    let text = std::fs::read_to_string(root().join("events/workspace-updated.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_registry_schema_in_the_template_is_the_schema_file() {
    let text = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let t = YamlLoader::load_from_str(&text).unwrap().remove(0);
    let res = &t["Resources"]["WorkspaceUpdatedSchema"];
    assert_eq!(res["Type"].as_str(), Some("AWS::EventSchemas::Schema"));
    assert_eq!(res["Properties"]["Type"].as_str(), Some("JSONSchemaDraft4"));
    let mut in_stack: Value =
        serde_json::from_str(res["Properties"]["Content"].as_str().expect("Content")).unwrap();
    let mut in_repo = schema();
    assert_eq!(
        in_stack["$schema"], "http://json-schema.org/draft-04/schema#",
        "the registry takes draft 4"
    );
    assert_eq!(
        in_repo["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "the repository's is draft 2020-12"
    );
    for doc in [&mut in_stack, &mut in_repo] {
        let o = doc.as_object_mut().unwrap();
        o.remove("$schema");
        o.remove("$id");
    }
    assert_eq!(in_stack, in_repo);
}

#[test]
fn the_recorded_sample_and_the_local_envelope_keep_the_contract() {
    assert_valid(&sample());
    let record = VersionRecord {
        seq: 7,
        lineage: "l".into(),
        version: 2,
        etag: "\"2-abc\"".into(),
        size: 0,
        sha256: String::new(),
        content_type: "text/markdown".into(),
        body: None,
        updated_at: 1_790_000_000_123,
        principal: "alice".into(),
        deleted: true,
        erased: None,
        merge: None,
    };
    let event = WorkspaceEvent::of_version("acme", "main", "notes/a.md", &record);
    let envelope = event.envelope();
    assert_valid(&envelope);
    assert_eq!(envelope["detail"]["operation"], "delete");
    assert_eq!(envelope["detail"]["sequence"], 7);
    assert_eq!(envelope["id"], envelope["detail"]["eventId"]);
    // The id is the change's, whatever delivers it.
    let again = WorkspaceEvent::of_version("acme", "main", "notes/a.md", &record);
    assert_eq!(again.event_id, event.event_id);
    let next = VersionRecord {
        seq: 8,
        ..record.clone()
    };
    assert_ne!(
        WorkspaceEvent::of_version("acme", "main", "notes/a.md", &next).event_id,
        event.event_id
    );
    // Only a change a merge made names the merge and the fork.
    assert!(envelope["detail"].get("mergeId").is_none());
    assert!(envelope["detail"].get("forkId").is_none());
    let merged = VersionRecord {
        merge: Some(workspace_core::model::MergeOrigin {
            merge_id: "m-1".into(),
            fork_id: "main~f1".into(),
        }),
        ..record
    };
    let envelope = WorkspaceEvent::of_version("acme", "main", "notes/a.md", &merged).envelope();
    assert_valid(&envelope);
    assert_eq!(
        (
            &envelope["detail"]["mergeId"],
            &envelope["detail"]["forkId"]
        ),
        (&json!("m-1"), &json!("main~f1"))
    );
}

#[test]
fn the_schema_refuses_what_breaks_the_contract() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let broken: Vec<(&str, Edit)> = vec![
        (
            "content in the detail",
            Box::new(|e| e["detail"]["content"] = json!("secret")),
        ),
        (
            "no eventId",
            Box::new(|e| {
                e["detail"].as_object_mut().unwrap().remove("eventId");
            }),
        ),
        (
            "another source",
            Box::new(|e| e["source"] = json!("someone-else")),
        ),
        (
            "an unknown operation",
            Box::new(|e| e["detail"]["operation"] = json!("rename")),
        ),
        ("version 0", Box::new(|e| e["detail"]["version"] = json!(0))),
        (
            "a time that is not one",
            Box::new(|e| e["detail"]["time"] = json!("yesterday")),
        ),
    ];
    for (what, edit) in broken {
        let mut e = sample();
        edit(&mut e);
        assert!(!violations(&e).is_empty(), "{what} passed the schema");
    }
}
