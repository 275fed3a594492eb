//! Contract cases for run snapshots: a snapshot reads one fixed state however the
//! workspace changes, retention never breaks it, and it is scoped like everything else.

use crate::harness::{Harness, Reply, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY, LIMITS};
use http::Method;
use serde_json::Value;
use workspace_core::service::DEFAULT_SNAPSHOT_TTL_MS;

const SNAPSHOTS: &str = "/v1/host/workspace/snapshots";

impl Harness {
    pub async fn snapshot(&self, key: &str) -> Reply {
        self.call(Method::POST, SNAPSHOTS, Some(key)).send().await
    }

    pub async fn get_snapshot(&self, key: &str, id: &str) -> Reply {
        self.call(Method::GET, &format!("{SNAPSHOTS}/{id}"), Some(key))
            .send()
            .await
    }

    pub async fn delete_snapshot(&self, key: &str, id: &str) -> Reply {
        self.call(Method::DELETE, &format!("{SNAPSHOTS}/{id}"), Some(key))
            .send()
            .await
    }

    pub async fn get_in(&self, key: &str, id: &str, path: &str) -> Reply {
        self.call(
            Method::GET,
            &format!("/v1/host/workspace/files/{path}?snapshot={id}"),
            Some(key),
        )
        .send()
        .await
    }
}

fn rows(v: &Value, field: &str) -> Vec<(String, u64)> {
    v[field]
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["path"].as_str().expect("path").to_owned(),
                r["version"].as_u64().expect("version"),
            )
        })
        .collect()
}

fn versions(v: &Value) -> Vec<u64> {
    v["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|r| r["version"].as_u64().expect("version"))
        .collect()
}

pub async fn snapshot_survives_writes_deletes_and_retention(h: Harness) {
    let a1 = h.put(KEY_A, "a.md", "a1").await.assert_ok();
    h.put(KEY_A, "b.md", "b1").await.assert_ok();
    h.put(KEY_A, "dir/c.md", "c1").await.assert_ok();

    let created = h.snapshot(KEY_A).await;
    assert_eq!(created.status.as_u16(), 201);
    let snap = created.json();
    let id = snap["snapshotId"].as_str().expect("snapshotId").to_owned();
    assert!(id.len() >= 32, "ids are unguessable: {id}");
    assert!(snap["createdAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        rows(&snap, "files"),
        [
            ("a.md".into(), 1),
            ("b.md".into(), 1),
            ("dir/c.md".into(), 1)
        ]
    );
    assert_eq!(snap["files"][0]["etag"], a1["etag"]);

    // Later writes (past the retention window), a delete and a new file.
    for i in 2..=(LIMITS.max_versions + 3) {
        h.put(KEY_A, "a.md", &format!("a{i}")).await.assert_ok();
    }
    assert_eq!(h.delete(KEY_A, "b.md").await.status, 204);
    h.put(KEY_A, "new.md", "new").await.assert_ok();

    // Through the snapshot: exactly the pinned state.
    let listed = h.list(KEY_A, &format!("snapshot={id}")).await.assert_ok();
    assert_eq!(rows(&listed, "files"), rows(&snap, "files"));
    assert!(listed["files"][0].get("content").is_none());
    let a = h.get_in(KEY_A, &id, "a.md").await;
    let av = a.assert_ok();
    assert_eq!(
        (av["content"].as_str(), av["version"].as_u64()),
        (Some("a1"), Some(1))
    );
    assert_eq!(av["etag"], a1["etag"]);
    assert_eq!(
        a.headers["etag"].to_str().unwrap(),
        a1["etag"].as_str().unwrap()
    );
    assert_eq!(
        h.get_in(KEY_A, &id, "b.md").await.assert_ok()["content"],
        "b1"
    );
    h.get_in(KEY_A, &id, "new.md")
        .await
        .assert_error(404, "not_found");
    let pref = h
        .list(KEY_A, &format!("snapshot={id}&prefix=dir/"))
        .await
        .assert_ok();
    assert_eq!(rows(&pref, "files"), [("dir/c.md".into(), 1)]);
    let page = h
        .list(KEY_A, &format!("snapshot={id}&limit=2"))
        .await
        .assert_ok();
    assert_eq!(page["files"].as_array().unwrap().len(), 2);
    let token = page["nextToken"].as_str().expect("nextToken").to_owned();
    let rest = h
        .list(KEY_A, &format!("snapshot={id}&limit=2&nextToken={token}"))
        .await
        .assert_ok();
    assert_eq!(rows(&rest, "files"), [("dir/c.md".into(), 1)]);
    // Without it: the workspace as it is now.
    assert_eq!(
        h.get(KEY_A, "a.md").await.assert_ok()["content"],
        format!("a{}", LIMITS.max_versions + 3)
    );
    h.get(KEY_A, "b.md").await.assert_error(404, "not_found");
    assert_eq!(
        h.get_snapshot(KEY_A, &id).await.assert_ok(),
        snap,
        "GET returns the snapshot as created"
    );
    // The pinned version is retained, so history shows it and ?version=1 reads it.
    let last = LIMITS.max_versions + 3;
    let mut expected: Vec<u64> = (1..=last)
        .rev()
        .take(LIMITS.max_versions as usize)
        .collect();
    expected.push(1);
    let hist = h.history(KEY_A, "a.md", "").await.assert_ok();
    assert_eq!(versions(&hist), expected);
    assert_eq!(
        h.get_version(KEY_A, "a.md", 1).await.assert_ok()["content"],
        "a1"
    );
    h.call(
        Method::GET,
        &format!("/v1/host/workspace/files/a.md?snapshot={id}&version=1"),
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(400, "validation_error");

    // DELETE ends it at once; the next write lets the pinned version go.
    assert_eq!(h.delete_snapshot(KEY_A, &id).await.status, 204);
    h.get_in(KEY_A, &id, "a.md")
        .await
        .assert_error(404, "not_found");
    h.get_snapshot(KEY_A, &id)
        .await
        .assert_error(404, "not_found");
    h.delete_snapshot(KEY_A, &id)
        .await
        .assert_error(404, "not_found");
    h.put(KEY_A, "a.md", "after").await.assert_ok();
    let hist = h.history(KEY_A, "a.md", "").await.assert_ok();
    let expected: Vec<u64> = (1..=last + 1)
        .rev()
        .take(LIMITS.max_versions as usize)
        .collect();
    assert_eq!(versions(&hist), expected, "the released version is pruned");
    h.get_version(KEY_A, "a.md", 1)
        .await
        .assert_error(404, "not_found");
}

pub async fn snapshots_expire_and_release_their_versions(h: Harness) {
    h.put(KEY_A, "e.md", "e1").await.assert_ok();
    let snap = h.snapshot(KEY_A).await.assert_ok();
    let id = snap["snapshotId"].as_str().unwrap().to_owned();
    for i in 2..=(LIMITS.max_versions + 1) {
        h.put(KEY_A, "e.md", &format!("e{i}")).await.assert_ok();
    }
    h.clock.advance(DEFAULT_SNAPSHOT_TTL_MS - 1000);
    assert_eq!(
        h.get_in(KEY_A, &id, "e.md").await.assert_ok()["content"],
        "e1"
    );
    h.clock.advance(2000);
    h.get_in(KEY_A, &id, "e.md")
        .await
        .assert_error(404, "not_found");
    h.list(KEY_A, &format!("snapshot={id}"))
        .await
        .assert_error(404, "not_found");
    h.get_snapshot(KEY_A, &id)
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        h.get_version(KEY_A, "e.md", 1).await.assert_ok()["content"],
        "e1"
    );
    h.put(KEY_A, "e.md", "later").await.assert_ok();
    h.get_version(KEY_A, "e.md", 1)
        .await
        .assert_error(404, "not_found");
}

pub async fn unknown_and_foreign_snapshot_ids_are_404(h: Harness) {
    h.put(KEY_A, "s.md", "ACME-ONLY").await.assert_ok();
    let snap = h.snapshot(KEY_A).await.assert_ok();
    let id = snap["snapshotId"].as_str().unwrap().to_owned();
    for outsider in [KEY_EVIL, KEY_OTHER] {
        h.get_snapshot(outsider, &id)
            .await
            .assert_error(404, "not_found");
        h.get_in(outsider, &id, "s.md")
            .await
            .assert_error(404, "not_found");
        h.list(outsider, &format!("snapshot={id}"))
            .await
            .assert_error(404, "not_found");
        h.delete_snapshot(outsider, &id)
            .await
            .assert_error(404, "not_found");
    }
    let unknown = "0123456789abcdef0123456789abcdef";
    h.get_snapshot(KEY_A, unknown)
        .await
        .assert_error(404, "not_found");
    h.get_in(KEY_A, unknown, "s.md")
        .await
        .assert_error(404, "not_found");
    for bad in ["..", "a%2Fb", "a.b", "%00"] {
        let r = h.get_snapshot(KEY_A, bad).await;
        assert!(
            [400, 404].contains(&r.status.as_u16()),
            "{bad}: {}",
            r.status
        );
        r.assert_error(
            r.status.as_u16(),
            if r.status == 400 {
                "validation_error"
            } else {
                "not_found"
            },
        );
    }
    // Read-only credentials read through snapshots but cannot make or delete them.
    assert_eq!(
        h.get_in(KEY_READ_ONLY, &id, "s.md").await.assert_ok()["content"],
        "ACME-ONLY"
    );
    h.snapshot(KEY_READ_ONLY)
        .await
        .assert_error(403, "forbidden");
    h.delete_snapshot(KEY_READ_ONLY, &id)
        .await
        .assert_error(403, "forbidden");
    // The owner's snapshot is untouched by all of that.
    assert_eq!(
        h.get_in(KEY_A, &id, "s.md").await.assert_ok()["content"],
        "ACME-ONLY"
    );
    // An empty workspace snapshots to no files.
    let empty = h.snapshot(KEY_OTHER).await.assert_ok();
    assert_eq!(empty["files"], serde_json::json!([]));
}
