//! Contract cases for blob storage and presigned URLs (RFC 0019 `blobStorage`).

use crate::harness::{
    Harness, Reply, KEY_A, KEY_EVIL, KEY_OTHER, KEY_READ_ONLY, MAX_OBJECT_BYTES,
    MAX_PRESIGN_SECONDS, SIGNED_BASE,
};
use http::Method;
use serde_json::{json, Value};
use workspace_core::model::format_time;
use workspace_core::ports::Clock;

fn uri(bucket: &str, key: &str) -> String {
    format!("/v1/host/blob/{bucket}/{key}")
}

async fn put(h: &Harness, who: &str, key: &str, bytes: &[u8], ct: &str) -> Reply {
    h.call(Method::PUT, &uri("default", key), Some(who))
        .header("content-type", ct)
        .body(bytes.to_vec())
        .send()
        .await
}

async fn get(h: &Harness, who: &str, key: &str) -> Reply {
    h.call(Method::GET, &uri("default", key), Some(who))
        .send()
        .await
}

async fn delete(h: &Harness, who: &str, key: &str) -> Reply {
    h.call(Method::DELETE, &uri("default", key), Some(who))
        .send()
        .await
}

async fn list(h: &Harness, who: &str, bucket: &str, query: &str) -> Reply {
    h.call(
        Method::GET,
        &format!("/v1/host/blob/{bucket}{query}"),
        Some(who),
    )
    .send()
    .await
}

async fn presign(h: &Harness, who: &str, body: &Value) -> Reply {
    h.call(Method::POST, "/v1/host/blob/default/presign", Some(who))
        .json(body)
        .send()
        .await
}

fn keys_of(page: &Value) -> Vec<String> {
    page["entries"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["key"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn header<'a>(r: &'a Reply, name: &str) -> Option<&'a str> {
    r.headers.get(name).and_then(|v| v.to_str().ok())
}

pub async fn every_byte_value_round_trips(h: Harness) {
    let mut all: Vec<u8> = (0..=255u8).collect();
    all.extend((0..=255u8).rev());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("bytes/all.bin", all),
        ("bytes/empty.bin", Vec::new()),
        (
            "bytes/not-utf8.bin",
            vec![0xff, 0xfe, 0xc3, 0x28, 0x00, 0x80],
        ),
        // JSON-looking bytes are just bytes (never read as a scope-naming request body).
        (
            "bytes/looks.json",
            br#"{"tenant": "acme-evil", "content": 1}"#.to_vec(),
        ),
    ];
    for (key, bytes) in &cases {
        let v = put(&h, KEY_A, key, bytes, "application/octet-stream")
            .await
            .assert_ok();
        assert_eq!(v["bucket"], "default");
        assert_eq!(v["key"], *key);
        assert_eq!(v["sizeBytes"], bytes.len());
        assert!(v["etag"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    }
    for (key, bytes) in &cases {
        let r = get(&h, KEY_A, key).await;
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(r.body.as_ref(), bytes.as_slice(), "{key}");
        assert_eq!(header(&r, "content-type"), Some("application/octet-stream"));
    }
}

pub async fn content_type_etag_and_overwrite(h: Harness) {
    let v1 = put(&h, KEY_A, "img/a.png", b"\x89PNG one", "image/png")
        .await
        .assert_ok();
    let r = get(&h, KEY_A, "img/a.png").await;
    assert_eq!(header(&r, "content-type"), Some("image/png"));
    assert_eq!(header(&r, "etag"), v1["etag"].as_str());
    let v2 = put(&h, KEY_A, "img/a.png", b"\x89PNG two!", "image/png")
        .await
        .assert_ok();
    assert_ne!(v1["etag"], v2["etag"]);
    assert_eq!(
        get(&h, KEY_A, "img/a.png").await.body.as_ref(),
        b"\x89PNG two!"
    );
    // Without a Content-Type the object is application/octet-stream.
    h.call(Method::PUT, &uri("default", "plain"), Some(KEY_A))
        .body(b"x".to_vec())
        .send()
        .await
        .assert_ok();
    let r = get(&h, KEY_A, "plain").await;
    assert_eq!(header(&r, "content-type"), Some("application/octet-stream"));
    put(&h, KEY_A, "bad-ct", b"x", "no slash")
        .await
        .assert_error(400, "validation_error");
    // Delete is 204, and again 204; the object is gone.
    let d = h
        .call(Method::DELETE, &uri("default", "img/a.png"), Some(KEY_A))
        .send()
        .await;
    assert_eq!(d.status.as_u16(), 204);
    get(&h, KEY_A, "img/a.png")
        .await
        .assert_error(404, "blob_object_not_found");
    let d = h
        .call(Method::DELETE, &uri("default", "img/a.png"), Some(KEY_A))
        .send()
        .await;
    assert_eq!(d.status.as_u16(), 204);
    // Read-only credentials read but never write.
    get(&h, KEY_READ_ONLY, "plain").await;
    put(&h, KEY_READ_ONLY, "plain", b"y", "text/plain")
        .await
        .assert_error(403, "forbidden");
    h.call(
        Method::DELETE,
        &uri("default", "plain"),
        Some(KEY_READ_ONLY),
    )
    .send()
    .await
    .assert_error(403, "forbidden");
    assert_eq!(get(&h, KEY_A, "plain").await.body.as_ref(), b"x");
}

pub async fn list_pages_with_prefix_and_cursor(h: Harness) {
    for key in ["a/5", "a/1", "a/3", "a/2", "a/4", "b/1", "ab"] {
        put(&h, KEY_A, key, key.as_bytes(), "text/plain")
            .await
            .assert_ok();
    }
    let all = list(&h, KEY_A, "default", "").await.assert_ok();
    assert_eq!(
        keys_of(&all),
        ["a/1", "a/2", "a/3", "a/4", "a/5", "ab", "b/1"]
    );
    assert!(all.get("nextCursor").is_none(), "{all}");
    let first = &all["entries"][0];
    assert_eq!(first["sizeBytes"], 3);
    assert!(
        first["updatedAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{first}"
    );
    let mut seen = Vec::new();
    let mut query = "?prefix=a/&limit=2".to_owned();
    let mut pages = 0;
    let mut cursors = Vec::new();
    loop {
        let page = list(&h, KEY_A, "default", &query).await.assert_ok();
        pages += 1;
        assert!(keys_of(&page).len() <= 2);
        seen.extend(keys_of(&page));
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => {
                cursors.push(c.to_owned());
                query = format!("?prefix=a/&limit=2&cursor={c}");
            }
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(seen, ["a/1", "a/2", "a/3", "a/4", "a/5"]);
    assert_eq!(pages, 3);
    // A cursor is opaque (the key a page ended at does not show) and holds only for the
    // listing it came from: another prefix or bucket refuses it, as an altered one.
    let c = &cursors[0];
    assert!(!c.contains("a/2") && !c.contains("612f32"), "{c}"); // plain or hex
    let mut altered = c.clone().into_bytes();
    altered[20] = if altered[20] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for (bucket, q) in [
        ("default", format!("?prefix=b/&cursor={c}")),
        ("default", format!("?cursor={c}")),
        ("media", format!("?prefix=a/&cursor={c}")),
        ("default", format!("?prefix=a/&cursor={altered}")),
    ] {
        list(&h, KEY_A, bucket, &q)
            .await
            .assert_error(400, "validation_error");
    }
    assert_eq!(
        keys_of(&list(&h, KEY_A, "media", "").await.assert_ok()),
        Vec::<String>::new()
    );
    for q in [
        "?cursor=zz",
        "?prefix=../",
        "?limit=0",
        "?limit=1001",
        "?prefix=a/../",
    ] {
        list(&h, KEY_A, "default", q)
            .await
            .assert_error(400, "validation_error");
    }
}

pub async fn unknown_buckets_missing_objects_and_oversize_objects(h: Harness) {
    for bucket in ["nope", "Default", "a%2Fb"] {
        h.call(Method::PUT, &uri(bucket, "k"), Some(KEY_A))
            .body(b"x".to_vec())
            .send()
            .await
            .assert_error(404, "blob_bucket_not_found");
        h.call(Method::GET, &uri(bucket, "k"), Some(KEY_A))
            .send()
            .await
            .assert_error(404, "blob_bucket_not_found");
        list(&h, KEY_A, bucket, "")
            .await
            .assert_error(404, "blob_bucket_not_found");
    }
    h.call(Method::POST, "/v1/host/blob/nope/presign", Some(KEY_A))
        .json(&json!({"key": "k", "method": "PUT", "expiresInSeconds": 60}))
        .send()
        .await
        .assert_error(404, "blob_bucket_not_found");
    get(&h, KEY_A, "missing")
        .await
        .assert_error(404, "blob_object_not_found");
    let max = usize::try_from(MAX_OBJECT_BYTES).unwrap();
    put(
        &h,
        KEY_A,
        "max.bin",
        &vec![7u8; max],
        "application/octet-stream",
    )
    .await
    .assert_ok();
    let v = put(
        &h,
        KEY_A,
        "max.bin",
        &vec![8u8; max + 1],
        "application/octet-stream",
    )
    .await
    .assert_error(413, "blob_object_too_large");
    assert_eq!(v["details"]["limit"], MAX_OBJECT_BYTES);
    assert_eq!(
        get(&h, KEY_A, "max.bin").await.body.as_ref(),
        vec![7u8; max].as_slice()
    );
}

/// A key as a URL path carries it: every byte but the unreserved ones and `/` encoded.
fn encoded(key: &str) -> String {
    const IN_PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    percent_encoding::utf8_percent_encode(key, IN_PATH).to_string()
}

/// Keys S3 accepts are blob keys (issue 42): only what cannot be stored and addressed
/// safely is refused (empty, over 512 bytes, a control character, a `.` or `..` segment),
/// and nothing is normalised: each key below is stored, read, listed, presigned and
/// deleted as exactly itself.
pub async fn blob_keys_s3_accepts_are_accepted_and_unsafe_ones_refused(h: Harness) {
    let max = "k".repeat(512);
    let accepted: Vec<&str> = vec![
        "__probe__",
        ".hidden",
        "-x",
        "_x",
        "a b",
        "a//b",
        "a/",
        "a\\b",
        "a?b#c",
        "%",
        "%2e%2e",
        "\u{ff0e}",
        "caf\u{e9}",
        "cafe\u{301}",
        "...",
        "a/..b/.c",
        "q=r&s;t:u@v,w$x!y*z(')",
        max.as_str(),
    ];
    for key in &accepted {
        let v = put(&h, KEY_A, &encoded(key), key.as_bytes(), "text/plain")
            .await
            .assert_ok();
        assert_eq!(v["key"], *key, "{v}");
    }
    for key in &accepted {
        let r = get(&h, KEY_A, &encoded(key)).await;
        assert_eq!(r.status.as_u16(), 200, "{key:?}");
        assert_eq!(r.body.as_ref(), key.as_bytes(), "{key:?}");
    }
    // Listed as themselves, in byte order (NFC and NFD are two keys).
    let mut want: Vec<String> = accepted.iter().map(|k| (*k).to_owned()).collect();
    want.sort();
    assert_eq!(
        keys_of(&list(&h, KEY_A, "default", "").await.assert_ok()),
        want
    );
    assert_eq!(
        keys_of(
            &list(&h, KEY_A, "default", "?prefix=a%2F%2F")
                .await
                .assert_ok()
        ),
        vec!["a//b".to_owned()]
    );
    // Presigned URLs address them exactly too.
    for key in ["a b", "a?b#c", "a//b", "cafe\u{301}", ".hidden"] {
        let g = presign(
            &h,
            KEY_A,
            &json!({"key": key, "method": "GET", "expiresInSeconds": 60}),
        )
        .await
        .assert_ok();
        let r = h
            .fetch(
                Method::GET,
                g["url"].as_str().unwrap(),
                &g["headers"],
                Vec::new(),
            )
            .await;
        assert_eq!(r.status.as_u16(), 200, "{key:?}: {g}");
        assert_eq!(r.body.as_ref(), key.as_bytes(), "{key:?}");
    }
    for key in &accepted {
        assert_eq!(
            delete(&h, KEY_A, &encoded(key)).await.status.as_u16(),
            204,
            "{key:?}"
        );
        get(&h, KEY_A, &encoded(key))
            .await
            .assert_error(404, "blob_object_not_found");
    }

    // Refused, in the URL (decoded once) and in a presign body, changing nothing.
    let long = "k".repeat(513);
    for key in [
        "../x",
        "a/../b",
        "a/./b",
        "a/..",
        "..",
        "a%00b",
        "a%0Ab",
        "a%7Fb",
        "a%C2%85b",
        "%2e%2e/x",
        "a%2F..%2Fb",
        long.as_str(),
    ] {
        put(&h, KEY_A, key, b"x", "text/plain")
            .await
            .assert_error(400, "validation_error");
    }
    for key in ["../x", "a\u{0}b", "a\nb", "", long.as_str()] {
        presign(
            &h,
            KEY_A,
            &json!({"key": key, "method": "PUT", "expiresInSeconds": 60}),
        )
        .await
        .assert_error(400, "validation_error");
    }
    for q in ["?prefix=../", "?prefix=a/./", "?prefix=a%00"] {
        list(&h, KEY_A, "default", q)
            .await
            .assert_error(400, "validation_error");
    }
    // An empty key matches no route (a greedy parameter needs a character, as in API
    // Gateway): 404.
    h.call(Method::PUT, "/v1/host/blob/default/", Some(KEY_A))
        .body(b"x".to_vec())
        .send()
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        keys_of(&list(&h, KEY_A, "default", "").await.assert_ok()),
        Vec::<String>::new()
    );
}

pub async fn blobs_are_invisible_to_other_tenants_and_workspaces(h: Harness) {
    put(
        &h,
        KEY_A,
        "secret.bin",
        b"ACME-SECRET",
        "application/octet-stream",
    )
    .await
    .assert_ok();
    for outsider in [KEY_EVIL, KEY_OTHER] {
        let r = get(&h, outsider, "secret.bin").await;
        r.assert_error(404, "blob_object_not_found");
        assert!(!String::from_utf8_lossy(&r.body).contains("ACME-SECRET"));
        assert_eq!(
            keys_of(&list(&h, outsider, "default", "").await.assert_ok()),
            Vec::<String>::new()
        );
        assert_eq!(
            keys_of(
                &list(&h, outsider, "default", "?prefix=secret")
                    .await
                    .assert_ok()
            ),
            Vec::<String>::new()
        );
        presign(
            &h,
            outsider,
            &json!({"key": "secret.bin", "method": "GET", "expiresInSeconds": 60}),
        )
        .await
        .assert_error(404, "blob_object_not_found");
        // Deleting and writing the same name touch only their own scope.
        let d = h
            .call(
                Method::DELETE,
                &uri("default", "secret.bin"),
                Some(outsider),
            )
            .send()
            .await;
        assert_eq!(d.status.as_u16(), 204);
        put(&h, outsider, "secret.bin", b"theirs", "text/plain")
            .await
            .assert_ok();
        assert_eq!(
            get(&h, outsider, "secret.bin").await.body.as_ref(),
            b"theirs"
        );
        h.call(
            Method::DELETE,
            &uri("default", "secret.bin"),
            Some(outsider),
        )
        .send()
        .await;
    }
    assert_eq!(
        get(&h, KEY_A, "secret.bin").await.body.as_ref(),
        b"ACME-SECRET"
    );
}

/// The query parameter `name` of a URL, if present.
fn param(url: &str, name: &str) -> Option<String> {
    let q = url.split_once('?')?.1;
    q.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| v.to_owned())
    })
}

/// Where a SigV4 presigned URL stops working: `X-Amz-Date` plus `X-Amz-Expires` (ms).
fn sigv4_end(url: &str) -> Option<i64> {
    let query = url.split_once('?')?.1;
    let param = |name: &str| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let date = param("X-Amz-Date")?;
    let expires: i64 = param("X-Amz-Expires")?.parse().ok()?;
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let start = time::PrimitiveDateTime::parse(&date, format)
        .ok()?
        .assume_utc()
        .unix_timestamp();
    Some((start + expires) * 1000)
}

pub async fn presigned_get_and_put_work_before_expiry(h: Harness) {
    put(&h, KEY_A, "doc.bin", b"version one", "application/pdf")
        .await
        .assert_ok();
    let now = h.clock.now_ms();
    let g = presign(
        &h,
        KEY_A,
        &json!({"key": "doc.bin", "method": "GET", "expiresInSeconds": 60}),
    )
    .await
    .assert_ok();
    assert_eq!(g["method"], "GET");
    assert!(g["headers"].is_object(), "{g}");
    let url = g["url"].as_str().expect("url").to_owned();
    // expiresAt is the URL's real end: the asked lifetime from now, rounded down to the
    // second (SigV4 signs its start to the second; a local URL carries whole seconds).
    let at = g["expiresAt"].as_str().expect("expiresAt");
    assert_eq!(at, format_time((now + 60_000) / 1000 * 1000), "{g}");
    if let Some(end) = sigv4_end(&url) {
        assert_eq!(at, format_time(end), "the S3 URL's own expiry: {url}");
    }
    let r = h.fetch(Method::GET, &url, &g["headers"], Vec::new()).await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.body.as_ref(), b"version one");

    // Pinned: after overwrites the URL keeps reading the version it was signed for, on
    // every store (S3 keeps versions; the local stores keep a replaced one until no URL
    // can name it); a URL signed after the overwrite reads the new bytes.
    put(&h, KEY_A, "doc.bin", b"version two", "application/pdf")
        .await
        .assert_ok();
    let g_two = presign(
        &h,
        KEY_A,
        &json!({"key": "doc.bin", "method": "GET", "expiresInSeconds": 60}),
    )
    .await
    .assert_ok();
    put(&h, KEY_A, "doc.bin", b"version three", "application/pdf")
        .await
        .assert_ok();
    for (signed, bytes) in [(&g, &b"version one"[..]), (&g_two, b"version two")] {
        let u = signed["url"].as_str().expect("url");
        let r = h
            .fetch(Method::GET, u, &signed["headers"], Vec::new())
            .await;
        assert_eq!(
            r.status.as_u16(),
            200,
            "{}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.body.as_ref(), bytes);
    }
    assert_eq!(
        get(&h, KEY_A, "doc.bin").await.body.as_ref(),
        b"version three"
    );
    // A DELETE removes every version: no URL reads one any more.
    let r = delete(&h, KEY_A, "doc.bin").await;
    assert!(r.status.is_success(), "{}", r.status);
    let r = h.fetch(Method::GET, &url, &g["headers"], Vec::new()).await;
    assert_eq!(
        r.status.as_u16(),
        404,
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    let body = b"\x00uploaded\xff".to_vec();
    let p = presign(
        &h,
        KEY_A,
        &json!({"key": "up/new.bin", "method": "PUT", "expiresInSeconds": 120,
                "contentLength": body.len(), "contentType": "application/x-test"}),
    )
    .await
    .assert_ok();
    assert_eq!(p["method"], "PUT");
    assert_eq!(p["headers"]["content-type"], "application/x-test");
    let url = p["url"].as_str().expect("url").to_owned();
    let r = h
        .fetch(Method::PUT, &url, &p["headers"], body.clone())
        .await;
    assert!(
        r.status.is_success(),
        "{} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    let got = get(&h, KEY_A, "up/new.bin").await;
    assert_eq!(got.body.as_ref(), body.as_slice());
    assert_eq!(header(&got, "content-type"), Some("application/x-test"));

    // After expiresAt: the local server refuses (403 blob_presign_expired, to the second);
    // S3 on the emulator does not enforce expiry, so there the signed lifetime is checked.
    if url.starts_with(SIGNED_BASE) {
        h.clock.advance(120_000);
        let r = h
            .fetch(Method::PUT, &url, &p["headers"], body.clone())
            .await;
        r.assert_error(403, "blob_presign_expired");
        let g2 = presign(
            &h,
            KEY_A,
            &json!({"key": "up/new.bin", "method": "GET", "expiresInSeconds": 1}),
        )
        .await
        .assert_ok();
        let u = g2["url"].as_str().unwrap().to_owned();
        h.clock.advance(1_000);
        h.fetch(Method::GET, &u, &g2["headers"], Vec::new())
            .await
            .assert_error(403, "blob_presign_expired");
    } else {
        assert_eq!(param(&url, "X-Amz-Expires").as_deref(), Some("120"));
        let g_url = g["url"].as_str().unwrap();
        assert_eq!(param(g_url, "X-Amz-Expires").as_deref(), Some("60"));
        assert!(
            param(g_url, "versionId").is_some(),
            "GET is pinned: {g_url}"
        );
        let signed = param(&url, "X-Amz-SignedHeaders").unwrap_or_default();
        assert!(
            signed.contains("content-length"),
            "PUT size is signed: {signed}"
        );
    }
}

pub async fn presigned_urls_are_bounded(h: Harness) {
    put(&h, KEY_A, "k", b"x", "text/plain").await.assert_ok();
    for (secs, code, status) in [
        (json!(MAX_PRESIGN_SECONDS + 1), "validation_error", 400),
        (json!(0), "validation_error", 400),
        (json!(-5), "validation_error", 400),
        (json!("60"), "validation_error", 400),
    ] {
        presign(
            &h,
            KEY_A,
            &json!({"key": "k", "method": "GET", "expiresInSeconds": secs}),
        )
        .await
        .assert_error(status, code);
    }
    presign(
        &h,
        KEY_A,
        &json!({"key": "k", "method": "GET", "expiresInSeconds": MAX_PRESIGN_SECONDS}),
    )
    .await
    .assert_ok();
    for body in [
        json!({"key": "k", "method": "DELETE", "expiresInSeconds": 60}),
        json!({"key": "../k", "method": "GET", "expiresInSeconds": 60}),
        json!({"method": "GET", "expiresInSeconds": 60}),
        json!({"key": "k", "method": "GET", "expiresInSeconds": 60, "contentLength": 1}),
    ] {
        presign(&h, KEY_A, &body)
            .await
            .assert_error(400, "validation_error");
    }
    presign(
        &h,
        KEY_A,
        &json!({"key": "nothing", "method": "GET", "expiresInSeconds": 60}),
    )
    .await
    .assert_error(404, "blob_object_not_found");
    presign(
        &h,
        KEY_A,
        &json!({"key": "big", "method": "PUT", "expiresInSeconds": 60, "contentLength": MAX_OBJECT_BYTES + 1}),
    )
    .await
    .assert_error(413, "blob_object_too_large");

    let p = presign(
        &h,
        KEY_A,
        &json!({"key": "sized", "method": "PUT", "expiresInSeconds": 60, "contentLength": 4}),
    )
    .await
    .assert_ok();
    let url = p["url"].as_str().unwrap().to_owned();
    if url.starts_with(SIGNED_BASE) {
        // The local server enforces the signed size, the limit, and the signature itself.
        h.fetch(Method::PUT, &url, &p["headers"], b"12345".to_vec())
            .await
            .assert_error(403, "forbidden");
        let open = presign(
            &h,
            KEY_A,
            &json!({"key": "open", "method": "PUT", "expiresInSeconds": 60}),
        )
        .await
        .assert_ok();
        let u = open["url"].as_str().unwrap().to_owned();
        let max = usize::try_from(MAX_OBJECT_BYTES).unwrap();
        h.fetch(Method::PUT, &u, &open["headers"], vec![1u8; max + 1])
            .await
            .assert_error(413, "blob_object_too_large");
        let forged = u.replace("/open?", "/k?");
        h.fetch(Method::PUT, &forged, &open["headers"], b"evil".to_vec())
            .await
            .assert_error(403, "forbidden");
        let other_tenant = u.replace("/acme/main/", "/acme-evil/main/");
        h.fetch(
            Method::PUT,
            &other_tenant,
            &open["headers"],
            b"evil".to_vec(),
        )
        .await
        .assert_error(403, "forbidden");
        let as_get = h.fetch(Method::GET, &u, &open["headers"], Vec::new()).await;
        as_get.assert_error(403, "forbidden");
        assert_eq!(get(&h, KEY_A, "k").await.body.as_ref(), b"x");
        get(&h, KEY_A, "open")
            .await
            .assert_error(404, "blob_object_not_found");
    }
}

pub async fn presign_is_scoped_and_checked(h: Harness) {
    put(&h, KEY_A, "k", b"x", "text/plain").await.assert_ok();
    presign(
        &h,
        KEY_READ_ONLY,
        &json!({"key": "k", "method": "GET", "expiresInSeconds": 60}),
    )
    .await
    .assert_ok();
    presign(
        &h,
        KEY_READ_ONLY,
        &json!({"key": "k", "method": "PUT", "expiresInSeconds": 60}),
    )
    .await
    .assert_error(403, "forbidden");
    presign(
        &h,
        KEY_EVIL,
        &json!({"key": "k", "method": "GET", "expiresInSeconds": 60}),
    )
    .await
    .assert_error(404, "blob_object_not_found");
    // A PUT URL minted by another tenant writes into that tenant's scope only.
    let p = presign(
        &h,
        KEY_EVIL,
        &json!({"key": "k", "method": "PUT", "expiresInSeconds": 60}),
    )
    .await
    .assert_ok();
    let url = p["url"].as_str().unwrap().to_owned();
    let r = h
        .fetch(Method::PUT, &url, &p["headers"], b"evil".to_vec())
        .await;
    assert!(r.status.is_success(), "{}", r.status);
    assert_eq!(get(&h, KEY_A, "k").await.body.as_ref(), b"x");
    assert_eq!(get(&h, KEY_EVIL, "k").await.body.as_ref(), b"evil");
    h.call(Method::POST, "/v1/host/blob/default/presign", None)
        .json(&json!({"key": "k", "method": "GET", "expiresInSeconds": 60}))
        .send()
        .await
        .assert_error(401, "unauthenticated");
}

pub async fn discovery_advertises_the_real_limits(h: Harness) {
    let doc = h
        .call(Method::GET, "/.well-known/openwop", None)
        .send()
        .await
        .assert_ok();
    let blob = json!({
        "supported": true,
        "buckets": ["default", "media"],
        "presignSupported": true,
        "maxObjectBytes": MAX_OBJECT_BYTES,
        "maxPresignSeconds": MAX_PRESIGN_SECONDS,
    });
    let cache = json!({
        "supported": true,
        "maxValueBytes": crate::harness::CACHE_LIMITS.max_value_bytes,
        "maxTtlSeconds": crate::harness::CACHE_LIMITS.max_ttl_seconds,
    });
    for root in [&doc, &doc["capabilities"]] {
        assert_eq!(root["blobStorage"], blob, "{doc}");
        assert_eq!(root["cache"], cache, "{doc}");
    }
}
