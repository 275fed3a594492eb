//! The functions' log lines: one JSON object per event on stdout, its fields flat (`level`,
//! `target`, `message`, the event's own fields), and inside an invocation the ids that tie
//! it to the request: `requestId` (the Lambda request id), `traceId` (the X-Ray trace id,
//! `null` where Lambda gave none) and, for an HTTP function, `apiRequestId` (API Gateway's
//! `requestContext.requestId`).
//!
//! The ids come from the spans the event is inside: `lambda_runtime` opens one per
//! invocation ("Lambda runtime invoke": `requestId`, `xrayTraceId`), and [`crate::invoke`]
//! one per HTTP request ("invocation": `requestId`, `traceId`, `apiRequestId`).
//! tracing-subscriber's own JSON format nests span fields under `span`/`spans`; this one
//! lifts them to the top, where CloudWatch Logs Insights finds them as `requestId`.

use serde_json::{Map, Value};
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// JSON logs for CloudWatch, filtered by `RUST_LOG` (`info`, `warn,workspace_http=debug`, ...).
/// A `Targets` filter rather than `EnvFilter`: the same directives without span and field
/// matching, and without the regex engine EnvFilter links into every function.
pub fn init() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    tracing_subscriber::registry()
        .with(layer(std::io::stdout))
        .with(filter)
        .init();
}

/// The formatting layer, writing through `writer` (stdout in a function, a buffer in tests).
pub fn layer<S, W>(writer: W) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt::layer()
        .fmt_fields(JsonFields::new())
        .event_format(FlatJson)
        .with_writer(writer)
}

/// One event as one flat JSON object (see the module notes).
struct FlatJson;

impl<S> FormatEvent<S, JsonFields> for FlatJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        // Span fields, outermost first, so an inner span's value wins.
        let mut in_invocation = false;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let ext = span.extensions();
                let Some(fields) = ext.get::<FormattedFields<JsonFields>>() else {
                    continue;
                };
                let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(fields) else {
                    continue;
                };
                for (k, v) in fields {
                    let k = if k == "xrayTraceId" {
                        "traceId".to_owned()
                    } else {
                        k
                    };
                    in_invocation |= k == "requestId";
                    line.insert(k, v);
                }
            }
        }
        if in_invocation {
            line.entry("traceId").or_insert(Value::Null);
        }
        event.record(&mut Fields(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields into the line.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}
