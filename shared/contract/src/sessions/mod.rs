//! Contract cases for the session service (`SessionService`) (`/workspaces`), run on
//! every backend through the real router. An adapter's test file calls
//! [`sessions_contract_tests!`](crate::sessions_contract_tests) with a function that
//! builds a [`SessionBackend`].

pub mod artifacts;
pub mod lifecycle;
pub mod listing;
pub mod workspaces;

use crate::harness::{Harness, Reply};
use crate::Backend;
use http::Method;
use serde_json::{json, Value};
use std::sync::Arc;
use workspace_core::ports::RandomIds;
use workspace_core::sessions::ports::{BodyEraser, RegistryOf, SessionStore};
use workspace_core::sessions::token::TokenKey;
use workspace_core::sessions::{SessionLimits, SessionService};
use workspace_core::Scope;

/// The adapters under test: the file stores plus the session store and body eraser.
pub struct SessionBackend {
    pub files: Backend,
    pub sessions: Arc<dyn SessionStore>,
    pub eraser: Arc<dyn BodyEraser>,
    /// The RFC 0019 ports, so a deleted workspace's blobs and cache entries are checked too.
    pub caps: crate::Capabilities,
    /// What erases their data (and anything else per workspace) besides `eraser`.
    pub more_erasers: Vec<Arc<dyn BodyEraser>>,
}

/// Small artifact cap so the 413 is cheap to reach.
pub const MAX_ARTIFACT_BYTES: u64 = 2048;

pub struct SessionHarness {
    pub h: Harness,
    pub svc: Arc<SessionService>,
    pub store: Arc<dyn SessionStore>,
}

impl std::ops::Deref for SessionHarness {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.h
    }
}

impl SessionHarness {
    pub async fn new(b: SessionBackend) -> Self {
        let bodies = b.files.bodies.clone();
        let mut erasers = vec![b.eraser];
        erasers.extend(b.more_erasers);
        // A discarded fork is erased like a deleted workspace.
        let scope_eraser = Arc::new(workspace_core::sessions::lifecycle::ScopeData {
            store: b.sessions.clone(),
            erasers: erasers.clone(),
        });
        let h = Harness::with_capabilities_and_eraser(b.files, b.caps, Some(scope_eraser)).await;
        let svc = SessionService::new(
            b.sessions.clone(),
            bodies,
            erasers,
            h.clock.clone(),
            Arc::new(RandomIds),
            TokenKey::random(),
            SessionLimits {
                max_artifact_bytes: MAX_ARTIFACT_BYTES,
                purge_after_days: 90,
            },
        );
        let svc = Arc::new(svc);
        let s = svc.clone();
        let registry = Arc::new(RegistryOf(b.sessions.clone()));
        Self {
            h: h.map_app(move |app| app.with_sessions(s).with_registry(registry)),
            svc,
            store: b.sessions,
        }
    }

    pub async fn post(&self, key: &str, uri: &str, body: &Value) -> Reply {
        self.call(Method::POST, uri, Some(key))
            .json(body)
            .send()
            .await
    }

    pub async fn get_uri(&self, key: &str, uri: &str) -> Reply {
        self.call(Method::GET, uri, Some(key)).send().await
    }

    pub async fn delete_uri(&self, key: &str, uri: &str) -> Reply {
        self.call(Method::DELETE, uri, Some(key)).send().await
    }

    /// Creates a workspace and returns its id.
    pub async fn create(&self, key: &str, body: Value) -> String {
        let r = self.post(key, "/workspaces", &body).await;
        r.assert_ok()["workspaceId"]
            .as_str()
            .expect("workspaceId")
            .to_owned()
    }

    pub async fn general(&self, key: &str) -> String {
        self.create(key, json!({ "workspaceScope": "general" }))
            .await
    }

    /// Uploads a text artifact; returns the reply.
    pub async fn upload(&self, key: &str, ws: &str, body: Value) -> Reply {
        self.post(key, &format!("/workspaces/{ws}/artifacts"), &body)
            .await
    }

    pub async fn tool_output(&self, key: &str, ws: &str, session: &str, text: &str) -> Value {
        use base64::Engine;
        self.upload(
            key,
            ws,
            json!({
                "sessionId": session,
                "taskId": "t1",
                "artifactType": "tool_output",
                "contentBase64": base64::engine::general_purpose::STANDARD.encode(text),
            }),
        )
        .await
        .assert_ok()
    }

    pub fn scope_of(&self, ws: &str) -> Scope {
        Scope::parse("acme", ws).expect("scope")
    }

    /// (metadata items, bodies) left under the workspace's scope in the raw stores.
    pub async fn remains(&self, ws: &str) -> (u64, u64) {
        self.svc.remains(&self.scope_of(ws)).await.expect("remains")
    }
}

pub fn history(messages: &[(&str, &str)]) -> Value {
    Value::Array(
        messages
            .iter()
            .enumerate()
            .map(|(i, (role, content))| {
                json!({
                    "role": role,
                    "content": content,
                    "timestamp": format!("2026-01-01T00:00:{i:02}Z"),
                    "messageId": format!("m{i}"),
                })
            })
            .collect(),
    )
}

/// Expands to one test per session contract case for the backend `make` builds.
#[macro_export]
macro_rules! sessions_contract_tests {
    ($make:expr) => {
        $crate::sessions_contract_tests!(@cases $make;
            workspaces::local_create_is_idempotent_and_general_always_new,
            workspaces::twenty_concurrent_local_creates_make_one_workspace,
            workspaces::workspace_scope_is_validated_and_nothing_is_created,
            workspaces::workspaces_get_list_page_and_open_to_the_files_api,
            workspaces::naming_another_tenant_or_user_is_forbidden,
            workspaces::other_tenants_and_users_see_nothing_on_every_route,
            workspaces::hostile_ids_are_refused_and_change_nothing,
            artifacts::artifacts_of_all_three_types_upload_get_and_list,
            artifacts::bad_uploads_are_refused_and_store_nothing,
            artifacts::session_history_keeps_exactly_one_per_session,
            artifacts::artifact_text_is_redacted_and_uploads_bump_last_active,
            listing::sessions_are_most_recent_first_with_checked_limits,
            listing::paging_250_sessions_by_100_is_three_pages_without_gaps,
            listing::forged_and_foreign_tokens_are_refused,
            listing::history_and_session_delete,
            lifecycle::delete_workspace_leaves_nothing_behind,
            lifecycle::an_interrupted_delete_is_finished_by_the_next,
            lifecycle::deleting_a_workspace_with_forks_needs_force,
            lifecycle::purge_respects_the_cutoff_and_dry_run_changes_nothing,
        );
    };
    (@cases $make:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let harness = $crate::sessions::SessionHarness::new($make().await).await;
                $crate::sessions::$module::$case(harness).await;
            }
        )*
    };
}
