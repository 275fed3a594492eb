//! One contract suite for every adapter, in the manner of `object_store`'s shared tests: an
//! adapter's test file calls [`contract_tests!`] with a function that builds a fresh
//! [`harness::Backend`], and gets one `#[tokio::test]` per case, each run through the real
//! HTTP router.

pub mod concurrency;
pub mod files;
pub mod harness;
pub mod hostile;
pub mod isolation;
pub mod limits;
pub mod protocol;
pub mod redaction;
pub mod sessions;

pub use harness::{Backend, Harness};

/// Expands to one test per contract case for the backend `make` builds.
#[macro_export]
macro_rules! contract_tests {
    ($make:expr) => {
        $crate::contract_tests!(@cases $make;
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
            limits::idempotency_keys_expire_after_a_day,
            concurrency::concurrent_idempotent_retries_make_one_version,
            isolation::isolation_holds_on_every_endpoint,
            isolation::tenant_wide_credentials_stay_in_their_tenant,
            isolation::naming_another_scope_is_forbidden,
            concurrency::concurrent_if_match_writes_have_one_winner,
            concurrency::unconditional_concurrent_writes_all_land,
            protocol::requests_without_a_known_key_are_401,
            protocol::discovery_advertises_families_at_root_and_under_capabilities,
            protocol::unknown_routes_and_methods_get_the_envelope,
            protocol::encoded_and_raw_slashes_name_the_same_file,
            protocol::bad_paths_are_400_and_change_nothing,
            protocol::bad_bodies_and_headers_are_400_and_change_nothing,
            protocol::error_envelope_is_flat_everywhere,
            protocol::secrets_are_redacted_before_storage,
            protocol::read_only_credentials_read_but_never_write,
            redaction::registered_secrets_are_redacted_for_their_tenant_only,
        );
    };
    (@cases $make:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let harness = $crate::Harness::new($make().await).await;
                $crate::$module::$case(harness).await;
            }
        )*
    };
}
