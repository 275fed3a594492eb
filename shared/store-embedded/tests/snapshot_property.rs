//! Issue 46's property on the embedded store (redb): every read through every live snapshot
//! and fork equals the model (`workspace_contract::snapshot_model`).

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::snapshot_model::{harness, op, run_case};
use workspace_contract::Backend;
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_read_through_every_live_snapshot_and_fork_equals_the_model(
        ops in proptest::collection::vec(op(), 1..24),
    ) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let dir = tempfile::tempdir().expect("temp dir");
                let store = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
                let backend = Backend {
                    meta: store.clone(),
                    bodies: store,
                    secrets: Arc::new(SecretFile::new(dir.path())),
                    guard: Box::new(dir),
                };
                run_case(harness(backend).await, ops).await
            });
    }
}
