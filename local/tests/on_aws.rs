//! The local server on the AWS adapters (`WORKSPACE_BACKEND=aws`), against the moto emulator
//! `tests/run.sh` starts: `workspace-local provision` creates the data plane template.yaml
//! declares (and finds it the second time), then the contract suite's cases run through the
//! real process over what it provisioned.

mod common;

use common::aws::{aws_env, provision, refs};
use common::{run_args, Server};
use std::sync::Arc;
use workspace_contract::harness::{managed_keys, Backend, Harness, LIMITS};
use workspace_core::keys::KeyStore;
use workspace_store_aws::keys_table::DynamoKeys;
use workspace_store_aws::secrets_table::DynamoSecrets;
use workspace_store_aws::{testing, AwsClients, DynamoMeta, S3Bodies};

#[tokio::test]
async fn provision_creates_the_data_plane_once_and_then_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let (table, bucket) = (testing::unique("pv-meta"), testing::unique("pv-bodies"));
    let (cache, blobs, bus) = (
        testing::unique("pv-cache"),
        testing::unique("pv-blobs"),
        testing::unique("pv-bus"),
    );
    let env = aws_env(&[
        ("WORKSPACE_TABLE", &table),
        ("WORKSPACE_BUCKET", &bucket),
        ("WORKSPACE_CACHE_TABLE", &cache),
        ("WORKSPACE_BLOB_S3_BUCKET", &blobs),
        ("WORKSPACE_EVENT_BUS", &bus),
    ]);
    let first = provision(dir.path(), &env);
    for want in [
        format!("created table {table}"),
        format!("created bucket {bucket}"),
        format!("created cache table {cache}"),
        format!("created blob bucket {blobs}"),
        format!("created event bus {bus}"),
    ] {
        assert!(first.contains(&want), "{want} in:\n{first}");
    }
    let again = provision(dir.path(), &env);
    assert_eq!(again.matches("found ").count(), 5, "{again}");
    assert!(!again.contains("created"), "{again}");

    // What the template declares, as the emulator now holds it.
    let aws = AwsClients::from_sdk_config(&testing::sdk_config(), None);
    // Versioned: a put answers a version id (what a commit records). Asked by behaviour:
    // moto's GetBucketVersioning reply does not parse in the SDK.
    for b in [&bucket, &blobs] {
        let put = aws
            .s3
            .put_object()
            .bucket(b)
            .key("probe")
            .body(b"x".to_vec().into())
            .send()
            .await
            .unwrap();
        assert!(
            put.version_id().is_some_and(|v| v != "null"),
            "{b} is versioned"
        );
    }
    let t = aws
        .dynamodb
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let spec = t.table().and_then(|t| t.stream_specification()).unwrap();
    assert!(
        spec.stream_enabled(),
        "the main table streams to the publisher"
    );
    for t in [&table, &cache] {
        let ttl = aws
            .dynamodb
            .describe_time_to_live()
            .table_name(t)
            .send()
            .await
            .unwrap();
        let d = ttl.time_to_live_description().unwrap();
        assert_eq!(d.attribute_name(), Some("expiresAt"), "{t}");
    }
    aws.eventbridge
        .describe_event_bus()
        .name(&bus)
        .send()
        .await
        .expect("the event bus exists");

    // Without the required names it says which is missing and creates nothing.
    let (status, _, err) = run_args(dir.path(), &refs(&aws_env(&[])), &["provision"]);
    assert!(!status.success());
    assert!(err.contains("WORKSPACE_TABLE must be set"), "{err}");
}

/// A fresh data plane provisioned by the binary, the contract identities as managed keys in
/// its table, and the server on it; the harness inspects the same table and bucket.
async fn over_the_process() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let (table, bucket) = (testing::unique("ct-meta"), testing::unique("ct-bodies"));
    let limits = [
        (
            "WORKSPACE_MAX_FILE_BYTES",
            LIMITS.max_file_bytes.to_string(),
        ),
        ("WORKSPACE_MAX_FILES", LIMITS.max_files.to_string()),
        ("WORKSPACE_MAX_VERSIONS", LIMITS.max_versions.to_string()),
        (
            "WORKSPACE_MAX_UPLOAD_BYTES",
            LIMITS.max_upload_bytes.to_string(),
        ),
    ];
    let mut env = aws_env(&[("WORKSPACE_TABLE", &table), ("WORKSPACE_BUCKET", &bucket)]);
    provision(dir.path(), &env);
    let aws = AwsClients::from_sdk_config(&testing::sdk_config(), None);
    let keys = DynamoKeys::new(aws.dynamodb.clone(), &table);
    for key in managed_keys() {
        keys.insert_key(key).await.expect("store a contract key");
    }
    env.extend(limits.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    env.push(("WORKSPACE_BACKEND".to_owned(), "aws".to_owned()));
    let server = Server::start(dir.path(), &refs(&env)).await;
    let backend = Backend {
        meta: Arc::new(DynamoMeta::new(aws.dynamodb.clone(), &table)),
        bodies: Arc::new(S3Bodies::new(aws.s3.clone(), &bucket)),
        secrets: Arc::new(DynamoSecrets::new(aws.dynamodb.clone(), &table)),
        guard: Box::new(()),
    };
    let base = server.base.clone();
    Harness::new(backend)
        .await
        .over_http(base, Box::new((server, dir)))
}

/// The contract cases that need neither the harness's manual clock nor its in-process app,
/// and send only plain paths (the HTTP client resolves `..` before it sends).
macro_rules! through_the_process {
    ($($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                workspace_contract::$module::$case(over_the_process().await).await;
            }
        )*
    };
}

through_the_process!(
    forks::forks_read_through_and_write_only_to_themselves,
    forks::merges_retry_by_idempotency_key_and_refuse_bad_requests,
    files::put_then_get_returns_the_stored_file,
    files::each_write_adds_one_and_past_versions_stay_readable,
    files::if_match_and_if_none_match_guard_writes,
    files::delete_tombstones_and_honours_if_match,
    files::recreating_after_delete_starts_a_new_lineage,
    files::list_is_sorted_content_free_and_pages,
    limits::max_file_bytes_is_enforced_in_utf8_bytes,
    limits::max_files_counts_live_files,
    limits::retention_keeps_the_last_max_versions,
    limits::idempotency_key_replays_the_first_result,
    isolation::isolation_holds_on_every_endpoint,
    isolation::tenant_wide_credentials_stay_in_their_tenant,
    isolation::naming_another_scope_is_forbidden,
    protocol::requests_without_a_known_key_are_401,
    protocol::discovery_advertises_families_at_root_and_under_capabilities,
    protocol::bad_bodies_and_headers_are_400_and_change_nothing,
    protocol::unknown_routes_and_methods_get_the_envelope,
    protocol::encoded_and_raw_slashes_name_the_same_file,
    protocol::error_envelope_is_flat_everywhere,
    protocol::secrets_are_redacted_before_storage,
    protocol::read_only_credentials_read_but_never_write,
    redaction::registered_secrets_are_redacted_for_their_tenant_only,
    mcp::mcp_writes_are_versions_redacted_and_bounded_like_put,
    mcp::mcp_acts_only_on_the_credentials_workspace,
    mcp::mcp_transport_rules,
    history::restore_writes_old_content_as_a_new_version,
    history::diff_shows_added_changed_and_deleted_lines,
    snapshots::snapshot_survives_writes_deletes_and_retention,
    snapshots::unknown_and_foreign_snapshot_ids_are_404,
    binary::binary_bodies_round_trip_every_byte_value,
    uploads::uploads_commit_files_beyond_the_inline_limit,
    uploads::uploads_with_other_bytes_than_declared_are_400_and_commit_nothing,
    uploads::upload_commits_follow_the_put_rules,
    uploads::bad_upload_requests_are_refused_and_change_nothing,
    uploads::uploaded_text_is_redacted_like_an_inline_put,
    uploads::large_files_read_through_download_urls_pinned_to_their_version,
);

/// The emulator over HTTPS with a fresh self-signed certificate (`tests/moto_server.py
/// --tls`), stopped when dropped, pass or fail.
struct TlsMoto {
    child: std::process::Child,
    url: String,
    cert: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsMoto {
    fn start() -> TlsMoto {
        use std::io::{BufRead, BufReader};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(root.join(".venv/bin/python"))
            .arg(root.join("tests/moto_server.py"))
            .arg("--tls")
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the venv's python (tests/run.sh installs moto into .venv)");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let port = port.trim().to_owned();
        if port.is_empty() {
            let _ = child.kill();
            panic!("the TLS emulator did not start");
        }
        TlsMoto {
            child,
            url: format!("https://127.0.0.1:{port}"),
            cert: dir.path().join("cert.pem"),
            _dir: dir,
        }
    }
}

impl Drop for TlsMoto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every SDK client (DynamoDB, S3, EventBridge) sends through `https_client` (rustls with
/// ring, not the SDK's default): provisioning, a key, a write and its read all cross TLS to
/// the emulator, and an endpoint whose certificate is not trusted is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_clients_speak_tls_and_check_the_certificate() {
    let moto = TlsMoto::start();
    let dir = tempfile::tempdir().unwrap();
    let (table, bucket, bus) = (
        testing::unique("tls-meta"),
        testing::unique("tls-bodies"),
        testing::unique("tls-bus"),
    );
    let mut env: Vec<(String, String)> = aws_env(&[
        ("WORKSPACE_TABLE", &table),
        ("WORKSPACE_BUCKET", &bucket),
        ("WORKSPACE_EVENT_BUS", &bus),
    ])
    .into_iter()
    .filter(|(k, _)| k != "AWS_ENDPOINT_URL")
    .collect();
    env.push(("AWS_ENDPOINT_URL".to_owned(), moto.url.clone()));

    // The system's roots do not include the emulator's certificate: refused, nothing made.
    let (status, _, err) = run_args(dir.path(), &refs(&env), &["provision"]);
    assert!(!status.success(), "an untrusted certificate was accepted");
    assert!(err.contains("invalid peer certificate"), "{err}");

    env.push((
        "SSL_CERT_FILE".to_owned(),
        moto.cert.to_string_lossy().into_owned(),
    ));
    let made = provision(dir.path(), &env);
    for want in [
        format!("created table {table}"),
        format!("created bucket {bucket}"),
        format!("created event bus {bus}"),
    ] {
        assert!(made.contains(&want), "{want} in:\n{made}");
    }
    let (status, out, err) = run_args(
        dir.path(),
        &refs(&env),
        &["keys", "create", "--tenant", "acme", "--workspace", "tls"],
    );
    assert!(status.success(), "{err}");
    let key = out.lines().next().expect("the key").trim().to_owned();

    env.push(("WORKSPACE_BACKEND".to_owned(), "aws".to_owned()));
    let server = Server::start(dir.path(), &refs(&env)).await;
    let c = reqwest::Client::new();
    let url = format!("{}/v1/host/workspace/files/notes/a.md", server.base);
    let put = c
        .put(&url)
        .bearer_auth(&key)
        .json(&serde_json::json!({"content": "over TLS"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200, "{}", put.text().await.unwrap());
    let got = c.get(&url).bearer_auth(&key).send().await.unwrap();
    assert_eq!(got.status(), 200);
    let body: serde_json::Value = got.json().await.unwrap();
    assert_eq!(body["content"], "over TLS", "{body}");
}
