//! The OpenAPI document validates with the standard validator (issue 42):
//! `openapi-spec-validator` (PyPI), installed into `.venv` by `tests/run.sh` from
//! tests/requirements.txt, run against the OpenAPI 3.1 schema on the committed
//! `openapi.json` and on the document the server builds and serves (the two are held equal
//! by `template_routes.rs`; both are checked so neither can drift into an invalid one).
//! A known-bad document is refused too, so the check cannot pass by checking nothing.

use std::path::Path;
use std::process::{Command, Output};
use workspace_tests::root;

fn validate(file: &Path) -> Output {
    let validator = root().join(".venv/bin/openapi-spec-validator");
    assert!(
        validator.exists(),
        "openapi-spec-validator is not installed: run `bash tests/run.sh` once (it installs tests/requirements.txt into .venv)"
    );
    Command::new(&validator)
        .args(["--schema", "3.1", "--validation-errors", "all"])
        .arg(file)
        .output()
        .expect("run openapi-spec-validator")
}

fn report(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `doc` written to a file of its own in the temporary directory.
fn written(name: &str, doc: &serde_json::Value) -> std::path::PathBuf {
    let file = std::env::temp_dir().join(format!("{name}-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    file
}

#[test]
fn the_openapi_document_validates_as_openapi_3_1() {
    let committed = root().join("openapi.json");
    let out = validate(&committed);
    assert!(out.status.success(), "openapi.json:\n{}", report(&out));

    let served = written("openapi-served", &workspace_http::openapi::document());
    let out = validate(&served);
    let _ = std::fs::remove_file(&served);
    assert!(
        out.status.success(),
        "the served document:\n{}",
        report(&out)
    );
}

#[test]
fn the_validator_refuses_a_link_parameter_that_is_not_a_string() {
    // What the document carried before issue 42: a link parameter given as the number 1.
    let mut doc = workspace_http::openapi::document();
    let links = doc["paths"]["/v1/host/workspace/files/{path}"]["put"]["responses"]["200"]["links"]
        .as_object_mut()
        .expect("the file PUT's links");
    let diff = links.get_mut("Diff").expect("the Diff link");
    diff["parameters"]["query.from"] = serde_json::json!(1);
    let bad = written("openapi-bad-link", &doc);
    let out = validate(&bad);
    let _ = std::fs::remove_file(&bad);
    assert!(
        !out.status.success(),
        "a numeric link parameter passed:\n{}",
        report(&out)
    );
    assert!(report(&out).contains("is not of type"), "{}", report(&out));
}
