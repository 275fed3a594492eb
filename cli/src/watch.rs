//! `ws watch`: the workspace's `workspace.updated` events from the server-sent event stream,
//! one line each as they come (`--json`: each envelope as one JSON line).

use crate::commands::Ctx;
use crate::error::{Error, Kind, Result};
use crate::output;
use crate::route;
use reqwest::Method;
use serde_json::Value;

pub async fn run(ctx: &mut Ctx, after: Option<u64>) -> Result<()> {
    let client = &ctx.client;
    let query = route::with_query(route::EVENTS, &[("after", after.map(|a| a.to_string()))]);
    let rb = client
        .api(Method::GET, &query)
        .header("Accept", "text/event-stream");
    let what = "cannot watch events";
    let mut resp = client.send(rb, what).await.map_err(|e| match e.status {
        Some(501) => e.with_hint(
            "this deployment announces changes on EventBridge (source agent-workspace, \
             detail-type workspace.updated), not as a stream: subscribe with an EventBridge rule",
        ),
        Some(410) => e.with_hint("re-read the workspace, then resume from the id the server names"),
        _ => e,
    })?;
    let mut parser = Parser::default();
    let mut last: Option<String> = None;
    loop {
        let chunk = resp.chunk().await.map_err(|e| {
            client
                .network(e, "the event stream broke")
                .with_hint(resume_hint(&last))
        })?;
        let Some(chunk) = chunk else {
            return Err(Error::new(
                Kind::Server,
                "the event stream ended",
                "the server closed it",
            )
            .with_hint(resume_hint(&last)));
        };
        for event in parser.push(&chunk) {
            if event
                .kind
                .as_deref()
                .is_some_and(|k| k != "workspace.updated")
            {
                continue;
            }
            if ctx.json {
                output::out(&format!("{}\n", event.data));
            } else {
                output::out(&line(event.id.as_deref(), &event.data));
            }
            last = event.id.or(last);
        }
    }
}

fn resume_hint(last: &Option<String>) -> String {
    match last {
        Some(id) => format!("run `ws watch --after {id}` to go on from there"),
        None => "run `ws watch` again".to_owned(),
    }
}

/// `<id>  <time>  <operation>  <path>  v<version>  <principal>`.
fn line(id: Option<&str>, data: &str) -> String {
    let envelope: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    let d = &envelope["detail"];
    if d.is_null() {
        return format!("{}  {data}\n", id.unwrap_or("-"));
    }
    format!(
        "{}  {}  {:<6}  {}  v{}  {}\n",
        id.unwrap_or("-"),
        output::cell(&d["time"]),
        output::cell(&d["operation"]),
        output::cell(&d["path"]),
        output::cell(&d["version"]),
        output::cell(&d["principal"]),
    )
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Event {
    id: Option<String>,
    kind: Option<String>,
    data: String,
}

/// A server-sent events parser (the WHATWG rules this stream needs): lines end in LF or
/// CRLF, `:` starts a comment, a blank line dispatches the fields gathered so far.
#[derive(Default)]
struct Parser {
    buf: Vec<u8>,
    pending: Event,
    has_data: bool,
}

impl Parser {
    fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.buf.drain(..=end).collect();
            let text = String::from_utf8_lossy(&raw);
            let text = text.trim_end_matches('\n').trim_end_matches('\r');
            if text.is_empty() {
                if self.has_data {
                    events.push(std::mem::take(&mut self.pending));
                }
                self.pending = Event::default();
                self.has_data = false;
                continue;
            }
            if text.starts_with(':') {
                continue;
            }
            let (field, value) = match text.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (text, ""),
            };
            match field {
                "id" => self.pending.id = Some(value.to_owned()),
                "event" => self.pending.kind = Some(value.to_owned()),
                "data" => {
                    if self.has_data {
                        self.pending.data.push('\n');
                    }
                    self.pending.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_comments_are_skipped() {
        let mut p = Parser::default();
        assert!(p
            .push(b": open\n\nid: 7\r\nevent: workspace.upd")
            .is_empty());
        let events = p.push(b"ated\ndata: {\"a\":1}\n\nid: 8\ndata: x\ndata: y\n\n");
        assert_eq!(
            events,
            [
                Event {
                    id: Some("7".into()),
                    kind: Some("workspace.updated".into()),
                    data: "{\"a\":1}".into()
                },
                Event {
                    id: Some("8".into()),
                    kind: None,
                    data: "x\ny".into()
                }
            ]
        );
    }

    #[test]
    fn a_line_names_the_change() {
        let data = r#"{"detail":{"time":"T","operation":"put","path":"a.md","version":2,"principal":"p"}}"#;
        assert_eq!(line(Some("9"), data), "9  T  put     a.md  v2  p\n");
    }
}
