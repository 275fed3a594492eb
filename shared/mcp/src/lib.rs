//! The workspace as MCP tools ("workspace-tool"). [`protocol`] answers JSON-RPC messages
//! statelessly (Streamable HTTP `POST /mcp` through `workspace-http`, and stdio through
//! `workspace-local mcp`); [`tools`] implements the tools over `WorkspaceService`, the same
//! service the HTTP file routes call. [`paths`] maps tool paths (`/workspace/...`) onto the
//! workspace's path rules; [`tree`] derives directories from the flat namespace.

pub mod completion;
pub mod http;
pub mod paths;
pub mod prompts;
pub mod protocol;
pub mod resources;
pub mod sessions;
pub mod tools;
pub mod tree;

pub use protocol::{handle_message, handle_payload, handle_payload_on, Link, Reply};
pub use tools::Workspace;

/// The name the server reports in `initialize` and its health check.
pub const SERVER_NAME: &str = "workspace-tool";

/// The health document of the MCP function / server.
pub fn health() -> serde_json::Value {
    serde_json::json!({ "status": "ok", "service": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") })
}
