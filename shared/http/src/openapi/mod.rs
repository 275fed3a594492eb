//! The OpenAPI 3.1 document of the API, built from the route table: every row of
//! [`crate::routes::ROUTES`] becomes one operation, described by [`operations::describe`],
//! an exhaustive match on [`crate::routes::Route`], so a new route does not compile until it is described
//! here, and nothing is described that the table does not route. Served at
//! `GET /openapi.json` without a key, and kept in the repository as `openapi.json` (a test
//! holds the file equal to this document, and the document equal to the route table and to
//! template.yaml).
//!
//! Written as JSON values rather than derived (e.g. with `utoipa`): the handlers build their
//! answers with `serde_json::json!`, not typed structs a derive could read, so a derive
//! would need a second, parallel set of types that could drift from what is answered. The
//! schemathesis run in the test suite checks every answer against this document instead.

mod operations;
mod schemas;

use crate::routes::ROUTES;
use serde_json::{json, Map, Value};

/// Where the document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The API Gateway pattern as an OpenAPI path: `{name+}` (greedy) is `{name}`, which a
/// client fills with a value that may hold `/` (sent as is or as `%2F`; both name the same
/// thing).
pub fn openapi_path(pattern: &str) -> String {
    pattern.replace("+}", "}")
}

/// The whole document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for spec in ROUTES {
        let op = operations::describe(spec);
        let item = paths
            .entry(openapi_path(spec.pattern))
            .or_insert_with(|| json!({}));
        item[spec.method.as_str().to_ascii_lowercase()] = op;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Agent Workspace",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "A persistent, versioned, tenant-isolated file store for AI agents (the openwop host.workspace contract).",
            "description": "Every failure answers the error envelope `{error, message, details?}`. Tenant and workspace come only from the credential; a tenant-wide credential names its workspace in `X-Workspace-Id`. Paths are `[A-Za-z0-9][A-Za-z0-9._/-]*` with no `.`, `..` or empty segment; in a URL, `/` and `%2F` inside a path name the same file.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
        },
        "servers": [{ "url": "/", "description": "this deployment (the local server, or the API Gateway stage URL)" }],
        "security": [{ "apiKey": [] }, { "jwt": [] }],
        "tags": operations::tags(),
        "paths": paths,
        "components": schemas::components(),
    })
}

/// The operations of the document: (method, OpenAPI path, operationId), in table order.
pub fn operations_of(doc: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            if let Some(item) = item.as_object() {
                for (method, op) in item {
                    out.push((
                        method.to_ascii_uppercase(),
                        path.clone(),
                        op["operationId"].as_str().unwrap_or_default().to_owned(),
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_one_operation_with_a_unique_id() {
        let doc = document();
        let ops = operations_of(&doc);
        assert_eq!(ops.len(), ROUTES.len());
        let mut ids: Vec<&str> = ops.iter().map(|(_, _, id)| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), ROUTES.len(), "operationIds are unique");
        for spec in ROUTES {
            let op = &doc["paths"][openapi_path(spec.pattern)]
                [spec.method.as_str().to_ascii_lowercase()];
            assert!(op.is_object(), "{} {}", spec.method, spec.pattern);
            // Logs and metrics name the route by the same id (`Route::operation_id`).
            assert_eq!(
                op["operationId"],
                spec.route.operation_id(),
                "{} {}",
                spec.method,
                spec.pattern
            );
            // Public rows need no credential; every other row needs one.
            assert_eq!(
                op.get("security") == Some(&json!([])),
                spec.public(),
                "{}",
                spec.pattern
            );
        }
    }

    #[test]
    fn every_reference_resolves() {
        let doc = document();
        let text = doc.to_string();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"$ref\":\"#/components/") {
            let tail = &rest[at + "\"$ref\":\"#/components/".len()..];
            let end = tail.find('"').unwrap();
            let (kind, name) = tail[..end].split_once('/').unwrap();
            assert!(
                doc["components"][kind][name].is_object(),
                "unresolved {kind}/{name}"
            );
            rest = &tail[end..];
        }
    }
}
