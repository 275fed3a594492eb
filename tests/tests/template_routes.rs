//! The one route table and template.yaml must describe the same API: every row of
//! `ROUTES` is a route of the HTTP API (an operation of its OpenAPI body if it needs a
//! credential, else an HttpApi event) served by the function the row names, and nothing
//! else is.

use std::collections::{BTreeSet, HashSet};
use workspace_http::routes::{Route, ROUTES, UNMATCHED_FUNCTION};
use workspace_http::serve;
use workspace_tests::apigw::Gateway;
use workspace_tests::{cargo, root};
use yaml_rust2::{Yaml, YamlLoader};

fn template() -> Yaml {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    YamlLoader::load_from_str(&text)
        .expect("template.yaml parses")
        .remove(0)
}

/// `fn-get` → `get`: the function a SAM resource builds, from its cargo-lambda binary.
fn function_of(resource: &Yaml) -> Option<String> {
    let bin = resource["Metadata"]["BuildProperties"]["Binary"].as_str()?;
    Some(bin.strip_prefix("fn-").unwrap_or(bin).to_owned())
}

#[test]
fn template_routes_equal_the_route_table() {
    for (_, res) in template()["Resources"].as_hash().expect("Resources") {
        if res["Type"].as_str() == Some("AWS::Serverless::Function") {
            assert_eq!(
                res["Metadata"]["BuildMethod"].as_str(),
                Some("rust-cargolambda")
            );
        }
    }
    let gateway = Gateway::from_template(&root().join("template.yaml"));
    let mut in_template = BTreeSet::new();
    let mut unmatched = Vec::new();
    for r in &gateway.routes {
        let function = r.binary.strip_prefix("fn-").unwrap_or(&r.binary).to_owned();
        if r.path == "$default" {
            unmatched.push((function, r.authorized));
        } else {
            in_template.insert((r.method.clone(), r.path.clone(), function, !r.authorized));
        }
    }
    let in_table: BTreeSet<_> = ROUTES
        .iter()
        .map(|r| {
            (
                r.method.to_string(),
                r.pattern.to_owned(),
                r.function.to_owned(),
                r.public(),
            )
        })
        .collect();
    assert_eq!(in_template, in_table);
    // One `$default` route, to the function the route table names, without an authorizer
    // (an unknown path is 404 with or without a token, as on the local server).
    assert_eq!(
        unmatched,
        [(UNMATCHED_FUNCTION.to_owned(), false)],
        "template.yaml's $default route"
    );
}

#[test]
fn every_template_function_is_a_package_and_every_route_function_is_in_the_template() {
    let t = template();
    let functions: BTreeSet<String> = t["Resources"]
        .as_hash()
        .expect("Resources")
        .values()
        .filter(|r| r["Type"].as_str() == Some("AWS::Serverless::Function"))
        .filter_map(function_of)
        .collect();
    let routed: BTreeSet<String> = ROUTES.iter().map(|r| r.function.to_owned()).collect();
    assert!(
        routed.is_subset(&functions),
        "{routed:?} not all in {functions:?}"
    );
    // Each BuildProperties.Binary is a binary target of this workspace, as cargo sees it.
    let out = cargo(&["metadata", "--no-deps", "--format-version", "1"]);
    let meta: serde_json::Value = serde_json::from_slice(&out).expect("metadata JSON");
    let binaries: BTreeSet<String> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    for f in &functions {
        assert!(
            binaries.contains(&format!("fn-{f}")),
            "template builds fn-{f}, which is no binary of the workspace ({binaries:?})"
        );
    }
}

/// What each function's `main` registers is exactly its rows of the table (the `mcp`
/// function also answers `GET /health` with its own document; `console` registers
/// `workspace_console::ROUTES`).
#[test]
fn each_function_registers_exactly_its_rows() {
    let functions: BTreeSet<&str> = ROUTES.iter().map(|r| r.function).collect();
    for function in functions {
        let set = match function {
            "mcp" => workspace_mcp::http::FUNCTION_ROUTES,
            "console" => workspace_console::ROUTES,
            f => serve::of_function(f).unwrap_or_else(|| panic!("no route set for {f}")),
        };
        let registered: HashSet<Route> = set.iter().map(|(r, _)| *r).collect();
        let mut rows: HashSet<Route> = ROUTES
            .iter()
            .filter(|r| r.function == function)
            .map(|r| r.route)
            .collect();
        if function == "mcp" {
            rows.insert(Route::Health);
        }
        assert_eq!(registered, rows, "function {function}");
    }
}

#[test]
fn recorded_events_name_routes_of_the_table() {
    let dir = root().join("events");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("events/") {
        let path = entry.expect("entry").path();
        let ev: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("event JSON");
        let Some(route_key) = ev["routeKey"].as_str() else {
            continue;
        };
        let (method, pattern) = route_key
            .split_once(' ')
            .expect("routeKey is 'METHOD /path'");
        assert!(
            ROUTES
                .iter()
                .any(|r| r.method.as_str() == method && r.pattern == pattern),
            "{} names {route_key}, which the route table lacks",
            path.display()
        );
        checked += 1;
    }
    assert!(
        checked >= 4,
        "expected the recorded events, found {checked}"
    );
}

/// API Gateway's HTTP API integration gives up after 30 s whatever the function's timeout:
/// a function behind a route that ran longer would keep working after its caller got 503.
#[test]
fn no_http_function_outlives_the_integration_timeout() {
    let t = template();
    let global = t["Globals"]["Function"]["Timeout"]
        .as_i64()
        .expect("global Timeout");
    let http: HashSet<String> = Gateway::from_template(&root().join("template.yaml"))
        .routes
        .into_iter()
        .map(|r| r.function)
        .collect();
    let mut checked = 0;
    for (id, res) in t["Resources"].as_hash().expect("Resources") {
        if !http.contains(id.as_str().expect("logical id")) {
            continue;
        }
        let timeout = res["Properties"]["Timeout"].as_i64().unwrap_or(global);
        assert!(
            timeout <= 29,
            "{id:?}: Timeout {timeout} s is over the 30 s integration limit"
        );
        checked += 1;
    }
    assert!(checked >= 10, "found {checked} HTTP functions");
}

/// `v` with every object's keys in sorted order (the same value; a stable text).
fn sorted(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            serde_json::Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The OpenAPI document: the committed `openapi.json` is exactly what the server serves
/// (`UPDATE_OPENAPI=1` rewrites it), and its operations are the route table's rows and
/// template.yaml's routes, in both directions, each with the security its route has.
#[test]
fn the_openapi_document_equals_the_route_table_and_the_template() {
    let doc = workspace_http::openapi::document();
    let file = root().join("openapi.json");
    if std::env::var("UPDATE_OPENAPI").as_deref() == Ok("1") {
        // Keys sorted, whatever serde_json's features in this build keep objects in.
        let text = serde_json::to_string_pretty(&sorted(&doc)).unwrap() + "\n";
        std::fs::write(&file, text).unwrap();
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap_or_default())
            .unwrap_or_default();
    assert!(
        sorted(&committed) == sorted(&doc),
        "openapi.json differs from the document the server serves; run \
         UPDATE_OPENAPI=1 cargo test -p workspace-tests --test template_routes"
    );

    let in_doc: BTreeSet<(String, String, bool)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object().unwrap().iter().map(move |(method, op)| {
                let public = op.get("security") == Some(&serde_json::json!([]));
                (method.to_ascii_uppercase(), path.clone(), public)
            })
        })
        .collect();
    let in_table: BTreeSet<(String, String, bool)> = ROUTES
        .iter()
        .map(|r| {
            (
                r.method.to_string(),
                workspace_http::openapi::openapi_path(r.pattern),
                r.public(),
            )
        })
        .collect();
    assert_eq!(in_doc, in_table, "document vs route table");
    let gateway = Gateway::from_template(&root().join("template.yaml"));
    let in_template: BTreeSet<(String, String, bool)> = gateway
        .routes
        .iter()
        .filter(|r| r.path != "$default")
        .map(|r| {
            (
                r.method.clone(),
                workspace_http::openapi::openapi_path(&r.path),
                !r.authorized,
            )
        })
        .collect();
    assert_eq!(in_doc, in_template, "document vs template.yaml");
}
