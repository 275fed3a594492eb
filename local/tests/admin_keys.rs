//! `workspace-local keys create --admin` through the binary: the key it prints carries
//! `workspace:admin` and may erase a past version from history; a key made without the flag
//! (read-write, or read-only) is refused with 403 and erases nothing.

mod common;

use common::Server;
use reqwest::{Client, StatusCode};
use serde_json::Value;

fn file(s: &Server, path: &str) -> String {
    s.url(&format!("/v1/host/workspace/files/{path}"))
}

async fn erase(c: &Client, s: &Server, key: &str, path: &str, version: u64) -> reqwest::Response {
    c.delete(s.url(&format!("/v1/host/workspace/versions/{path}/{version}")))
        .bearer_auth(key)
        .send()
        .await
        .expect("DELETE reaches the server")
}

#[tokio::test]
async fn only_a_key_created_with_admin_erases_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &[]).await;
    let c = Client::new();
    let ws = ["--tenant", "local", "--workspace", "default"];
    let with = |extra: &[&'static str]| {
        let mut args = ws.to_vec();
        args.extend_from_slice(extra);
        common::create_key(dir.path(), &args).0
    };
    let admin = with(&["--admin", "--principal", "secops"]);
    let writer = with(&["--principal", "agent"]);
    let reader = with(&["--read-only"]);

    // --admin is listed as such; the others are not admins.
    let (_, listed, _) = common::run_args(dir.path(), &[], &["keys", "list"]);
    let line_of = |key: &str| {
        let id = key.split('_').nth(1).unwrap().to_owned();
        listed
            .lines()
            .find(|l| l.starts_with(&id))
            .unwrap_or_else(|| panic!("{id} not listed:\n{listed}"))
            .to_owned()
    };
    assert!(
        line_of(&admin).contains("access=read,write,admin "),
        "{listed}"
    );
    assert!(!line_of(&writer).contains("admin"), "{listed}");
    // A read-only admin is refused by the command line itself.
    let (status, _, err) = common::run_args(
        dir.path(),
        &[],
        &[
            "keys",
            "create",
            "--tenant",
            "local",
            "--read-only",
            "--admin",
        ],
    );
    assert!(!status.success(), "--read-only --admin was accepted: {err}");

    for text in ["password=hunter2-leaked", "cleaned"] {
        let r = common::put_content(&c, file(&s, "leak.md"), &writer, text).await;
        assert_eq!(r.status(), StatusCode::OK);
    }

    for key in [&writer, &reader] {
        let r = erase(&c, &s, key, "leak.md", 1).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "forbidden", "{v}");
    }
    let r = common::get_with(&c, file(&s, "leak.md?version=1"), &writer).await;
    assert_eq!(
        r.status(),
        StatusCode::OK,
        "a refused erase changed nothing"
    );

    let r = erase(&c, &s, &admin, "leak.md", 1).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = common::get_with(&c, file(&s, "leak.md?version=1"), &writer).await;
    assert_eq!(r.status(), StatusCode::GONE);
    let history: Value =
        common::get_with(&c, s.url("/v1/host/workspace/versions/leak.md"), &writer)
            .await
            .json()
            .await
            .unwrap();
    let v1 = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == 1)
        .cloned()
        .expect("version 1 in history");
    assert_eq!(
        (&v1["erased"], &v1["erasedBy"]),
        (&Value::Bool(true), &"secops".into())
    );
    // The live version stays readable, and not even an admin erases it.
    let r = common::get_with(&c, file(&s, "leak.md"), &reader).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = erase(&c, &s, &admin, "leak.md", 2).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
}
