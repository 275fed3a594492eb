//! Contract cases for erasing a version from history: the body is gone from the raw store,
//! history keeps a tombstone, reads are 410, the live version and snapshot-held versions
//! are refused (unless forced), only `workspace:admin` may, and the change log records it.

use crate::harness::{scope, Harness, KEY_A, KEY_ADMIN, KEY_EVIL, LIMITS};
use http::Method;
use serde_json::json;
use workspace_core::FilePath;

const VERSIONS: &str = "/v1/host/workspace/versions";

impl Harness {
    pub async fn erase(
        &self,
        key: &str,
        path: &str,
        version: u64,
        query: &str,
    ) -> crate::harness::Reply {
        self.call(
            Method::DELETE,
            &format!("{VERSIONS}/{path}/{version}{query}"),
            Some(key),
        )
        .send()
        .await
    }

    /// The body reference version item `seq` of `path` (in acme/main) names, if any.
    async fn item_body(&self, path: &str, seq: u64) -> Option<workspace_core::model::BodyRef> {
        self.meta
            .version(&scope("acme", "main"), &FilePath::parse(path).unwrap(), seq)
            .await
            .expect("version read")
            .and_then(|v| v.body)
    }
}

pub async fn erasing_a_version_removes_its_body_and_leaves_a_tombstone(h: Harness) {
    // Over the inline threshold: the body is in the body store (`inline.rs` erases an
    // inline one).
    let leak = format!("password=hunter2-but-long-enough\n{}", "x".repeat(200));
    h.put(KEY_A, "leak.md", &leak).await.assert_ok();
    h.put(KEY_A, "leak.md", "cleaned").await.assert_ok();
    h.put(KEY_A, "leak.md", "cleaned again").await.assert_ok();
    let body = h.item_body("leak.md", 1).await.expect("v1's body");
    assert!(!body.is_inline());
    assert!(h.bodies.get(&body).await.unwrap().is_some());

    // Only an admin key; never the live version.
    h.erase(KEY_A, "leak.md", 1, "")
        .await
        .assert_error(403, "forbidden");
    h.erase(KEY_ADMIN, "leak.md", 3, "")
        .await
        .assert_error(409, "workspace_conflict");
    h.erase(KEY_ADMIN, "leak.md", 9, "")
        .await
        .assert_error(404, "not_found");
    h.erase(KEY_ADMIN, "leak.md", 0, "")
        .await
        .assert_error(400, "validation_error");
    h.erase(KEY_ADMIN, "nothing.md", 1, "")
        .await
        .assert_error(404, "not_found");
    h.erase(KEY_EVIL, "leak.md", 1, "")
        .await
        .assert_error(403, "forbidden");

    h.clock.advance(10);
    assert_eq!(
        h.erase(KEY_ADMIN, "leak.md", 1, "").await.status.as_u16(),
        204
    );
    // Gone from the raw store, and the item names no body.
    assert_eq!(h.bodies.get(&body).await.unwrap(), None);
    assert_eq!(h.item_body("leak.md", 1).await, None);
    h.get_version(KEY_A, "leak.md", 1)
        .await
        .assert_error(410, "gone");
    h.call(
        Method::GET,
        "/v1/host/workspace/diff/leak.md?from=1&to=2",
        Some(KEY_A),
    )
    .send()
    .await
    .assert_error(410, "gone");
    h.call(Method::POST, &format!("{VERSIONS}/leak.md"), Some(KEY_A))
        .json(&json!({"restore": 1}))
        .send()
        .await
        .assert_error(410, "gone");
    h.erase(KEY_ADMIN, "leak.md", 1, "")
        .await
        .assert_error(410, "gone");
    // History shows the hole, and who made it.
    let history = h
        .call(Method::GET, &format!("{VERSIONS}/leak.md"), Some(KEY_A))
        .send()
        .await
        .assert_ok();
    let v1 = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == 1)
        .expect("v1 in history")
        .clone();
    assert_eq!(
        (v1["erased"].clone(), v1["erasedBy"].clone()),
        (json!(true), json!("root"))
    );
    assert!(v1["erasedAt"].is_string());
    // Other versions read as before; the change log records the erase.
    assert_eq!(
        h.get_version(KEY_A, "leak.md", 2).await.assert_ok()["content"],
        "cleaned"
    );
    let log = h.changes(KEY_A, "limit=1").await;
    assert_eq!(log["changes"][0]["operation"], "erase");
    assert_eq!(log["changes"][0]["version"], 1);
    assert_eq!(log["changes"][0]["principal"], "root");
}

pub async fn a_version_a_snapshot_holds_is_erased_only_when_forced(h: Harness) {
    h.put(KEY_A, "held.md", "secret").await.assert_ok();
    let kept = h
        .call(Method::POST, "/v1/host/workspace/snapshots", Some(KEY_A))
        .json(&json!({"keep": true}))
        .send()
        .await
        .assert_ok();
    let plain = h.snapshot(KEY_A).await.assert_ok();
    let (kept, plain) = (
        kept["snapshotId"].as_str().unwrap().to_owned(),
        plain["snapshotId"].as_str().unwrap().to_owned(),
    );
    for i in 2..=(LIMITS.max_versions + 1) {
        h.put(KEY_A, "held.md", &format!("v{i}")).await.assert_ok();
    }
    let refused = h
        .erase(KEY_ADMIN, "held.md", 1, "")
        .await
        .assert_error(409, "workspace_conflict");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains(&kept) && message.contains(&plain),
        "{message}"
    );
    assert_eq!(
        h.get_in(KEY_A, &plain, "held.md").await.assert_ok()["content"],
        "secret"
    );
    // The kept snapshot's own copy of version 1, in the raw store.
    let copy = crate::interrupted::kept_copy(&h, &kept, "held.md")
        .await
        .expect("the kept snapshot records its copy");
    assert_eq!(
        h.bodies.get(&copy).await.unwrap().as_deref(),
        Some(&b"secret"[..])
    );

    assert_eq!(
        h.erase(KEY_ADMIN, "held.md", 1, "?force=true")
            .await
            .status
            .as_u16(),
        204
    );
    // The copy is gone from the raw store, and the record no longer names it.
    assert_eq!(h.bodies.get(&copy).await.unwrap(), None);
    assert_eq!(
        crate::interrupted::kept_copy(&h, &kept, "held.md").await,
        None
    );
    for id in [&kept, &plain] {
        h.get_in(KEY_A, id, "held.md")
            .await
            .assert_error(410, "gone");
    }
    h.get_version(KEY_A, "held.md", 1)
        .await
        .assert_error(410, "gone");
    // A rollback to such a snapshot leaves the erased file as it is.
    let report = h
        .call(
            Method::POST,
            &format!("/v1/host/workspace/snapshots/{plain}/restore"),
            Some(KEY_A),
        )
        .json(&json!({}))
        .send()
        .await
        .assert_ok();
    assert_eq!(report["unchanged"], json!(["held.md"]));
    h.erase(KEY_ADMIN, "held.md", 2, "?force=maybe")
        .await
        .assert_error(400, "validation_error");
}
