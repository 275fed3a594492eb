//! The shared contract suite against the in-memory adapter.

use std::sync::Arc;
use workspace_contract::{contract_tests, Backend};
use workspace_store_memory::{MemoryBodies, MemoryMeta, MemorySecrets};

async fn backend() -> Backend {
    Backend {
        meta: Arc::new(MemoryMeta::default()),
        bodies: Arc::new(MemoryBodies::default()),
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    }
}

contract_tests!(backend);
workspace_contract::semantic_tests!(backend);

/// The RFC 0019 cases (blobs, presigning, cache) on the in-memory ports.
async fn with_capabilities() -> (Backend, workspace_contract::Capabilities) {
    let caps = workspace_contract::Capabilities {
        cache: Arc::new(workspace_store_memory::MemoryCache::default()),
        blobs: Arc::new(workspace_store_memory::MemoryBlobs::default()),
    };
    (backend().await, caps)
}

mod capabilities {
    use super::with_capabilities;
    workspace_contract::capability_tests!(with_capabilities);
}

/// A deployment without the RFC 0019 ports says so: discovery advertises them unsupported
/// and their routes answer 501 `capability_not_provided`, never a 404 or a 500.
#[tokio::test]
async fn without_the_ports_blob_and_cache_are_not_provided() {
    use http::Method;
    use workspace_contract::harness::KEY_A;
    let h = workspace_contract::Harness::new(backend().await).await;
    let doc = h
        .call(Method::GET, "/v1/host/capabilities", None)
        .send()
        .await
        .assert_ok();
    assert_eq!(doc["blobStorage"]["supported"], false);
    assert_eq!(doc["blobStorage"]["presignSupported"], false);
    assert_eq!(doc["cache"]["supported"], false);
    for (m, uri) in [
        (Method::GET, "/v1/host/cache/k"),
        (Method::PUT, "/v1/host/cache/k"),
        (Method::GET, "/v1/host/blob/default"),
        (Method::GET, "/v1/host/blob/default/k"),
        (Method::POST, "/v1/host/blob/default/presign"),
    ] {
        h.call(m, uri, Some(KEY_A))
            .body("{}")
            .send()
            .await
            .assert_error(501, "capability_not_provided");
    }
    // Signed URLs exist only where a local signer serves them.
    h.call(Method::GET, "/v1/signed/blob/acme/main/default/k", None)
        .send()
        .await
        .assert_error(404, "not_found");
}

/// Crash points: the memory stores outlive the "process" (the harness), and the sweep is
/// the one the local server runs at start.
async fn with_recovery() -> (Backend, workspace_contract::faults::Recovery) {
    let meta = Arc::new(MemoryMeta::default());
    let bodies = Arc::new(MemoryBodies::default());
    let (m, b) = (meta.clone(), bodies.clone());
    let recovery = workspace_contract::faults::Recovery {
        sweep: Box::new(move || {
            let (m, b) = (m.clone(), b.clone());
            Box::pin(async move {
                workspace_core::service::sweep::sweep_unreferenced_bodies(
                    m.as_ref(),
                    b.as_ref(),
                    b.as_ref(),
                )
                .await
            })
        }),
        inventory: bodies.clone(),
        events: Some(meta.clone()),
    };
    let backend = Backend {
        meta,
        bodies,
        secrets: Arc::new(MemorySecrets::default()),
        guard: Box::new(()),
    };
    (backend, recovery)
}

mod faults {
    use super::with_recovery;
    workspace_contract::fault_tests!(with_recovery);
    workspace_contract::merge_fault_tests!(with_recovery, usize::MAX);
    workspace_contract::merge_atomicity_tests!(with_recovery, 8);
}

mod one_commit {
    use super::backend;
    workspace_contract::one_commit_merge_tests!(backend);
}

#[tokio::test]
async fn snapshots_and_forks_cost_the_same_store_calls_at_any_size() {
    workspace_contract::points::snapshots_and_forks_cost_the_same_store_calls_at_any_size(
        backend().await,
    )
    .await;
}
