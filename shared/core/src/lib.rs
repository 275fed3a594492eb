//! The workspace domain. Read `service/` for the rules (`write.rs`: preconditions, lineage,
//! quotas, retention, idempotency; one file per operation beside it) and `ports.rs` for what
//! adapters provide.

pub mod blob;
pub mod cache;
pub mod capability;
pub mod changes;
pub mod error;
pub mod events;
pub mod forks;
pub mod globs;
pub mod keys;
pub mod limits;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod path;
pub mod path_scope;
pub mod ports;
pub mod presign;
pub mod redact;
pub mod scope;
pub mod search;
pub mod secrets;
pub mod service;
pub mod sessions;
pub mod signed_url;

pub use error::{Result, WorkspaceError};
pub use limits::Limits;
pub use model::{FileMeta, FilePage, StoredFile};
pub use path::{FilePath, PathPrefix};
pub use path_scope::PathScope;
pub use scope::{Access, Identity, Scope, TenantId, WorkspaceId};
pub use service::{PutRequest, WorkspaceService};
