//! `GET /.well-known/openwop` and `GET /v1/host/capabilities`: each capability family at the
//! document root and again under `capabilities`, with the limits this deployment enforces.

use crate::Advertised;
use serde_json::{json, Value};
use workspace_core::blob::BlobLimits;
use workspace_core::service::commits;
use workspace_core::Limits;

/// The document of a deployment that provides neither blobs nor the cache.
pub fn document(limits: &Limits) -> Value {
    document_for(limits, &Advertised::default())
}

/// The document with the blob and cache families as this deployment provides them; an
/// absent family is advertised unsupported, with the limits a client would meet.
pub fn document_for(limits: &Limits, advertised: &Advertised) -> Value {
    let (b, presign) = advertised
        .blobs
        .clone()
        .unwrap_or_else(|| (BlobLimits::default(), false));
    let c = advertised.cache.unwrap_or_default();
    let families = json!({
        "workspace": {
            "supported": true,
            "versioned": true,
            "maxFileBytes": limits.max_file_bytes,
            "maxFiles": limits.max_files,
            "maxVersions": limits.max_versions,
            "maxUploadBytes": limits.max_upload_bytes,
            "maxCommitOperations": commits::MAX_COMMIT_OPERATIONS,
            "maxCommitBytes": commits::MAX_COMMIT_BYTES,
        },
        "blobStorage": {
            "supported": advertised.blobs.is_some(),
            "buckets": b.buckets,
            "presignSupported": presign,
            "maxObjectBytes": b.max_object_bytes,
            "maxPresignSeconds": b.max_presign_seconds,
        },
        "cache": {
            "supported": advertised.cache.is_some(),
            "maxValueBytes": c.max_value_bytes,
            "maxTtlSeconds": c.max_ttl_seconds,
        },
        "events": events(&advertised.events),
        "search": search(&advertised.semantic),
        "mcp": mcp(advertised.public_url.as_deref()),
    });
    let mut doc = json!({
        "protocol": "openwop",
        "service": "agent-workspace",
        "version": env!("CARGO_PKG_VERSION"),
    });
    if let (Some(root), Some(fams)) = (doc.as_object_mut(), families.as_object()) {
        for (k, v) in fams {
            root.insert(k.clone(), v.clone());
        }
        root.insert("capabilities".to_owned(), families.clone());
    }
    doc
}

/// `workspace.updated`: where it is delivered here (its shape is
/// `schemas/workspace-updated.schema.json`).
fn events(e: &crate::AdvertisedEvents) -> Value {
    let stream = e.stream_retention_seconds.is_some();
    json!({
        "supported": e.event_bridge || stream,
        "source": workspace_core::events::SOURCE,
        "detailType": workspace_core::events::DETAIL_TYPE,
        "eventBridge": e.event_bridge,
        "stream": stream.then_some("/v1/host/workspace/events"),
        "streamRetentionSeconds": e.stream_retention_seconds,
        "webhooks": e.webhooks,
    })
}

/// The MCP protocol versions `/mcp` speaks. Kept with discovery, as data, so the function
/// that answers discovery does not link the MCP server; `shared/mcp` negotiates from this
/// very list, and a test there holds [`MCP_TOOLS`] equal to its tools.
pub const MCP_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The tools `/mcp` lists.
pub const MCP_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "list_directory",
    "create_directory",
    "get_file_info",
    "search_files",
    "delete_file",
    "move_file",
    "edit_file",
    "commit",
    "grep",
    "search",
    "memory",
    "fork_workspace",
    "fork_diff",
    "merge_fork",
    "discard_fork",
    "wait_for_changes",
];

/// Search (`GET /v1/host/workspace/search`, the MCP `search` tool): its modes, freshness
/// and bounds.
fn search(semantic: &Result<String, String>) -> Value {
    use workspace_core::search as s;
    let (modes, semantic) = match semantic {
        Ok(model) => (
            s::Mode::NAMES.to_vec(),
            json!({ "supported": true, "model": model, "minScore": s::MIN_SEMANTIC_SCORE }),
        ),
        Err(why) => (
            s::Mode::NAMES[..3].to_vec(),
            json!({ "supported": false, "reason": why }),
        ),
    };
    json!({
        "supported": true,
        "path": "/v1/host/workspace/search",
        "modes": modes,
        "semantic": semantic,
        "consistency": ["fresh", "eventual"],
        "fresh": "a search reflects every write, delete and restore acknowledged before it began",
        "maxHits": s::MAX_SEARCH_LIMIT,
        "maxQueryBytes": s::MAX_QUERY_BYTES,
        "maxIndexedFileBytes": s::MAX_INDEXED_FILE_BYTES,
        "maxScanBytes": s::MAX_SCAN_BYTES,
        "maxRegexMillis": s::MAX_REGEX_MILLIS,
    })
}

/// The MCP profiles `/mcp` implements: one per protocol revision it speaks
/// (`mcp-<revision>`), newest first.
pub fn mcp_profiles() -> Vec<String> {
    MCP_PROTOCOL_VERSIONS
        .iter()
        .rev()
        .map(|v| format!("mcp-{v}"))
        .collect()
}

/// The MCP server: where (absolute where the public URL is known, else root-relative, in
/// `serverUrls` as the spec's schema has it), how, which profiles, versions and tools.
/// `serverMount` (RFC 0020) is the host publishing its *workflows* as MCP tools; this host
/// has no workflows (its `/mcp` serves the workspace tools), so it says so rather than
/// leaving a client to guess.
fn mcp(public_url: Option<&str>) -> Value {
    let url = public_url.map(|base| format!("{}/mcp", base.trim_end_matches('/')));
    json!({
        "supported": true,
        "path": "/mcp",
        "url": url,
        "serverUrls": [url.as_deref().unwrap_or("/mcp")],
        "profiles": mcp_profiles(),
        "serverMount": { "supported": false },
        "transport": "streamable-http",
        "protocolVersions": MCP_PROTOCOL_VERSIONS,
        "tools": MCP_TOOLS,
    })
}
