//! Artifacts: upload, get and list for all three types, one history per session, the size
//! cap, WSR-1 redaction, and the lastActiveAt bump.

use super::{history, SessionHarness, MAX_ARTIFACT_BYTES};
use crate::harness::KEY_TENANT;
use crate::protocol::{SECRET_AWS_KEY_ID, SECRET_GITHUB};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::StatusCode;
use serde_json::json;
use std::sync::Arc;

pub async fn artifacts_of_all_three_types_upload_get_and_list(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    let out = h
        .upload(
            KEY_TENANT,
            &ws,
            json!({
                "sessionId": "s1", "taskId": "t1", "stepId": "st1",
                "artifactType": "tool_output", "artifactName": "pytest.log",
                "contentType": "text/x-log", "contentBase64": STANDARD.encode("12 passed\n"),
                "metadata": { "exitCode": 0, "tool": "pytest" },
            }),
        )
        .await;
    assert_eq!(out.status, StatusCode::CREATED);
    let out = out.json();
    let out_id = out["artifactId"].as_str().unwrap_or("").to_owned();
    assert_eq!(
        out["artifactUri"],
        format!("/workspaces/{ws}/artifacts/{out_id}")
    );
    let diff = h
        .upload(
            KEY_TENANT,
            &ws,
            json!({
                "sessionId": "s1", "taskId": "t2", "artifactType": "file_diff",
                "contentType": "text/x-diff", "contentBase64": STANDARD.encode("--- a\n+++ b\n"),
            }),
        )
        .await
        .assert_ok();
    let hist = h
        .upload(
            KEY_TENANT,
            &ws,
            json!({ "sessionId": "s2", "artifactType": "session_history",
                    "messages": history(&[("user", "hi"), ("assistant", "hello")]) }),
        )
        .await
        .assert_ok();

    // Files come back as raw bytes with their content type; history as JSON.
    let raw = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/artifacts/{out_id}"))
        .await;
    assert_eq!(raw.status, StatusCode::OK);
    assert_eq!(&raw.body[..], b"12 passed\n");
    assert_eq!(
        raw.headers.get("content-type").map(|v| v.as_bytes()),
        Some(&b"text/x-log"[..])
    );
    let d = h
        .get_uri(KEY_TENANT, diff["artifactUri"].as_str().unwrap_or(""))
        .await;
    assert_eq!(&d.body[..], b"--- a\n+++ b\n");
    let hj = h
        .get_uri(KEY_TENANT, hist["artifactUri"].as_str().unwrap_or(""))
        .await
        .assert_ok();
    assert_eq!(hj["artifactType"], "session_history");
    assert_eq!(hj["messages"][1]["content"], "hello");
    assert_eq!(hj["messages"][1]["messageId"], "m1");

    let all = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/artifacts"))
        .await
        .assert_ok();
    assert_eq!(all["artifacts"].as_array().map(Vec::len), Some(3));
    let rows = all["artifacts"].as_array().cloned().unwrap_or_default();
    let out_row = rows
        .iter()
        .find(|r| r["artifactId"] == out_id.as_str())
        .expect("listed");
    assert_eq!(out_row["metadata"]["tool"], "pytest");
    assert_eq!(out_row["artifactName"], "pytest.log");
    assert_eq!(out_row["stepId"], "st1");
    assert!(rows
        .iter()
        .all(|r| r.get("content").is_none() && r.get("messages").is_none()));
    let s1 = h
        .get_uri(
            KEY_TENANT,
            &format!("/workspaces/{ws}/artifacts?sessionId=s1"),
        )
        .await
        .assert_ok();
    assert_eq!(s1["artifacts"].as_array().map(Vec::len), Some(2));
    let diffs = h
        .get_uri(
            KEY_TENANT,
            &format!("/workspaces/{ws}/artifacts?sessionId=s1&artifactType=file_diff"),
        )
        .await
        .assert_ok();
    assert_eq!(diffs["artifacts"].as_array().map(Vec::len), Some(1));
    assert_eq!(diffs["artifacts"][0]["taskId"], "t2");
    h.get_uri(
        KEY_TENANT,
        &format!("/workspaces/{ws}/artifacts?artifactType=image"),
    )
    .await
    .assert_error(400, "validation_error");
    h.get_uri(
        KEY_TENANT,
        &format!("/workspaces/{ws}/artifacts/art-missing"),
    )
    .await
    .assert_error(404, "not_found");
}

pub async fn bad_uploads_are_refused_and_store_nothing(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    let too_big = STANDARD.encode(vec![b'x'; MAX_ARTIFACT_BYTES as usize + 1]);
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": too_big }),
    )
    .await
    .assert_error(413, "workspace_too_large");
    let long = "m".repeat(MAX_ARTIFACT_BYTES as usize);
    h.upload(KEY_TENANT, &ws, json!({ "sessionId": "s1", "artifactType": "session_history", "messages": history(&[("user", &long)]) }))
        .await
        .assert_error(413, "workspace_too_large");
    for bad in [
        json!({ "artifactType": "tool_output", "contentBase64": "aGk=" }),
        json!({ "sessionId": "s1", "artifactType": "image", "contentBase64": "aGk=" }),
        json!({ "sessionId": "../s1", "artifactType": "tool_output", "contentBase64": "aGk=" }),
        json!({ "sessionId": "s1", "taskId": "a/b", "artifactType": "tool_output", "contentBase64": "aGk=" }),
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": "not base64!" }),
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": STANDARD.encode([0xff, 0xfe]) }),
        json!({ "sessionId": "s1", "artifactType": "tool_output" }),
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": "aGk=", "metadata": [1] }),
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": "aGk=", "contentType": "nonsense" }),
        json!({ "sessionId": "s1", "artifactType": "session_history" }),
        json!({ "sessionId": "s1", "artifactType": "session_history", "messages": [{ "role": "user" }] }),
        json!({ "sessionId": "s1", "artifactType": "session_history", "messages": history(&[("user", "x")]), "contentBase64": "aGk=" }),
    ] {
        h.upload(KEY_TENANT, &ws, bad)
            .await
            .assert_error(400, "validation_error");
    }
    let all = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/artifacts"))
        .await
        .assert_ok();
    assert_eq!(all["artifacts"], json!([]));
    let sessions = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions"))
        .await
        .assert_ok();
    assert_eq!(sessions["sessions"], json!([]));
    assert_eq!(
        h.remains(&ws).await,
        (0, 0),
        "nothing reached the raw stores"
    );
    // At the cap exactly is fine.
    let at_cap = STANDARD.encode(vec![b'x'; MAX_ARTIFACT_BYTES as usize]);
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": at_cap }),
    )
    .await
    .assert_ok();
}

pub async fn session_history_keeps_exactly_one_per_session(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    for round in 0..3 {
        let text = format!("round {round}");
        h.upload(KEY_TENANT, &ws, json!({ "sessionId": "s1", "artifactType": "session_history", "messages": history(&[("user", &text)]) }))
            .await
            .assert_ok();
    }
    // Concurrent replacements: still one.
    let h = Arc::new(h);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (h, ws) = (h.clone(), ws.clone());
        tasks.push(tokio::spawn(async move {
            let text = format!("concurrent {i}");
            h.upload(KEY_TENANT, &ws, json!({ "sessionId": "s1", "artifactType": "session_history", "messages": history(&[("user", &text)]) }))
                .await
                .assert_ok();
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    h.upload(KEY_TENANT, &ws, json!({ "sessionId": "s2", "artifactType": "session_history", "messages": history(&[("user", "other")]) }))
        .await
        .assert_ok();
    let hs = h
        .get_uri(
            KEY_TENANT,
            &format!("/workspaces/{ws}/artifacts?artifactType=session_history&sessionId=s1"),
        )
        .await
        .assert_ok();
    let rows = hs["artifacts"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{hs}");
    let latest = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await
        .assert_ok();
    assert_eq!(latest["artifactId"], rows[0]["artifactId"]);
    assert!(latest["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .starts_with("concurrent"));
    // The replaced snapshots' bodies are gone too: one body per remaining artifact.
    let scope = h.scope_of(&ws);
    let (_, bodies) = h.svc.remains(&scope).await.expect("remains");
    assert_eq!(bodies, 2, "one history body per session");
}

pub async fn artifact_text_is_redacted_and_uploads_bump_last_active(h: SessionHarness) {
    let ws = h.general(KEY_TENANT).await;
    let before = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_ok();
    h.clock.advance(5_000);
    let text = format!("export AWS_ACCESS_KEY_ID={SECRET_AWS_KEY_ID}\n");
    let out = h
        .upload(
            KEY_TENANT,
            &ws,
            json!({ "sessionId": "s1", "artifactType": "tool_output", "contentBase64": STANDARD.encode(&text),
                    "metadata": { "token": SECRET_GITHUB } }),
        )
        .await
        .assert_ok();
    h.upload(
        KEY_TENANT,
        &ws,
        json!({ "sessionId": "s1", "artifactType": "session_history",
                "messages": history(&[("user", &format!("my token is {SECRET_GITHUB}"))]) }),
    )
    .await
    .assert_ok();
    let after = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}"))
        .await
        .assert_ok();
    assert!(
        after["lastActiveAt"].as_str() > before["lastActiveAt"].as_str(),
        "{before} {after}"
    );
    // Reads, listings and the raw stored bodies never hold the plaintext.
    let raw = h
        .get_uri(KEY_TENANT, out["artifactUri"].as_str().unwrap_or(""))
        .await;
    let listed = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/artifacts"))
        .await;
    let hist = h
        .get_uri(KEY_TENANT, &format!("/workspaces/{ws}/sessions/s1/history"))
        .await;
    let scope = h.scope_of(&ws);
    let mut stored = Vec::new();
    for a in h.store.artifacts(&scope).await.expect("artifacts") {
        stored.extend(
            h.bodies
                .get(&a.body)
                .await
                .expect("body")
                .unwrap_or_default(),
        );
        stored.extend(a.metadata.unwrap_or_default().into_bytes());
    }
    for bytes in [&raw.body[..], &listed.body[..], &hist.body[..], &stored[..]] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(SECRET_AWS_KEY_ID) && !text.contains(SECRET_GITHUB),
            "{text}"
        );
    }
    assert!(String::from_utf8_lossy(&raw.body).contains("[REDACTED:"));
    assert!(String::from_utf8_lossy(&hist.body).contains("[REDACTED:"));
}
