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
        point: 0,
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

/// A refused write produces no event on AWS: through the HTTP API every function serves,
/// over DynamoDB and S3 on the emulator, writes refused with 409 (a stale `If-Match`), 413
/// (over maxFileBytes) and 400 (a bad path, a body that is not the JSON asked for) leave
/// nothing on the table's stream for the publisher, and nothing reaches the queue behind
/// the stack's rule; the accepted writes around them do, each keeping the schema.
#[tokio::test]
async fn refused_writes_produce_no_event_through_the_rule() {
    use http::Method;
    use std::sync::Arc;
    use workspace_contract::harness::{Backend, Harness, KEY_A, LIMITS};
    use workspace_store_aws::events::{plan, EventBridgeSink, Work};
    use workspace_store_aws::publisher::Publisher;
    use workspace_store_aws::secrets_table::DynamoSecrets;
    use workspace_store_aws::{testing, DynamoMeta, S3Bodies};

    let env = testing::fresh(None).await;
    let observed = testing::observed_bus().await;
    let h = Harness::new(Backend {
        meta: Arc::new(DynamoMeta::new(
            env.clients.dynamodb.clone(),
            env.table.clone(),
        )),
        bodies: Arc::new(S3Bodies::new(env.clients.s3.clone(), env.bucket.clone())),
        secrets: Arc::new(DynamoSecrets::new(
            env.clients.dynamodb.clone(),
            env.table.clone(),
        )),
        guard: Box::new(()),
    })
    .await;
    let first = h.put(KEY_A, "notes/a.md", "one").await.assert_ok();

    let file = |p: &str| format!("/v1/host/workspace/files/{p}");
    let content = |c: &str| json!({ "content": c });
    let too_big = "x".repeat(LIMITS.max_file_bytes as usize + 1);
    let refused = [
        (
            h.call(Method::PUT, &file("notes/a.md"), Some(KEY_A))
                .header("if-match", "\"9-stale\"")
                .json(&content("stale")),
            409,
        ),
        (
            h.call(Method::DELETE, &file("notes/a.md"), Some(KEY_A))
                .header("if-match", "\"9-stale\""),
            409,
        ),
        (
            h.call(Method::PUT, &file("notes/big.md"), Some(KEY_A))
                .json(&content(&too_big)),
            413,
        ),
        (
            h.call(Method::PUT, &file("notes/a.md"), Some(KEY_A))
                .json(&content(&too_big)),
            413,
        ),
        (
            h.call(Method::PUT, &file("notes/bad%00.md"), Some(KEY_A))
                .json(&content("x")),
            400,
        ),
        (
            h.call(Method::PUT, &file("notes/../escape.md"), Some(KEY_A))
                .json(&content("x")),
            400,
        ),
        (
            h.call(Method::PUT, &file("notes/bad.md"), Some(KEY_A))
                .header("content-type", "application/json")
                .body("{not json"),
            400,
        ),
        (
            h.call(Method::PUT, &file("notes/a.md"), Some(KEY_A))
                .json(&json!({"text": "no content field"})),
            400,
        ),
    ];
    let mut statuses = Vec::new();
    for (call, want) in refused {
        let r = call.send().await;
        statuses.push((r.status.as_u16(), want));
    }
    assert!(
        statuses.iter().all(|(got, want)| got == want),
        "{statuses:?}"
    );
    let second = h.put(KEY_A, "notes/b.md", "two").await.assert_ok();

    // The stream carries the two accepted commits' announcements only.
    let records = testing::stream_records(env.stream_arn.as_deref().expect("stream")).await;
    let announced: Vec<(String, u64)> = records
        .iter()
        .filter_map(|r| match plan(r) {
            Ok(Some(Work::Announce(e))) => Some((e.path.clone(), e.version)),
            _ => None,
        })
        .collect();
    assert_eq!(
        announced,
        [("notes/a.md".to_owned(), 1), ("notes/b.md".to_owned(), 1)]
    );
    // Published as the deployed publisher does, through the rule to the queue.
    let publisher = Publisher {
        sink: EventBridgeSink::new(env.clients.eventbridge.clone(), &observed.bus),
        bodies: S3Bodies::new(env.clients.s3.clone(), &env.bucket),
    };
    let failed = publisher.process(&records).await;
    assert!(failed.is_empty(), "{failed:?}");
    let got = observed.drain(2).await;
    let mut etags: Vec<&Value> = got
        .iter()
        .map(|m| {
            assert_valid(m);
            &m["detail"]["etag"]
        })
        .collect();
    etags.sort_by_key(|e| e.to_string());
    let mut want = vec![&first["etag"], &second["etag"]];
    want.sort_by_key(|e| e.to_string());
    assert_eq!(etags, want, "{got:?}");
}
