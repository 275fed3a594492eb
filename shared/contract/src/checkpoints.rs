//! Contract cases for checkpoints and rollback: labelled snapshots listed newest first,
//! kept ones outliving every retention rule, and a rollback that writes back what differs,
//! deletes what is new, leaves the rest, honours globs, preconditions and idempotency keys.

use crate::harness::{Harness, Reply, KEY_A, KEY_EVIL, KEY_READ_ONLY, LIMITS};
use http::Method;
use serde_json::{json, Value};
use workspace_core::service::DEFAULT_SNAPSHOT_TTL_MS;

const SNAPSHOTS: &str = "/v1/host/workspace/snapshots";

impl Harness {
    pub async fn checkpoint(&self, key: &str, body: Value) -> Reply {
        self.call(Method::POST, SNAPSHOTS, Some(key))
            .json(&body)
            .send()
            .await
    }

    /// A rollback carrying `Idempotency-Key: idempotency_key`.
    pub async fn rollback_once(
        &self,
        key: &str,
        id: &str,
        idempotency_key: &str,
        body: Value,
    ) -> Reply {
        self.call(
            Method::POST,
            &format!("{SNAPSHOTS}/{id}/restore"),
            Some(key),
        )
        .header("idempotency-key", idempotency_key)
        .json(&body)
        .send()
        .await
    }

    pub async fn rollback(&self, key: &str, id: &str, body: Value) -> Reply {
        self.call(
            Method::POST,
            &format!("{SNAPSHOTS}/{id}/restore"),
            Some(key),
        )
        .json(&body)
        .send()
        .await
    }
}

fn id_of(v: &Value) -> String {
    v["snapshotId"].as_str().expect("snapshotId").to_owned()
}

fn contents(state: &[(String, u64, String, String)]) -> Vec<(String, String)> {
    state
        .iter()
        .map(|(p, _, _, c)| (p.clone(), c.clone()))
        .collect()
}

pub async fn checkpoints_are_labelled_listed_and_kept(h: Harness) {
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    let first = h.checkpoint(KEY_A, json!({"label": "before run 1"})).await;
    assert_eq!(first.status.as_u16(), 201);
    let first = first.json();
    assert_eq!(first["label"], "before run 1");
    assert_eq!(first["keep"], false);
    assert!(first["expiresAt"].is_string());
    h.clock.advance(1);
    let kept = h
        .checkpoint(KEY_A, json!({"label": "release", "keep": true}))
        .await
        .assert_ok();
    assert_eq!(
        (kept["keep"].clone(), kept["expiresAt"].clone()),
        (json!(true), Value::Null)
    );
    h.clock.advance(1);
    let third = h.snapshot(KEY_A).await.assert_ok();
    // A run is not a checkpoint.
    h.call(Method::POST, "/v1/runs", Some(KEY_A))
        .json(&json!({"workflowId": "w"}))
        .send()
        .await
        .assert_ok();

    let page = h
        .call(Method::GET, &format!("{SNAPSHOTS}?limit=2"), Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let ids: Vec<String> = page["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(ids, [id_of(&third), id_of(&kept)]);
    assert_eq!(page["snapshots"][1]["label"], "release");
    let token = page["nextToken"].as_str().expect("nextToken");
    let rest = h
        .call(
            Method::GET,
            &format!("{SNAPSHOTS}?limit=2&nextToken={token}"),
            Some(KEY_A),
        )
        .send()
        .await
        .assert_ok();
    let ids: Vec<String> = rest["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(ids, [id_of(&first)]);
    // Another tenant sees none of them.
    let evil = h
        .call(Method::GET, SNAPSHOTS, Some(KEY_EVIL))
        .send()
        .await
        .assert_ok();
    assert_eq!(evil["snapshots"], json!([]));

    // Far past every snapshot's life and the retention window: the kept one still reads
    // its version, the others are gone.
    for i in 2..=(LIMITS.max_versions + 2) {
        h.put(KEY_A, "a.md", &format!("a{i}")).await.assert_ok();
    }
    h.clock.advance(DEFAULT_SNAPSHOT_TTL_MS * 10);
    h.put(KEY_A, "a.md", "later").await.assert_ok();
    h.get_version(KEY_A, "a.md", 1)
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.get_in(KEY_A, &id_of(&kept), "a.md").await.assert_ok()["content"],
        "a1"
    );
    h.get_in(KEY_A, &id_of(&first), "a.md")
        .await
        .assert_error(404, "not_found");
    let listed = h
        .call(Method::GET, SNAPSHOTS, Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let ids: Vec<String> = listed["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(ids, [id_of(&kept)]);
    // Until deleted.
    assert_eq!(h.delete_snapshot(KEY_A, &id_of(&kept)).await.status, 204);
    h.get_in(KEY_A, &id_of(&kept), "a.md")
        .await
        .assert_error(404, "not_found");

    for bad in [
        json!({"label": ""}),
        json!({"label": "a\nb"}),
        json!({"keep": "yes"}),
    ] {
        h.checkpoint(KEY_A, bad)
            .await
            .assert_error(400, "validation_error");
    }
    h.checkpoint(KEY_READ_ONLY, json!({}))
        .await
        .assert_error(403, "forbidden");
}

pub async fn rollback_writes_back_deletes_and_leaves_alone(h: Harness) {
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    h.put(KEY_A, "c.md", "c1").await.assert_ok();
    let snap = id_of(
        &h.checkpoint(KEY_A, json!({"label": "good"}))
            .await
            .assert_ok(),
    );
    let good = contents(&h.state(KEY_A).await);
    // A bad run: one changed, one deleted, one created, one rewritten with the same bytes.
    h.put(KEY_A, "a.md", "a-bad").await.assert_ok();
    assert_eq!(h.delete(KEY_A, "b.md").await.status, 204);
    h.put(KEY_A, "d.md", "new").await.assert_ok();
    h.put(KEY_A, "c.md", "c1").await.assert_ok();

    let report = h.rollback(KEY_A, &snap, json!({})).await.assert_ok();
    assert_eq!(
        report,
        json!({"restored": ["a.md", "b.md"], "deleted": ["d.md"], "unchanged": ["c.md"]})
    );
    assert_eq!(contents(&h.state(KEY_A).await), good);
    // Written back as new versions (history stays), a deleted file as a new lineage.
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["version"], 3);
    assert_eq!(h.get(KEY_A, "b.md").await.assert_ok()["version"], 1);
    assert_eq!(h.get(KEY_A, "c.md").await.assert_ok()["version"], 2);
    // Again: nothing to do.
    let again = h.rollback(KEY_A, &snap, json!({})).await.assert_ok();
    assert_eq!(
        again,
        json!({"restored": [], "deleted": [], "unchanged": ["a.md", "b.md", "c.md"]})
    );

    // Only what the globs match.
    h.put(KEY_A, "a.md", "a-later").await.assert_ok();
    h.put(KEY_A, "c.md", "c-later").await.assert_ok();
    let some = h
        .rollback(KEY_A, &snap, json!({"paths": ["c*"]}))
        .await
        .assert_ok();
    assert_eq!(
        some,
        json!({"restored": ["c.md"], "deleted": [], "unchanged": []})
    );
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["content"], "a-later");

    // Preconditions: refused with the changed paths while anything matching changed since
    // the named checkpoint (or instant), and then nothing is touched.
    let base = id_of(&h.snapshot(KEY_A).await.assert_ok());
    let proceeds = h
        .rollback(KEY_A, &snap, json!({"ifUnchangedSince": base}))
        .await
        .assert_ok();
    assert_eq!(
        proceeds,
        json!({"restored": ["a.md"], "deleted": [], "unchanged": ["b.md", "c.md"]})
    );
    h.put(KEY_A, "b.md", "b-later").await.assert_ok();
    let before = h.state(KEY_A).await;
    let conflict = h
        .rollback(KEY_A, &snap, json!({"ifUnchangedSince": base}))
        .await
        .assert_error(409, "workspace_conflict");
    let message = conflict["message"].as_str().unwrap();
    assert!(
        message.contains("a.md") && message.contains("b.md"),
        "{message}"
    );
    assert_eq!(h.state(KEY_A).await, before);
    let t = instant_after_every_write(&h);
    let restored = h
        .rollback(KEY_A, &snap, json!({"ifUnchangedSince": t}))
        .await
        .assert_ok();
    assert_eq!(restored["restored"], json!(["b.md"]));
    h.put(KEY_A, "c.md", "c-latest").await.assert_ok();
    let before = h.state(KEY_A).await;
    let changed = h
        .rollback(KEY_A, &snap, json!({"ifUnchangedSince": t}))
        .await
        .assert_error(409, "workspace_conflict");
    let message = changed["message"].as_str().unwrap();
    assert!(
        message.contains("b.md") && message.contains("c.md"),
        "{message}"
    );
    assert_eq!(h.state(KEY_A).await, before);

    // Bad requests change nothing.
    let now = h.state(KEY_A).await;
    h.rollback(KEY_A, &snap, json!({"paths": ["a{"]}))
        .await
        .assert_error(400, "validation_error");
    h.rollback(KEY_A, &snap, json!({"files": []}))
        .await
        .assert_error(400, "validation_error");
    h.rollback(KEY_A, "s0000000000000-nope", json!({}))
        .await
        .assert_error(404, "not_found");
    h.rollback(KEY_EVIL, &snap, json!({}))
        .await
        .assert_error(404, "not_found");
    h.rollback(KEY_READ_ONLY, &snap, json!({}))
        .await
        .assert_error(403, "forbidden");
    assert_eq!(h.state(KEY_A).await, now);
}

/// An instant after every write so far, in RFC 3339; the clock then moves past it.
fn instant_after_every_write(h: &Harness) -> String {
    use workspace_core::ports::Clock;
    h.clock.advance(10);
    let t = workspace_core::model::format_time(h.clock.now_ms());
    h.clock.advance(10);
    t
}

pub async fn rollback_honours_idempotency_keys(h: Harness) {
    h.put(KEY_A, "a.md", "a1").await.assert_ok();
    let snap = id_of(&h.snapshot(KEY_A).await.assert_ok());
    h.put(KEY_A, "a.md", "a2").await.assert_ok();
    let first = h
        .rollback_once(KEY_A, &snap, "rollback-1", json!({}))
        .await
        .assert_ok();
    assert_eq!(first["restored"], json!(["a.md"]));
    // A later write, then the retry: the first answer again, nothing applied twice.
    h.put(KEY_A, "a.md", "a3").await.assert_ok();
    let retry = h
        .rollback_once(KEY_A, &snap, "rollback-1", json!({}))
        .await
        .assert_ok();
    assert_eq!(retry, first);
    assert_eq!(h.get(KEY_A, "a.md").await.assert_ok()["content"], "a3");
    // The same key for another rollback is refused.
    h.rollback_once(KEY_A, &snap, "rollback-1", json!({"paths": ["*.md"]}))
        .await
        .assert_error(409, "workspace_conflict");
}
