//! Contract cases for the limits: file size, file count, retention, idempotency keys.

use crate::harness::{file_uri, Harness, KEY_A, KEY_EVIL, KEY_OTHER, LIMITS};
use http::Method;
use serde_json::json;
use workspace_core::service::IDEMPOTENCY_TTL_MS;

pub async fn max_file_bytes_is_enforced_in_utf8_bytes(h: Harness) {
    let limit = LIMITS.max_file_bytes as usize;
    h.put(KEY_A, "exact.txt", &"a".repeat(limit))
        .await
        .assert_ok();
    let before = h.state(KEY_A).await;
    let e = h
        .put(KEY_A, "over.txt", &"a".repeat(limit + 1))
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(e["details"]["limit"], LIMITS.max_file_bytes);
    // 342 three-byte characters = 1026 bytes, though only 342 characters.
    h.put(KEY_A, "exact.txt", &"€".repeat(342))
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
    // A body far over what any JSON for an allowed file needs is refused unparsed.
    h.call(Method::PUT, &file_uri("huge.txt"), Some(KEY_A))
        .body(vec![b' '; h.app.max_request_bytes() + 1])
        .send()
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
}

pub async fn max_files_counts_live_files(h: Harness) {
    for i in 0..LIMITS.max_files {
        h.put(KEY_A, &format!("f{i}"), "x").await.assert_ok();
    }
    let before = h.state(KEY_A).await;
    h.put(KEY_A, "one-too-many", "x")
        .await
        .assert_error(413, "workspace_too_large");
    assert_eq!(h.state(KEY_A).await, before);
    // Overwriting an existing file is not a new file.
    h.put(KEY_A, "f0", "y").await.assert_ok();
    // Another workspace has its own count.
    h.put(KEY_OTHER, "elsewhere", "x").await.assert_ok();
    // A delete frees a slot.
    assert_eq!(h.delete(KEY_A, "f1").await.status, 204);
    h.put(KEY_A, "one-too-many", "x").await.assert_ok();
}

pub async fn retention_keeps_the_last_max_versions(h: Harness) {
    for i in 1..=5 {
        h.put(KEY_A, "r.md", &format!("v{i}")).await.assert_ok();
    }
    let keep_from = 5 - LIMITS.max_versions + 1;
    for n in 1..=5u64 {
        let r = h
            .call(
                Method::GET,
                &format!("/v1/host/workspace/files/r.md?version={n}"),
                Some(KEY_A),
            )
            .send()
            .await;
        if n >= keep_from {
            assert_eq!(r.assert_ok()["content"], format!("v{n}"));
        } else {
            r.assert_error(404, "not_found");
        }
    }
}

pub async fn idempotency_key_replays_the_first_result(h: Harness) {
    let send = |content: &'static str, key: &'static str, who: &'static str| {
        h.call(Method::PUT, &file_uri("idem.md"), Some(who))
            .header("idempotency-key", key)
            .json(&json!({ "content": content }))
            .send()
    };
    let first = send("hello", "k-1", KEY_A).await.assert_ok();
    let again = send("hello", "k-1", KEY_A).await.assert_ok();
    assert_eq!(first, again, "a retry returns the first result");
    let now = h.get(KEY_A, "idem.md").await.assert_ok();
    assert_eq!(now["version"], 1, "a retry makes no second version");

    // The same key for a different request is refused and changes nothing.
    send("other", "k-1", KEY_A)
        .await
        .assert_error(409, "workspace_conflict");
    assert_eq!(h.get(KEY_A, "idem.md").await.assert_ok()["version"], 1);

    // A new key is a new write; keys are scoped to the tenant·workspace.
    assert_eq!(send("hello", "k-2", KEY_A).await.assert_ok()["version"], 2);
    assert_eq!(
        send("hello", "k-1", KEY_OTHER).await.assert_ok()["version"],
        1
    );
    assert_eq!(
        send("hello", "k-1", KEY_EVIL).await.assert_ok()["version"],
        1
    );
    assert_eq!(h.get(KEY_A, "idem.md").await.assert_ok()["version"], 2);
}

pub async fn idempotency_keys_expire_after_a_day(h: Harness) {
    let send = || {
        h.call(Method::PUT, &file_uri("daily.md"), Some(KEY_A))
            .header("idempotency-key", "daily")
            .json(&json!({ "content": "same" }))
            .send()
    };
    assert_eq!(send().await.assert_ok()["version"], 1);
    h.clock.advance(IDEMPOTENCY_TTL_MS - 1000);
    assert_eq!(
        send().await.assert_ok()["version"],
        1,
        "still remembered within the day"
    );
    h.clock.advance(2000);
    assert_eq!(
        send().await.assert_ok()["version"],
        2,
        "an expired key is a new request"
    );
    assert_eq!(
        send().await.assert_ok()["version"],
        2,
        "and is remembered again"
    );
}
