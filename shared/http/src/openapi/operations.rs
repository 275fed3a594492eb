//! One operation per route: what it takes and what it answers. The match is exhaustive, so
//! a route added to the table is not built until it is described here.

use super::schemas::{parameter, response, schema, ERRORS};
use crate::routes::{Route, RouteSpec};
use serde_json::{json, Map, Value};

pub fn tags() -> Value {
    json!([
        { "name": "files", "description": "Versioned files: read, write, list, delete." },
        { "name": "history", "description": "Versions, diffs, restore, erase, the change log." },
        { "name": "snapshots", "description": "Snapshots, checkpoints, rollback, run records." },
        { "name": "forks", "description": "Forks for sub-agents: a private copy, a three-way diff, a merge back." },
        { "name": "uploads", "description": "Two-step uploads of files over maxFileBytes." },
        { "name": "agents", "description": "MCP tools, Claude's memory tool, the event stream." },
        { "name": "blobs", "description": "openwop RFC 0019 blob storage and presigned URLs." },
        { "name": "cache", "description": "openwop RFC 0019 TTL cache." },
        { "name": "sessions", "description": "Workspaces, artifacts and sessions of agent sessions." },
        { "name": "service", "description": "Health, discovery, this document." },
        { "name": "console", "description": "The web console: a page and its assets, no key needed." },
    ])
}

/// An operation under construction.
struct Op {
    id: &'static str,
    tag: &'static str,
    summary: &'static str,
    params: Vec<Value>,
    body: Option<Value>,
    ok: Vec<(&'static str, Value)>,
}

fn op(id: &'static str, tag: &'static str, summary: &'static str) -> Op {
    Op {
        id,
        tag,
        summary,
        params: Vec::new(),
        body: None,
        ok: Vec::new(),
    }
}

fn json_body(s: Value) -> Value {
    json!({ "application/json": { "schema": s } })
}

impl Op {
    fn params(mut self, names: &[&str]) -> Self {
        self.params.extend(names.iter().map(|n| parameter(n)));
        self
    }

    fn query(mut self, name: &str, schema: Value, description: &str) -> Self {
        self.params.push(json!({
            "name": name, "in": "query", "required": false,
            "description": description, "schema": schema,
        }));
        self
    }

    fn required_query(mut self, name: &str, schema: Value, description: &str) -> Self {
        self.params.push(json!({
            "name": name, "in": "query", "required": true,
            "description": description, "schema": schema,
        }));
        self
    }

    /// Links from the answer added last (what a client, or a stateful test, does next).
    fn links(mut self, links: Value) -> Self {
        if let Some((_, last)) = self.ok.last_mut() {
            last["links"] = links;
        }
        self
    }

    /// A JSON request body.
    fn body(mut self, s: Value) -> Self {
        self.body = Some(json_body(s));
        self
    }

    /// A JSON answer with `status`.
    fn answers(mut self, status: &'static str, description: &str, s: Value) -> Self {
        self.ok.push((
            status,
            json!({ "description": description, "content": json_body(s) }),
        ));
        self
    }

    /// A JSON answer carrying the version's `ETag`.
    fn answers_tagged(mut self, status: &'static str, description: &str, s: Value) -> Self {
        self.ok.push((
            status,
            json!({
                "description": description,
                "headers": { "ETag": { "$ref": "#/components/headers/ETag" } },
                "content": json_body(s),
            }),
        ));
        self
    }

    fn empty(mut self, status: &'static str, description: &str) -> Self {
        self.ok
            .push((status, json!({ "description": description })));
        self
    }

    fn raw(mut self, status: &'static str, description: &str, media: &str) -> Self {
        self.ok.push((
            status,
            json!({ "description": description,
                    "content": { media: { "schema": { "type": "string", "format": "binary" } } } }),
        ));
        self
    }

    /// One of the console's assets, in whichever of its media types it is.
    fn asset(mut self, status: &'static str, description: &str) -> Self {
        let binary = json!({ "schema": { "type": "string", "format": "binary" } });
        let content: Map<String, Value> = [
            "text/html; charset=utf-8",
            "text/javascript; charset=utf-8",
            "text/css; charset=utf-8",
            "text/plain; charset=utf-8",
            "image/svg+xml",
            "image/png",
            "image/x-icon",
        ]
        .iter()
        .map(|m| ((*m).to_owned(), binary.clone()))
        .collect();
        self.ok.push((
            status,
            json!({ "description": description, "content": content }),
        ));
        self
    }

    /// A server-sent event stream (each event validated as `{id, event, data}`).
    fn events(mut self, status: &'static str, description: &str) -> Self {
        self.ok.push((
            status,
            json!({ "description": description,
                    "content": { "text/event-stream": { "schema": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string" },
                            "event": { "const": "workspace.updated" },
                            "data": { "type": "string", "contentMediaType": "application/json" },
                        },
                    } } } }),
        ));
        self
    }

    fn build(self, spec: &RouteSpec) -> Value {
        let mut params = path_parameters(spec.pattern);
        params.extend(self.params);
        if !spec.public() && !matches!(spec.function, "workspaces") {
            params.push(parameter("WorkspaceId"));
        }
        let mut responses = Map::new();
        for (status, r) in self.ok {
            responses.insert(status.to_owned(), r);
        }
        for (status, name) in ERRORS {
            responses
                .entry((*status).to_owned())
                .or_insert_with(|| response(name));
        }
        responses.insert("default".to_owned(), response("Unexpected"));
        let mut v = json!({
            "operationId": self.id,
            "tags": [self.tag],
            "summary": self.summary,
            "parameters": params,
            "responses": responses,
            "x-function": spec.function,
        });
        if spec.public() {
            v["security"] = json!([]);
        }
        if let Some(content) = self.body {
            v["requestBody"] = json!({ "required": true, "content": content });
        }
        v
    }
}

/// The path parameters of an API Gateway pattern (`{name}`, `{name+}`).
fn path_parameters(pattern: &str) -> Vec<Value> {
    pattern
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            let greedy = name.ends_with('+');
            let name = name.trim_end_matches('+');
            if name == "path" {
                return parameter("Path");
            }
            let mut p = json!({
                "name": name, "in": "path", "required": true,
                "description": if greedy { "The rest of the path; may hold `/`." } else { "One path segment." },
                "schema": { "type": "string", "minLength": 1 },
            });
            if name == "bucket" {
                p["description"] = json!("A bucket this deployment configures (`default` unless set).");
                p["example"] = json!("default");
            }
            p
        })
        .collect()
}

fn limit_and_token(o: Op) -> Op {
    o.params(&["Limit", "NextToken"])
}

/// The operation of one row of the route table.
pub fn describe(spec: &RouteSpec) -> Value {
    let o = match spec.route {
        Route::Health => op("health", "service", "Liveness of this deployment.")
            .answers("200", "Up.", schema("Health")),
        Route::Discovery => op("discovery", "service", "openwop discovery: families, limits, the MCP endpoint.")
            .answers("200", "The discovery document.", schema("Discovery")),
        Route::Capabilities => op("capabilities", "service", "The discovery document under /v1/host.")
            .answers("200", "The discovery document.", schema("Discovery")),
        Route::OpenApi => op("openapi", "service", "This document.")
            .answers("200", "The OpenAPI 3.1 document.", schema("Object")),
        Route::ConsolePage => op("consolePage", "console", "The web console's page (open it in a browser).")
            .raw("200", "The page.", "text/html; charset=utf-8")
            .empty("304", "Not modified since the ETag in If-None-Match."),
        Route::ConsoleAsset => op("consoleAsset", "console", "One of the console's assets (`assets/<build>/<name>`, cached for a year) or the page as `index.html`.")
            .asset("200", "The asset.")
            .empty("304", "Not modified since the ETag in If-None-Match."),
        Route::ListFiles => limit_and_token(
            op("listFiles", "files", "List live files (no content), sorted by path, a page at a time.")
                .params(&["Prefix", "SnapshotQuery"]),
        )
        .answers("200", "A page of files.", schema("FileList")),
        Route::ListChanges => limit_and_token(
            op("listChanges", "history", "The change log: who changed what, newest first.")
                .params(&["Prefix"])
                .query("since", json!({"type": "string", "format": "date-time"}), "At or after this time.")
                .query("until", json!({"type": "string", "format": "date-time"}), "Before this time.")
                .query("principal", json!({"type": "string"}), "Only this principal's changes."),
        )
        .answers("200", "A page of changes.", schema("ChangeList")),
        Route::Search => limit_and_token(
            op("search", "files", "Search the workspace: ranked keywords (stemmed, BM25), an exact substring, a bounded regex, or by meaning (semantic, hybrid). Fresh by default: every acknowledged write is reflected, and each hit names the exact version it matched.")
                .required_query("q", json!({"type": "string", "minLength": 1, "maxLength": 1024}), "What to search for.")
                .query("mode", json!({"type": "string", "enum": workspace_core::search::Mode::NAMES, "default": "keyword"}), "keyword: words, stemmed, ranked by BM25; exact: the literal substring; regex: a regular expression (bounded in bytes scanned and time); semantic: passages by the cosine similarity of their embedding to the query's; hybrid: keyword and semantic ranks fused (reciprocal rank fusion). semantic and hybrid answer 503 where the embedding model is not installed (discovery's search.semantic says so).")
                .query("ignoreCase", json!({"type": "boolean", "default": false}), "exact and regex: match regardless of case.")
                .params(&["Prefix"])
                .query("glob", json!({"type": "string", "maxLength": 256}), "Only paths matching this glob (`*` within a segment, `**` across).")
                .params(&["SnapshotQuery"])
                .query("consistency", json!({"type": "string", "enum": ["fresh", "eventual"], "default": "fresh"}), "eventual: answer from the index as it is, reporting how many changed paths it has not applied (index.pending)."),
        )
        .answers("200", "A page of hits, best first, and how complete the index is.", schema("SearchResults"))
        .answers("503", "semantic or hybrid without the embedding model: the message says how to install it.", schema("Error")),
        Route::GetFile => op("getFile", "files", "Read a file (or a past version, or through a snapshot).")
            .query("version", json!({"type": "integer", "minimum": 1}), "A version of the live lineage.")
            .params(&["SnapshotQuery"])
            .answers_tagged("200", "The file with its content.", schema("File")),
        Route::PutFile => op("putFile", "files", "Write a new version (or commit an upload).")
            .params(&["IfMatch", "IfNoneMatch", "IdempotencyKey"])
            .body(schema("PutFile"))
            .answers_tagged("200", "The stored file.", schema("File"))
            .links(json!({
                "GetFile": { "operationId": "getFile", "parameters": { "path": "$request.path.path" } },
                "UpdateFile": { "operationId": "putFile", "parameters": {
                    "path": "$request.path.path", "header.If-Match": "$response.header.ETag" } },
                "DeleteFile": { "operationId": "deleteFile", "parameters": {
                    "path": "$request.path.path", "header.If-Match": "$response.header.ETag" } },
                "History": { "operationId": "listVersions", "parameters": { "path": "$request.path.path" } },
                "Diff": { "operationId": "diff", "parameters": { "path": "$request.path.path", "query.from": "1" } },
            })),
        Route::DeleteFile => op("deleteFile", "files", "Delete the live file (history stays).")
            .params(&["IfMatch"])
            .empty("204", "Deleted."),
        Route::Mcp => op("mcp", "agents", "MCP Streamable HTTP (JSON-RPC): the workspace as tools and resources. On the local server an initialize answer carries an Mcp-Session-Id.")
            .body(schema("JsonRpc"))
            .answers("200", "The JSON-RPC answer.", schema("JsonRpc"))
            .empty("202", "A notification: nothing to answer.")
            .answers(
                "400",
                "A message that is not JSON-RPC (a JSON-RPC error), or a bad request (the envelope).",
                json!({ "anyOf": [schema("JsonRpc"), schema("Error")] }),
            ),
        Route::McpStream => op("mcpStream", "agents", "An MCP session's notifications as server-sent events (Mcp-Session-Id; resume with Last-Event-ID). The local server; 405 on AWS, where there are no sessions.")
            .events("200", "Server-sent events: `id` (a change-log position), `data` (a JSON-RPC notification: notifications/resources/updated or list_changed)."),
        Route::McpEnd => op("mcpEnd", "agents", "End an MCP session (Mcp-Session-Id). The local server; 405 on AWS.")
            .empty("204", "Ended."),
        Route::McpHealth => op("mcpHealth", "agents", "The MCP function's health.")
            .answers("200", "Up.", schema("Health")),
        Route::Memory => op("memory", "agents", "One call of Claude's memory tool over the workspace's /memories.")
            .body(schema("MemoryCommand"))
            .answers("200", "The text for the tool_result.", schema("MemoryAnswer")),
        Route::CacheGet => op("cacheGet", "cache", "Read a cache entry.")
            .answers("200", "The entry.", schema("CacheEntry")),
        Route::CachePut => op("cachePut", "cache", "Store a JSON value with a lifetime.")
            .body(schema("PutCache"))
            .answers("200", "Stored.", schema("CacheStored")),
        Route::CacheDelete => op("cacheDelete", "cache", "Remove a cache entry.")
            .empty("204", "Removed."),
        Route::BlobList => op("blobList", "blobs", "List objects of a bucket.")
            .params(&["Prefix"])
            .query("cursor", json!({"type": "string"}), "The previous page's nextCursor.")
            .params(&["Limit"])
            .answers("200", "A page of objects.", schema("BlobList")),
        Route::BlobGet => op("blobGet", "blobs", "Read an object's bytes.")
            .raw("200", "The bytes, with their content type and ETag.", "*/*"),
        Route::BlobPut => {
            let mut o = op("blobPut", "blobs", "Store an object (raw bytes).")
                .answers("200", "Stored.", schema("BlobStored"));
            o.body = Some(json!({ "*/*": { "schema": { "type": "string", "format": "binary" } } }));
            o
        }
        Route::BlobDelete => op("blobDelete", "blobs", "Remove an object.")
            .empty("204", "Removed."),
        Route::BlobPresign => op("blobPresign", "blobs", "A URL to GET or PUT an object without the key.")
            .body(schema("Presign"))
            .answers("200", "The URL.", schema("PresignedUrl")),
        Route::ListVersions => limit_and_token(
            op("listVersions", "history", "A path's retained versions, newest first (tombstones too)."),
        )
        .answers("200", "A page of versions.", schema("VersionList")),
        Route::RestoreVersion => op("restoreVersion", "history", "Write a past version back as a new version.")
            .params(&["IfMatch", "IdempotencyKey"])
            .body(schema("Restore"))
            .answers_tagged("200", "The new version.", schema("File")),
        Route::EraseVersion => op("eraseVersion", "history", "Erase a past version from history (workspace:admin). The path's last segment is the version number: DELETE /versions/<path>/<n>.")
            .query("force", json!({"type": "boolean"}), "Also when live snapshots hold it.")
            .empty("204", "Erased; reads of it are 410."),
        Route::Diff => op("diff", "history", "A unified diff between two versions.")
            .required_query("from", json!({"type": "integer", "minimum": 1}), "The older version.")
            .query("to", json!({"type": "integer", "minimum": 1}), "The newer version (default: the latest).")
            .answers("200", "The diff.", schema("Diff")),
        Route::CreateSnapshot => {
            let mut o = op("createSnapshot", "snapshots", "Pin every live file (a checkpoint with a label, kept until deleted when keep is true).")
                .answers("201", "The snapshot.", schema("Snapshot"))
                .links(json!({
                    "GetSnapshot": { "operationId": "getSnapshot", "parameters": { "id": "$response.body#/snapshotId" } },
                    "RestoreSnapshot": { "operationId": "restoreSnapshot", "parameters": { "id": "$response.body#/snapshotId" } },
                    "DeleteSnapshot": { "operationId": "deleteSnapshot", "parameters": { "id": "$response.body#/snapshotId" } },
                }));
            o.body = Some(json_body(schema("CreateSnapshot")));
            o
        }
        Route::ListSnapshots => limit_and_token(op("listSnapshots", "snapshots", "Checkpoints, newest first."))
            .answers("200", "A page of checkpoints.", schema("SnapshotList")),
        Route::GetSnapshot => op("getSnapshot", "snapshots", "A snapshot and the files it pins.")
            .answers("200", "The snapshot.", schema("Snapshot")),
        Route::RestoreSnapshot => op("restoreSnapshot", "snapshots", "Roll the workspace back to a snapshot.")
            .params(&["IdempotencyKey"])
            .body(schema("Rollback"))
            .answers("200", "What the rollback did, path by path.", schema("RollbackReport")),
        Route::DeleteSnapshot => op("deleteSnapshot", "snapshots", "Delete a snapshot (its pins end).")
            .empty("204", "Deleted."),
        Route::CreateFork => op("createFork", "forks", "Fork the workspace: a private copy (no body is copied) that lives until expiresAt.")
            .body(schema("CreateFork"))
            .answers("201", "The fork; name its workspaceId in X-Workspace-Id to work in it.", schema("Fork"))
            .links(json!({
                "GetFork": { "operationId": "getFork", "parameters": { "id": "$response.body#/forkId" } },
                "ForkDiff": { "operationId": "forkDiff", "parameters": { "id": "$response.body#/forkId" } },
                "MergeFork": { "operationId": "mergeFork", "parameters": { "id": "$response.body#/forkId" } },
                "DiscardFork": { "operationId": "discardFork", "parameters": { "id": "$response.body#/forkId" } },
            })),
        Route::ListForks => limit_and_token(op("listForks", "forks", "The workspace's live forks, newest first."))
            .answers("200", "A page of forks.", schema("ForkList")),
        Route::GetFork => op("getFork", "forks", "One fork, with how many paths changed on each side since its base.")
            .answers("200", "The fork.", schema("ForkDetail")),
        Route::DiscardFork => op("discardFork", "forks", "Discard a fork: its own files and versions go, its pins end; the parent is untouched.")
            .empty("204", "Discarded."),
        Route::ForkDiff => limit_and_token(op("forkDiff", "forks", "Every path changed on either side since the fork's base, in path order, decided on identity (never content)."))
            .params(&["Prefix"])
            .answers("200", "A page of the three-way diff.", schema("ForkDiff")),
        Route::MergeFork => op("mergeFork", "forks", "Merge the fork's changes into the workspace; any conflict left is a 409 with details.conflicts, and nothing is applied.")
            .params(&["IdempotencyKey"])
            .body(schema("MergeFork"))
            .answers("200", "What was applied (or, with dryRun, would be).", schema("MergeReport")),
        Route::RebaseFork => op("rebaseFork", "forks", "Bring the workspace's changes since the base into the fork (the same rules, strategies, resolutions and conflict report as a merge; fork-wins keeps the fork's side), and move the base to the workspace as it is now.")
            .params(&["IdempotencyKey"])
            .body(schema("MergeFork"))
            .answers("200", "What was applied to the fork (or, with dryRun, would be).", schema("MergeReport")),
        Route::CreateRun => op("createRun", "snapshots", "Start a run record: a snapshot naming its workflow.")
            .body(schema("StartRun"))
            .answers("201", "The run.", schema("Run"))
            .links(json!({
                "GetRun": { "operationId": "getRun", "parameters": { "runId": "$response.body#/runId" } },
            })),
        Route::ListRuns => limit_and_token(op("listRuns", "snapshots", "Runs, newest first."))
            .answers("200", "A page of runs.", schema("RunList")),
        Route::GetRun => op("getRun", "snapshots", "A run, its owner and the files it started with. A run of another workspace of the tenant is 403 run_forbidden; another tenant's is 404.")
            .answers("200", "The run.", schema("Run")),
        Route::StartUpload => op("startUpload", "uploads", "Declare an upload: where to send the bytes.")
            .body(schema("StartUpload"))
            .answers("201", "The upload URL and id.", schema("UploadTicket")),
        Route::Commit => op("commit", "files", "Apply puts, deletes and moves of several paths at once: all of them or none. A failed precondition is a 409 naming the path (details.currentVersion), nothing applied. A move deletes `from` (its history stays) and writes its bytes as a new version of `to`. At most maxCommitOperations operations and maxCommitBytes of content (discovery).")
            .params(&["IdempotencyKey"])
            .body(schema("CommitRequest"))
            .answers("200", "Each operation's result, in order.", schema("CommitAnswer")),
        Route::WorkspaceEvents => op("workspaceEvents", "agents", "workspace.updated as server-sent events (the local server; 501 on AWS, where events go to EventBridge).")
            .query("after", json!({"type": "integer", "minimum": 0}), "Resume after this event id (or Last-Event-ID).")
            .events("200", "Server-sent events: `id`, `event: workspace.updated`, `data` (the EventBridge envelope as JSON)."),
        Route::CreateWorkspace => op("createWorkspace", "sessions", "Create (or find) a workspace for agent sessions.")
            .body(schema("CreateWorkspace"))
            .answers("201", "Created.", schema("Workspace"))
            .links(json!({
                "GetWorkspace": { "operationId": "getWorkspace", "parameters": { "id": "$response.body#/workspaceId" } },
                "UploadArtifact": { "operationId": "uploadArtifact", "parameters": { "id": "$response.body#/workspaceId" } },
                "ListArtifacts": { "operationId": "listArtifacts", "parameters": { "id": "$response.body#/workspaceId" } },
                "ListSessions": { "operationId": "listSessions", "parameters": { "id": "$response.body#/workspaceId" } },
                "DeleteWorkspace": { "operationId": "deleteWorkspace", "parameters": { "id": "$response.body#/workspaceId" } },
            }))
            .answers("200", "Already there.", schema("Workspace")),
        Route::ListWorkspaces => limit_and_token(op("listWorkspaces", "sessions", "The caller's workspaces."))
            .answers("200", "A page of workspaces.", schema("WorkspaceList")),
        Route::GetWorkspace => op("getWorkspace", "sessions", "One workspace.")
            .answers("200", "The workspace.", schema("Workspace")),
        Route::DeleteWorkspace => op("deleteWorkspace", "sessions", "Delete a workspace and everything in it.")
            .empty("204", "Deleted."),
        Route::UploadArtifact => op("uploadArtifact", "sessions", "Store an artifact of a session.")
            .body(schema("UploadArtifact"))
            .answers("201", "Stored.", schema("Artifact"))
            .links(json!({
                "GetArtifact": { "operationId": "getArtifact", "parameters": {
                    "id": "$request.path.id", "artifactId": "$response.body#/artifactId" } },
                "SessionHistory": { "operationId": "sessionHistory", "parameters": {
                    "id": "$request.path.id", "sessionId": "$response.body#/sessionId" } },
                "DeleteSession": { "operationId": "deleteSession", "parameters": {
                    "id": "$request.path.id", "sessionId": "$response.body#/sessionId" } },
            })),
        Route::ListArtifacts => op("listArtifacts", "sessions", "A workspace's artifacts.")
            .query("sessionId", json!({"type": "string"}), "Only this session's.")
            .answers("200", "The artifacts.", schema("ArtifactList")),
        Route::GetArtifact => op("getArtifact", "sessions", "An artifact's bytes (a session history as JSON).")
            .raw("200", "The artifact.", "*/*"),
        Route::ListSessions => limit_and_token(op("listSessions", "sessions", "A workspace's sessions."))
            .answers("200", "A page of sessions.", schema("SessionList")),
        Route::SessionHistory => op("sessionHistory", "sessions", "A session's message history.")
            .answers("200", "The history.", schema("Artifact")),
        Route::DeleteSession => op("deleteSession", "sessions", "Delete a session's artifacts.")
            .empty("204", "Deleted."),
    };
    o.build(spec)
}
