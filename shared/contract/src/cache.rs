//! Contract cases for the TTL cache (RFC 0019 `cache`).

use crate::harness::{Harness, CACHE_LIMITS, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY};
use http::Method;
use serde_json::{json, Value};
use workspace_core::model::format_time;
use workspace_core::ports::Clock;

fn uri(key: &str) -> String {
    format!("/v1/host/cache/{key}")
}

async fn put(h: &Harness, who: &str, key: &str, body: &Value) -> crate::harness::Reply {
    h.call(Method::PUT, &uri(key), Some(who))
        .json(body)
        .send()
        .await
}

async fn get(h: &Harness, who: &str, key: &str) -> crate::harness::Reply {
    h.call(Method::GET, &uri(key), Some(who)).send().await
}

async fn delete(h: &Harness, who: &str, key: &str) -> crate::harness::Reply {
    h.call(Method::DELETE, &uri(key), Some(who)).send().await
}

pub async fn hit_miss_overwrite_and_delete(h: Harness) {
    get(&h, KEY_A, "k1").await.assert_error(404, "not_found");
    let now = h.clock.now_ms();
    let r = put(
        &h,
        KEY_A,
        "k1",
        &json!({"value": {"a": [1, 2]}, "ttlSeconds": 60}),
    )
    .await
    .assert_ok();
    assert_eq!(
        r,
        json!({"ok": true, "expiresAt": format_time(now + 60_000)})
    );
    let hit = get(&h, KEY_A, "k1").await.assert_ok();
    assert_eq!(
        hit,
        json!({"key": "k1", "value": {"a": [1, 2]}, "expiresAt": format_time(now + 60_000)})
    );
    // Any JSON value, null included.
    for v in [
        json!(null),
        json!(0),
        json!("text"),
        json!([true, {"x": 1.5}]),
    ] {
        put(&h, KEY_A, "k1", &json!({"value": v, "ttlSeconds": 30}))
            .await
            .assert_ok();
        assert_eq!(get(&h, KEY_A, "k1").await.assert_ok()["value"], v);
    }
    let r = delete(&h, KEY_A, "k1").await;
    assert_eq!(r.status.as_u16(), 204);
    get(&h, KEY_A, "k1").await.assert_error(404, "not_found");
    // Deleting what is not there is not an error.
    assert_eq!(delete(&h, KEY_A, "k1").await.status.as_u16(), 204);
    // Reads need workspace:read only; writes need workspace:write.
    put(&h, KEY_A, "k2", &json!({"value": 1, "ttlSeconds": 30}))
        .await
        .assert_ok();
    get(&h, KEY_READ_ONLY, "k2").await.assert_ok();
    put(
        &h,
        KEY_READ_ONLY,
        "k2",
        &json!({"value": 2, "ttlSeconds": 30}),
    )
    .await
    .assert_error(403, "forbidden");
    delete(&h, KEY_READ_ONLY, "k2")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(get(&h, KEY_A, "k2").await.assert_ok()["value"], 1);
}

pub async fn expiry_is_visible_within_a_second_and_never_served_after(h: Harness) {
    let start = h.clock.now_ms();
    put(&h, KEY_A, "short", &json!({"value": "v", "ttlSeconds": 2}))
        .await
        .assert_ok();
    h.clock.advance(1_999);
    assert_eq!(get(&h, KEY_A, "short").await.assert_ok()["value"], "v");
    // At expiresAt exactly, and at every later instant, it is a miss.
    h.clock.advance(1);
    assert_eq!(h.clock.now_ms(), start + 2_000);
    get(&h, KEY_A, "short").await.assert_error(404, "not_found");
    h.clock.advance(86_400_000);
    get(&h, KEY_A, "short").await.assert_error(404, "not_found");
    // A new write after expiry lives again.
    put(
        &h,
        KEY_A,
        "short",
        &json!({"value": "again", "ttlSeconds": 1}),
    )
    .await
    .assert_ok();
    assert_eq!(get(&h, KEY_A, "short").await.assert_ok()["value"], "again");
    h.clock.advance(1_000);
    get(&h, KEY_A, "short").await.assert_error(404, "not_found");
}

pub async fn oversize_values_and_long_ttls_are_refused(h: Harness) {
    put(
        &h,
        KEY_A,
        "kept",
        &json!({"value": "old", "ttlSeconds": 60}),
    )
    .await
    .assert_ok();
    // The JSON text of the value counts: a string of n characters is n + 2 bytes.
    let max = usize::try_from(CACHE_LIMITS.max_value_bytes).unwrap();
    put(
        &h,
        KEY_A,
        "fits",
        &json!({"value": "x".repeat(max - 2), "ttlSeconds": 60}),
    )
    .await
    .assert_ok();
    let big = json!({"value": "x".repeat(max - 1), "ttlSeconds": 60});
    for key in ["kept", "new"] {
        let v = put(&h, KEY_A, key, &big)
            .await
            .assert_error(413, "cache_value_too_large");
        assert_eq!(v["details"]["limit"], CACHE_LIMITS.max_value_bytes);
    }
    let long = json!({"value": 1, "ttlSeconds": CACHE_LIMITS.max_ttl_seconds + 1});
    for key in ["kept", "new"] {
        let v = put(&h, KEY_A, key, &long)
            .await
            .assert_error(400, "cache_ttl_exceeds_max");
        assert_eq!(v["details"]["limit"], CACHE_LIMITS.max_ttl_seconds);
    }
    put(
        &h,
        KEY_A,
        "longest",
        &json!({"value": 1, "ttlSeconds": CACHE_LIMITS.max_ttl_seconds}),
    )
    .await
    .assert_ok();
    // Nothing refused changed anything.
    assert_eq!(get(&h, KEY_A, "kept").await.assert_ok()["value"], "old");
    get(&h, KEY_A, "new").await.assert_error(404, "not_found");
}

pub async fn bad_keys_and_bodies_are_400(h: Harness) {
    let long = "k".repeat(257);
    // An encoded slash is a slash on every transport (API Gateway decodes the path before
    // routing): `a/b` is two segments, which no cache route has.
    put(&h, KEY_A, "a%2Fb", &json!({"value": 1, "ttlSeconds": 5}))
        .await
        .assert_error(404, "not_found");
    get(&h, KEY_A, "a%2Fb").await.assert_error(404, "not_found");
    for key in ["..", ".", "%00", "a%20b", "a%5Cb", "%C3%A4", long.as_str()] {
        put(&h, KEY_A, key, &json!({"value": 1, "ttlSeconds": 5}))
            .await
            .assert_error(400, "validation_error");
        get(&h, KEY_A, key)
            .await
            .assert_error(400, "validation_error");
    }
    for body in [
        json!({"ttlSeconds": 5}),
        json!({"value": 1}),
        json!({"value": 1, "ttlSeconds": "5"}),
        json!({"value": 1, "ttlSeconds": -1}),
        json!({"value": 1, "ttlSeconds": 1.5}),
        json!({"value": 1, "ttlSeconds": 0}),
        json!([1, 2]),
    ] {
        put(&h, KEY_A, "k", &body)
            .await
            .assert_error(400, "validation_error");
    }
    h.call(Method::PUT, &uri("k"), Some(KEY_A))
        .body("not json")
        .send()
        .await
        .assert_error(400, "validation_error");
    get(&h, KEY_A, "k").await.assert_error(404, "not_found");
    h.call(Method::GET, &uri("k"), None)
        .send()
        .await
        .assert_error(401, "unauthenticated");
}

pub async fn cache_is_invisible_to_other_tenants_and_workspaces(h: Harness) {
    put(
        &h,
        KEY_A,
        "shared",
        &json!({"value": "ACME-SECRET", "ttlSeconds": 60}),
    )
    .await
    .assert_ok();
    for outsider in [KEY_EVIL, KEY_OTHER] {
        get(&h, outsider, "shared")
            .await
            .assert_error(404, "not_found");
        // Their writes and deletes land in their own scope only.
        put(
            &h,
            outsider,
            "shared",
            &json!({"value": "theirs", "ttlSeconds": 60}),
        )
        .await
        .assert_ok();
        assert_eq!(
            get(&h, outsider, "shared").await.assert_ok()["value"],
            "theirs"
        );
        assert_eq!(delete(&h, outsider, "shared").await.status.as_u16(), 204);
        get(&h, outsider, "shared")
            .await
            .assert_error(404, "not_found");
    }
    assert_eq!(
        get(&h, KEY_A, "shared").await.assert_ok()["value"],
        "ACME-SECRET"
    );
}

/// WSR-1: secret-shaped strings anywhere in a value are stored (and read back) redacted,
/// and the JSON around them stays intact.
pub async fn cache_values_are_redacted(h: Harness) {
    use crate::protocol::{SECRET_AWS_KEY_ID, SECRET_GITHUB};
    let value = json!({
        "note": format!("creds: {SECRET_AWS_KEY_ID} keep"),
        "list": [SECRET_GITHUB, 7, {"deep": format!("\"{SECRET_GITHUB}\"")}],
    });
    put(
        &h,
        KEY_A,
        "creds",
        &json!({"value": value, "ttlSeconds": 60}),
    )
    .await
    .assert_ok();
    let r = get(&h, KEY_A, "creds").await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    for secret in [SECRET_AWS_KEY_ID, SECRET_GITHUB] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let v = r.assert_ok();
    let note = v["value"]["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("creds: [REDACTED:") && note.ends_with(" keep"),
        "{v}"
    );
    assert_eq!(v["value"]["list"][1], 7);
    let deep = v["value"]["list"][2]["deep"].as_str().unwrap_or_default();
    assert!(deep.contains("[REDACTED:"), "{v}");
}

/// Registered secrets (WSR-1) are redacted from cached values too, for their tenant only.
pub async fn registered_secrets_are_redacted_from_cached_values(h: Harness) {
    use crate::redaction::REGISTERED_VALUE;
    let acme = workspace_core::TenantId::parse("acme").unwrap();
    let record =
        workspace_core::secrets::SecretRecord::new(&acme, "db-password", REGISTERED_VALUE, 0)
            .unwrap();
    h.secrets.put_secret(record).await.unwrap();
    let body = json!({"value": {"dsn": format!("db {REGISTERED_VALUE}")}, "ttlSeconds": 60});
    put(&h, KEY_A, "dsn", &body).await.assert_ok();
    let r = get(&h, KEY_A, "dsn").await;
    assert!(
        !String::from_utf8_lossy(&r.body).contains(REGISTERED_VALUE),
        "{r:?}"
    );
    assert_eq!(r.assert_ok()["value"]["dsn"], "db [REDACTED:db-password]");
    // Another tenant's value is its own business: stored as written.
    put(&h, KEY_EVIL, "dsn", &body).await.assert_ok();
    assert_eq!(
        get(&h, KEY_EVIL, "dsn").await.assert_ok()["value"]["dsn"],
        format!("db {REGISTERED_VALUE}")
    );
}
