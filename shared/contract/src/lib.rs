//! One contract suite for every adapter, in the manner of `object_store`'s shared tests: an
//! adapter's test file calls [`contract_tests!`] with a function that builds a fresh
//! [`harness::Backend`], and gets one `#[tokio::test]` per case, each run through the real
//! HTTP router.

pub mod binary;
pub mod blob;
pub mod cache;
pub mod changes;
pub mod checkpoints;
pub mod commits;
pub mod concurrency;
pub mod erase;
pub mod event_schema;
pub mod faults;
pub mod files;
pub mod forks;
pub mod harness;
pub mod history;
pub mod hostile;
pub mod inline;
pub mod interrupted;
pub mod isolation;
pub mod limits;
pub mod mcp;
pub mod memory;
pub mod merge_model;
pub mod pins;
pub mod points;
pub mod protocol;
pub mod redaction;
pub mod runs;
pub mod scoped;
pub mod search;
pub mod semantic;
pub mod sessions;
pub mod snapshot_model;
pub mod snapshots;
pub mod uploads;

pub use harness::{Backend, Capabilities, Harness};

/// Whether the raw bytes of a store's file hold `text`: as is (a body in a body table), or
/// base64-encoded at any of the three alignments (an inline body inside a JSON record,
/// `workspace_core::model::InlineBody`), judged by the characters every encoding of `text`
/// at that offset shares.
pub fn raw_holds(raw: &[u8], text: &str) -> bool {
    use base64::Engine;
    let text = text.as_bytes();
    let mut forms = vec![text.to_vec()];
    for k in 0..3usize {
        let mut padded = vec![0u8; k];
        padded.extend_from_slice(text);
        let encoded = base64::engine::general_purpose::STANDARD.encode(&padded);
        // Whole 3-byte groups after the padding depend only on `text`.
        let (first, last) = (k.div_ceil(3) * 4, (padded.len() / 3) * 4);
        if last > first {
            forms.push(encoded.as_bytes()[first..last].to_vec());
        }
    }
    forms
        .iter()
        .any(|form| raw.windows(form.len()).any(|w| w == form.as_slice()))
}

/// A body's bytes wherever they are kept: inline in its item, or in the body store
/// (`None`: gone from the store).
pub async fn body_bytes(
    bodies: &dyn workspace_core::ports::Bodies,
    body: &workspace_core::model::BodyRef,
) -> Option<Vec<u8>> {
    match &body.inline {
        Some(bytes) => Some(bytes.0.clone()),
        None => bodies.get(body).await.expect("body read"),
    }
}

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
            commits::commits_apply_all_or_nothing_under_the_put_rules,
            commits::commits_stay_in_their_workspace_and_their_key_s_paths,
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
            mcp::mcp_writes_are_versions_redacted_and_bounded_like_put,
            mcp::mcp_acts_only_on_the_credentials_workspace,
            mcp::mcp_transport_rules,
            history::history_lists_exactly_the_retained_versions,
            history::restore_writes_old_content_as_a_new_version,
            history::diff_shows_added_changed_and_deleted_lines,
            history::hostile_paths_on_history_restore_and_diff_are_400,
            snapshots::snapshot_survives_writes_deletes_and_retention,
            snapshots::snapshots_expire_and_release_their_versions,
            snapshots::unknown_and_foreign_snapshot_ids_are_404,
            runs::a_run_holds_the_workspace_as_it_started,
            checkpoints::checkpoints_are_labelled_listed_and_kept,
            checkpoints::rollback_writes_back_deletes_and_leaves_alone,
            checkpoints::rollback_honours_idempotency_keys,
            forks::forks_read_through_and_write_only_to_themselves,
            forks::fork_diffs_tell_every_state_apart,
            forks::merges_apply_only_what_strategies_and_resolutions_allow,
            forks::merges_retry_by_idempotency_key_and_refuse_bad_requests,
            forks::forks_stay_in_their_workspace_and_go_when_discarded_or_expired,
            forks::fork_tools_fork_compare_merge_and_discard,
            forks::rebases_bring_the_parents_changes_into_the_fork,
            forks::parent_writes_racing_a_merge_are_never_overwritten,
            forks::a_fork_of_a_snapshot_starts_from_it,
            forks::every_route_works_in_a_fork,
            forks::an_expired_fork_s_own_data_is_swept,
            changes::the_change_log_lists_every_commit_newest_first,
            erase::erasing_a_version_removes_its_body_and_leaves_a_tombstone,
            erase::a_version_a_snapshot_holds_is_erased_only_when_forced,
            interrupted::a_forced_erase_whose_kept_copy_delete_fails_is_finished_by_a_retry,
            interrupted::an_interrupted_rollback_is_finished_by_a_retry,
            interrupted::an_interrupted_memory_rename_never_loses_the_file_and_a_retry_finishes_it,
            memory::memory_commands_answer_like_the_reference_implementation,
            memory::memories_stay_in_their_workspace_and_read_only_keys_change_nothing,
            memory::concurrent_memory_edits_are_never_lost,
            runs::runs_are_listed_newest_first_a_page_at_a_time,
            runs::runs_are_scoped_and_expire_with_their_snapshot,
            runs::runs_record_their_owner_and_refuse_other_workspaces,
            pins::snapshots_taken_during_pruning_writes_stay_readable,
            pins::pins_and_commits_compare_and_swap_on_the_head,
            points::what_the_previous_build_stored_keeps_reading_and_expiring,
            points::snapshots_taken_while_writers_run_read_one_state_that_existed,
            binary::binary_bodies_round_trip_every_byte_value,
            inline::bodies_at_the_threshold_are_inline_and_one_byte_over_are_not,
            inline::if_match_naming_the_head_writes_and_a_stale_one_changes_nothing,
            inline::erasing_an_inline_version_leaves_its_body_in_no_item,
            inline::what_the_build_before_inline_bodies_stored_reads_and_writes_on,
            uploads::uploads_commit_files_beyond_the_inline_limit,
            uploads::uploads_with_other_bytes_than_declared_are_400_and_commit_nothing,
            uploads::expired_upload_urls_are_refused,
            uploads::upload_commits_follow_the_put_rules,
            uploads::bad_upload_requests_are_refused_and_change_nothing,
            uploads::uploaded_text_is_redacted_like_an_inline_put,
            uploads::large_files_read_through_download_urls_pinned_to_their_version,
            scoped::scoped_keys_read_and_write_only_their_paths,
            scoped::scoped_keys_see_only_their_paths_in_changes_snapshots_and_runs,
            scoped::hostile_paths_never_escape_a_key_scope,
            scoped::scoped_keys_use_tools_and_memory_only_within_their_paths,
            search::keyword_search_ranks_stems_and_shows_matching_lines,
            search::exact_and_regex_modes_match_literally_and_stay_bounded,
            search::search_filters_pages_and_reads_snapshots,
            search::skipped_files_are_reported_and_secrets_are_never_found,
            search::search_never_reaches_another_workspace_or_a_key_s_hidden_paths,
            search::search_sees_every_acknowledged_write_delete_and_restore,
            search::searches_racing_writers_see_every_acknowledged_write,
            search::search_after_a_backlog_over_the_catch_up_bound_misses_nothing,
            search::a_regex_search_past_its_time_bound_stops_with_a_clear_error,
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

/// Expands to one test per case of search by meaning for the backend `make` builds, each on
/// a harness with the embedding model loaded ([`Harness::with_semantic`]).
#[macro_export]
macro_rules! semantic_tests {
    ($make:expr) => {
        $crate::semantic_tests!(@cases $make;
            a_write_is_found_by_meaning_by_the_very_next_search,
            a_markdown_section_is_the_passage_that_matches,
            an_edit_re_embeds_only_the_passages_it_changed,
            a_snapshot_is_searched_by_meaning_as_it_was,
            no_passage_of_another_workspace_or_a_hidden_path_ever_ranks,
            a_redacted_secret_is_never_embedded,
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        mod semantic {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let harness = $crate::Harness::with_semantic($make().await).await;
                    $crate::semantic::$case(harness).await;
                }
            )*
        }
    };
}

/// Expands to one test per RFC 0019 case (blob storage, presigning, the cache) for the
/// backend `make` builds: `make()` returns a [`Backend`] and its [`Capabilities`].
#[macro_export]
macro_rules! capability_tests {
    ($make:expr) => {
        $crate::capability_tests!(@cases $make;
            cache::hit_miss_overwrite_and_delete,
            cache::expiry_is_visible_within_a_second_and_never_served_after,
            cache::oversize_values_and_long_ttls_are_refused,
            cache::bad_keys_and_bodies_are_400,
            cache::cache_is_invisible_to_other_tenants_and_workspaces,
            cache::cache_values_are_redacted,
            cache::registered_secrets_are_redacted_from_cached_values,
            blob::every_byte_value_round_trips,
            blob::content_type_etag_and_overwrite,
            blob::list_pages_with_prefix_and_cursor,
            blob::unknown_buckets_missing_objects_and_oversize_objects,
            blob::blob_keys_s3_accepts_are_accepted_and_unsafe_ones_refused,
            blob::blobs_are_invisible_to_other_tenants_and_workspaces,
            blob::presigned_get_and_put_work_before_expiry,
            blob::presigned_urls_are_bounded,
            blob::presign_is_scoped_and_checked,
            blob::discovery_advertises_the_real_limits,
            scoped::routes_without_paths_refuse_scoped_keys,
        );
    };
    (@cases $make:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let (backend, caps) = $make().await;
                let harness = $crate::Harness::with_capabilities(backend, caps).await;
                $crate::$module::$case(harness).await;
            }
        )*
    };
}

/// The merge's fault-injection case: `points` of its steps (spread over all of them; the
/// emulated AWS backend is slow enough that every step of a merge is too many), each
/// broken in the three ways.
#[macro_export]
macro_rules! merge_fault_tests {
    ($make:expr, $points:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn every_crash_point_of_a_merge_finishes_on_retry() {
            $crate::faults::every_crash_point_of_a_merge_finishes_on_retry($make, $points).await;
        }
    };
}

/// A merge's atomicity on the backend `make` builds (with its recovery): a parent write
/// racing a merge makes it apply nothing, and a merge larger than one commit of the store
/// (on DynamoDB, one `TransactWriteItems`) broken at its batch commits and `points` more
/// of its steps finishes on retry, each change once.
#[macro_export]
macro_rules! merge_atomicity_tests {
    ($make:expr, $points:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn a_merge_racing_a_parent_write_applies_nothing() {
            $crate::faults::a_merge_racing_a_parent_write_applies_nothing($make).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn a_merge_over_one_transaction_finishes_on_retry() {
            $crate::faults::a_merge_over_one_transaction_finishes_on_retry($make, $points).await;
        }
    };
}

/// For the stores that apply a whole merge in one commit (memory, redb): readers never see
/// part of one.
#[macro_export]
macro_rules! one_commit_merge_tests {
    ($make:expr) => {
        $crate::contract_tests!(@cases $make;
            forks::readers_never_see_part_of_a_merge,
        );
    };
}

/// The fault-injection case for the backend `make` builds, with its recovery (sweeper).
#[macro_export]
macro_rules! fault_tests {
    ($make:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn every_crash_point_of_every_commit_keeps_the_invariants() {
            $crate::faults::every_crash_point_of_every_commit_keeps_the_invariants($make).await;
        }
    };
}
