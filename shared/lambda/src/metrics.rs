//! The functions' metrics as CloudWatch Embedded Metric Format (EMF): one JSON document per
//! HTTP request (and one per run of an asynchronous function), printed as one line on
//! stdout, which Lambda hands to CloudWatch Logs, which extracts the metrics. The names,
//! units, namespace and dimension sets are the contract in `schemas/metrics.json`, which
//! the template's alarms are written against (a test holds every document to it).
//!
//! Written by hand with serde_json rather than with an EMF crate: the maintained one,
//! `metrics_cloudwatch_embedded`, is a recorder for the `metrics` facade (a global recorder
//! that aggregates between flushes, dimensions as labels, its own Lambda service wrapper),
//! while a request here is one fixed document of values the adapter already holds. The
//! whole format is the `_aws` member below.

use serde_json::{json, Map, Value};
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};
use workspace_core::metrics::Counts;

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "AgentWorkspace";

/// Where a document goes: [`stdout`] under Lambda, a buffer in tests.
pub type Sink<'a> = &'a (dyn Fn(&str) + Sync);

/// Writes `line` to stdout as one line (one CloudWatch Logs event).
pub fn stdout(line: &str) {
    let mut out = std::io::stdout().lock();
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    // A metric lost to a closed stdout must not fail the request.
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
}

/// One EMF document under construction.
pub struct Document {
    root: Map<String, Value>,
    dimensions: Value,
    metrics: Vec<Value>,
}

impl Document {
    /// A request's: dimensions Function (the route table's function label) and Operation
    /// (the matched route's operationId, or `unmatched`), aggregated both per operation and
    /// per function.
    pub fn request(function: &'static str, operation: &'static str) -> Self {
        let mut root = Map::new();
        root.insert("Function".into(), function.into());
        root.insert("Operation".into(), operation.into());
        Self {
            root,
            dimensions: json!([["Function", "Operation"], ["Function"]]),
            metrics: Vec::new(),
        }
    }

    /// An asynchronous function's run: the Function dimension alone.
    pub fn run(function: &'static str) -> Self {
        let mut root = Map::new();
        root.insert("Function".into(), function.into());
        Self {
            root,
            dimensions: json!([["Function"]]),
            metrics: Vec::new(),
        }
    }

    /// A metric of `schemas/metrics.json` (`unit` as it names it).
    pub fn metric(
        mut self,
        name: &'static str,
        unit: &'static str,
        value: impl Into<Value>,
    ) -> Self {
        self.metrics.push(json!({ "Name": name, "Unit": unit }));
        self.root.insert(name.into(), value.into());
        self
    }

    /// A member that is no metric (kept in the log event, searchable, not a dimension).
    pub fn property(mut self, name: &'static str, value: impl Into<Value>) -> Self {
        self.root.insert(name.into(), value.into());
        self
    }

    /// The document as one JSON line.
    pub fn line(mut self) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.root.insert(
            "_aws".into(),
            json!({
                "Timestamp": now,
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": self.dimensions,
                    "Metrics": self.metrics,
                }],
            }),
        );
        Value::Object(self.root).to_string()
    }
}

/// What one HTTP request did, as its document reports it.
pub struct Answered {
    pub function: &'static str,
    pub operation: &'static str,
    pub status: u16,
    pub latency_ms: f64,
    pub bytes_in: usize,
    pub bytes_out: usize,
    pub counts: Counts,
}

impl Answered {
    /// The request's document: the metrics every request has (one of ServerErrors,
    /// Conflicts, QuotaRefusals, ClientErrors is 1 for a failure), then the domain's counts
    /// where the request produced them.
    pub fn document(&self) -> Document {
        let s = self.status;
        let flag = |b: bool| u8::from(b);
        let mut doc = Document::request(self.function, self.operation)
            .metric("Requests", "Count", 1)
            .metric("Latency", "Milliseconds", self.latency_ms)
            .metric("ServerErrors", "Count", flag(s >= 500))
            .metric("Conflicts", "Count", flag(s == 409))
            .metric("QuotaRefusals", "Count", flag(s == 413))
            .metric(
                "ClientErrors",
                "Count",
                flag((400..500).contains(&s) && s != 409 && s != 413),
            )
            .metric("BytesIn", "Bytes", self.bytes_in)
            .metric("BytesOut", "Bytes", self.bytes_out)
            .property("status", s);
        let c = self.counts;
        for (name, count) in [
            ("Redactions", c.redactions),
            ("SearchCatchUp", c.search_catch_up),
            ("MergeFiles", c.merge_files),
        ] {
            if let Some(n) = count {
                doc = doc.metric(name, "Count", n);
            }
        }
        doc
    }
}

/// An asynchronous function's run: `EventsProcessed`, to stdout.
pub fn events_processed(function: &'static str, n: usize) {
    stdout(
        &Document::run(function)
            .metric("EventsProcessed", "Count", n)
            .line(),
    );
}
