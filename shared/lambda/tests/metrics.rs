//! The functions' metrics, from the real Lambda adapter driven with the recorded API
//! Gateway events in `events/`: every EMF document is valid by the EMF specification's
//! schema (`schemas/emf.schema.json`) and names only what `schemas/metrics.json` lists,
//! with bounded dimension values, and the domain's counters reach it.

use emf::{call, contract_violations, emf_violations, event, put_event, repo_file, request};
use emf::{REQUEST_ID, TRACE_ID};
use serde_json::{json, Value};
use workspace_lambda::invoke;

mod common;
mod emf;

#[tokio::test]
async fn each_request_emits_one_document_of_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let put = common::app("put", dir.path());
    let (s, doc) = call(&put, &event("put-file.json")).await;
    assert_eq!(s, 200);
    assert_eq!(
        (doc["Function"].as_str(), doc["Operation"].as_str()),
        (Some("put"), Some("putFile"))
    );
    assert_eq!(doc["Requests"], 1);
    for m in ["ServerErrors", "Conflicts", "QuotaRefusals", "ClientErrors"] {
        assert_eq!(doc[m], 0, "{m}: {doc}");
    }
    let body_len = event("put-file.json")["body"].as_str().unwrap().len();
    assert_eq!(doc["BytesIn"], body_len);
    assert!(doc["BytesOut"].as_u64().unwrap() > 0, "{doc}");
    assert!(doc["Latency"].as_f64().unwrap() >= 0.0, "{doc}");
    assert_eq!(
        (doc["requestId"].as_str(), doc["traceId"].as_str()),
        (Some(REQUEST_ID), Some(TRACE_ID))
    );
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["Function", "Operation"], ["Function"]])
    );
    drop(put);

    // A row another function serves, and no row at all: this function's, `unmatched`.
    let list = common::app("list", dir.path());
    let (s, doc) = call(&list, &event("put-file.json")).await;
    assert_eq!(s, 404);
    assert_eq!(
        (doc["Function"].as_str(), doc["Operation"].as_str()),
        (Some("list"), Some("unmatched"))
    );
    assert_eq!(doc["ClientErrors"], 1);
    drop(list);
    let get = common::app("get", dir.path());
    let mut ev = event("health.json");
    ev["rawPath"] = "/v1/host/workspace/files/acme/secret/path".into();
    ev["requestContext"]["http"]["method"] = "POST".into();
    let (s, doc) = call(&get, &ev).await;
    assert_eq!(s, 405);
    assert_eq!(
        (doc["Function"].as_str(), doc["Operation"].as_str()),
        (Some("get"), Some("unmatched"))
    );
    assert!(
        !doc.to_string().contains("secret/path"),
        "no path in a document: {doc}"
    );

    let (s, doc) = call(&get, &event("get-file.json")).await;
    assert_eq!(s, 200);
    assert_eq!(
        (doc["Function"].as_str(), doc["Operation"].as_str()),
        (Some("get"), Some("getFile"))
    );
    assert!(
        !doc.to_string().contains("acme"),
        "no tenant in a document: {doc}"
    );
}

#[tokio::test]
async fn a_put_that_redacts_counts_its_redactions() {
    let dir = tempfile::tempdir().unwrap();
    let put = common::app("put", dir.path());
    let (s, doc) = call(
        &put,
        &put_event(
            "notes/keys.md",
            json!({ "content": "aws key AKIAIOSFODNN7EXAMPLE and AKIAIOSFODNN7EXAMPLF" }),
        ),
    )
    .await;
    assert_eq!(s, 200, "{doc}");
    assert!(doc["Redactions"].as_u64().unwrap() >= 1, "{doc}");
    let (_, doc) = call(
        &put,
        &put_event("notes/plain.md", json!({ "content": "nothing secret" })),
    )
    .await;
    assert_eq!(
        doc["Redactions"], 0,
        "a write redacts, and counts nothing: {doc}"
    );
}

#[tokio::test]
async fn a_conflict_and_a_quota_refusal_count_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let put = common::app("put", dir.path());
    call(&put, &event("put-file.json")).await;
    let mut ev = event("put-file.json");
    ev["headers"]["if-match"] = "\"not-the-etag\"".into();
    let (s, doc) = call(&put, &ev).await;
    assert_eq!(s, 409, "{doc}");
    assert_eq!(
        (
            &doc["Conflicts"],
            &doc["ClientErrors"],
            &doc["ServerErrors"]
        ),
        (&json!(1), &json!(0), &json!(0))
    );

    let big = "x".repeat(1_048_577);
    let (s, doc) = call(&put, &put_event("notes/big.md", json!({ "content": big }))).await;
    assert_eq!(s, 413, "{doc}");
    assert_eq!(
        (&doc["QuotaRefusals"], &doc["ClientErrors"]),
        (&json!(1), &json!(0))
    );
}

#[tokio::test]
async fn a_merge_counts_the_files_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::app_of(&["put", "snapshots"], dir.path());
    call(&app, &event("put-file.json")).await;
    let (s, doc) = call(&app, &event("create-fork.json")).await;
    assert_eq!(s, 201);
    assert_eq!(doc["Operation"], "createFork");
    assert!(doc.get("MergeFiles").is_none(), "{doc}");
    // The fork's id is in the answer, not the document: ask again for it.
    let resp = invoke(&app, request(&event("create-fork.json")), &|_| {})
        .await
        .unwrap();
    let fork: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
    let fork = fork["forkId"].as_str().unwrap().to_owned();
    for path in ["notes/a.md", "notes/b.md", "notes/today.md"] {
        let mut ev = put_event(path, json!({ "content": format!("{path} from the fork") }));
        ev["headers"]["x-workspace-id"] = fork.clone().into();
        let (s, doc) = call(&app, &ev).await;
        assert_eq!(s, 200, "{doc}");
    }
    let mut ev = event("create-fork.json");
    let path = format!("/v1/host/workspace/forks/{fork}/merge");
    ev["routeKey"] = "POST /v1/host/workspace/forks/{id}/merge".into();
    ev["requestContext"]["routeKey"] = ev["routeKey"].clone();
    ev["rawPath"] = path.clone().into();
    ev["requestContext"]["http"]["path"] = path.into();
    ev["pathParameters"] = json!({ "id": fork });
    ev["body"] = json!({ "strategy": "fork-wins" }).to_string().into();
    ev["headers"]
        .as_object_mut()
        .unwrap()
        .remove("content-length");
    let (s, doc) = call(&app, &ev).await;
    assert_eq!(s, 200, "{doc}");
    assert_eq!(
        (doc["Function"].as_str(), doc["Operation"].as_str()),
        (Some("snapshots"), Some("mergeFork"))
    );
    assert_eq!(doc["MergeFiles"], 3, "{doc}");
}

#[test]
fn the_contract_names_only_what_the_emf_schema_admits() {
    // Every metric of the contract in one document validates against the specification.
    let contract = repo_file("schemas/metrics.json");
    let mut doc = workspace_lambda::metrics::Document::request("get", "getFile");
    for (name, m) in contract["metrics"].as_object().unwrap() {
        let name: &'static str = Box::leak(name.clone().into_boxed_str());
        let unit: &'static str = Box::leak(m["unit"].as_str().unwrap().to_owned().into_boxed_str());
        doc = doc.metric(name, unit, 0);
    }
    let doc: Value = serde_json::from_str(&doc.line()).unwrap();
    assert_eq!(emf_violations(&doc), Vec::<String>::new());
    assert_eq!(contract_violations(&doc), Vec::<String>::new());
    // And the checks catch what they are for.
    let mut bad = doc.clone();
    bad["Operation"] = "acme/notes/today.md".into();
    bad["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] = "Furlongs".into();
    assert!(!emf_violations(&bad).is_empty());
    assert_eq!(
        contract_violations(&bad).len(),
        2,
        "{:?}",
        contract_violations(&bad)
    );
    let mut tenant = doc;
    tenant["_aws"]["CloudWatchMetrics"][0]["Dimensions"] = json!([["Function", "Tenant"]]);
    tenant["Tenant"] = "acme".into();
    assert_eq!(
        contract_violations(&tenant).len(),
        2,
        "{:?}",
        contract_violations(&tenant)
    );
}

#[test]
fn an_asynchronous_run_names_its_function_alone() {
    let line = workspace_lambda::metrics::Document::run("publish")
        .metric("EventsProcessed", "Count", 3)
        .line();
    let doc: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(emf_violations(&doc), Vec::<String>::new());
    assert_eq!(contract_violations(&doc), Vec::<String>::new());
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["Function"]])
    );
    assert_eq!(doc["EventsProcessed"], 3);
}

#[tokio::test]
async fn a_search_counts_the_changes_it_caught_up() {
    let dir = tempfile::tempdir().unwrap();
    let (put, search) = put_and_search(dir.path());
    call(&put, &event("put-file.json")).await;
    let (s, doc) = call(&search, &event("search.json")).await;
    assert_eq!(s, 200, "{doc}");
    assert_eq!(
        (doc["Function"].as_str(), doc["Operation"].as_str()),
        (Some("search"), Some("search"))
    );
    assert_eq!(
        doc["SearchCatchUp"], 1,
        "the put, applied before answering: {doc}"
    );
    let (_, doc) = call(&search, &event("search.json")).await;
    assert_eq!(doc["SearchCatchUp"], 0, "nothing new to catch up: {doc}");
}

/// The `put` and `search` functions over one embedded store, as two functions: the search
/// function's indexes in memory, caught up from the change log (as on AWS from DynamoDB's).
fn put_and_search(dir: &std::path::Path) -> (workspace_http::App, workspace_http::App) {
    use std::sync::Arc;
    use workspace_core::ports::{MetaPorts, SystemClock};
    use workspace_core::search::ChangeLogFeed;
    use workspace_wiring::{services, Settings};
    let settings = Settings::from_source(|_| None).expect("default settings");
    let store = Arc::new(workspace_store_embedded::EmbeddedStore::open(dir).unwrap());
    let secrets = Arc::new(workspace_store_embedded::secrets::SecretFile::new(dir));
    let files = || {
        services::files(
            &settings,
            MetaPorts::of(store.clone()),
            store.clone(),
            store.clone(),
            secrets.clone(),
        )
    };
    let feed = Arc::new(ChangeLogFeed {
        meta: store.clone(),
        clock: Arc::new(SystemClock),
    });
    let put = workspace_lambda::app(&settings)
        .with_files(files())
        .serve(workspace_http::serve::PUT);
    let search = workspace_lambda::app(&settings)
        .with_files(files().with_search(services::search_in_memory(feed)))
        .serve(workspace_http::serve::SEARCH);
    (put, search)
}
