//! RFC 0019 on the local server as a client meets it: a real process, real HTTP, real time.
//! Cache expiry and presigned-URL expiry are observed on the wall clock here (the contract
//! suite covers the same rules on a manual clock).

mod common;

use common::Server;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const KEY: &str = "local-acme-main-key-0001";
const EVIL: &str = "local-acme-evil-key-0001";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![(
        "WORKSPACE_API_KEYS",
        "local-acme-main-key-0001=acme/main,local-acme-evil-key-0001=acme-evil/main",
    )]
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// RFC 3339 `...T..:..:..(.mmm)Z` to Unix milliseconds (UTC, what the server writes).
fn parse_time(s: &str) -> i64 {
    let (date, time) = s.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
    // Days from civil (Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms: i64 = format!("{frac:0<3}")[..3].parse().unwrap();
    ((days * 24 + t[0]) * 60 + t[1]) * 60_000 + t[2] * 1000 + ms
}

#[test]
fn time_parsing() {
    assert_eq!(parse_time("2023-11-14T22:13:20.123Z"), 1_700_000_000_123);
    assert_eq!(parse_time("1970-01-01T00:00:01.000Z"), 1000);
}

#[tokio::test]
async fn cache_entries_expire_on_the_wall_clock_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &env()).await;
    let c = Client::new();
    let url = s.url("/v1/host/cache/memo");
    let r = c
        .put(&url)
        .bearer_auth(KEY)
        .json(&json!({"value": {"answer": 42}, "ttlSeconds": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let expires_at = parse_time(
        r.json::<Value>().await.unwrap()["expiresAt"]
            .as_str()
            .unwrap(),
    );
    let r = c.get(&url).bearer_auth(KEY).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["value"]["answer"], 42);
    // The sibling tenant sees nothing under the same key.
    let r = c.get(&url).bearer_auth(EVIL).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // Poll: a hit only ever answers a request sent before expiresAt, and the first miss
    // comes within a second of it.
    let first_miss = loop {
        let sent = now_ms();
        let r = c.get(&url).bearer_auth(KEY).send().await.unwrap();
        if r.status() == StatusCode::NOT_FOUND {
            assert_eq!(r.json::<Value>().await.unwrap()["error"], "not_found");
            break now_ms();
        }
        assert_eq!(r.status(), StatusCode::OK);
        assert!(
            sent < expires_at,
            "served at {sent}, after expiresAt {expires_at}"
        );
        assert!(now_ms() < expires_at + 5_000, "never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        first_miss <= expires_at + 1_000,
        "miss at {first_miss}, expiresAt {expires_at}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = c.get(&url).bearer_auth(KEY).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "never served after");
}

#[tokio::test]
async fn presigned_urls_work_over_http_until_their_second_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(dir.path(), &env()).await;
    let c = Client::new();
    let all: Vec<u8> = (0..=255u8).collect();
    let r = c
        .put(s.url("/v1/host/blob/default/bin/all.bin"))
        .bearer_auth(KEY)
        .header("content-type", "application/octet-stream")
        .body(all.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["sizeBytes"], 256);
    let r = c
        .get(s.url("/v1/host/blob/default/bin/all.bin"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), all.as_slice());
    let r = c
        .get(s.url("/v1/host/blob/default/bin/all.bin"))
        .bearer_auth(EVIL)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "blob_object_not_found"
    );

    let presign = |method: &str, key: &str, secs: u64| {
        c.post(s.url("/v1/host/blob/default/presign"))
            .bearer_auth(KEY)
            .json(&json!({"key": key, "method": method, "expiresInSeconds": secs}))
            .send()
    };
    // A long-lived URL, kept for after the restart.
    let long: Value = presign("GET", "bin/all.bin", 600)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let long_url = long["url"].as_str().unwrap().to_owned();
    assert!(
        long_url.starts_with(&s.base),
        "{long_url} is served by this server"
    );

    let short: Value = presign("GET", "bin/all.bin", 2)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = short["url"].as_str().unwrap().to_owned();
    let expires_at = parse_time(short["expiresAt"].as_str().unwrap());
    assert_eq!(expires_at % 1000, 0, "expiry is a whole second");
    let r = c.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.unwrap().as_ref(), all.as_slice());

    let put: Value = presign("PUT", "bin/up.bin", 2)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let put_url = put["url"].as_str().unwrap().to_owned();
    let r = c
        .put(&put_url)
        .header("content-type", "image/png")
        .body(vec![0u8, 255, 1])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{:?}", r.text().await);

    // Wait until the URL's second has come, then it is refused.
    let wait = expires_at - now_ms();
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(u64::try_from(wait).unwrap() + 20)).await;
    }
    let r = c.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "blob_presign_expired"
    );
    let r = c.put(&put_url).body(vec![9u8]).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = c
        .get(s.url("/v1/host/blob/default/bin/up.bin"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.bytes().await.unwrap().as_ref(), &[0u8, 255, 1]);

    // The signing secret lives in the data directory: the URL outlives a restart.
    assert!(dir.path().join("presign.key").exists());
    assert!(s.terminate().success());
    let s2 = Server::start(dir.path(), &env()).await;
    let url2 = long_url.replace(&s.base, &s2.base);
    let r = c.get(&url2).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.bytes().await.unwrap().as_ref(), all.as_slice());
    // A tampered URL is refused.
    let r = c
        .get(url2.replace("all.bin", "up.bin"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "forbidden");
}

#[tokio::test]
async fn discovery_advertises_configured_limits() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = env();
    e.extend([
        ("WORKSPACE_BLOB_BUCKETS", "default,media"),
        ("WORKSPACE_BLOB_MAX_OBJECT_BYTES", "1000"),
        ("WORKSPACE_BLOB_MAX_PRESIGN_SECONDS", "60"),
        ("WORKSPACE_CACHE_MAX_VALUE_BYTES", "100"),
        ("WORKSPACE_CACHE_MAX_TTL_SECONDS", "30"),
    ]);
    let s = Server::start(dir.path(), &e).await;
    let c = Client::new();
    let doc: Value = c
        .get(s.url("/.well-known/openwop"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for root in [&doc, &doc["capabilities"]] {
        assert_eq!(
            root["blobStorage"],
            json!({"supported": true, "buckets": ["default", "media"], "presignSupported": true,
                   "maxObjectBytes": 1000, "maxPresignSeconds": 60})
        );
        assert_eq!(
            root["cache"],
            json!({"supported": true, "maxValueBytes": 100, "maxTtlSeconds": 30})
        );
    }
    let r = c
        .put(s.url("/v1/host/blob/media/big"))
        .bearer_auth(KEY)
        .body(vec![0u8; 1001])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "blob_object_too_large"
    );
    let r = c
        .put(s.url("/v1/host/cache/k"))
        .bearer_auth(KEY)
        .json(&json!({"value": 1, "ttlSeconds": 31}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        r.json::<Value>().await.unwrap()["error"],
        "cache_ttl_exceeds_max"
    );
    // A bad setting stops the server with a message naming it.
    let (status, _, err) =
        common::run_to_exit(dir.path(), &[("WORKSPACE_BLOB_BUCKETS", "Not_Valid")]);
    assert!(!status.success());
    assert!(err.contains("WORKSPACE_BLOB_BUCKETS"), "{err}");
}
