//! The publisher (`functions/publish`) broken at each of its AWS calls, on the emulator.
//!
//! Its crash points, in the order one stream batch meets them (`src/publisher.rs`):
//! 1. each `S3.DeleteObject` of a pruned version's body (one per REMOVE of a version item);
//! 2. each `EventBridge.PutEvents` of up to ten announcements (committed puts, deletes,
//!    erases), after every delete of the batch.
//!
//! Each call fails in three ways: refused (never sent), answered but the answer lost (the
//! call took effect; the publisher sees an error), and the function dying there (Lambda then
//! delivers the whole batch again). The stream is then redelivered as Lambda does with
//! `ReportBatchItemFailures` (from the first sequence number reported failed) until the
//! publisher reports nothing failed. After that, for every crash point and every way:
//! every committed change was announced at least once and nothing else was (a write refused
//! by its condition never is), a redelivered announcement carries the same `eventId`, every
//! pruned version's body is gone from S3 and every retained one is still there.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::{Intercept, SharedInterceptor};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use workspace_core::{FilePath, Identity, Limits, PutRequest, Scope};
use workspace_store_aws::events::{plan, EventBridgeSink, StreamRecord, Work};
use workspace_store_aws::publisher::Publisher;
use workspace_store_aws::testing as common;
use workspace_store_aws::S3Bodies;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// The call is never sent.
    Refused,
    /// The call takes effect; its answer is lost.
    AnswerLost,
    /// The function dies at the call (after it took effect): the whole batch comes again.
    Died,
}

/// Breaks the `at`-th publisher call (0-based; `S3.DeleteObject` and
/// `EventBridge.PutEvents` only) once, in the armed way.
#[derive(Debug, Default)]
struct BreakCall {
    /// Publisher calls started since armed.
    seen: AtomicUsize,
    armed: Mutex<Option<(usize, Fault)>>,
    fired: Mutex<Option<Fault>>,
}

/// The publisher's calls: the service's own S3 and DynamoDB calls are not counted.
fn is_publisher_call(req: &HttpRequest) -> bool {
    let put_events = req
        .headers()
        .get("x-amz-target")
        .is_some_and(|t| t.ends_with(".PutEvents"));
    put_events || req.method() == "DELETE"
}

impl BreakCall {
    fn arm(&self, at: usize, fault: Fault) {
        self.seen.store(0, Ordering::SeqCst);
        *self.fired.lock().unwrap() = None;
        *self.armed.lock().unwrap() = Some((at, fault));
    }

    fn fired(&self) -> Option<Fault> {
        *self.fired.lock().unwrap()
    }

    /// Counts a publisher call; the armed fault when this is the armed call (disarmed then).
    fn next_call(&self) -> Option<Fault> {
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        let mut armed = self.armed.lock().unwrap();
        match *armed {
            Some((at, fault)) if at == n => {
                *armed = None;
                *self.fired.lock().unwrap() = Some(fault);
                Some(fault)
            }
            _ => None,
        }
    }
}

/// Carried from before the call to after its answer: lose that answer.
#[derive(Debug, Clone)]
struct LoseAnswer;

impl Storable for LoseAnswer {
    type Storer = StoreReplace<Self>;
}

#[derive(Debug, Clone)]
struct Interceptor(Arc<BreakCall>);

impl Intercept for Interceptor {
    fn name(&self) -> &'static str {
        "BreakCall"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !is_publisher_call(context.request()) {
            return Ok(());
        }
        match self.0.next_call() {
            Some(Fault::Refused) => Err("crash point: the call is refused".into()),
            Some(Fault::AnswerLost | Fault::Died) => {
                cfg.interceptor_state().store_put(LoseAnswer);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn read_before_deserialization(
        &self,
        _: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg.load::<LoseAnswer>().is_some() {
            return Err("crash point: the call took effect and its answer is lost".into());
        }
        Ok(())
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

const PATHS: [&str; 3] = ["a.md", "b.md", "c.md"];
const VERSIONS: u64 = 4;

/// What the workload commits: `(path, version, operation)` of every change, each of which
/// must be announced. A write refused by its condition is not among them.
fn committed() -> BTreeSet<(String, u64, String)> {
    let mut out: BTreeSet<_> = PATHS
        .iter()
        .flat_map(|p| (1..=VERSIONS).map(move |v| ((*p).to_owned(), v, "put".to_owned())))
        .collect();
    out.insert(("c.md".to_owned(), VERSIONS + 1, "delete".to_owned()));
    out
}

/// A fresh table and bucket whose publisher calls go through `breaker`; the workload
/// committed (two versions kept per path, so older bodies are pruned from the stream); the
/// stream's records.
async fn committed_batch(breaker: &Arc<BreakCall>) -> (common::Env, Vec<StreamRecord>) {
    let interceptor = SharedInterceptor::new(Interceptor(breaker.clone()));
    let env = common::fresh(Some(interceptor)).await;
    // Bodies in S3, so pruning has S3 versions to delete.
    let svc = env
        .service(Limits {
            max_versions: 2,
            ..Limits::default()
        })
        .with_inline_body_bytes(0);
    for path in PATHS {
        let mut etag = None;
        for v in 1..=VERSIONS {
            let done = svc
                .put(
                    &alice(),
                    put(path, &format!("{path} v{v}"), etag.as_deref()),
                )
                .await
                .unwrap();
            assert_eq!(done.meta.version, v);
            etag = Some(done.meta.etag);
        }
    }
    // Refused by its condition: never announced.
    let stale = svc
        .put(&alice(), put("a.md", "stale", Some("\"1-nope\"")))
        .await;
    assert!(stale.is_err());
    svc.delete(&alice(), &FilePath::parse("c.md").unwrap(), None)
        .await
        .unwrap();
    let records = common::stream_records(env.stream_arn.as_deref().expect("stream")).await;
    (env, records)
}

/// How many versions of each file's body S3 holds.
async fn bodies_in_s3(env: &common::Env) -> BTreeMap<String, usize> {
    let out = env
        .clients
        .s3
        .list_object_versions()
        .bucket(&env.bucket)
        .send()
        .await
        .unwrap();
    let mut counts = BTreeMap::new();
    for v in out.versions() {
        let key = v.key().unwrap_or_default();
        if let Some(path) = key.strip_prefix("t/acme/w/main/files/") {
            *counts.entry(path.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

/// Delivers `records` as Lambda does until the publisher reports nothing failed: a
/// reported failure redelivers from its first sequence number on; a publisher that died
/// (its task panicked) gets the whole batch again. The rounds it took.
async fn deliver(env: &common::Env, bus: &str, records: &[StreamRecord]) -> usize {
    let mut pending = records.to_vec();
    for round in 1..=6 {
        let publisher = Publisher {
            sink: EventBridgeSink::new(env.clients.eventbridge.clone(), bus),
            bodies: S3Bodies::new(env.clients.s3.clone(), &env.bucket),
        };
        let batch = pending.clone();
        let run = tokio::spawn(async move { publisher.process(&batch).await }).await;
        let Ok(failed) = run else {
            // Died: the whole batch comes again.
            continue;
        };
        let Some(first) = failed.first() else {
            return round;
        };
        let from = pending
            .iter()
            .position(|r| r.sequence_number == *first)
            .expect("a reported sequence number is one of the batch");
        assert_eq!(
            failed.len(),
            pending.len() - from,
            "every record after the first failed one is reported too"
        );
        pending = pending[from..].to_vec();
    }
    panic!("the publisher still reported failures after 6 deliveries");
}

#[tokio::test]
async fn a_publisher_broken_at_any_call_loses_no_event_and_no_pruning() {
    // The calls of a clean run, and what it leaves: the reference for every broken one.
    let clean = Arc::new(BreakCall::default());
    let (env, records) = committed_batch(&clean).await;
    let announcing = records
        .iter()
        .filter(|r| matches!(plan(r), Ok(Some(Work::Announce(_)))))
        .count();
    let pruning = records
        .iter()
        .filter(|r| matches!(plan(r), Ok(Some(Work::DeleteBody(_)))))
        .count();
    assert_eq!(announcing, committed().len());
    assert!(pruning >= 2 * PATHS.len(), "{pruning} bodies pruned");
    let observed = common::observed_bus().await;
    clean.arm(usize::MAX, Fault::Refused);
    assert_eq!(deliver(&env, &observed.bus, &records).await, 1);
    let calls = clean.seen.load(Ordering::SeqCst);
    // One delete per pruned body, one PutEvents per ten announcements.
    assert_eq!(calls, pruning + announcing.div_ceil(10));
    let kept = bodies_in_s3(&env).await;
    assert_eq!(kept.get("a.md"), Some(&2), "{kept:?}");
    assert_eq!(kept.get("b.md"), Some(&2), "{kept:?}");
    let reference = observed.drain(announcing).await;
    assert_eq!(reference.len(), announcing);

    for at in 0..calls {
        for fault in [Fault::Refused, Fault::AnswerLost, Fault::Died] {
            let context = format!("call {at} of {calls}, {fault:?}");
            let breaker = Arc::new(BreakCall::default());
            let (env, records) = committed_batch(&breaker).await;
            let observed = common::observed_bus().await;
            breaker.arm(at, fault);
            let rounds = deliver(&env, &observed.bus, &records).await;
            assert_eq!(
                breaker.fired(),
                Some(fault),
                "{context}: the fault never fired"
            );
            assert!(rounds >= 2, "{context}: the fault did not fail the batch");

            // Every committed change announced (at least once), nothing else; a repeat
            // carries the same eventId.
            let got = observed.drain(announcing).await;
            let mut ids: BTreeMap<(String, u64, String), BTreeSet<String>> = BTreeMap::new();
            for m in &got {
                workspace_contract::event_schema::assert_valid(m);
                let d = &m["detail"];
                ids.entry((
                    d["path"].as_str().unwrap().to_owned(),
                    d["version"].as_u64().unwrap(),
                    d["operation"].as_str().unwrap().to_owned(),
                ))
                .or_default()
                .insert(d["eventId"].as_str().unwrap().to_owned());
            }
            let announced: BTreeSet<_> = ids.keys().cloned().collect();
            assert_eq!(announced, committed(), "{context}");
            assert!(
                ids.values().all(|i| i.len() == 1),
                "{context}: a repeat with another eventId: {ids:?}"
            );
            assert_eq!(bodies_in_s3(&env).await, kept, "{context}: bodies in S3");
        }
    }
}
