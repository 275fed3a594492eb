//! Schemathesis against the running local server (issue 21): every operation of the
//! OpenAPI document the server serves at `/openapi.json`, in every phase (the document's
//! examples, coverage of each schema's edges, fuzzing, and the stateful links: create →
//! read → update with the ETag → delete), with the checks that no answer is a server
//! error and that every status, content type, header and body conforms to the document.
//! Schemathesis is installed into `.venv` by `tests/run.sh` (tests/requirements.txt).
//! The seed is fixed so a failure replays; `SCHEMATHESIS_SEED` and
//! `SCHEMATHESIS_EXAMPLES` change it and the cases per operation.

use std::process::Command;
use workspace_tests::local::{build_local_server, LocalServer};
use workspace_tests::root;

const KEY: &str = "schemathesis-key-0123456789";

#[test]
fn every_operation_conforms_to_the_openapi_document_with_no_server_error() {
    let st = root().join(".venv/bin/st");
    assert!(
        st.exists(),
        "schemathesis is not installed: run `bash tests/run.sh` once (it installs tests/requirements.txt into .venv)"
    );
    let binary = build_local_server();
    let keys = format!("{KEY}=acme/main");
    // With the embedding model, so `mode=semantic|hybrid` searches are fuzzed too: without
    // it they answer the documented 503, which the no-server-error check counts as a failure.
    let model = workspace_tests::rie::installed_model();
    let server = LocalServer::start(
        &binary,
        &[
            ("WORKSPACE_API_KEYS", keys.as_str()),
            ("WORKSPACE_MODEL_DIR", model.as_str()),
        ],
    );
    let seed = std::env::var("SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".to_owned());
    let examples = std::env::var("SCHEMATHESIS_EXAMPLES").unwrap_or_else(|_| "20".to_owned());
    let out = Command::new(&st)
        .current_dir(std::env::temp_dir())
        .env("SCHEMATHESIS_TELEMETRY", "false")
        .env("NO_COLOR", "1")
        .args([
            "run",
            &format!("http://{}/openapi.json", server.addr),
            "--header",
            &format!("Authorization: Bearer {KEY}"),
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_headers_conformance,response_schema_conformance",
            "--max-examples",
            &examples,
            "--seed",
            &seed,
            "--workers",
            "2",
            "--no-shrink",
            "--request-timeout",
            "20",
        ])
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found failures (seed {seed}):\n{stdout}\n{}\nserver stderr:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    // It really ran every operation it selected, and selected all the document has.
    let count = |label: &str| -> Option<String> {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(label).map(|v| v.trim().to_owned()))
    };
    let selected = count("Selected:").expect("a summary");
    let (ran, of) = selected.split_once('/').expect("selected n/m");
    assert_eq!(ran, of, "schemathesis skipped operations:\n{stdout}");
    assert_eq!(count("Tested:").as_deref(), Some(ran), "{stdout}");
}
