//! Contract cases for run records (RFC 0059 §D): a run holds the workspace as it was when
//! the run started, is listed newest first, is scoped like everything else, and expires
//! with its snapshot.

use crate::harness::{Harness, Reply, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY, KEY_TENANT};
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
    // Another workspace of the tenant: refused (run_forbidden); another tenant, even with
    // a workspace of the same name: not found. Neither sees anything of it, nor lists it.
    for (key, status, code) in [
        (KEY_OTHER, 403, "run_forbidden"),
        (KEY_EVIL, 404, "not_found"),
    ] {
        let refused = h.get_run(key, &id).await.assert_error(status, code);
        assert!(!refused.to_string().contains("g.md"));
        assert!(!refused.to_string().contains("\"wf\""), "{refused}");
        assert_eq!(h.list_runs(key, "").await.assert_ok()["runs"], json!([]));
    }
    for unknown in [
        "run_0000000000000_0000000000000000",
        "run_0000000000000_0000000000000000_main",
        "run_0000000000000_0000000000000000_other",
    ] {
        h.get_run(KEY_A, unknown)
            .await
            .assert_error(404, "not_found");
    }
    h.get_run(KEY_A, "run_bad%20id")
        .await
        .assert_error(400, "validation_error");

    h.clock.advance(DEFAULT_SNAPSHOT_TTL_MS - 1000);
    h.get_run(KEY_A, &id).await.assert_ok();
    h.clock.advance(2000);
    h.get_run(KEY_A, &id).await.assert_error(404, "not_found");
    // An expired run of another workspace is no run either.
    h.get_run(KEY_OTHER, &id)
        .await
        .assert_error(404, "not_found");
    assert_eq!(h.list_runs(KEY_A, "").await.assert_ok()["runs"], json!([]));
}

/// RFC 0048: a run records its owner `{tenant, workspace, principal}` from the identity
/// that started it, answers it on create, read and listing, and only its own workspace
/// reads it: another workspace of the tenant is refused with `run_forbidden` (403), another
/// tenant gets 404, and a refusal carries nothing of the run.
pub async fn runs_record_their_owner_and_refuse_other_workspaces(h: Harness) {
    h.put(KEY_A, "owned.md", "o").await.assert_ok();
    let created = h.start_run(KEY_A, "owned-wf").await;
    assert_eq!(created.status.as_u16(), 201);
    let run = created.json();
    let id = run["runId"].as_str().unwrap().to_owned();
    let alice = json!({ "tenant": "acme", "workspace": "main", "principal": "alice" });
    assert_eq!(run["owner"], alice, "{run}");
    let got = h.get_run(KEY_A, &id).await.assert_ok();
    assert_eq!(got["owner"], alice, "{got}");
    // Another principal of the same workspace reads it, and the owner stays who started it.
    assert_eq!(
        h.get_run(KEY_READ_ONLY, &id).await.assert_ok()["owner"],
        alice
    );
    let listed = h.list_runs(KEY_A, "").await.assert_ok();
    assert_eq!(listed["runs"][0]["owner"], alice, "{listed}");

    // A run of acme/other, by olga: hers, and refused to acme/main.
    h.put(KEY_OTHER, "theirs.md", "secret-of-other")
        .await
        .assert_ok();
    let theirs = h.start_run(KEY_OTHER, "other-wf").await.assert_ok();
    assert_eq!(
        theirs["owner"],
        json!({ "tenant": "acme", "workspace": "other", "principal": "olga" })
    );
    let other_id = theirs["runId"].as_str().unwrap().to_owned();
    for key in [KEY_A, KEY_READ_ONLY] {
        let refused = h
            .get_run(key, &other_id)
            .await
            .assert_error(403, "run_forbidden");
        let text = refused.to_string();
        assert!(
            !text.contains("theirs.md") && !text.contains("other-wf") && !text.contains("olga"),
            "{text}"
        );
        assert_eq!(
            refused.as_object().map(|o| o.len()),
            Some(2),
            "just error and message: {refused}"
        );
    }
    // Another tenant: nothing, not even that it exists.
    h.get_run(KEY_EVIL, &other_id)
        .await
        .assert_error(404, "not_found");
    h.get_run(KEY_EVIL, &id)
        .await
        .assert_error(404, "not_found");
    // A tenant-wide key acting in acme/main is refused acme/other's run the same way, and
    // reads main's own with the owner who started it.
    h.call(Method::GET, &format!("{RUNS}/{other_id}"), Some(KEY_TENANT))
        .header("x-workspace-id", "main")
        .send()
        .await
        .assert_error(403, "run_forbidden");
    let via_tenant = h
        .call(Method::GET, &format!("{RUNS}/{id}"), Some(KEY_TENANT))
        .header("x-workspace-id", "main")
        .send()
        .await
        .assert_ok();
    assert_eq!(via_tenant["owner"], alice);
    // Its owner still reads it whole.
    let own = h.get_run(KEY_OTHER, &other_id).await.assert_ok();
    assert_eq!(own["workspace"][0]["path"], "theirs.md");
    // A plain snapshot of acme/other is no run, whoever asks.
    let snap = h.snapshot(KEY_OTHER).await.assert_ok();
    h.get_run(KEY_A, snap["snapshotId"].as_str().unwrap())
        .await
        .assert_error(404, "not_found");
}
