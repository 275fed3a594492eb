//! What only the AWS backend has, on the emulator: events driven from the DynamoDB stream
//! and observed on an SQS queue, pruning of S3 versions, retried publishing, and the sweeper.

use workspace_core::ports::{Bodies, Staging, SystemClock};
use workspace_core::{
    FilePath, Identity, Limits, PutRequest, Scope, WorkspaceError, WorkspaceService,
};
use workspace_store_aws::events::{EventBridgeSink, Work};
use workspace_store_aws::publisher::Publisher;
use workspace_store_aws::sweeper::Sweeper;
use workspace_store_aws::testing as common;
use workspace_store_aws::S3Bodies;

fn service(env: &common::Env, max_versions: u64) -> WorkspaceService {
    // Every body in S3: these are the S3 body's life (an inline body lives and goes with
    // its item; the contract suite covers both kinds).
    env.service(Limits {
        max_versions,
        ..Limits::default()
    })
    .with_inline_body_bytes(0)
}

fn sweeper(env: &common::Env) -> Sweeper {
    Sweeper {
        s3: env.clients.s3.clone(),
        dynamodb: env.clients.dynamodb.clone(),
        bucket: env.bucket.clone(),
        table: env.table.clone(),
    }
}

/// An admin of acme/main (erasing a version needs one).
fn admin() -> Identity {
    Identity {
        access: workspace_core::Access {
            read: true,
            write: true,
            admin: true,
        },
        ..Identity::read_write(Scope::parse("acme", "main").unwrap(), "root")
    }
}

fn alice() -> Identity {
    Identity::read_write(Scope::parse("acme", "main").unwrap(), "alice")
}

fn put(path: &str, content: &str, if_match: Option<&str>) -> PutRequest {
    PutRequest {
        path: Some(FilePath::parse(path).unwrap()),
        content: content.as_bytes().to_vec(),
        if_match: if_match.map(str::to_owned),
        ..PutRequest::default()
    }
}

fn publisher(env: &common::Env, bus: &str) -> Publisher {
    Publisher {
        sink: EventBridgeSink::new(env.clients.eventbridge.clone(), bus),
        bodies: S3Bodies::new(env.clients.s3.clone(), &env.bucket),
    }
}

async fn s3_versions(env: &common::Env, key: &str) -> Vec<String> {
    let out = env
        .clients
        .s3
        .list_object_versions()
        .bucket(&env.bucket)
        .prefix(key)
        .send()
        .await
        .unwrap();
    out.versions()
        .iter()
        .filter(|v| v.key() == Some(key))
        .filter_map(|v| v.version_id().map(str::to_owned))
        .collect()
}

/// With each body in S3, and inline (its stream records then carry it in their images:
/// the published events still never do).
#[tokio::test]
async fn committed_changes_reach_a_queue_and_failed_writes_never_do() {
    for inline in [0, workspace_core::blob::inline::DEFAULT_INLINE_BODY_BYTES] {
        committed_changes_reach_a_queue(inline).await;
    }
}

async fn committed_changes_reach_a_queue(inline_body_bytes: u64) {
    let env = common::fresh(None).await;
    let observed = common::observed_bus().await;
    let svc = service(&env, 20).with_inline_body_bytes(inline_body_bytes);
    let v1 = svc
        .put(&alice(), put("notes/a.md", "SECRET-CONTENT-1", None))
        .await
        .unwrap();
    svc.put(
        &alice(),
        put("notes/a.md", "SECRET-CONTENT-2", Some(&v1.meta.etag)),
    )
    .await
    .unwrap();
    // A stale precondition: refused, so nothing may be announced for it.
    let stale = svc
        .put(
            &alice(),
            put("notes/a.md", "SECRET-CONTENT-3", Some(&v1.meta.etag)),
        )
        .await;
    assert!(matches!(
        stale,
        Err(WorkspaceError::Conflict {
            current_version: 2,
            ..
        })
    ));
    svc.delete(&alice(), &FilePath::parse("notes/a.md").unwrap(), None)
        .await
        .unwrap();

    let records = common::stream_records(env.stream_arn.as_deref().expect("stream")).await;
    // Inline, DynamoDB's records carry the content in their images (`body`, binary); the
    // publisher's reading of a record keeps no binary attribute, so it never holds it.
    let raw = common::raw_stream_records(env.stream_arn.as_deref().unwrap()).await;
    let in_stream = raw.iter().filter_map(|r| r.dynamodb.as_ref()).any(|d| {
        [&d.new_image, &d.old_image].into_iter().flatten().any(|i| {
            i.get("body")
                .and_then(|b| b.as_b().ok())
                .is_some_and(|b| b.as_ref().starts_with(b"SECRET-CONTENT"))
        })
    });
    assert_eq!(in_stream, inline_body_bytes > 0, "{inline_body_bytes}");
    assert!(!format!("{records:?}").contains("SECRET-CONTENT"));
    assert!(records
        .iter()
        .flat_map(|r| [&r.new_image, &r.old_image])
        .flatten()
        .all(|i| !i.contains_key("body")));
    let failed = publisher(&env, &observed.bus).process(&records).await;
    assert!(failed.is_empty(), "{failed:?}");

    let got = observed.drain(3).await;
    let mut seen: Vec<(String, u64, String)> = got
        .iter()
        .map(|m| {
            // The whole envelope, as the rule delivered it, keeps the published schema.
            workspace_contract::event_schema::assert_valid(m);
            assert_eq!(m["source"], "agent-workspace");
            assert_eq!(m["detail-type"], "workspace.updated");
            let d = &m["detail"];
            assert_eq!(
                (
                    d["tenant"].as_str(),
                    d["workspace"].as_str(),
                    d["principal"].as_str()
                ),
                (Some("acme"), Some("main"), Some("alice"))
            );
            assert!(d["etag"].as_str().is_some_and(|e| e.starts_with('"')));
            assert!(d["time"].as_str().is_some_and(|t| t.ends_with('Z')));
            assert!(
                !m.to_string().contains("SECRET-CONTENT"),
                "events never carry content: {m}"
            );
            assert!(d.get("content").is_none());
            (
                d["path"].as_str().unwrap().to_owned(),
                d["version"].as_u64().unwrap(),
                d["operation"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("notes/a.md".into(), 1, "put".into()),
            ("notes/a.md".into(), 2, "put".into()),
            ("notes/a.md".into(), 3, "delete".into())
        ]
    );
}

#[tokio::test]
async fn a_publisher_that_fails_after_commit_delivers_on_the_retry() {
    let env = common::fresh(None).await;
    let observed = common::observed_bus().await;
    let svc = service(&env, 20);
    svc.put(&alice(), put("crash.md", "x", None)).await.unwrap();
    let records = common::stream_records(env.stream_arn.as_deref().unwrap()).await;
    let announcing: Vec<String> = records
        .iter()
        .filter(|r| {
            matches!(
                workspace_store_aws::events::plan(r),
                Ok(Some(Work::Announce(_)))
            )
        })
        .map(|r| r.sequence_number.clone())
        .collect();
    assert_eq!(announcing.len(), 1);

    // First attempt: the bus is unreachable (as if the publisher died mid-batch). The
    // record is reported failed, so the stream hands it over again.
    let failed = publisher(&env, "no-such-bus").process(&records).await;
    assert!(failed.contains(&announcing[0]), "{failed:?}");
    assert!(observed.drain(0).await.is_empty());

    // The retry delivers it.
    let failed = publisher(&env, &observed.bus).process(&records).await;
    assert!(failed.is_empty());
    let got = observed.drain(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["detail"]["path"], "crash.md");
    workspace_contract::event_schema::assert_valid(&got[0]);

    // A redelivery of the same record carries the same eventId, the one the local outbox
    // would give this change: subscribers dedupe on it.
    let failed = publisher(&env, &observed.bus).process(&records).await;
    assert!(failed.is_empty());
    let again = observed.drain(1).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["detail"]["eventId"], got[0]["detail"]["eventId"]);
    assert_eq!(
        got[0]["detail"]["eventId"],
        workspace_core::events::event_id("acme", "main", "crash.md", 1)
    );
}

#[tokio::test]
async fn retention_prunes_version_items_and_their_s3_versions() {
    let env = common::fresh(None).await;
    let observed = common::observed_bus().await;
    let svc = service(&env, 2);
    for i in 1..=5 {
        svc.put(&alice(), put("r.md", &format!("v{i}"), None))
            .await
            .unwrap();
    }
    let path = FilePath::parse("r.md").unwrap();
    for n in 1..=3 {
        assert!(
            matches!(
                svc.get(&alice(), &path, Some(n)).await,
                Err(WorkspaceError::NotFound(_))
            ),
            "v{n} pruned"
        );
    }
    assert_eq!(
        svc.get(&alice(), &path, Some(4)).await.unwrap().content,
        b"v4"
    );
    assert_eq!(
        s3_versions(&env, "t/acme/w/main/files/r.md").await.len(),
        5,
        "bodies go off the request path"
    );

    let records = common::stream_records(env.stream_arn.as_deref().unwrap()).await;
    assert!(publisher(&env, &observed.bus)
        .process(&records)
        .await
        .is_empty());
    let left = s3_versions(&env, "t/acme/w/main/files/r.md").await;
    assert_eq!(
        left.len(),
        2,
        "only the retained versions keep bodies: {left:?}"
    );
    assert_eq!(
        svc.get(&alice(), &path, Some(4)).await.unwrap().content,
        b"v4"
    );
    assert_eq!(svc.get(&alice(), &path, None).await.unwrap().content, b"v5");
}

#[tokio::test]
async fn the_sweeper_removes_orphans_after_the_grace_period_only() {
    let env = common::fresh(None).await;
    let svc = service(&env, 20);
    let kept = svc
        .put(&alice(), put("kept.md", "committed", None))
        .await
        .unwrap();
    // A crash between the S3 upload and the commit leaves a body nothing points to.
    let bodies = S3Bodies::new(env.clients.s3.clone(), &env.bucket);
    let orphan = bodies
        .put(
            "t/acme/w/main/files/kept.md",
            b"never committed".to_vec(),
            "text/plain",
        )
        .await
        .unwrap();
    let stray = bodies
        .put(
            "t/acme/w/main/files/ghost.md",
            b"never committed".to_vec(),
            "text/plain",
        )
        .await
        .unwrap();
    let sweeper = sweeper(&env);
    let now = workspace_core::ports::Clock::now_ms(&SystemClock);
    let hour = 3_600_000;
    // Within the grace period an upload may still be about to commit: left alone.
    let report = sweeper.sweep(now, hour).await.unwrap();
    assert_eq!(report.deleted, 0);
    // Past it, exactly the two orphans go.
    let report = sweeper.sweep(now + 2 * hour, hour).await.unwrap();
    assert_eq!(report.deleted, 2, "{report:?}");
    assert!(bodies.get(&orphan).await.unwrap().is_none());
    assert!(bodies.get(&stray).await.unwrap().is_none());
    let read = svc
        .get(&alice(), &FilePath::parse("kept.md").unwrap(), None)
        .await
        .unwrap();
    assert_eq!(
        (read.content.as_slice(), read.meta.etag),
        (&b"committed"[..], kept.meta.etag)
    );
}

#[tokio::test]
async fn the_sweeper_removes_abandoned_uploads_after_a_day_only() {
    use workspace_core::service::STAGED_MAX_AGE_MS;
    let env = common::fresh(None).await;
    let bodies = S3Bodies::new(env.clients.s3.clone(), &env.bucket);
    let now = workspace_core::ports::Clock::now_ms(&SystemClock);
    // An upload started and sent, never committed; its bytes were sent twice.
    for (name, bytes) in [("declared", "{}"), ("bytes", "one"), ("bytes", "two")] {
        bodies
            .put_staged(
                &format!("t/acme/w/main/uploads/abc123/{name}"),
                bytes.into(),
                now,
            )
            .await
            .unwrap();
    }
    let sweeper = sweeper(&env);
    let hour = 3_600_000;
    // Past the orphan grace but within a day the upload may still be committed.
    let report = sweeper.sweep(now + 2 * hour, hour).await.unwrap();
    assert_eq!(report.deleted, 0, "{report:?}");
    let key = "t/acme/w/main/uploads/abc123/bytes";
    assert!(bodies.get_staged(key, 10).await.unwrap().is_some());
    let report = sweeper
        .sweep(now + STAGED_MAX_AGE_MS + hour, hour)
        .await
        .unwrap();
    assert_eq!(report.deleted, 3, "every version goes: {report:?}");
    assert!(s3_versions(&env, key).await.is_empty());
    assert!(bodies.get_staged(key, 10).await.unwrap().is_none());
}

#[tokio::test]
async fn a_failed_condition_leaves_no_body_behind() {
    let env = common::fresh(None).await;
    let svc = service(&env, 20);
    let v1 = svc.put(&alice(), put("c.md", "one", None)).await.unwrap();
    svc.put(&alice(), put("c.md", "two", None)).await.unwrap();
    let before = s3_versions(&env, "t/acme/w/main/files/c.md").await;
    let err = svc
        .put(&alice(), put("c.md", "three", Some(&v1.meta.etag)))
        .await
        .unwrap_err();
    assert!(matches!(err, WorkspaceError::Conflict { .. }));
    assert_eq!(
        s3_versions(&env, "t/acme/w/main/files/c.md").await,
        before,
        "the uncommitted body was removed"
    );
    assert_eq!(
        svc.get(&alice(), &FilePath::parse("c.md").unwrap(), None)
            .await
            .unwrap()
            .content,
        b"two"
    );
}

/// A snapshot's pins hold the version item, so the stream never sees its REMOVE and the
/// publisher never deletes its S3 body; after the snapshot is deleted, the next commit
/// releases the item and the publisher deletes the body.
#[tokio::test]
async fn a_snapshot_keeps_pinned_s3_bodies_until_it_ends() {
    let env = common::fresh(None).await;
    let observed = common::observed_bus().await;
    let svc = service(&env, 1);
    let key = "t/acme/w/main/files/p.md";
    let path = FilePath::parse("p.md").unwrap();
    svc.put(&alice(), put("p.md", "pinned", None))
        .await
        .unwrap();
    let snap = svc.create_snapshot(&alice()).await.unwrap();
    for i in 2..=4 {
        svc.put(&alice(), put("p.md", &format!("v{i}"), None))
            .await
            .unwrap();
    }
    let arn = env.stream_arn.as_deref().unwrap();
    let publish = publisher(&env, &observed.bus);
    assert!(publish
        .process(&common::stream_records(arn).await)
        .await
        .is_empty());
    assert_eq!(
        s3_versions(&env, key).await.len(),
        2,
        "the pinned body and the latest survive"
    );
    let through = svc
        .get_in_snapshot(&alice(), &snap.id, &path)
        .await
        .unwrap();
    assert_eq!(through.content, b"pinned");

    svc.delete_snapshot(&alice(), &snap.id).await.unwrap();
    svc.put(&alice(), put("p.md", "v5", None)).await.unwrap();
    assert!(publish
        .process(&common::stream_records(arn).await)
        .await
        .is_empty());
    assert_eq!(
        s3_versions(&env, key).await.len(),
        1,
        "released with its body"
    );
    assert!(matches!(
        svc.get(&alice(), &path, Some(1)).await,
        Err(WorkspaceError::NotFound(_))
    ));
}

#[tokio::test]
async fn erasing_a_version_is_announced_from_the_stream_and_its_s3_version_is_gone() {
    let env = common::fresh(None).await;
    let observed = common::observed_bus().await;
    let svc = service(&env, 20);
    let admin = admin();
    svc.put(&alice(), put("leak.md", "the leaked text", None))
        .await
        .unwrap();
    svc.put(&alice(), put("leak.md", "clean", None))
        .await
        .unwrap();
    let path = FilePath::parse("leak.md").unwrap();
    let key =
        workspace_core::service::sweep::body_key(&Scope::parse("acme", "main").unwrap(), &path);
    assert_eq!(s3_versions(&env, &key).await.len(), 2);
    svc.erase_version(&admin, &path, 1, false).await.unwrap();
    // The exact S3 version is deleted, not hidden behind a marker.
    assert_eq!(s3_versions(&env, &key).await.len(), 1);

    let records = common::stream_records(env.stream_arn.as_deref().expect("stream")).await;
    let failed = publisher(&env, &observed.bus).process(&records).await;
    assert!(failed.is_empty(), "{failed:?}");
    let got = observed.drain(3).await;
    let erase: Vec<_> = got
        .iter()
        .filter(|m| m["detail"]["operation"] == "erase")
        .collect();
    assert_eq!(erase.len(), 1, "{got:?}");
    workspace_contract::event_schema::assert_valid(erase[0]);
    assert_eq!(
        (
            erase[0]["detail"]["version"].as_u64(),
            erase[0]["detail"]["principal"].as_str()
        ),
        (Some(1), Some("root"))
    );
    assert_ne!(
        erase[0]["detail"]["eventId"],
        workspace_core::events::event_id("acme", "main", "leak.md", 1),
        "not the put's id"
    );
}

/// A merge's changes reach subscribers from the stream like any write, naming the merge
/// and the fork (the version items carry them).
#[tokio::test]
async fn changes_a_merge_makes_are_announced_with_the_merge_and_the_fork() {
    use workspace_core::forks::three_way::Strategy;
    use workspace_core::service::{ForkRequest, MergeOutcome, MergeRequest};
    let env = common::fresh(None).await;
    let observed = common::observed_bus().await;
    let svc = service(&env, 20);
    let fork = svc
        .create_fork(&alice(), ForkRequest::default())
        .await
        .unwrap();
    let in_fork = Identity::read_write(
        Scope::new(alice().scope.tenant.clone(), fork.workspace.clone()),
        "alice",
    );
    svc.put(&in_fork, put("merged.md", "from the fork", None))
        .await
        .unwrap();
    let MergeOutcome::Merged(report) = svc
        .merge_fork(
            &alice(),
            fork.workspace.as_str(),
            MergeRequest {
                strategy: Strategy::Fail,
                resolutions: Default::default(),
                dry_run: false,
                discard_fork: false,
                idempotency_key: None,
            },
        )
        .await
        .unwrap()
    else {
        panic!("the merge has no conflict");
    };
    let records = common::stream_records(env.stream_arn.as_deref().expect("stream")).await;
    let failed = publisher(&env, &observed.bus).process(&records).await;
    assert!(failed.is_empty(), "{failed:?}");
    // The fork's own write and the merge's write in the parent.
    let got = observed.drain(2).await;
    let mut seen: Vec<(String, Option<String>, Option<String>)> = got
        .iter()
        .map(|m| {
            workspace_contract::event_schema::assert_valid(m);
            let d = &m["detail"];
            let s = |k: &str| d.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            (s("workspace").unwrap(), s("mergeId"), s("forkId"))
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "main".to_owned(),
                Some(report.merge_id.clone()),
                Some(fork.workspace.to_string())
            ),
            (fork.workspace.to_string(), None, None),
        ]
    );
}

/// A stream record as Lambda hands it to the publisher (DynamoDB JSON images), for the
/// event source's filter patterns to match.
fn lambda_shape(r: &aws_sdk_dynamodbstreams::types::Record) -> serde_json::Value {
    use aws_sdk_dynamodbstreams::types::AttributeValue as A;
    use base64::Engine;
    let image = |m: &std::collections::HashMap<String, A>| {
        let attrs: serde_json::Map<String, serde_json::Value> = m
            .iter()
            .filter_map(|(k, v)| {
                let v = match v {
                    A::S(s) => serde_json::json!({ "S": s }),
                    A::N(n) => serde_json::json!({ "N": n }),
                    A::Bool(b) => serde_json::json!({ "BOOL": b }),
                    A::B(b) => serde_json::json!({
                        "B": base64::engine::general_purpose::STANDARD.encode(b.as_ref())
                    }),
                    _ => return None,
                };
                Some((k.clone(), v))
            })
            .collect();
        serde_json::Value::Object(attrs)
    };
    let d = r.dynamodb.as_ref().expect("dynamodb");
    let mut dynamodb = serde_json::Map::new();
    if let Some(m) = &d.new_image {
        dynamodb.insert("NewImage".into(), image(m));
    }
    if let Some(m) = &d.old_image {
        dynamodb.insert("OldImage".into(), image(m));
    }
    serde_json::json!({
        "eventName": r.event_name.as_ref().map(|e| e.as_str()),
        "dynamodb": dynamodb,
    })
}

/// Lambda's event filter, for the rules the template's patterns use: a list of values (or
/// `{"exists": bool}`) a field must match, and objects matched field by field.
/// Hand-written: no maintained crate evaluates Lambda's filter patterns; the few rules here
/// are Lambda's documented ones (values compared exactly, `exists`).
fn filter_matches(pattern: &serde_json::Value, event: &serde_json::Value) -> bool {
    let Some(fields) = pattern.as_object() else {
        return false;
    };
    fields.iter().all(|(k, p)| {
        let v = event.get(k);
        match p {
            serde_json::Value::Array(alternatives) => alternatives.iter().any(|alt| {
                match alt.get("exists").and_then(serde_json::Value::as_bool) {
                    Some(exists) => v.is_some() == exists,
                    None => v == Some(alt),
                }
            }),
            serde_json::Value::Object(_) => v.is_some_and(|v| filter_matches(p, v)),
            _ => false,
        }
    })
}

/// The publisher's event source filter patterns, from template.yaml.
fn publisher_filters() -> Vec<serde_json::Value> {
    let template = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml"),
    )
    .expect("template.yaml");
    let stream = template
        .split("\n        TableStream:\n")
        .nth(1)
        .expect("the publisher's TableStream event");
    let patterns: Vec<serde_json::Value> = stream
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("          "))
        .filter_map(|l| l.trim().strip_prefix("- Pattern: '"))
        .map(|p| serde_json::from_str(p.trim_end_matches('\'')).expect("a JSON pattern"))
        .collect();
    assert_eq!(patterns.len(), 3, "{patterns:?}");
    patterns
}

/// An erased inline version leaves its body in no item, and in no stream record the
/// publisher is handed from the erase on: the erase's MODIFY (whose old image holds the
/// body) never passes the event source's filter; the erase is announced from its
/// change-log entry.
#[tokio::test]
async fn an_erased_inline_body_is_in_no_item_and_no_record_the_publisher_reads() {
    let env = common::fresh(None).await;
    let svc = env.service(Limits::default());
    let admin = admin();
    let secret = "inline leak 5e1d 9c2e";
    svc.put(&alice(), put("leak.md", secret, None))
        .await
        .unwrap();
    svc.put(&alice(), put("leak.md", "clean", None))
        .await
        .unwrap();
    svc.put(&alice(), put("leak.md", "clean again", None))
        .await
        .unwrap();
    let arn = env.stream_arn.clone().expect("stream");
    let before = common::raw_stream_records(&arn).await.len();
    let path = FilePath::parse("leak.md").unwrap();
    svc.erase_version(&admin, &path, 1, false).await.unwrap();

    let holds = |v: &serde_json::Value| {
        let text = v.to_string();
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(secret);
        text.contains(secret) || text.contains(&encoded)
    };
    let filters = publisher_filters();
    let passes = |v: &serde_json::Value| filters.iter().any(|f| filter_matches(f, v));
    let records = common::raw_stream_records(&arn).await;
    let (written, erased) = records.split_at(before);
    // The write itself carried the body inline (it reached the publisher then, committed).
    assert!(written
        .iter()
        .map(lambda_shape)
        .any(|r| passes(&r) && holds(&r)));
    // From the erase on: the MODIFY holds the body in its old image, and is filtered out;
    // nothing that passes holds it; the erase's change-log entry passes and is announced.
    let erased: Vec<serde_json::Value> = erased.iter().map(lambda_shape).collect();
    assert!(
        erased
            .iter()
            .any(|r| r["eventName"] == "MODIFY" && holds(r) && !passes(r)),
        "{erased:?}"
    );
    let delivered: Vec<&serde_json::Value> = erased.iter().filter(|r| passes(r)).collect();
    assert!(delivered.iter().all(|r| !holds(r)), "{delivered:?}");
    let announced: Vec<_> = delivered
        .iter()
        .flat_map(|r| {
            workspace_store_aws::events::records_from_lambda_event(
                &serde_json::json!({ "Records": [r] }),
            )
        })
        .filter_map(|r| workspace_store_aws::events::plan(&r).unwrap())
        .collect();
    assert!(
        announced.iter().any(|w| matches!(w, Work::Announce(e)
            if e.operation == workspace_core::events::Operation::Erase && e.version == 1)),
        "{announced:?}"
    );
    // And no item of the workspace holds it.
    let items = aws_sdk_dynamodb::Client::new(&common::sdk_config())
        .scan()
        .table_name(&env.table)
        .send()
        .await
        .unwrap();
    for item in items.items() {
        for v in item.values() {
            let bytes: &[u8] = match v {
                aws_sdk_dynamodb::types::AttributeValue::S(s) => s.as_bytes(),
                aws_sdk_dynamodb::types::AttributeValue::B(b) => b.as_ref(),
                _ => continue,
            };
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{item:?}"
            );
        }
    }
}
