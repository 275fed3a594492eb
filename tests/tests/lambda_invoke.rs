//! Every recorded event in `events/` through the real function binaries, the way
//! `sam local invoke <Fn> -e events/<file> --env-vars events/env.json` runs them (without
//! Docker): each function's bootstrap under the Lambda Runtime Interface Emulator that ships
//! inside aws-sam-cli, with the environment SAM's own code computes from template.yaml and
//! `events/env.json` (`tests/sam_local_env.py`), against the moto emulator. Only the
//! endpoint's port and the resource names in `env.json` are changed (to this test's moto
//! and its fresh table, bucket and bus). The bootstraps are this host's builds of the
//! same binaries `sam build` makes for arm64.

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Mutex;
use workspace_core::keys::KeyStore;
use workspace_store_aws::keys_table::DynamoKeys;
use workspace_store_aws::{items, layout};
use workspace_tests::rie::{self, build_bootstraps, emulate, sam_local, Emulated};
use workspace_tests::root;

fn event_file(file: &str) -> Value {
    let text = std::fs::read_to_string(root().join("events").join(file)).expect("event file");
    serde_json::from_str(&text).expect("event JSON")
}

/// The events sent so far, to prove every recorded event was.
static SENT: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

async fn invoke_event(e: &Emulated, event: &Value) -> Value {
    rie::invoke_event(e, event).await
}

/// Sends `events/<file>` to the function.
async fn invoke(e: &Emulated, file: &str) -> Value {
    invoke_edited(e, file, |_| {}).await
}

/// Sends `events/<file>` changed by `edit`.
async fn invoke_edited(e: &Emulated, file: &str, edit: impl Fn(&mut Value)) -> Value {
    SENT.lock().unwrap().insert(file.to_owned());
    let mut event = event_file(file);
    edit(&mut event);
    invoke_event(e, &event).await
}

/// `events/<file>` with the sample workspace id replaced by `id`.
async fn invoke_for(e: &Emulated, file: &str, id: &str) -> Value {
    SENT.lock().unwrap().insert(file.to_owned());
    let text = std::fs::read_to_string(root().join("events").join(file)).expect("event file");
    let event = serde_json::from_str(&text.replace(SAMPLE_ID, id)).expect("event JSON");
    invoke_event(e, &event).await
}

const SAMPLE_ID: &str = "ws-0123456789abcdef0123456789abcdef";

/// `env_json` with `Parameters` changed by `overrides` (settings of this test only).
fn override_env(env_json: &std::path::Path, overrides: &[(&str, &str)]) {
    let mut env: Value = serde_json::from_str(&std::fs::read_to_string(env_json).unwrap()).unwrap();
    for (k, v) in overrides {
        env["Parameters"][*k] = Value::String((*v).to_owned());
    }
    std::fs::write(env_json, env.to_string()).unwrap();
}

/// An edit of `put-file.json`: `path` with `content`.
fn put_at(path: &'static str, content: &'static str) -> impl Fn(&mut Value) {
    move |e: &mut Value| {
        let raw = format!("/v1/host/workspace/files/{path}");
        e["rawPath"] = raw.clone().into();
        e["requestContext"]["http"]["path"] = raw.into();
        e["pathParameters"]["path"] = path.into();
        let b = serde_json::json!({ "content": content }).to_string();
        e["headers"]["content-length"] = b.len().to_string().into();
        e["body"] = b.into();
    }
}

/// An edit of a file route's event: `path` instead of its own.
fn file_at(path: &'static str) -> impl Fn(&mut Value) {
    move |e: &mut Value| {
        let raw = format!("/v1/host/workspace/files/{path}");
        e["rawPath"] = raw.clone().into();
        e["requestContext"]["http"]["path"] = raw.into();
        e["pathParameters"]["path"] = path.into();
    }
}

/// An edit of an HTTP event: the caller's token names workspace `ws`.
fn in_workspace(ws: &'static str) -> impl Fn(&mut Value) {
    move |e: &mut Value| {
        e["requestContext"]["authorizer"]["jwt"]["claims"]["workspace_id"] = ws.into();
    }
}

/// Every S3 version and delete marker under `prefix` in the bodies bucket, as text.
async fn versions_under(env: &workspace_store_aws::testing::Env, prefix: &str) -> Vec<String> {
    let out = env
        .clients
        .s3
        .list_object_versions()
        .bucket(&env.bucket)
        .prefix(prefix)
        .send()
        .await
        .expect("ListObjectVersions");
    out.versions()
        .iter()
        .map(|v| format!("{} {}", v.key().unwrap_or(""), v.version_id().unwrap_or("")))
        .chain(
            out.delete_markers()
                .iter()
                .map(|m| format!("{} marker", m.key().unwrap_or(""))),
        )
        .collect()
}

/// Writes `item` into the table as it is (state seeded by the admin, not by a function).
async fn seed_item(env: &workspace_store_aws::testing::Env, item: items::Item) {
    env.clients
        .dynamodb
        .put_item()
        .table_name(&env.table)
        .set_item(Some(item))
        .send()
        .await
        .expect("PutItem");
}

/// Whether the table holds the item (`pk`, `sk`).
async fn item_exists(env: &workspace_store_aws::testing::Env, pk: &str, sk: &str) -> bool {
    env.clients
        .dynamodb
        .get_item()
        .table_name(&env.table)
        .key("pk", items::s(pk))
        .key("sk", items::s(sk))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem")
        .item()
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recorded_event_runs_through_its_function_binary() {
    // Bound (not `..`) so the resources live as long as the test.
    let rie::MotoStack {
        env,
        caps: _caps,
        observed,
        env_json,
        roles,
    } = rie::fresh_stack("invoke").await;
    // This test's settings: two versions kept per file (so a third write prunes the first
    // version item in its commit), no grace for orphaned bodies (so the sweep below
    // deletes the one seeded), and every body in S3 (so each function's S3 calls run
    // under its role: the recorded events' files are small, and the gateway tests,
    // ws_mount_gateway.rs and linearizability_gateway.rs, run the inline ones).
    override_env(
        &env_json,
        &[
            ("WORKSPACE_MAX_VERSIONS", "2"),
            ("WORKSPACE_ORPHAN_GRACE_SECONDS", "0"),
            ("WORKSPACE_INLINE_BODY_BYTES", "0"),
        ],
    );
    // The functions that search carry the embedding model, as the model layer gives them
    // on Lambda (`WORKSPACE_MODEL_DIR`; tests/run.sh installs it).
    let model = rie::installed_model();
    let (sam, bin_dir) = tokio::task::spawn_blocking(move || {
        let sam = sam_local(&env_json).under_roles(roles).with_model(&model);
        for id in ["SearchFunction", "IndexerFunction", "McpFunction"] {
            assert_eq!(
                sam.functions[id].1.get("WORKSPACE_MODEL_DIR"),
                Some(&model),
                "{id} carries the model layer"
            );
        }
        let bin_dir = build_bootstraps(&sam);
        (sam, bin_dir)
    })
    .await
    .unwrap();
    let f = |id: &str| emulate(&sam, id, &bin_dir);
    let (get_fn, list_fn, put_fn, delete_fn) = (
        f("GetFunction"),
        f("ListFunction"),
        f("PutFunction"),
        f("DeleteFunction"),
    );
    let (snapshots_fn, mcp_fn, cache_fn, blob_fn) = (
        f("SnapshotsFunction"),
        f("McpFunction"),
        f("CacheFunction"),
        f("BlobFunction"),
    );
    let (publish_fn, sweep_fn, purge_fn, workspaces_fn, authorizer_fn) = (
        f("PublishFunction"),
        f("SweepFunction"),
        f("PurgeFunction"),
        f("WorkspacesFunction"),
        f("AuthorizerFunction"),
    );
    let (index_fn, console_fn) = (f("IndexFunction"), f("ConsoleFunction"));
    let (search_fn, indexer_fn) = (f("SearchFunction"), f("IndexerFunction"));

    let status = |v: &Value| v["statusCode"].as_u64().unwrap_or_default();
    let body = |v: &Value| -> Value {
        serde_json::from_str(v["body"].as_str().unwrap_or("null")).unwrap_or(Value::Null)
    };

    let put = invoke(&put_fn, "put-file.json").await;
    assert_eq!(status(&put), 200, "{put}");
    assert_eq!(body(&put)["version"], 1);
    let get = invoke(&get_fn, "get-file.json").await;
    assert_eq!(
        (status(&get), body(&get)["content"].as_str()),
        (200, Some("hello")),
        "{get}"
    );
    let list = invoke(&list_fn, "list-files.json").await;
    assert_eq!(status(&list), 200, "{list}");
    assert_eq!(body(&list)["files"][0]["path"], "notes/today.md");
    let health = invoke(&get_fn, "health.json").await;
    assert_eq!(status(&health), 200, "{health}");

    // The console (no AWS client, no credential): its page, the page again as
    // `console/index.html`, an asset of this build and its 304, an unknown asset.
    let header = |v: &Value, name: &str| v["headers"][name].as_str().map(str::to_owned);
    let served = |v: &Value| -> Vec<u8> {
        let text = v["body"].as_str().unwrap_or_default();
        if v["isBase64Encoded"] == true {
            workspace_tests::b64::decode(text).expect("base64 body")
        } else {
            text.as_bytes().to_vec()
        }
    };
    let page = workspace_console::page();
    for file in ["console-page.json", "console-asset.json"] {
        let r = invoke(&console_fn, file).await;
        assert_eq!(status(&r), 200, "{file}: {r}");
        assert!(
            served(&r) == page.bytes,
            "{file}: not the page's bytes (a build of other assets?): {}",
            r["headers"]
        );
        assert_eq!(
            (
                header(&r, "content-type").as_deref(),
                header(&r, "etag").as_deref(),
                header(&r, "cache-control").as_deref(),
                header(&r, "content-security-policy").as_deref(),
            ),
            (
                Some(page.content_type),
                Some(page.etag),
                Some("no-cache"),
                Some(workspace_console::CONTENT_SECURITY_POLICY)
            ),
            "{file}: {r}"
        );
    }
    let asset = |tail: String| {
        move |e: &mut Value| {
            e["rawPath"] = format!("/console/{tail}").into();
            e["requestContext"]["http"]["path"] = format!("/console/{tail}").into();
            e["pathParameters"]["asset"] = tail.clone().into();
        }
    };
    let app_js = format!("assets/{}/app.js", workspace_console::BUILD);
    let js = workspace_console::asset("app.js").expect("app.js is compiled in");
    let r = invoke_edited(&console_fn, "console-asset.json", asset(app_js.clone())).await;
    assert_eq!(status(&r), 200, "{r}");
    assert!(
        served(&r) == js.bytes,
        "not app.js's bytes (a build of other assets?): {}",
        r["headers"]
    );
    assert_eq!(header(&r, "content-type").as_deref(), Some(js.content_type));
    assert_eq!(
        header(&r, "cache-control").as_deref(),
        Some("public, max-age=31536000, immutable")
    );
    let etag = header(&r, "etag").expect("an ETag");
    let again = invoke_edited(&console_fn, "console-asset.json", |e| {
        asset(app_js.clone())(e);
        e["headers"]["if-none-match"] = etag.clone().into();
    })
    .await;
    assert_eq!(status(&again), 304, "{again}");
    assert!(served(&again).is_empty(), "{again}");
    let missing = invoke_edited(
        &console_fn,
        "console-asset.json",
        asset("assets/000000000000/app.js".to_owned()),
    )
    .await;
    assert_eq!(
        (status(&missing), body(&missing)["error"].as_str()),
        (404, Some("not_found")),
        "{missing}"
    );

    // History, restore and diff; snapshots (the recorded id names none: 404).
    let restored = invoke(&put_fn, "restore-version.json").await;
    assert_eq!(
        (status(&restored), body(&restored)["version"].as_u64()),
        (200, Some(2)),
        "{restored}"
    );
    let history = invoke(&get_fn, "list-versions.json").await;
    assert_eq!(status(&history), 200, "{history}");
    assert_eq!(body(&history)["versions"][0]["version"], 2);
    let diff = invoke(&get_fn, "diff.json").await;
    assert_eq!(
        (status(&diff), body(&diff)["diff"].as_str()),
        (200, Some("")),
        "{diff}"
    );
    let snap = invoke(&snapshots_fn, "create-snapshot.json").await;
    assert_eq!(status(&snap), 201, "{snap}");
    assert_eq!(body(&snap)["files"][0]["version"], 2);
    for file in ["get-snapshot.json", "delete-snapshot.json"] {
        let r = invoke(&snapshots_fn, file).await;
        assert_eq!(
            (status(&r), body(&r)["error"].as_str()),
            (404, Some("not_found")),
            "{r}"
        );
    }

    // A two-step upload: fn-put presigns an S3 PUT, the bytes go straight to S3 (the
    // emulator), and a second fn-put call commits them.
    let started = invoke(&put_fn, "start-upload.json").await;
    assert_eq!(status(&started), 201, "{started}");
    let ticket = body(&started);
    let url = ticket["url"].as_str().expect("a presigned URL");
    assert!(url.starts_with(&rie::moto_https_url()), "{url} is S3's");
    let mut req = rie::presigned_url_client().put(url).body("hello world");
    for (k, v) in ticket["headers"].as_object().expect("headers") {
        if !matches!(k.as_str(), "content-length" | "host") {
            req = req.header(k, v.as_str().unwrap_or_default());
        }
    }
    let sent = req.send().await.expect("S3 answers");
    assert!(sent.status().is_success(), "{:?}", sent.text().await);
    let id = ticket["uploadId"].as_str().expect("uploadId").to_owned();
    let committed = invoke_edited(&put_fn, "put-file.json", |e| {
        e["rawPath"] = "/v1/host/workspace/files/notes/big.bin".into();
        e["requestContext"]["http"]["path"] = "/v1/host/workspace/files/notes/big.bin".into();
        e["pathParameters"]["path"] = "notes/big.bin".into();
        let b = serde_json::json!({ "uploadId": id }).to_string();
        e["headers"]["content-length"] = b.len().to_string().into();
        e["body"] = b.into();
    })
    .await;
    assert_eq!(
        (status(&committed), body(&committed)["size"].as_u64()),
        (200, Some(11)),
        "{committed}"
    );

    let delete = invoke(&delete_fn, "delete-file.json").await;
    assert_eq!(status(&delete), 204, "{delete}");
    // notes/today.md had two versions (the put, the restore): the tombstone is its third,
    // and its commit deletes the version item that leaves the window of two.
    let main = "acme#main";
    let ver = |path: &str, seq: u64| layout::version_sk(path, seq);
    assert!(
        !item_exists(&env, main, &ver("notes/today.md", 1)).await,
        "the delete pruned version 1 of notes/today.md"
    );
    assert!(item_exists(&env, main, &ver("notes/today.md", 2)).await);

    // The stream publisher announces a recorded version item, and the sweeper runs.
    let published = invoke(&publish_fn, "stream-insert.json").await;
    assert_eq!(
        published["batchItemFailures"],
        serde_json::json!([]),
        "{published}"
    );
    let got = observed.drain(1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["detail"]["path"], "notes/today.md");
    let removed = invoke(&publish_fn, "stream-remove.json").await;
    assert_eq!(
        removed["batchItemFailures"],
        serde_json::json!([]),
        "{removed}"
    );
    // The workspace service on DynamoDB and S3: an idempotent local create, and a purge
    // that finds nothing idle.
    let created = invoke(&workspaces_fn, "workspaces-create.json").await;
    assert_eq!(status(&created), 201, "{created}");
    let again = invoke(&workspaces_fn, "workspaces-create.json").await;
    assert_eq!(status(&again), 200, "{again}");
    assert_eq!(body(&again)["workspaceId"], body(&created)["workspaceId"]);
    // The rest of the workspace API on the workspace the create made (a user-level token).
    let id = body(&created)["workspaceId"]
        .as_str()
        .expect("workspaceId")
        .to_owned();
    let ok = |v: &Value, want: u64, what: &str| assert_eq!(status(v), want, "{what}: {v}");
    ok(
        &invoke_for(&workspaces_fn, "workspaces-get.json", &id).await,
        200,
        "get",
    );
    let listed = invoke_for(&workspaces_fn, "workspaces-list.json", &id).await;
    ok(&listed, 200, "list");
    assert_eq!(body(&listed)["workspaces"][0]["workspaceId"], id.as_str());
    let art = invoke_for(&workspaces_fn, "artifacts-upload.json", &id).await;
    ok(&art, 201, "artifact");
    let hist = invoke_for(&workspaces_fn, "artifacts-upload-history.json", &id).await;
    ok(&hist, 201, "session history artifact");
    let arts = invoke_for(&workspaces_fn, "artifacts-list.json", &id).await;
    assert_eq!(
        body(&arts)["artifacts"].as_array().map(Vec::len),
        Some(2),
        "{arts}"
    );
    let art_id = body(&art)["artifactId"]
        .as_str()
        .expect("artifactId")
        .to_owned();
    SENT.lock().unwrap().insert("artifacts-get.json".to_owned());
    let text = std::fs::read_to_string(root().join("events/artifacts-get.json"))
        .unwrap()
        .replace(SAMPLE_ID, &id)
        .replace("art-0123456789abcdef0123456789abcdef", &art_id);
    let fetched = invoke_event(&workspaces_fn, &serde_json::from_str(&text).unwrap()).await;
    ok(&fetched, 200, "artifact get");
    ok(
        &invoke_for(&workspaces_fn, "sessions-list.json", &id).await,
        200,
        "sessions",
    );
    let history = invoke_for(&workspaces_fn, "sessions-history.json", &id).await;
    ok(&history, 200, "session history");
    ok(
        &invoke_for(&workspaces_fn, "sessions-delete.json", &id).await,
        204,
        "session delete",
    );
    ok(
        &invoke_for(&workspaces_fn, "workspaces-delete.json", &id).await,
        204,
        "delete",
    );
    ok(
        &invoke_for(&workspaces_fn, "workspaces-get.json", &id).await,
        404,
        "deleted",
    );
    let purged = invoke(&purge_fn, "schedule-purge.json").await;
    assert_eq!(purged["workspaces"], serde_json::json!([]), "{purged}");
    // A workspace idle since the epoch (its record aged in the table) with an artifact:
    // the purge erases its items and bodies, and its record.
    let made = invoke_edited(&workspaces_fn, "workspaces-create.json", |e| {
        let b = serde_json::json!({"workspaceScope": "general"}).to_string();
        e["headers"]["content-length"] = b.len().to_string().into();
        e["body"] = b.into();
    })
    .await;
    ok(&made, 201, "create");
    let idle = body(&made)["workspaceId"]
        .as_str()
        .expect("workspaceId")
        .to_owned();
    ok(
        &invoke_for(&workspaces_fn, "artifacts-upload.json", &idle).await,
        201,
        "artifact of the idle workspace",
    );
    let records = env
        .clients
        .dynamodb
        .query()
        .table_name(&env.table)
        .consistent_read(true)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", items::s("acme##ws"))
        .send()
        .await
        .expect("Query");
    let mut record = records
        .items()
        .iter()
        .find(|i| items::get_s(i, "data").is_ok_and(|d| d.contains(&idle)))
        .expect("the idle workspace's record")
        .clone();
    let mut data: Value = serde_json::from_str(&items::get_s(&record, "data").unwrap()).unwrap();
    data["last_active_at"] = 0.into();
    record.insert("data".to_owned(), items::s(data.to_string()));
    record.insert("lastActiveAt".to_owned(), items::n(0));
    seed_item(&env, record).await;
    let purged = invoke(&purge_fn, "schedule-purge.json").await;
    assert_eq!(
        purged["workspaces"],
        serde_json::json!([{"tenantId": "acme", "workspaceId": idle}]),
        "{purged}"
    );
    assert_eq!(
        versions_under(&env, &format!("t/acme/w/{idle}/")).await,
        Vec::<String>::new(),
        "the idle workspace's bodies are erased"
    );
    let left = env
        .clients
        .dynamodb
        .query()
        .table_name(&env.table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", items::s(format!("acme#{idle}")))
        .send()
        .await
        .expect("Query");
    assert_eq!(left.count(), 0, "the idle workspace's items are erased");
    ok(
        &invoke_for(&workspaces_fn, "workspaces-get.json", &idle).await,
        404,
        "purged",
    );

    // The example subscriber, as `sam local invoke IndexFunction -e
    // events/workspace-updated.json` runs it: it writes the index once, then finds it right.
    let indexed = invoke(&index_fn, "workspace-updated.json").await;
    assert_eq!(
        indexed,
        serde_json::json!({"outcome": "written", "detail": {"version": 1}}),
        "{indexed}"
    );
    let again = invoke(&index_fn, "workspace-updated.json").await;
    assert_eq!(
        again,
        serde_json::json!({"outcome": "unchanged"}),
        "{again}"
    );
    // Two more files under memory/: the index's third version prunes its first item.
    for (version, path) in [(2, "memory/a.md"), (3, "memory/b.md")] {
        let put = invoke_edited(&put_fn, "put-file.json", put_at(path, "a memory")).await;
        assert_eq!(status(&put), 200, "{put}");
        let r = invoke_edited(&index_fn, "workspace-updated.json", |e| {
            e["detail"]["path"] = path.into();
        })
        .await;
        assert_eq!(
            r,
            serde_json::json!({"outcome": "written", "detail": {"version": version}}),
            "{r}"
        );
    }
    assert!(!item_exists(&env, main, &ver("memory/INDEX.md", 1)).await);

    // Search, as `sam local invoke IndexerFunction -e events/search-index-queued.json`, then
    // `SearchFunction -e events/search.json`: the indexer stores the workspace's index
    // object, the search function loads it and finds the file at its current version.
    let queued = invoke(&indexer_fn, "search-index-queued.json").await;
    assert_eq!(
        queued,
        serde_json::json!({"batchItemFailures": []}),
        "{queued}"
    );
    let found = invoke(&search_fn, "search.json").await;
    assert_eq!(status(&found), 200, "{found}");
    let found = body(&found);
    // notes/today.md was deleted above; the upload's text is what is left under notes/.
    assert_eq!(found["hits"][0]["path"], "notes/big.bin", "{found}");
    assert_eq!(found["hits"][0]["version"], 1, "{found}");
    assert_eq!(
        found["hits"][0]["lines"][0]["text"], "hello world",
        "{found}"
    );
    assert_eq!(found["index"]["total"], 1, "{found}");
    assert_eq!(
        found["index"]["pending"], 0,
        "the indexer was current: {found}"
    );

    // Three writes of one file: the third commit prunes the first version item.
    for (want, content) in [(1, "hello one"), (2, "hello two"), (3, "hello three")] {
        let r = invoke_edited(&put_fn, "put-file.json", put_at("notes/thrice.md", content)).await;
        assert_eq!(
            (status(&r), body(&r)["version"].as_u64()),
            (200, Some(want)),
            "{r}"
        );
    }
    assert!(!item_exists(&env, main, &ver("notes/thrice.md", 1)).await);
    assert!(item_exists(&env, main, &ver("notes/thrice.md", 3)).await);
    // The indexer again: it catches the stored index up from the change log (a head read
    // per changed path), stores it over the one it read and deletes that version.
    let queued = invoke(&indexer_fn, "search-index-queued.json").await;
    assert_eq!(
        queued,
        serde_json::json!({"batchItemFailures": []}),
        "{queued}"
    );
    let index_key = "t/acme/w/main/search/index.sqlite";
    assert_eq!(
        versions_under(&env, index_key).await.len(),
        1,
        "the superseded index version is deleted"
    );
    // A write after the indexer ran: the search function catches up itself, reading the
    // new body.
    let fresh = invoke_edited(
        &put_fn,
        "put-file.json",
        put_at("notes/fresh.md", "hello fresh"),
    )
    .await;
    assert_eq!(status(&fresh), 200, "{fresh}");
    let found = invoke(&search_fn, "search.json").await;
    assert_eq!(status(&found), 200, "{found}");
    let hits = body(&found)["hits"].clone();
    assert!(
        hits.as_array().is_some_and(|h| h
            .iter()
            .any(|x| x["path"] == "notes/fresh.md" && x["version"] == 1)),
        "{found}"
    );
    assert_eq!(
        body(&found)["index"]["pending"],
        1,
        "the write after the indexer, caught up by the search itself: {found}"
    );
    // A workspace never indexed has no index object: S3 answers 404 (the function may
    // list the bucket), and the search finds nothing.
    let empty = invoke_edited(&search_fn, "search.json", in_workspace("empty")).await;
    assert_eq!(status(&empty), 200, "{empty}");
    assert_eq!(body(&empty)["hits"], serde_json::json!([]), "{empty}");
    assert_eq!(body(&empty)["index"]["total"], 0, "{empty}");
    // By meaning, from the same index: the indexer embedded the passages under its own
    // role, and the search function embeds the query with the model it loaded.
    for mode in ["semantic", "hybrid"] {
        let by_meaning = invoke_edited(&search_fn, "search.json", move |e: &mut Value| {
            e["rawQueryString"] = format!("q=a+friendly+greeting&mode={mode}&prefix=notes/").into();
            e["queryStringParameters"] =
                serde_json::json!({"q": "a friendly greeting", "mode": mode, "prefix": "notes/"});
        })
        .await;
        assert_eq!(status(&by_meaning), 200, "{by_meaning}");
        let found = body(&by_meaning);
        assert_eq!(found["index"]["mode"], mode, "{found}");
        assert!(
            found["index"]["model"]
                .as_str()
                .is_some_and(|m| m.starts_with("all-minilm-l6-v2@")),
            "{found}"
        );
        let first = &found["hits"][0];
        assert!(
            first["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("notes/")),
            "{found}"
        );
        assert!(first["passage"]["startLine"].is_number(), "{found}");
        assert!(
            first["scores"]["semantic"].as_f64().unwrap_or_default() >= 0.2,
            "{found}"
        );
    }

    // A body no version item names (a write that died before its commit): with no grace
    // period the sweep deletes it.
    let orphan = "t/acme/w/main/files/notes/orphan.md";
    env.clients
        .s3
        .put_object()
        .bucket(&env.bucket)
        .key(orphan)
        .body(b"never committed".to_vec().into())
        .send()
        .await
        .expect("PutObject");
    let swept = invoke(&sweep_fn, "schedule-sweep.json").await;
    assert!(
        swept["examined"].as_u64().is_some_and(|n| n >= 1),
        "{swept}"
    );
    assert!(swept["deleted"].as_u64().is_some_and(|n| n >= 1), "{swept}");
    assert_eq!(
        versions_under(&env, orphan).await,
        Vec::<String>::new(),
        "the orphan is gone"
    );
    // The MCP function: a tool write lands on DynamoDB/S3 like a PUT, and is listed.
    let text = |v: &Value| body(v)["result"]["content"][0]["text"].clone();
    let wrote = invoke(&mcp_fn, "mcp-write-file.json").await;
    assert_eq!(status(&wrote), 200, "{wrote}");
    assert_eq!(
        text(&wrote),
        "Successfully wrote 20 bytes to notes/agent.md\nVersion: 1"
    );
    let listed = invoke(&mcp_fn, "mcp-list-directory.json").await;
    assert_eq!(
        text(&listed),
        // memory/ holds the index the example subscriber wrote above.
        "Contents of /workspace:\n\n[DIR] memory\n[DIR] notes",
        "{listed}"
    );
    // Two more writes of notes/agent.md: the third prunes version 1's item.
    for want in [2, 3] {
        let again = invoke(&mcp_fn, "mcp-write-file.json").await;
        assert_eq!(
            text(&again),
            format!("Successfully wrote 20 bytes to notes/agent.md\nVersion: {want}"),
            "{again}"
        );
    }
    assert!(!item_exists(&env, main, &ver("notes/agent.md", 1)).await);
    // A workspace at maxFiles (its live-file counter seeded): the body is stored, the
    // commit refused, and the body deleted again, by the MCP function and by the example
    // subscriber alike.
    env.clients
        .dynamodb
        .put_item()
        .table_name(&env.table)
        .item("pk", items::s("acme#full"))
        .item("sk", items::s(layout::COUNT_SK))
        .item("live", items::n(1000))
        .send()
        .await
        .expect("PutItem");
    let refused = invoke_edited(&mcp_fn, "mcp-write-file.json", in_workspace("full")).await;
    assert!(
        refused["body"]
            .as_str()
            .is_some_and(|b| b.contains("maxFiles")),
        "{refused}"
    );
    let refused = invoke_edited(&index_fn, "workspace-updated.json", |e| {
        e["detail"]["workspace"] = "full".into();
    })
    .await;
    assert!(
        refused["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("maxFiles")),
        "{refused}"
    );
    assert_eq!(
        versions_under(&env, "t/acme/w/full/").await,
        Vec::<String>::new(),
        "no body of a refused commit is left"
    );
    assert!(!item_exists(&env, "acme#full", &layout::head_sk("notes/agent.md")).await);

    for event in ["mcp-health.json", "health.json"] {
        let health = invoke(&mcp_fn, event).await;
        assert_eq!(
            body(&health)["service"],
            "workspace-tool",
            "{event}: {health}"
        );
    }

    // RFC 0019 on the DynamoDB cache table and the S3 blob bucket: a binary body arrives
    // base64 encoded and leaves base64 encoded, byte for byte.
    let cached = invoke(&cache_fn, "put-cache.json").await;
    assert_eq!(
        (status(&cached), body(&cached)["ok"].as_bool()),
        (200, Some(true)),
        "{cached}"
    );
    let stored = invoke(&blob_fn, "put-blob.json").await;
    assert_eq!(
        (status(&stored), body(&stored)["sizeBytes"].as_u64()),
        (200, Some(256)),
        "{stored}"
    );
    let got = invoke(&blob_fn, "get-blob.json").await;
    assert_eq!(status(&got), 200, "{got}");
    assert_eq!(got["isBase64Encoded"], true, "{got}");
    let put_event: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("events/put-blob.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        got["body"], put_event["body"],
        "the same bytes, base64 both ways"
    );

    // The API-key authorizer on the table: the recorded placeholder key is denied, a key
    // stored hashed in the table is allowed, with its identity as the context.
    let denied = invoke(&authorizer_fn, "authorizer.json").await;
    assert_eq!(denied["isAuthorized"], false, "{denied}");
    let keys = DynamoKeys::new(env.clients.dynamodb.clone(), &env.table);
    let mut record = workspace_contract::harness::managed_keys().remove(0);
    record.id = "rie".to_owned();
    keys.insert_key(record).await.unwrap();
    let key = workspace_contract::harness::KEY_A;
    let allowed = invoke_edited(&authorizer_fn, "authorizer.json", |e| {
        e["headers"]["authorization"] = format!("Bearer {key}").into();
        e["identitySource"] = serde_json::json!([format!("Bearer {key}")]);
    })
    .await;
    assert_eq!(allowed["isAuthorized"], true, "{allowed}");
    assert_eq!(allowed["context"]["tenant_id"], "acme", "{allowed}");

    // A fork (`create-fork.json`): its base is a point in the parent's history, a record
    // that lists no file whatever the workspace's size. A delete in the fork of a file it
    // inherits reads the parent at that point; the parent keeps its file.
    let forked = invoke(&snapshots_fn, "create-fork.json").await;
    assert_eq!(status(&forked), 201, "{forked}");
    let fork = body(&forked)["forkId"].as_str().expect("forkId").to_owned();
    let base_id = body(&forked)["base"]["snapshotId"]
        .as_str()
        .expect("the base's snapshotId")
        .to_owned();
    let base_sk = layout::snapshot_sk(&base_id);
    let base = env
        .clients
        .dynamodb
        .get_item()
        .table_name(&env.table)
        .key("pk", items::s(main))
        .key("sk", items::s(&base_sk))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem")
        .item()
        .cloned()
        .expect("the fork's base snapshot in the parent");
    let snapshot = items::snapshot_from(&base).expect("a snapshot record");
    assert!(
        snapshot.point.is_some() && snapshot.files.is_empty(),
        "the base is a point: {snapshot:?}"
    );
    // An edit of a file event: `path` in the fork.
    let at = |path: &'static str| {
        let fork = fork.clone();
        move |e: &mut Value| {
            file_at(path)(e);
            e["headers"]["x-workspace-id"] = fork.clone().into();
        }
    };
    let deleted = invoke_edited(&delete_fn, "delete-file.json", at("notes/thrice.md")).await;
    assert_eq!(status(&deleted), 204, "{deleted}");
    let gone = invoke_edited(&get_fn, "get-file.json", at("notes/thrice.md")).await;
    assert_eq!(status(&gone), 404, "deleted in the fork: {gone}");
    let kept = invoke_edited(&get_fn, "get-file.json", at("notes/fresh.md")).await;
    assert_eq!(
        (status(&kept), body(&kept)["content"].as_str()),
        (200, Some("hello fresh")),
        "still inherited through the base: {kept}"
    );
    let parent = invoke_edited(&get_fn, "get-file.json", file_at("notes/thrice.md")).await;
    assert_eq!(
        (status(&parent), body(&parent)["content"].as_str()),
        (200, Some("hello three")),
        "the parent keeps its file: {parent}"
    );
    // The fork writes a file (a body under its prefix), then ends: its record expired (as
    // DynamoDB's TTL has not removed it yet). The hourly sweep finds the fork by its keys in
    // the bucket, reads its record, erases its partition and bodies and deletes its base
    // in the parent.
    let wrote = invoke_edited(&put_fn, "put-file.json", |e| {
        put_at("notes/fork.md", "written in the fork")(e);
        e["headers"]["x-workspace-id"] = fork.clone().into();
    })
    .await;
    assert_eq!(status(&wrote), 200, "{wrote}");
    let fork_prefix = format!("t/acme/w/{fork}/");
    assert!(
        !versions_under(&env, &fork_prefix).await.is_empty(),
        "the fork leaves its marker (and any large body) under its prefix"
    );
    let fork_pk = format!("acme#{fork}");
    let record_sk = layout::record_sk(
        workspace_core::forks::FORK_RECORD_KIND,
        workspace_core::forks::FORK_RECORD_KEY,
    );
    env.clients
        .dynamodb
        .update_item()
        .table_name(&env.table)
        .key("pk", items::s(&fork_pk))
        .key("sk", items::s(&record_sk))
        .update_expression("SET expiresAtMs = :ms, expiresAt = :s")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_values(":ms", items::n(1))
        .expression_attribute_values(":s", items::n(1))
        .send()
        .await
        .expect("UpdateItem of the fork record");
    let swept = invoke(&sweep_fn, "schedule-sweep.json").await;
    assert!(swept["examined"].as_u64().is_some(), "{swept}");
    let left = env
        .clients
        .dynamodb
        .query()
        .table_name(&env.table)
        .consistent_read(true)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", items::s(&fork_pk))
        .send()
        .await
        .expect("Query");
    assert_eq!(left.count(), 0, "the fork's items are erased: {left:?}");
    assert_eq!(
        versions_under(&env, &fork_prefix).await,
        Vec::<String>::new(),
        "the fork's bodies are erased"
    );
    assert!(
        !item_exists(&env, main, &base_sk).await,
        "its base is deleted"
    );
    let parent = invoke_edited(&get_fn, "get-file.json", file_at("notes/thrice.md")).await;
    assert_eq!(
        (status(&parent), body(&parent)["content"].as_str()),
        (200, Some("hello three")),
        "the parent is untouched: {parent}"
    );

    // Every recorded event went to its function.
    let recorded: BTreeSet<String> = std::fs::read_dir(root().join("events"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && n != "env.json")
        .collect();
    let sent = SENT.lock().unwrap().clone();
    let missed: Vec<_> = recorded.difference(&sent).collect();
    assert!(missed.is_empty(), "events never sent: {missed:?}");
}
