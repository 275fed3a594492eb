//! Registered secrets (WSR-1) as an operator meets them: `workspace-local secrets …` while
//! the server runs, with structural redaction switched off (registration cannot be).

mod common;

use common::{run_args, run_with_input, Server};
use reqwest::Client;
use serde_json::Value;

const VALUE: &str = "plain words but secret 7731";

async fn put(s: &Server, key: &str, path: &str, content: &str) -> Value {
    let r = common::put_content(
        &Client::new(),
        s.url(&format!("/v1/host/workspace/files/{path}")),
        key,
        content,
    )
    .await;
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

/// Whether the file holds `needle`, as is or base64-encoded (an inline body in a record).
fn file_holds(path: &std::path::Path, needle: &str) -> bool {
    workspace_contract::raw_holds(&std::fs::read(path).unwrap_or_default(), needle)
}

#[tokio::test]
async fn a_secret_registered_while_the_server_runs_is_redacted_from_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("WORKSPACE_REDACT_STRUCTURAL", "false")];
    let s = Server::start(dir.path(), &env).await;
    let key = s.generated_key();
    let text = format!("dsn: postgres://app:{VALUE}@db/app");

    assert_eq!(put(&s, &key, "a.md", &text).await["content"], text.as_str());

    let set = ["secrets", "set", "--tenant", "local", "--id", "db-password"];
    let (status, out, err) = run_with_input(dir.path(), &env, &set, &format!("{VALUE}\n"));
    assert!(status.success(), "{err}");
    assert!(out.contains("db-password") && !out.contains(VALUE), "{out}");

    let stored = put(&s, &key, "b.md", &text).await;
    assert_eq!(
        stored["content"],
        "dsn: postgres://app:[REDACTED:db-password]@db/app"
    );
    let (_, listed, _) = run_args(dir.path(), &env, &["secrets", "list", "--tenant", "local"]);
    assert!(
        listed.contains("db-password") && !listed.contains(VALUE),
        "{listed}"
    );
    // The registration outlives a restart.
    drop(s);
    let s = Server::start(dir.path(), &env).await;
    let again = put(&s, &key, "d.md", VALUE).await;
    assert_eq!(again["content"], "[REDACTED:db-password]");

    let (status, _, err) = run_args(
        dir.path(),
        &env,
        &[
            "secrets",
            "remove",
            "--tenant",
            "local",
            "--id",
            "db-password",
        ],
    );
    assert!(status.success(), "{err}");
    assert_eq!(put(&s, &key, "c.md", &text).await["content"], text.as_str());
    drop(s);
    let db = dir.path().join(workspace_store_embedded::DB_FILE);
    assert!(file_holds(&db, "[REDACTED:db-password]"), "what was stored");
}

#[test]
fn bad_secret_commands_fail_clearly_and_register_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (args, input, expect) in [
        (
            vec!["--tenant", "local", "--id", "x"],
            "short",
            "characters",
        ),
        (
            vec!["--tenant", "local", "--id", "Bad Id"],
            VALUE,
            "secret id",
        ),
        (vec!["--tenant", "no/such", "--id", "x"], VALUE, "--tenant"),
        (vec!["--tenant", "local", "--id", "x"], "", "characters"),
    ] {
        let mut full = vec!["secrets", "set"];
        full.extend(args.iter().copied());
        let (status, out, err) = run_with_input(dir.path(), &[], &full, input);
        assert_eq!(status.code(), Some(1), "{args:?}: {out} {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(input.is_empty() || !err.contains(input), "{err}");
    }
    let (_, listed, _) = run_args(dir.path(), &[], &["secrets", "list", "--tenant", "local"]);
    assert!(listed.trim().is_empty(), "{listed}");
    let (status, _, err) = run_args(
        dir.path(),
        &[],
        &["secrets", "remove", "--tenant", "local", "--id", "nope"],
    );
    assert_eq!(status.code(), Some(1));
    assert!(err.contains("no secret"), "{err}");
}

#[tokio::test]
async fn secrets_can_be_registered_in_the_dynamodb_table_too() {
    use workspace_core::secrets::SecretStore;
    let env = workspace_store_aws::testing::fresh(None).await;
    let dir = tempfile::tempdir().unwrap();
    let url = workspace_store_aws::testing::moto_url();
    let aws = [
        ("WORKSPACE_TABLE", env.table.as_str()),
        ("AWS_ENDPOINT_URL", url.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
    ];
    let set = ["secrets", "set", "--tenant", "acme", "--id", "api"];
    let (status, out, err) = run_with_input(dir.path(), &aws, &set, VALUE);
    assert!(status.success(), "{err}");
    assert!(
        out.contains(&format!("DynamoDB table {}", env.table)),
        "{out}"
    );
    let store = workspace_store_aws::secrets_table::DynamoSecrets::new(
        env.clients.dynamodb.clone(),
        &env.table,
    );
    let acme = workspace_core::TenantId::parse("acme").unwrap();
    let found = store.secrets_of(&acme).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].id.as_str(), found[0].value.as_str()),
        ("api", VALUE)
    );
    let sibling = workspace_core::TenantId::parse("acme-evil").unwrap();
    assert!(store.secrets_of(&sibling).await.unwrap().is_empty());
    assert!(!dir.path().join("secrets.json").exists());
}
