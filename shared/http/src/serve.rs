//! The handler of each route, and the sets a process registers ([`App::serve`]). Each set
//! holds the rows of one function of the route table, so a Lambda function registers one
//! set and links only that set's code; the local server registers them all. A test holds
//! every set equal to its function's rows.
//!
//! Each handler authenticates, checks the scope it needs, bounds what it reads, and hands
//! over to the module that speaks the route (`files`, `versions`, ...).

use crate::envelope::json_response;
use crate::handler::{Call, Reply, Routes, SignedUrls};
use crate::routes::{Needs, Route};
use crate::{blob, cache, commits, discovery, files, forks, runs, snapshots, uploads, versions};
use bytes::Bytes;
use http::StatusCode;
use serde_json::json;
use workspace_core::blob::SIGNED_BLOB_PREFIX;
use workspace_core::service::{SIGNED_BODY_PREFIX, SIGNED_UPLOAD_PREFIX};

/// `get`: health, discovery, and the read-only file routes (a file, its history, a diff).
pub const GET: Routes = &[
    (Route::Health, health),
    (Route::Discovery, discovery_document),
    (Route::Capabilities, discovery_document),
    (Route::OpenApi, openapi_document),
    (Route::GetFile, get_file),
    (Route::ListVersions, list_versions),
    (Route::Diff, diff),
    (Route::WorkspaceEvents, workspace_events),
];
/// `list`: the file listing (live or through a snapshot) and the change log.
pub const LIST: Routes = &[
    (Route::ListFiles, list_files),
    (Route::ListChanges, list_changes),
];
/// `search`: search over the workspace's text index.
pub const SEARCH: Routes = &[(Route::Search, search)];
/// `put`: writes (inline, restore, two-step upload, multi-path commits) and erasing a past
/// version.
pub const PUT: Routes = &[
    (Route::PutFile, put_file),
    (Route::RestoreVersion, restore_version),
    (Route::EraseVersion, erase_version),
    (Route::StartUpload, start_upload),
    (Route::Commit, commit),
];
/// `delete`: file deletes.
pub const DELETE: Routes = &[(Route::DeleteFile, delete_file)];
/// `snapshots`: run snapshots, forks (a merge reads and writes bodies) and run records.
pub const SNAPSHOTS: Routes = &[
    (Route::CreateSnapshot, create_snapshot),
    (Route::ListSnapshots, list_snapshots),
    (Route::RestoreSnapshot, restore_snapshot),
    (Route::GetSnapshot, get_snapshot),
    (Route::DeleteSnapshot, delete_snapshot),
    (Route::CreateFork, create_fork),
    (Route::ListForks, list_forks),
    (Route::GetFork, get_fork),
    (Route::DiscardFork, discard_fork),
    (Route::ForkDiff, fork_diff),
    (Route::MergeFork, merge_fork),
    (Route::RebaseFork, rebase_fork),
    (Route::CreateRun, create_run),
    (Route::ListRuns, list_runs),
    (Route::GetRun, get_run),
];
/// `cache`: the RFC 0019 TTL cache.
pub const CACHE: Routes = &[
    (Route::CacheGet, cache_get),
    (Route::CachePut, cache_put),
    (Route::CacheDelete, cache_delete),
];
/// `blob`: RFC 0019 blob storage.
pub const BLOB: Routes = &[
    (Route::BlobList, blob_list),
    (Route::BlobGet, blob_get),
    (Route::BlobPut, blob_put),
    (Route::BlobDelete, blob_delete),
];
/// `presign`: presigned blob URLs.
pub const PRESIGN: Routes = &[(Route::BlobPresign, blob_presign)];

/// Two-step upload URLs this process signed (the body of a large file).
pub static SIGNED_UPLOADS: SignedUrls = SignedUrls {
    prefix: SIGNED_UPLOAD_PREFIX,
    label: "/v1/signed/upload/{tenant}/{workspace}/{uploadId}",
    handler: signed_upload,
    takes_uploads: true,
    check_head: Some(uploads::signed_head),
};
/// Download URLs this process signed (a file over maxFileBytes).
pub static SIGNED_BODIES: SignedUrls = SignedUrls {
    prefix: SIGNED_BODY_PREFIX,
    label: "/v1/signed/body/{key+}",
    handler: signed_body,
    takes_uploads: false,
    check_head: None,
};
/// Presigned blob URLs this process signed.
pub static SIGNED_BLOBS: SignedUrls = SignedUrls {
    prefix: SIGNED_BLOB_PREFIX,
    label: "/v1/signed/blob/{tenant}/{workspace}/{bucket}/{key+}",
    handler: signed_blob,
    takes_uploads: false,
    check_head: None,
};

fn health(_: Call<'_>) -> Reply<'_> {
    Box::pin(async {
        Ok(json_response(
            StatusCode::OK,
            &json!({ "status": "ok", "service": "agent-workspace", "version": env!("CARGO_PKG_VERSION") }),
        ))
    })
}

fn openapi_document(_: Call<'_>) -> Reply<'_> {
    // Built once per process: it depends on the route table alone.
    static DOCUMENT: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    Box::pin(async {
        Ok(json_response(
            StatusCode::OK,
            DOCUMENT.get_or_init(crate::openapi::document),
        ))
    })
}

fn discovery_document(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        Ok(json_response(
            StatusCode::OK,
            &discovery::document_for(&c.app.limits, &c.app.advertised),
        ))
    })
}

fn list_files(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        files::list(c.app.files()?, &who, c.parts).await
    })
}

fn list_changes(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        crate::changes::list(c.app.files()?, &who, c.parts).await
    })
}

fn search(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        crate::search::search(c.app.files()?, &who, c.parts).await
    })
}

fn get_file(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        files::get(c.app.files()?, &who, c.parts, c.tail).await
    })
}

fn put_file(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        if c.body.len() > c.app.max_file_request_bytes() {
            return Ok(c.app.body_too_large());
        }
        files::put(c.app.files()?, &who, c.parts, c.tail, c.body).await
    })
}

fn delete_file(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        files::delete(c.app.files()?, &who, c.parts, c.tail).await
    })
}

fn list_versions(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        versions::history(c.app.files()?, &who, c.parts, c.tail).await
    })
}

fn restore_version(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        versions::restore(c.app.files()?, &who, c.parts, c.tail, c.body).await
    })
}

fn erase_version(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        versions::erase(c.app.files()?, &who, c.parts, c.tail).await
    })
}

fn diff(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        versions::diff(c.app.files()?, &who, c.parts, c.tail).await
    })
}

fn create_snapshot(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        snapshots::create(c.app.files()?, &who, c.body).await
    })
}

fn workspace_events(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        crate::events::open(c.app, &who, c.parts).await
    })
}

fn restore_snapshot(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        snapshots::restore(c.app.files()?, &who, c.parts, c.tail, c.body).await
    })
}

fn list_snapshots(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        snapshots::list(c.app.files()?, &who, c.parts).await
    })
}

fn get_snapshot(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        snapshots::get(c.app.files()?, &who, c.tail).await
    })
}

fn delete_snapshot(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        snapshots::delete(c.app.files()?, &who, c.tail).await
    })
}

fn create_fork(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::create(c.app.files()?, &who, c.body).await
    })
}

fn list_forks(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::list(c.app.files()?, &who, c.parts).await
    })
}

fn get_fork(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::get(c.app.files()?, &who, c.tail).await
    })
}

fn discard_fork(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::discard(c.app.files()?, &who, c.tail).await
    })
}

fn fork_diff(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::diff(c.app.files()?, &who, c.parts, c.tail).await
    })
}

fn merge_fork(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::merge(c.app.files()?, &who, c.parts, c.tail, c.body).await
    })
}

fn rebase_fork(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        forks::rebase(c.app.files()?, &who, c.parts, c.tail, c.body).await
    })
}

fn create_run(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        runs::create(c.app.files()?, &who, c.body).await
    })
}

fn list_runs(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        runs::list(c.app.files()?, &who, c.parts).await
    })
}

fn get_run(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        runs::get(c.app.files()?, &who, c.tail).await
    })
}

fn start_upload(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        uploads::start(c.app.files()?, &who, c.body).await
    })
}

fn commit(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        commits::commit(c.app.files()?, &who, c.parts, c.body).await
    })
}

fn cache_get(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        cache::get(c.app.cache_service()?, &who, c.tail).await
    })
}

fn cache_put(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        cache::put(c.app.cache_service()?, &who, c.tail, c.body).await
    })
}

fn cache_delete(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        cache::delete(c.app.cache_service()?, &who, c.tail).await
    })
}

fn blob_list(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        blob::list(c.app.blob_service()?, &who, c.parts, c.tail).await
    })
}

fn blob_get(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        blob::get(c.app.blob_service()?, &who, c.tail).await
    })
}

fn blob_put(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        // The body is opaque bytes, never read as a scope-naming JSON object
        // (`Route::body_is_opaque`).
        let who = c.identify().await?;
        blob::put(c.app.blob_service()?, &who, c.parts, c.tail, c.body).await
    })
}

fn blob_delete(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        let who = c.identify().await?;
        blob::delete(c.app.blob_service()?, &who, c.tail).await
    })
}

fn blob_presign(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move {
        // A GET URL reads (the row's need), a PUT URL writes: that one also needs
        // `workspace:write`, so a read-only key cannot mint upload URLs.
        let who = c.identify().await?;
        if body_names_put(c.body) {
            Needs::Write.check(who.access)?;
        }
        blob::presign(c.app.blob_service()?, &who, c.tail, c.body).await
    })
}

/// Whether a presign body asks for a PUT URL (a malformed body is refused later).
fn body_names_put(body: &Bytes) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(|m| m != "GET"))
        .unwrap_or(false)
}

fn signed_upload(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move { uploads::signed(c.app.files()?, c.parts, c.tail, c.body).await })
}

fn signed_body(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move { uploads::signed_download(c.app.files()?, c.parts, c.tail).await })
}

fn signed_blob(c: Call<'_>) -> Reply<'_> {
    Box::pin(async move { blob::signed(c.app.blob_service()?, c.parts, c.tail, c.body).await })
}

/// Every function's set by function name, all but `mcp` (whose set lives in
/// `workspace-mcp`). A process serving the whole API (the local server, the contract
/// harness) registers them all; a function's `main` names its own set directly, so it links
/// no other.
pub const BY_FUNCTION: &[(&str, Routes)] = &[
    ("get", GET),
    ("list", LIST),
    ("search", SEARCH),
    ("put", PUT),
    ("delete", DELETE),
    ("snapshots", SNAPSHOTS),
    ("cache", CACHE),
    ("blob", BLOB),
    ("presign", PRESIGN),
    ("workspaces", crate::sessions::ROUTES),
];

/// The set the function named `function` registers (see [`BY_FUNCTION`]).
pub fn of_function(function: &str) -> Option<Routes> {
    BY_FUNCTION
        .iter()
        .find(|(name, _)| *name == function)
        .map(|(_, routes)| *routes)
}
