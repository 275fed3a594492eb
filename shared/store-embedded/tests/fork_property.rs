//! The merge model (`workspace_contract::merge_model`) on the embedded store (redb).

use proptest::prelude::*;
use std::sync::Arc;
use workspace_contract::merge_model::{op, run_case, CONTENTS, PATHS, STRATEGIES};
use workspace_contract::{Backend, Harness};
use workspace_store_embedded::secrets::SecretFile;
use workspace_store_embedded::EmbeddedStore;

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_merge_leaves_the_workspace_as_the_model_says(
        seed in proptest::collection::vec((0..PATHS.len(), 0..CONTENTS.len()), 0..4),
        ops in proptest::collection::vec(op(), 0..10),
        strategy in 0..STRATEGIES.len(),
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
                run_case(Harness::new(backend).await, seed, ops, STRATEGIES[strategy]).await
            });
    }
}
