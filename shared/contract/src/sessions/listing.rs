//! The session list: most recent first, limits, paging with tamper-evident tokens, the
//! history view and session delete.

use super::{history, SessionHarness};
use crate::harness::{KEY_A, KEY_TENANT};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::StatusCode;
use serde_json::json;
use std::collections::BTreeSet;

async fn touch(h: &SessionHarness, ws: &str, session: &str, task: &str) {
    h.upload(
        KEY_TENANT,
        ws,
        json!({ "sessionId": session, "taskId": task, "artifactType": "tool_output",
                "contentBase64": STANDARD.encode("ok") }),
    )
    .await
    .assert_ok();
}

pub async fn sessions_are_most_recent_first_with_checked_limits(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    for (s, t) in [
        ("a", "t1"),
        ("b", "t1"),
        ("c", "t1"),
        ("a", "t2"),
        ("a", "t2"),
    ] {
        h.clock.advance(1_000);
        touch(&h, &ws, s, t).await;
    }
    let list = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions"))
        .await
        .assert_ok();
    let ids: Vec<_> = list["sessions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(ids, ["a", "c", "b"]);
    assert_eq!(list["sessions"][0]["taskCount"], 2, "distinct task ids");
    assert!(list["sessions"][0]["createdAt"].as_str() < list["sessions"][0]["lastTaskAt"].as_str());
    assert!(list.get("nextToken").is_none(), "one page: no token");
    let one = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions?limit=1"))
        .await
        .assert_ok();
    assert_eq!(one["sessions"].as_array().map(Vec::len), Some(1));
    assert!(one["nextToken"].is_string());
    for bad in ["0", "101", "-1", "abc", "1.5", ""] {
        h.get_uri(
            KEY_TENANT,
            &format!("/workspaces/{ws}/sessions?limit={bad}"),
        )
        .await
        .assert_error(400, "validation_error");
    }
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions?limit=100"))
        .await
        .assert_ok();
    // Default page is 20.
    for i in 0..22 {
        touch(&h, &ws, &format!("d{i:02}"), "t").await;
    }
    let page = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions"))
        .await
        .assert_ok();
    assert_eq!(page["sessions"].as_array().map(Vec::len), Some(20));
    assert!(page["nextToken"].is_string());
}

pub async fn paging_250_sessions_by_100_is_three_pages_without_gaps(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    for i in 0..250 {
        // Some share a timestamp, so ties are ordered by id and still page exactly.
        if i % 3 == 0 {
            h.clock.advance(1);
        }
        touch(&h, &ws, &format!("s{i:03}"), "t").await;
    }
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut uri = format!("/workspaces/{ws}/sessions?limit=100");
    let mut last_at = None::<String>;
    loop {
        let page = h.get_uri(KEY_TENANT, &uri).await.assert_ok();
        pages += 1;
        for s in page["sessions"].as_array().cloned().unwrap_or_default() {
            let at = s["lastTaskAt"].as_str().unwrap_or("").to_owned();
            if let Some(prev) = &last_at {
                assert!(at <= *prev, "most recent first across pages");
            }
            last_at = Some(at);
            seen.push(s["sessionId"].as_str().unwrap_or("").to_owned());
        }
        match page["nextToken"].as_str() {
            Some(t) => uri = format!("/workspaces/{ws}/sessions?limit=100&nextToken={t}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 250, "no duplicates, no gaps");
    let unique: BTreeSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), 250);
}

pub async fn forged_and_foreign_tokens_are_refused(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    let other = h.general(KEY_TENANT).await;
    for i in 0..3 {
        h.clock.advance(1);
        touch(&h, &ws, &format!("s{i}"), "t").await;
        touch(&h, &other, &format!("s{i}"), "t").await;
    }
    let page = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions?limit=1"))
        .await
        .assert_ok();
    let token = page["nextToken"].as_str().unwrap_or("").to_owned();
    // Valid where it was issued.
    h.get_uri(
        KEY_TENANT,
        &format!("/workspaces/{ws}/sessions?limit=1&nextToken={token}"),
    )
    .await
    .assert_ok();
    // Another workspace of the same user: refused.
    h.get_uri(
        KEY_TENANT,
        &format!("/workspaces/{other}/sessions?nextToken={token}"),
    )
    .await
    .assert_error(400, "validation_error");
    // An altered token (one bit of its ciphertext flipped), a made-up one, or junk: refused.
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut raw = b64.decode(&token).expect("a token is base64url");
    let last = raw.len() - 1;
    raw[last] ^= 1;
    for forged in [
        b64.encode(&raw),
        b64.encode("0:s2"),
        "AAAA.BBBB".to_owned(),
        "x".to_owned(),
        format!("{token}x"),
    ] {
        h.get_uri(
            KEY_TENANT,
            &format!("/workspaces/{ws}/sessions?nextToken={forged}"),
        )
        .await
        .assert_error(400, "validation_error");
    }
    // Another user's token for their own workspace does not open this one either.
    let theirs = h.general(KEY_A).await;
    for i in 0..2 {
        h.upload(KEY_A, &theirs, json!({ "sessionId": format!("x{i}"), "artifactType": "tool_output", "contentBase64": "aGk=" }))
            .await
            .assert_ok();
    }
    let their_page = h
        .get_uri(KEY_A, &format!("/workspaces/{theirs}/sessions?limit=1"))
        .await
        .assert_ok();
    let their_token = their_page["nextToken"].as_str().unwrap_or("").to_owned();
    h.get_uri(
        KEY_TENANT,
        &format!("/workspaces/{ws}/sessions?nextToken={their_token}"),
    )
    .await
    .assert_error(400, "validation_error");
}

pub async fn history_and_session_delete(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await
        .assert_error(404, "not_found");
    touch(&h, &ws, "s1", "t1").await;
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await
        .assert_error(404, "not_found");
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "session_history",
        "messages": history(&[("user", "q"), ("assistant", "a")]) }),
    )
    .await
    .assert_ok();
    touch(&h, &ws, "s2", "t1").await;
    let hist = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await
        .assert_ok();
    assert_eq!(hist["sessionId"], "s1");
    assert_eq!(hist["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(hist["messages"][0]["role"], "user");

    let del = h
        .delete_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1"))
        .await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    h.delete_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1"))
        .await
        .assert_error(404, "not_found");
    h.get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await
        .assert_error(404, "not_found");
    let list = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions"))
        .await
        .assert_ok();
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1));
    assert_eq!(list["sessions"][0]["sessionId"], "s2");
    let arts = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/artifacts"))
        .await
        .assert_ok();
    assert_eq!(
        arts["artifacts"].as_array().map(Vec::len),
        Some(1),
        "s1's artifacts went with it"
    );
    assert_eq!(h.remains(&ws).await.1, 1, "and their bodies");
}
