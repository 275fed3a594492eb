//! An emulated API Gateway HTTP API in front of the functions: the routes of template.yaml,
//! and an HTTP request turned into the payload-2.0 event API Gateway would hand the route's
//! function (with the JWT authorizer's claims), and the function's answer turned back into
//! the HTTP response the gateway would send.
//!
//! What API Gateway does, as emulated here (see DESIGN.md, "API Gateway HTTP API facts that
//! bite"):
//! - Routes match on the request path as sent, segment by segment: a literal segment, a
//!   `{name}` (one non-empty segment) or a final greedy `{name+}` (the non-empty rest). The
//!   most specific route wins (literal over `{name}` over `{name+}`, segment by segment), a
//!   route of the request's own method over an `ANY` route. A request no route matches goes
//!   to the `$default` route (route key `$default`, no path parameters); without one the
//!   gateway itself answers `404 {"message":"Not Found"}`.
//! - `rawPath`, `requestContext.http.path` and `pathParameters` are percent-DECODED;
//!   `rawQueryString` is the query as sent; `queryStringParameters` are decoded, a repeated
//!   key's values joined with `,` (absent without a query).
//! - Header names are lower-cased, repeated headers joined with `,`; `Cookie` headers become
//!   the `cookies` list and leave `headers`. The gateway sets `host` (its own domain) and the
//!   `x-forwarded-*` and `x-amzn-trace-id` headers; hop-by-hop headers do not pass.
//! - A route under the JWT authorizer gets `requestContext.authorizer.jwt.claims` (every
//!   claim as a string) and `scopes` (null: no route declares authorization scopes). A
//!   request to such a route without a valid token never reaches the function: the gateway
//!   answers `401 {"message":"Unauthorized"}` itself. Routes the API's body does not secure
//!   carry no `authorizer` at all.
//! - The body is base64 (`isBase64Encoded: true`) unless the content type is text-like
//!   (`text/*`, `application/json`, `application/xml`, `*+json`, `*+xml`) and the bytes are
//!   valid UTF-8; no body, no `body` key.
//! - The answer (payload 2.0 response): `statusCode`, `headers`, `cookies` (as
//!   `set-cookie`), `body` (base64-decoded when `isBase64Encoded`). A function error (the
//!   emulator answers `errorType`/`errorMessage`) is `500 {"message":"Internal Server
//!   Error"}`; an answer without `statusCode` is a 200 JSON body of the whole answer.

use crate::b64;
use percent_encoding::percent_decode_str;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use yaml_rust2::YamlLoader;

pub const API_ID: &str = "a1b2c3d4e5";
pub const DOMAIN: &str = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com";
pub const ACCOUNT: &str = "123456789012";
pub const SOURCE_IP: &str = "203.0.113.10";

/// An HTTP request as a client sends it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    /// The request target as sent: path (possibly percent-encoded) and query.
    pub target: String,
    /// In order; a name may repeat.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn new(method: &str, target: &str) -> Self {
        Self {
            method: method.to_owned(),
            target: target.to_owned(),
            ..Self::default()
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// The path as sent (before any `?`).
    pub fn raw_path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    /// The query as sent (after the first `?`), empty without one.
    pub fn raw_query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }
}

/// An HTTP response as a client receives it: header names lower-cased, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// Every value of `name`, joined with `, ` (None when absent).
    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }

    /// The answer API Gateway itself sends: a JSON `{"message": ...}`.
    pub fn gateway(status: u16, message: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body: json!({ "message": message }).to_string().into_bytes(),
        }
    }
}

/// One route of the HTTP API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Upper case, or `ANY`.
    pub method: String,
    /// API Gateway syntax, or `$default`.
    pub path: String,
    /// The SAM logical id of the function it invokes.
    pub function: String,
    /// That function's binary (`Metadata.BuildProperties.Binary`, e.g. `fn-get`).
    pub binary: String,
    /// Under the API's authorizer: its (path, method) is secured in the body of WorkspaceApi.
    pub authorized: bool,
}

impl Route {
    pub fn key(&self) -> String {
        if self.path == "$default" {
            "$default".to_owned()
        } else {
            format!("{} {}", self.method, self.path)
        }
    }
}

/// The HTTP API's routes, from template.yaml: the OpenAPI body of `WorkspaceApi`
/// (authenticated routes) and the functions' `HttpApi` events (public ones).
#[derive(Debug, Clone)]
pub struct Gateway {
    pub routes: Vec<Route>,
}

/// A route chosen for a request, with its path parameters (decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'a> {
    pub route: &'a Route,
    pub path_parameters: BTreeMap<String, String>,
}

/// What the gateway does with a request: invoke a function with an event, or answer itself.
#[derive(Debug, Clone)]
pub enum Dispatch {
    Invoke { function: String, event: Value },
    Answer(HttpAnswer),
}

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

impl Gateway {
    pub fn from_template(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).expect("template.yaml");
        let doc = YamlLoader::load_from_str(&text)
            .expect("template.yaml parses")
            .remove(0);
        let binary_of = |id: &str| {
            doc["Resources"][id]["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap_or_else(|| panic!("{id}: Metadata.BuildProperties.Binary"))
                .to_owned()
        };
        let mut routes = Vec::new();
        // Authenticated routes: the HTTP API's OpenAPI body, each operation with its
        // integration (the function) and the one security scheme (see the comment on
        // WorkspaceApi in template.yaml).
        let body = &doc["Resources"]["WorkspaceApi"]["Properties"]["DefinitionBody"]["paths"];
        for (path, ops) in body
            .as_hash()
            .expect("WorkspaceApi's DefinitionBody has paths")
        {
            let path = path.as_str().expect("a path");
            for (method, op) in ops.as_hash().expect("methods of a path") {
                let method = method.as_str().expect("a method").to_uppercase();
                let schemes: Vec<&str> = op["security"]
                    .as_vec()
                    .expect("a body operation declares its security")
                    .iter()
                    .flat_map(|s| s.as_hash().expect("a security requirement").keys())
                    .map(|k| k.as_str().expect("a scheme name"))
                    .collect();
                assert_eq!(schemes, ["WorkspaceAuthorizer"], "{method} {path}");
                let integration = &op["x-amazon-apigateway-integration"];
                assert_eq!(
                    (
                        integration["type"].as_str(),
                        integration["payloadFormatVersion"].as_str()
                    ),
                    (Some("aws_proxy"), Some("2.0")),
                    "{method} {path}: a Lambda proxy integration, payload 2.0"
                );
                // `arn:…:functions/${GetFunction.Arn}/invocations` names the function.
                let uri = integration["uri"].as_str().expect("the integration's uri");
                let function = uri
                    .split("/functions/${")
                    .nth(1)
                    .and_then(|rest| rest.split(".Arn}").next())
                    .unwrap_or_else(|| panic!("{method} {path}: no function in {uri}"));
                routes.push(Route {
                    method,
                    path: path.to_owned(),
                    function: function.to_owned(),
                    binary: binary_of(function),
                    authorized: true,
                });
            }
        }
        // Public routes: function events (no security).
        for (id, res) in doc["Resources"].as_hash().expect("Resources") {
            if res["Type"].as_str() != Some("AWS::Serverless::Function") {
                continue;
            }
            let Some(events) = res["Properties"]["Events"].as_hash() else {
                continue;
            };
            for (_, ev) in events {
                if ev["Type"].as_str() != Some("HttpApi") {
                    continue;
                }
                let p = &ev["Properties"];
                // SAM: an HttpApi event without Path and Method is the API's $default route.
                let path = p["Path"].as_str().unwrap_or("$default");
                let path = if path.trim_start_matches('/') == "$default" {
                    "$default"
                } else {
                    path
                };
                let method = p["Method"].as_str().unwrap_or("ANY").to_uppercase();
                let method = if method == "X-AMAZON-APIGATEWAY-ANY-METHOD" || method == "*" {
                    "ANY".to_owned()
                } else {
                    method
                };
                assert!(
                    !routes.iter().any(|r| r.path == path && r.method == method),
                    "{method} {path} is both a body route and a function event"
                );
                let id = id.as_str().expect("logical id");
                routes.push(Route {
                    method,
                    path: path.to_owned(),
                    function: id.to_owned(),
                    binary: binary_of(id),
                    authorized: false,
                });
            }
        }
        Self { routes }
    }

    pub fn default_route(&self) -> Option<&Route> {
        self.routes.iter().find(|r| r.path == "$default")
    }

    /// The route API Gateway picks for `method` and the path as sent, if any (not
    /// `$default`).
    pub fn route(&self, method: &str, raw_path: &str) -> Option<Matched<'_>> {
        let segments: Vec<&str> = raw_path.split('/').collect();
        let mut best: Option<(bool, Vec<u8>, Matched<'_>)> = None;
        for route in self.routes.iter().filter(|r| r.path != "$default") {
            let exact = route.method == method;
            if !exact && route.method != "ANY" {
                continue;
            }
            let Some((score, params)) = match_path(&route.path, &segments) else {
                continue;
            };
            let better = match &best {
                None => true,
                Some((e, s, _)) => (exact, &score) > (*e, s),
            };
            if better {
                best = Some((
                    exact,
                    score,
                    Matched {
                        route,
                        path_parameters: params,
                    },
                ));
            }
        }
        best.map(|(_, _, m)| m)
    }

    /// What the gateway does with `req`; `claims` are the verified token's (None: no valid
    /// token). `now_ms` and `seq` make the request's time and id.
    pub fn dispatch(
        &self,
        req: &HttpRequest,
        claims: Option<&BTreeMap<String, String>>,
        now_ms: u64,
        seq: u64,
    ) -> Dispatch {
        let matched = match self.route(&req.method, req.raw_path()) {
            Some(m) => m,
            None => match self.default_route() {
                Some(route) => Matched {
                    route,
                    path_parameters: BTreeMap::new(),
                },
                None => return Dispatch::Answer(HttpAnswer::gateway(404, "Not Found")),
            },
        };
        if matched.route.authorized && claims.is_none() {
            return Dispatch::Answer(HttpAnswer::gateway(401, "Unauthorized"));
        }
        Dispatch::Invoke {
            function: matched.route.function.clone(),
            event: event(req, &matched, claims, now_ms, seq),
        }
    }
}

/// Specificity per segment (literal 2, `{name}` 1, `{name+}` 0) and the parameters, when
/// `pattern` matches the path's `segments` (as sent).
fn match_path(pattern: &str, segments: &[&str]) -> Option<(Vec<u8>, BTreeMap<String, String>)> {
    let pieces: Vec<&str> = pattern.split('/').collect();
    let mut score = Vec::new();
    let mut params = BTreeMap::new();
    for (i, piece) in pieces.iter().enumerate() {
        if let Some(name) = piece.strip_prefix('{').and_then(|p| p.strip_suffix("+}")) {
            if i + 1 != pieces.len() {
                return None;
            }
            let rest = segments.get(i..).unwrap_or_default().join("/");
            if rest.is_empty() {
                return None;
            }
            params.insert(name.to_owned(), decode(&rest));
            score.push(0);
            return Some((score, params));
        }
        let segment = segments.get(i)?;
        if let Some(name) = piece.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            if segment.is_empty() {
                return None;
            }
            params.insert(name.to_owned(), decode(segment));
            score.push(1);
        } else if decode(segment) == *piece {
            score.push(2);
        } else {
            return None;
        }
    }
    (segments.len() == pieces.len()).then_some((score, params))
}

/// Whether API Gateway hands a body of this content type over as text.
pub fn text_like(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence.starts_with("text/")
        || essence == "application/json"
        || essence == "application/xml"
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
}

/// `22/Nov/2024:07:03:20 +0000` for a Unix time in milliseconds.
pub fn clf_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{day:02}/{}/{year}:{:02}:{:02}:{:02} +0000",
        MONTHS[usize::try_from(month - 1).unwrap_or(0)],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Headers the gateway does not pass on (hop by hop), or sets itself.
const NOT_PASSED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "te",
    "proxy-connection",
];

/// The payload-2.0 event for `req` on the matched route.
pub fn event(
    req: &HttpRequest,
    matched: &Matched<'_>,
    claims: Option<&BTreeMap<String, String>>,
    now_ms: u64,
    seq: u64,
) -> Value {
    let route_key = matched.route.key();
    let raw_path = decode(req.raw_path());
    let raw_query = req.raw_query();

    let mut headers = Map::new();
    headers.insert("host".into(), DOMAIN.into());
    headers.insert(
        "x-amzn-trace-id".into(),
        format!("Root=1-{:08x}-{:024x}", now_ms / 1000, seq).into(),
    );
    headers.insert("x-forwarded-for".into(), SOURCE_IP.into());
    headers.insert("x-forwarded-port".into(), "443".into());
    headers.insert("x-forwarded-proto".into(), "https".into());
    let mut cookies: Vec<Value> = Vec::new();
    for (name, value) in &req.headers {
        let name = name.to_ascii_lowercase();
        if NOT_PASSED.contains(&name.as_str()) {
            continue;
        }
        if name == "cookie" {
            cookies.extend(
                value
                    .split(';')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(|c| Value::String(c.to_owned())),
            );
            continue;
        }
        match headers.get_mut(&name) {
            Some(Value::String(joined)) if !is_gateway_header(&name) => {
                joined.push(',');
                joined.push_str(value);
            }
            _ => {
                headers.insert(name, Value::String(value.clone()));
            }
        }
    }
    let user_agent = headers
        .get("user-agent")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();

    let mut context = json!({
        "accountId": ACCOUNT,
        "apiId": API_ID,
        "domainName": DOMAIN,
        "domainPrefix": API_ID,
        "http": {
            "method": req.method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": SOURCE_IP,
            "userAgent": user_agent,
        },
        "requestId": request_id(seq),
        "routeKey": route_key,
        "stage": "$default",
        "time": clf_time(now_ms),
        "timeEpoch": now_ms,
    });
    if matched.route.authorized {
        let claims: Map<String, Value> = claims
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        context["authorizer"] = json!({ "jwt": { "claims": claims, "scopes": null } });
    }

    let mut ev = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": false,
    });
    if !cookies.is_empty() {
        ev["cookies"] = Value::Array(cookies);
    }
    if !raw_query.is_empty() {
        let mut params: Map<String, Value> = Map::new();
        for pair in raw_query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let (k, v) = (decode(k), decode(v));
            match params.get_mut(&k) {
                Some(Value::String(joined)) => {
                    joined.push(',');
                    joined.push_str(&v);
                }
                _ => {
                    params.insert(k, Value::String(v));
                }
            }
        }
        ev["queryStringParameters"] = Value::Object(params);
    }
    if !matched.path_parameters.is_empty() {
        ev["pathParameters"] = matched
            .path_parameters
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>()
            .into();
    }
    if !req.body.is_empty() {
        let content_type = headers
            .get("content-type")
            .and_then(Value::as_str)
            .unwrap_or("");
        match std::str::from_utf8(&req.body) {
            Ok(text) if text_like(content_type) => ev["body"] = text.into(),
            _ => {
                ev["body"] = b64::encode(&req.body).into();
                ev["isBase64Encoded"] = true.into();
            }
        }
    }
    ev
}

fn is_gateway_header(name: &str) -> bool {
    matches!(
        name,
        "x-amzn-trace-id" | "x-forwarded-for" | "x-forwarded-port" | "x-forwarded-proto"
    )
}

/// An id of the shape API Gateway gives requests (`Bq3xTgXcIAMEVaQ=`), unique per `seq`.
fn request_id(seq: u64) -> String {
    let mut bytes = b"parity".to_vec();
    bytes.extend_from_slice(&(seq as u32).to_be_bytes());
    b64::encode(&bytes)
}

/// The HTTP response API Gateway sends for a function's payload-2.0 answer.
pub fn answer_from_lambda(result: &Value) -> HttpAnswer {
    let Some(status) = result.get("statusCode").and_then(Value::as_u64) else {
        if result.get("errorType").is_some() || result.get("errorMessage").is_some() {
            return HttpAnswer::gateway(500, "Internal Server Error");
        }
        return HttpAnswer {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: result.to_string().into_bytes(),
        };
    };
    let mut headers: Vec<(String, String)> = result
        .get("headers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            )
        })
        .collect();
    for c in result
        .get("cookies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        headers.push(("set-cookie".into(), c.as_str().unwrap_or("").to_owned()));
    }
    let text = result.get("body").and_then(Value::as_str).unwrap_or("");
    let body = if result.get("isBase64Encoded") == Some(&Value::Bool(true)) {
        b64::decode(text).unwrap_or_else(|| {
            panic!("the function's isBase64Encoded body is not base64: {text:.200}")
        })
    } else {
        text.as_bytes().to_vec()
    };
    HttpAnswer {
        status: u16::try_from(status).unwrap_or(0),
        headers,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::root;

    fn recorded(file: &str) -> Value {
        let text = std::fs::read_to_string(root().join("events").join(file)).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The recorded event's claims (as the authorizer passes them).
    fn claims_of(ev: &Value) -> Option<BTreeMap<String, String>> {
        ev["requestContext"]["authorizer"]["jwt"]["claims"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                    .collect()
            })
    }

    /// Rebuilds a recorded event from the HTTP request it stands for: every field equal but
    /// those that name the moment and the request (time, ids, trace).
    fn rebuilt_equals_recorded(file: &str, req: HttpRequest) {
        let gateway = Gateway::from_template(&root().join("template.yaml"));
        let mut want = recorded(file);
        let claims = claims_of(&want);
        let now = want["requestContext"]["timeEpoch"].as_u64().unwrap();
        let Dispatch::Invoke { event: mut got, .. } =
            gateway.dispatch(&req, claims.as_ref(), now, 7)
        else {
            panic!("{file}: the gateway answered itself")
        };
        for ev in [&mut want, &mut got] {
            ev["requestContext"]["requestId"] = Value::Null;
            ev["headers"]["x-amzn-trace-id"] = Value::Null;
        }
        assert_eq!(got, want, "{file}");
    }

    fn client(req: HttpRequest) -> HttpRequest {
        req.header("accept", "application/json")
            .header("user-agent", "agent-workspace-client/0.1")
    }

    #[test]
    fn builds_the_recorded_events() {
        let token = recorded("put-file.json")["headers"]["authorization"]
            .as_str()
            .unwrap()
            .to_owned();
        let body = recorded("put-file.json")["body"]
            .as_str()
            .unwrap()
            .to_owned();
        rebuilt_equals_recorded(
            "put-file.json",
            client(HttpRequest::new(
                "PUT",
                "/v1/host/workspace/files/notes/today.md",
            ))
            .header("authorization", &token)
            .header("content-type", "application/json")
            .header("content-length", &body.len().to_string())
            .body(body),
        );
        rebuilt_equals_recorded(
            "list-files.json",
            client(HttpRequest::new(
                "GET",
                "/v1/host/workspace/files?prefix=notes/",
            ))
            .header("authorization", &token),
        );
        rebuilt_equals_recorded(
            "health.json",
            client(HttpRequest::new("GET", "/health")).header("connection", "close"),
        );
        let blob = recorded("put-blob.json");
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(blob["body"], b64::encode(&bytes));
        rebuilt_equals_recorded(
            "put-blob.json",
            client(HttpRequest::new(
                "PUT",
                "/v1/host/blob/default/images/all-bytes.bin",
            ))
            .header("authorization", &token)
            .header("content-type", "application/octet-stream")
            .header("content-length", "256")
            .body(bytes),
        );
    }

    #[test]
    fn decodes_the_path_joins_headers_and_splits_cookies() {
        let gateway = Gateway::from_template(&root().join("template.yaml"));
        let claims: BTreeMap<String, String> = [("sub".to_owned(), "u".to_owned())].into();
        let req = HttpRequest::new(
            "GET",
            "/v1/host/workspace/files/a%20b/c%3Fd.md?x=1&y=a%2Fb&x=2&flag",
        )
        .header("If-Match", "\"1-a\"")
        .header("if-match", "\"2-b\"")
        .header("Cookie", "a=1; b=2")
        .header("cookie", "c=3")
        .header("Content-Type", "text/plain; charset=iso-8859-1")
        .body(b"caf\xE9".to_vec());
        let Dispatch::Invoke { function, event } =
            gateway.dispatch(&req, Some(&claims), 1_732_259_000_123, 1)
        else {
            panic!("routed")
        };
        assert_eq!(function, "GetFunction");
        assert_eq!(event["routeKey"], "GET /v1/host/workspace/files/{path+}");
        assert_eq!(event["rawPath"], "/v1/host/workspace/files/a b/c?d.md");
        assert_eq!(event["requestContext"]["http"]["path"], event["rawPath"]);
        assert_eq!(event["pathParameters"]["path"], "a b/c?d.md");
        assert_eq!(event["rawQueryString"], "x=1&y=a%2Fb&x=2&flag");
        assert_eq!(
            event["queryStringParameters"],
            json!({"x": "1,2", "y": "a/b", "flag": ""})
        );
        assert_eq!(event["headers"]["if-match"], "\"1-a\",\"2-b\"");
        assert_eq!(event["cookies"], json!(["a=1", "b=2", "c=3"]));
        assert!(event["headers"].get("cookie").is_none());
        // latin-1 bytes are not UTF-8: base64, whatever the type says.
        assert_eq!(event["isBase64Encoded"], true);
        assert_eq!(event["body"], b64::encode(b"caf\xE9"));
        assert_eq!(
            event["requestContext"]["time"],
            "22/Nov/2024:07:03:20 +0000"
        );
        assert_eq!(
            event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"],
            "u"
        );
    }

    #[test]
    fn routes_by_specificity_and_method() {
        let gateway = Gateway::from_template(&root().join("template.yaml"));
        let key = |m: &str, p: &str| gateway.route(m, p).map(|m| m.route.key());
        assert_eq!(
            key("POST", "/v1/host/blob/default/presign").as_deref(),
            Some("POST /v1/host/blob/{bucket}/presign")
        );
        assert_eq!(
            key("GET", "/v1/host/blob/default/presign").as_deref(),
            Some("GET /v1/host/blob/{bucket}/{key+}")
        );
        assert_eq!(
            key("GET", "/v1/host/blob/default").as_deref(),
            Some("GET /v1/host/blob/{bucket}")
        );
        // A `{name}` segment is one segment: an encoded slash stays inside it.
        let m = gateway.route("GET", "/v1/host/cache/a%2Fb").unwrap();
        assert_eq!(m.path_parameters["key"], "a/b");
        assert_eq!(key("GET", "/v1/host/cache/a/b"), None);
        assert_eq!(key("GET", "/v1/host/workspace/files/"), None);
        assert_eq!(key("GET", "/v1/nope"), None);
        assert_eq!(key("POST", "/mcp").as_deref(), Some("POST /mcp"));
        let health = gateway.route("GET", "/health").unwrap();
        assert!(!health.route.authorized);
        let files = gateway.route("GET", "/v1/host/workspace/files").unwrap();
        assert!(files.route.authorized);
        let req = HttpRequest::new("GET", "/v1/host/workspace/files");
        match gateway.dispatch(&req, None, 0, 0) {
            Dispatch::Answer(a) => {
                assert_eq!(a.status, 401);
                assert_eq!(a.body, br#"{"message":"Unauthorized"}"#);
            }
            Dispatch::Invoke { .. } => panic!("no token reaches no function"),
        }
    }

    #[test]
    fn answers_as_the_gateway_does() {
        let a = answer_from_lambda(&json!({
            "statusCode": 200,
            "headers": {"Content-Type": "text/plain"},
            "body": b64::encode(b"\xEF\xBB\xBFx"),
            "isBase64Encoded": true,
            "cookies": ["s=1"],
        }));
        assert_eq!(a.status, 200);
        assert_eq!(a.body, b"\xEF\xBB\xBFx");
        assert_eq!(a.header("content-type").as_deref(), Some("text/plain"));
        assert_eq!(a.header("set-cookie").as_deref(), Some("s=1"));
        let failed = answer_from_lambda(&json!({"errorType": "x", "errorMessage": "y"}));
        assert_eq!(
            (failed.status, failed.body),
            (500, br#"{"message":"Internal Server Error"}"#.to_vec())
        );
        assert_eq!(clf_time(0), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(clf_time(951_782_400_000), "29/Feb/2000:00:00:00 +0000");
    }
}
