//! Contract cases for run records (RFC 0059 §D): a run holds the workspace as it was when
//! the run started, is listed newest first, is scoped like everything else, and expires
//! with its snapshot.

use crate::harness::{Harness, Reply, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY};
use http::Method;
use serde_json::{json, Value};
use workspace_core::service::DEFAULT_SNAPSHOT_TTL_MS;

const RUNS: &str = "/v1/runs";

impl Harness {
    pub async fn start_run(&self, key: &str, workflow_id: &str) -> Reply {
        self.call(Method::POST, RUNS, Some(key))
            .json(&json!({ "workflowId": workflow_id, "inputs": { "ignored": true } }))
            .send()
            .await
    }

    pub async fn get_run(&self, key: &str, id: &str) -> Reply {
        self.call(Method::GET, &format!("{RUNS}/{id}"), Some(key))
            .send()
            .await
    }

    pub async fn list_runs(&self, key: &str, query: &str) -> Reply {
        self.call(Method::GET, &format!("{RUNS}?{query}"), Some(key))
            .send()
            .await
    }
}

fn workspace_rows(run: &Value) -> Vec<(String, u64, String)> {
    run["workspace"]
        .as_array()
        .expect("workspace")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().expect("path").to_owned(),
                f["version"].as_u64().expect("version"),
                f["etag"].as_str().expect("etag").to_owned(),
            )
        })
        .collect()
}

fn run_ids(page: &Value) -> Vec<String> {
    page["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["runId"].as_str().expect("runId").to_owned())
        .collect()
}

pub async fn a_run_holds_the_workspace_as_it_started(h: Harness) {
    let a1 = h.put(KEY_A, "a.md", "a1").await.assert_ok();
    let b1 = h.put(KEY_A, "b.md", "b1").await.assert_ok();

    let created = h.start_run(KEY_A, "conformance-noop").await;
    assert_eq!(created.status.as_u16(), 201);
    let run = created.json();
    let id = run["runId"].as_str().expect("runId").to_owned();
    assert_eq!(run["workflowId"], "conformance-noop");
    assert_eq!(run["snapshotId"], run["runId"]);
    assert!(run["createdAt"].as_str().unwrap().ends_with('Z'));

    // After the run started: a new file, a new version, a delete.
    h.put(KEY_A, "c.md", "written after").await.assert_ok();
    h.put(KEY_A, "a.md", "a2").await.assert_ok();
    assert_eq!(h.delete(KEY_A, "b.md").await.status, 204);

    let got = h.get_run(KEY_A, &id).await.assert_ok();
    assert_eq!(got["runId"], run["runId"]);
    assert_eq!(got["workflowId"], "conformance-noop");
    assert_eq!(
        workspace_rows(&got),
        [
            ("a.md".into(), 1, a1["etag"].as_str().unwrap().to_owned()),
            ("b.md".into(), 1, b1["etag"].as_str().unwrap().to_owned()),
        ]
    );
    // The run's snapshot reads those very bytes.
    let snap = got["snapshotId"].as_str().unwrap();
    assert_eq!(
        h.get_in(KEY_A, snap, "a.md").await.assert_ok()["content"],
        "a1"
    );
    assert_eq!(
        h.get_in(KEY_A, snap, "b.md").await.assert_ok()["content"],
        "b1"
    );

    // Bad input is a 400 and starts no run; a read-only key cannot start one.
    for body in [
        json!({}),
        json!({"workflowId": ""}),
        json!({"workflowId": 7}),
    ] {
        h.call(Method::POST, RUNS, Some(KEY_A))
            .json(&body)
            .send()
            .await
            .assert_error(400, "validation_error");
    }
    h.call(Method::POST, RUNS, Some(KEY_A))
        .body("not json")
        .send()
        .await
        .assert_error(400, "validation_error");
    h.start_run(KEY_READ_ONLY, "w")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(h.get_run(KEY_READ_ONLY, &id).await.status.as_u16(), 200);
    assert_eq!(run_ids(&h.list_runs(KEY_A, "").await.assert_ok()), [id]);
}

pub async fn runs_are_listed_newest_first_a_page_at_a_time(h: Harness) {
    h.put(KEY_A, "f.md", "f").await.assert_ok();
    let mut ids = Vec::new();
    for i in 0..3 {
        let run = h.start_run(KEY_A, &format!("wf-{i}")).await.assert_ok();
        ids.push(run["runId"].as_str().unwrap().to_owned());
        h.clock.advance(1);
    }
    // A plain snapshot is not a run.
    let snap = h.snapshot(KEY_A).await.assert_ok();
    let plain = snap["snapshotId"].as_str().unwrap();
    h.get_run(KEY_A, plain).await.assert_error(404, "not_found");

    let first = h.list_runs(KEY_A, "limit=2").await.assert_ok();
    assert_eq!(run_ids(&first), [ids[2].clone(), ids[1].clone()]);
    assert_eq!(first["runs"][0]["workflowId"], "wf-2");
    assert!(
        first["runs"][0].get("workspace").is_none(),
        "a listing is metadata"
    );
    let token = first["nextToken"].as_str().expect("nextToken");
    let rest = h
        .list_runs(KEY_A, &format!("limit=2&nextToken={token}"))
        .await
        .assert_ok();
    assert_eq!(run_ids(&rest), [ids[0].clone()]);
    assert!(rest.get("nextToken").is_none(), "{rest}");
    for bad in ["limit=0", "limit=101", "limit=x", "nextToken=not-a-run"] {
        h.list_runs(KEY_A, bad)
            .await
            .assert_error(400, "validation_error");
    }
}

pub async fn runs_are_scoped_and_expire_with_their_snapshot(h: Harness) {
    h.put(KEY_A, "g.md", "g").await.assert_ok();
    let run = h.start_run(KEY_A, "wf").await.assert_ok();
    let id = run["runId"].as_str().unwrap().to_owned();
    // Another workspace of the tenant, and another tenant: not found, never listed.
    for key in [KEY_OTHER, KEY_EVIL] {
        let refused = h.get_run(key, &id).await.assert_error(404, "not_found");
        assert!(!refused.to_string().contains("g.md"));
        assert_eq!(h.list_runs(key, "").await.assert_ok()["runs"], json!([]));
    }
    h.get_run(KEY_A, "run_0000000000000_0000000000000000")
        .await
        .assert_error(404, "not_found");
    h.get_run(KEY_A, "run_bad%20id")
        .await
        .assert_error(400, "validation_error");

    h.clock.advance(DEFAULT_SNAPSHOT_TTL_MS - 1000);
    h.get_run(KEY_A, &id).await.assert_ok();
    h.clock.advance(2000);
    h.get_run(KEY_A, &id).await.assert_error(404, "not_found");
    assert_eq!(h.list_runs(KEY_A, "").await.assert_ok()["runs"], json!([]));
}
