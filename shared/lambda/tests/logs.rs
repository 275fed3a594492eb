//! The functions' log lines, from the real Lambda adapter: every line inside an invocation
//! names its request and trace (the lines of one binary, apart from the metrics tests:
//! tracing caches whether a log site is enabled per process, and tests without a
//! subscriber running beside these would turn the adapter's own line off).

use emf::{
    context, emf_violations, event, put_event, request, Emitted, Lines, REQUEST_ID, TRACE_ID,
};
use serde_json::{json, Value};
use tracing::instrument::WithSubscriber;
use tracing_subscriber::layer::SubscriberExt;
use workspace_lambda::invoke;

mod common;
mod emf;

#[tokio::test]
async fn every_log_line_of_an_invocation_names_its_request_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let put = common::app("put", dir.path());
    let lines = Lines::default();
    let subscriber =
        tracing_subscriber::registry().with(workspace_lambda::logs::layer(lines.clone()));
    let emitted = Emitted::default();
    let sink = emitted.clone();
    let emit = move |line: &str| sink.0.lock().unwrap().push(line.to_owned());
    let ev = put_event(
        "notes/keys.md",
        json!({ "content": "key AKIAIOSFODNN7EXAMPLE" }),
    );
    async {
        invoke(&put, request(&ev), &emit).await.unwrap();
        tracing::info!("outside any invocation");
    }
    .with_subscriber(subscriber)
    .await;
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each log line is one JSON object"))
        .collect();
    let inside: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] != "outside any invocation")
        .collect();
    let messages: Vec<&str> = inside
        .iter()
        .filter_map(|l| l["message"].as_str())
        .collect();
    assert!(messages.contains(&"request"), "the adapter's line: {text}");
    assert!(
        messages.contains(&"secrets redacted before storing"),
        "the domain's line: {text}"
    );
    for line in &inside {
        assert_eq!(line["requestId"], REQUEST_ID, "{line}");
        assert_eq!(line["traceId"], TRACE_ID, "{line}");
        assert_eq!(line["apiRequestId"], "Bq3xTgXcIAMEVaQ=", "{line}");
        assert!(
            line["level"].is_string() && line["target"].is_string(),
            "{line}"
        );
        // A log line is no EMF document: CloudWatch extracts no metric from it.
        assert!(!emf_violations(line).is_empty(), "{line}");
    }
    let outside = lines
        .iter()
        .find(|l| l["message"] == "outside any invocation")
        .unwrap();
    assert!(outside.get("requestId").is_none(), "{outside}");
    // The invocation's document validates, and names the same ids.
    let doc = emitted.take().remove(0);
    assert_eq!(emf_violations(&doc), Vec::<String>::new());
    assert_eq!(
        (doc["requestId"].as_str(), doc["traceId"].as_str()),
        (Some(REQUEST_ID), Some(TRACE_ID))
    );
}

#[tokio::test]
async fn without_a_runtime_trace_id_the_gateways_is_used_and_a_missing_one_is_null() {
    let dir = tempfile::tempdir().unwrap();
    let get = common::app("get", dir.path());
    let lines = Lines::default();
    let subscriber =
        tracing_subscriber::registry().with(workspace_lambda::logs::layer(lines.clone()));
    async {
        use lambda_http::RequestExt;
        let ev = event("health.json");
        let with_header = lambda_http::request::from_str(&ev.to_string()).unwrap();
        let with_header = with_header.with_lambda_context(context("r-1", None));
        invoke(&get, with_header, &|_| {}).await.unwrap();
        let mut bare = ev.clone();
        bare["headers"]
            .as_object_mut()
            .unwrap()
            .remove("x-amzn-trace-id");
        let bare = lambda_http::request::from_str(&bare.to_string()).unwrap();
        let bare = bare.with_lambda_context(context("r-2", None));
        invoke(&get, bare, &|_| {}).await.unwrap();
    }
    .with_subscriber(subscriber)
    .await;
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    let by_id = |id: &str| -> Value {
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|l| l["requestId"] == id)
            .unwrap_or_else(|| panic!("no line of {id}: {text}"))
    };
    let header = event("health.json")["headers"]["x-amzn-trace-id"].clone();
    assert!(
        header.is_string(),
        "the recorded event carries the gateway's trace header"
    );
    assert_eq!(by_id("r-1")["traceId"], header);
    let bare = by_id("r-2");
    assert!(bare.get("traceId").is_some_and(Value::is_null), "{bare}");
}
