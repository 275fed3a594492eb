//! What the metrics and logs tests share: the recorded events through the real adapter
//! ([`invoke`]) with a runtime context, the EMF specification's schema and the contract of
//! `schemas/metrics.json`, and buffers standing in for stdout.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use workspace_http::routes::ROUTES;
use workspace_lambda::invoke;

pub const REQUEST_ID: &str = "8f5e2c1a-7d4b-4c3e-9a1f-0b6d2e4f8a7c";
pub const TRACE_ID: &str =
    "Root=1-67402cb8-61401695c6668ed76b7d172b;Parent=53995c3f42cd8ad8;Sampled=1";

pub fn repo_file(path: &str) -> Value {
    let path = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).expect("JSON")
}

pub fn event(name: &str) -> Value {
    repo_file(&format!("events/{name}"))
}

pub fn emf_schema() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        jsonschema::validator_for(&repo_file("schemas/emf.schema.json"))
            .expect("the EMF specification's schema compiles")
    })
}

/// Every way `doc` breaks the EMF specification's schema.
pub fn emf_violations(doc: &Value) -> Vec<String> {
    emf_schema()
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Every way `doc` breaks `schemas/metrics.json` (and the specification's rules the
/// schema cannot say: each referenced member is on the root, a number or a string).
pub fn contract_violations(doc: &Value) -> Vec<String> {
    let contract = repo_file("schemas/metrics.json");
    let mut out = Vec::new();
    let functions: BTreeSet<&str> = ROUTES.iter().map(|r| r.function).collect();
    let asynchronous = ["publish", "indexer", "index", "sweep", "purge"];
    let mut operations: BTreeSet<&str> = ROUTES.iter().map(|r| r.route.operation_id()).collect();
    operations.insert("unmatched");
    let directives = doc["_aws"]["CloudWatchMetrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if directives.len() != 1 {
        out.push(format!("{} directives, not one", directives.len()));
    }
    for d in &directives {
        if d["Namespace"] != contract["namespace"] {
            out.push(format!("namespace {}", d["Namespace"]));
        }
        for set in d["Dimensions"].as_array().into_iter().flatten() {
            if !contract["dimensionSets"].as_array().unwrap().contains(set) {
                out.push(format!("dimension set {set}"));
            }
            for name in set.as_array().into_iter().flatten() {
                let name = name.as_str().unwrap_or_default();
                let value = doc[name].as_str();
                let bounded = match (name, value) {
                    ("Function", Some(f)) => functions.contains(f) || asynchronous.contains(&f),
                    ("Operation", Some(o)) => operations.contains(o),
                    _ => false,
                };
                if !bounded {
                    out.push(format!("dimension {name} = {}", doc[name]));
                }
            }
        }
        for m in d["Metrics"].as_array().into_iter().flatten() {
            let name = m["Name"].as_str().unwrap_or_default();
            match contract["metrics"].get(name) {
                None => out.push(format!("metric {name} is not in schemas/metrics.json")),
                Some(c) if c["unit"] != m["Unit"] => {
                    out.push(format!("metric {name} in {}, not {}", m["Unit"], c["unit"]))
                }
                Some(_) => {}
            }
            if !doc[name].is_number() {
                out.push(format!("metric {name} has no numeric member"));
            }
        }
    }
    out
}

/// The documents one test's invocations emitted.
#[derive(Clone, Default)]
pub struct Emitted(pub Arc<Mutex<Vec<String>>>);

impl Emitted {
    pub fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .iter()
            .map(|l| {
                assert!(!l.contains('\n'), "one document is one line: {l}");
                serde_json::from_str(l).expect("an EMF document is JSON")
            })
            .collect()
    }
}

/// The runtime's context of an invocation (built from defaults: the type is non-exhaustive).
pub fn context(request_id: &str, trace_id: Option<&str>) -> lambda_runtime::Context {
    let mut c = lambda_runtime::Context::default();
    c.request_id = request_id.to_owned();
    c.xray_trace_id = trace_id.map(str::to_owned);
    c
}

pub fn request(ev: &Value) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let req = lambda_http::request::from_str(&ev.to_string()).expect("API Gateway v2 event");
    req.with_lambda_context(context(REQUEST_ID, Some(TRACE_ID)))
}

/// One event through the adapter: its status and the one document it emitted, checked
/// against the specification and the contract.
pub async fn call(app: &workspace_http::App, ev: &Value) -> (u16, Value) {
    let emitted = Emitted::default();
    let sink = emitted.clone();
    let emit = move |line: &str| sink.0.lock().unwrap().push(line.to_owned());
    let resp = invoke(app, request(ev), &emit).await.expect("handler");
    let mut docs = emitted.take();
    assert_eq!(docs.len(), 1, "one document per request: {docs:?}");
    let doc = docs.remove(0);
    assert_eq!(emf_violations(&doc), Vec::<String>::new(), "{doc}");
    assert_eq!(contract_violations(&doc), Vec::<String>::new(), "{doc}");
    (resp.status().as_u16(), doc)
}

pub fn put_event(path: &str, body: Value) -> Value {
    let mut ev = event("put-file.json");
    ev["rawPath"] = format!("/v1/host/workspace/files/{path}").into();
    ev["requestContext"]["http"]["path"] = ev["rawPath"].clone();
    ev["pathParameters"]["path"] = path.into();
    ev["body"] = body.to_string().into();
    ev["headers"]
        .as_object_mut()
        .unwrap()
        .remove("content-length");
    ev
}

/// Log lines, as the functions write them, into a buffer.
#[derive(Clone, Default)]
pub struct Lines(pub Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
    type Writer = Lines;
    fn make_writer(&'a self) -> Lines {
        self.clone()
    }
}
