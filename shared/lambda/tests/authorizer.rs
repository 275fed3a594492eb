//! The API-key authorizer on the emulator: keys stored hashed in DynamoDB become the same
//! identity the JWT path yields, and the route functions accept it.

use serde_json::{json, Value};
use workspace_core::keys::{key_digest, new_key, KeyStore, ManagedKey};
use workspace_lambda::authorizer::authorize;
use workspace_lambda::identity::ClaimNames;
use workspace_store_aws::keys_table::DynamoKeys;
use workspace_store_aws::testing;

mod common;

fn event(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn names() -> ClaimNames {
    workspace_wiring::Settings::from_source(|_| None)
        .unwrap()
        .claims
}

async fn store_key(
    store: &DynamoKeys,
    tenant: &str,
    workspace: Option<&str>,
    write: bool,
) -> (String, ManagedKey) {
    store_scoped_key(store, tenant, workspace, write, &[], &[]).await
}

async fn store_scoped_key(
    store: &DynamoKeys,
    tenant: &str,
    workspace: Option<&str>,
    write: bool,
    allow: &[&str],
    read: &[&str],
) -> (String, ManagedKey) {
    let (key, id) = new_key();
    let rec = ManagedKey {
        id,
        digest: key_digest(&key),
        tenant: tenant.into(),
        workspace: workspace.map(Into::into),
        principal: "ci-bot".into(),
        read: true,
        write,
        admin: false,
        allow_paths: allow.iter().map(|g| (*g).to_owned()).collect(),
        read_paths: read.iter().map(|g| (*g).to_owned()).collect(),
        created_at: 1,
        revoked_at: None,
    };
    store.insert_key(rec.clone()).await.unwrap();
    (key, rec)
}

fn request(key: &str, workspace: Option<&str>) -> Value {
    let mut ev = event("authorizer.json");
    ev["headers"]["authorization"] = Value::from(format!("Bearer {key}"));
    if let Some(w) = workspace {
        ev["headers"]["x-workspace-id"] = Value::from(w);
    }
    ev
}

#[tokio::test]
async fn stored_keys_authorize_as_the_same_identity_the_functions_accept() {
    let env = testing::fresh(None).await;
    let store = DynamoKeys::new(env.clients.dynamodb.clone(), &env.table);
    let (key, rec) = store_key(&store, "acme", Some("main"), true).await;

    let answer = authorize(&store, &names(), &request(&key, None)).await;
    assert_eq!(answer["isAuthorized"], true, "{answer}");
    assert_eq!(
        answer["context"],
        json!({"tenant_id": "acme", "workspace_id": "main", "sub": "ci-bot", "scope": "workspace:read workspace:write"})
    );

    // The route function takes the authorizer's context as the identity.
    let dir = tempfile::tempdir().unwrap();
    let app = common::app("put", dir.path());
    let mut put = event("put-file.json");
    put["requestContext"]["authorizer"] = json!({ "lambda": answer["context"] });
    let req = lambda_http::request::from_str(&put.to_string()).unwrap();
    let resp = workspace_lambda::handle(&app, req).await.unwrap();
    assert_eq!(resp.status(), 200);

    // Nothing of the key is stored in plain text.
    let item = env
        .clients
        .dynamodb
        .scan()
        .table_name(&env.table)
        .send()
        .await
        .unwrap();
    assert!(!format!("{:?}", item.items()).contains(&key));

    // Revoked: denied at once.
    store.revoke_key(&rec.id, 2).await.unwrap();
    assert_eq!(
        authorize(&store, &names(), &request(&key, None)).await["isAuthorized"],
        false
    );
}

#[tokio::test]
async fn unknown_keys_are_denied_and_workspaces_resolved_by_the_function() {
    let env = testing::fresh(None).await;
    let store = DynamoKeys::new(env.clients.dynamodb.clone(), &env.table);
    let (bound, _) = store_key(&store, "acme", Some("main"), false).await;
    let (wide, _) = store_key(&store, "acme", None, true).await;
    let deny = |v: Value| assert_eq!(v["isAuthorized"], false, "{v}");

    deny(authorize(&store, &names(), &request("wsk_0_unknown", None)).await);
    deny(authorize(&store, &names(), &json!({"headers": {}})).await);

    // The authorizer hands over what the key grants, whatever the request names: a bound
    // key its workspace, a tenant-wide key none.
    let ok = authorize(&store, &names(), &request(&bound, Some("other"))).await;
    assert_eq!(
        ok["context"],
        json!({"tenant_id": "acme", "workspace_id": "main", "sub": "ci-bot", "scope": "workspace:read"})
    );
    let ok = authorize(&store, &names(), &request(&wide, None)).await;
    assert_eq!(
        ok["context"],
        json!({"tenant_id": "acme", "sub": "ci-bot", "scope": "workspace:read workspace:write"})
    );

    // The route function resolves X-Workspace-Id by the local server's rule, with our
    // envelope: a bound key naming another is 403, a tenant-wide key must name a valid one.
    let dir = tempfile::tempdir().unwrap();
    let app = common::app("list", dir.path());
    let code = |r: (u16, Value)| (r.0, r.1["error"].as_str().map(str::to_owned));
    assert_eq!(
        code(list_as(&store, &app, &bound, Some("other")).await),
        (403, Some("forbidden".into()))
    );
    assert_eq!(
        code(list_as(&store, &app, &wide, None).await),
        (400, Some("validation_error".into()))
    );
    assert_eq!(
        code(list_as(&store, &app, &wide, Some("../main")).await),
        (400, Some("validation_error".into()))
    );
    let (status, body) = list_as(&store, &app, &wide, Some("other")).await;
    assert_eq!((status, &body["files"]), (200, &json!([])), "{body}");
}

/// GET /v1/host/workspace/files through the function, with the authorizer's context for
/// `key` and `named` in `X-Workspace-Id`.
async fn list_as(
    store: &DynamoKeys,
    app: &workspace_http::App,
    key: &str,
    named: Option<&str>,
) -> (u16, Value) {
    let mut ev = event("list-files.json");
    ev["requestContext"]["authorizer"] =
        json!({ "lambda": authorize_now(store, key, named).await });
    if let Some(w) = named {
        ev["headers"]["x-workspace-id"] = Value::from(w);
    }
    let req = lambda_http::request::from_str(&ev.to_string()).unwrap();
    let resp = workspace_lambda::handle(app, req).await.unwrap();
    let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
    (resp.status().as_u16(), body)
}

/// The authorizer's context for `key` naming `named`.
async fn authorize_now(store: &DynamoKeys, key: &str, named: Option<&str>) -> Value {
    let answer = authorize(store, &names(), &request(key, named)).await;
    assert_eq!(answer["isAuthorized"], true, "{answer}");
    answer["context"].clone()
}

/// `put-file.json` for `path`, under the authorizer context or JWT claims `auth`.
fn put_event(path: &str, auth: Value) -> lambda_http::Request {
    let mut ev = event("put-file.json");
    let raw = format!("/v1/host/workspace/files/{path}");
    ev["rawPath"] = Value::from(raw.clone());
    ev["requestContext"]["http"]["path"] = Value::from(raw);
    ev["pathParameters"] = json!({ "path": path });
    ev["requestContext"]["authorizer"] = auth;
    lambda_http::request::from_str(&ev.to_string()).unwrap()
}

#[tokio::test]
async fn path_scoped_keys_reach_only_their_paths_through_the_authorizer_and_jwt_claims() {
    let env = testing::fresh(None).await;
    let store = DynamoKeys::new(env.clients.dynamodb.clone(), &env.table);
    let (key, _) = store_scoped_key(
        &store,
        "acme",
        Some("main"),
        true,
        &["memory/**"],
        &["docs/**"],
    )
    .await;
    let context = authorize_now(&store, &key, None).await;
    assert_eq!(
        context["workspace_paths"], "allow:memory/** read:docs/**",
        "{context}"
    );

    let dir = tempfile::tempdir().unwrap();
    let app = common::app_of(&["put", "list"], dir.path());
    let put = |path: &str, auth: Value| {
        let req = put_event(path, auth);
        let app = &app;
        async move {
            let resp = workspace_lambda::handle(app, req).await.unwrap();
            resp.status().as_u16()
        }
    };
    let lambda = json!({ "lambda": context });
    assert_eq!(put("memory/a.md", lambda.clone()).await, 200);
    assert_eq!(put("docs/readme.md", lambda.clone()).await, 403);
    assert_eq!(put("secret.md", lambda.clone()).await, 403);

    // A JWT whose claim arrives as API Gateway renders an array: the same limits.
    let mut claims = event("put-file.json")["requestContext"]["authorizer"].clone();
    claims["jwt"]["claims"]["workspace_paths"] = Value::from("[allow:memory/** read:docs/**]");
    assert_eq!(put("memory/b.md", claims.clone()).await, 200);
    assert_eq!(put("notes/today.md", claims.clone()).await, 403);
    // A whole-workspace token (no claim) writes anywhere; the listing of the scoped key
    // shows only its own paths.
    let whole = event("put-file.json")["requestContext"]["authorizer"].clone();
    assert_eq!(put("secret.md", whole).await, 200);
    let mut ev = event("list-files.json");
    ev["rawQueryString"] = Value::from("");
    ev["queryStringParameters"] = json!({});
    ev["requestContext"]["authorizer"] =
        json!({ "lambda": authorize_now(&store, &key, None).await });
    let req = lambda_http::request::from_str(&ev.to_string()).unwrap();
    let resp = workspace_lambda::handle(&app, req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
    let paths: Vec<&str> = body["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["memory/a.md", "memory/b.md"], "{body}");

    // A claim that is present but names no usable glob is refused, never widened.
    for bad in ["", "memory/**", "allow:/etc/**"] {
        claims["jwt"]["claims"]["workspace_paths"] = Value::from(bad);
        assert_eq!(put("memory/c.md", claims.clone()).await, 401, "{bad:?}");
    }
}

/// A stored key's globs reach the route function as they are stored: one that does not
/// compile is refused there (401, our envelope), and one the claim could not carry is
/// refused by the authorizer. Neither is ever widened to the whole workspace.
#[tokio::test]
async fn a_stored_key_whose_globs_are_broken_is_refused_never_widened() {
    let env = testing::fresh(None).await;
    let store = DynamoKeys::new(env.clients.dynamodb.clone(), &env.table);

    // Well formed, not a glob (an unclosed class): the authorizer does not compile it.
    let (key, _) = store_scoped_key(&store, "acme", Some("main"), true, &["memory/[ab"], &[]).await;
    let context = authorize_now(&store, &key, None).await;
    assert_eq!(context["workspace_paths"], "allow:memory/[ab", "{context}");
    let dir = tempfile::tempdir().unwrap();
    let app = common::app_of(&["put"], dir.path());
    let req = put_event("memory/a.md", json!({ "lambda": context }));
    let resp = workspace_lambda::handle(&app, req).await.unwrap();
    assert_eq!(resp.status(), 401);
    let body: Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("is not a glob"), "{body}");

    // A glob with a space would add an entry to the claim (`read:**`): denied outright.
    let (key, _) = store_scoped_key(
        &store,
        "acme",
        Some("main"),
        true,
        &["memory/** read:**"],
        &[],
    )
    .await;
    let answer = authorize(&store, &names(), &request(&key, None)).await;
    assert_eq!(answer, json!({ "isAuthorized": false }));
}
