//! The document's components: security schemes, the shared parameters and headers, the
//! error answers, and the schemas of request and response bodies (as the handlers in this
//! crate write them).

use serde_json::{json, Value};

/// `{"$ref": "#/components/schemas/<name>"}`.
pub fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

pub fn parameter(name: &str) -> Value {
    json!({ "$ref": format!("#/components/parameters/{name}") })
}

pub fn response(name: &str) -> Value {
    json!({ "$ref": format!("#/components/responses/{name}") })
}

/// Every error status an operation may answer, each with the envelope; `default` covers
/// the rest (a 503 when the server sheds load, a 500).
pub const ERRORS: &[(&str, &str)] = &[
    ("400", "BadRequest"),
    ("401", "Unauthenticated"),
    ("403", "Forbidden"),
    ("404", "NotFound"),
    ("409", "Conflict"),
    ("410", "Gone"),
    ("413", "TooLarge"),
    ("501", "NotProvided"),
];

fn time() -> Value {
    json!({ "type": "string", "format": "date-time" })
}

fn nullable(t: &str) -> Value {
    json!({ "type": [t, "null"] })
}

fn error_response(description: &str, code: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/json": {
            "schema": schema("Error"),
            "example": { "error": code, "message": "what happened and what to do" },
        } },
    })
}

pub fn components() -> Value {
    json!({
        "securitySchemes": {
            "apiKey": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key (`workspace-local keys create`, or the stack's API-key authorizer): `Authorization: Bearer <key>`. It grants one tenant and one workspace (or every workspace of the tenant, named per request in `X-Workspace-Id`), read, write and admin scopes, and optionally only some paths.",
            },
            "jwt": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": "On AWS, a JWT validated by the HTTP API's authorizer; tenant, workspace, principal, scopes and path globs come from its claims (names configurable in the stack).",
            },
        },
        "parameters": {
            "Path": {
                "name": "path", "in": "path", "required": true,
                "description": "A file path (`/` or `%2F` between segments): letters, digits, `.`, `_`, `-`, starting with a letter or digit, no `.`, `..` or empty segment.",
                "schema": {
                    "type": "string", "minLength": 1, "maxLength": 256,
                    "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*(/([A-Za-z0-9_-][A-Za-z0-9._-]*|\\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+))*$",
                },
                "example": "notes/today.md",
            },
            "IfMatch": {
                "name": "If-Match", "in": "header", "required": false,
                "description": "Write only if the current etag is one of these (or `*`: the file exists); else 409.",
                "schema": { "type": "string" },
            },
            "IfNoneMatch": {
                "name": "If-None-Match", "in": "header", "required": false,
                "description": "`*`: write only if the file does not exist; else 409.",
                "schema": { "type": "string", "enum": ["*"] },
            },
            "IdempotencyKey": {
                "name": "Idempotency-Key", "in": "header", "required": false,
                "description": "A retry with the same key within 24 hours replays the first answer.",
                "schema": { "type": "string", "minLength": 1, "maxLength": 255 },
            },
            "WorkspaceId": {
                "name": "X-Workspace-Id", "in": "header", "required": false,
                "description": "The workspace a tenant-wide credential acts on (a bound credential may name only its own).",
                "schema": { "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$" },
            },
            "Limit": {
                "name": "limit", "in": "query", "required": false,
                "description": "Page size: 1-100 on every listing (files and blobs take up to 1000).",
                "schema": { "type": "integer", "minimum": 1, "maximum": 100 },
            },
            "NextToken": {
                "name": "nextToken", "in": "query", "required": false,
                "description": "The previous page's `nextToken` (opaque).",
                "schema": { "type": "string" },
            },
            "Prefix": {
                "name": "prefix", "in": "query", "required": false,
                "description": "Only paths starting with this (the path alphabet; may end with `/`).",
                "schema": { "type": "string", "maxLength": 256, "pattern": "^([A-Za-z0-9][A-Za-z0-9._/-]*)?$" },
            },
            "SnapshotQuery": {
                "name": "snapshot", "in": "query", "required": false,
                "description": "Read through this snapshot instead of the live files.",
                "schema": { "type": "string" },
            },
            "Id": {
                "name": "id", "in": "path", "required": true,
                "schema": { "type": "string", "minLength": 1, "maxLength": 128 },
            },
        },
        "headers": {
            "ETag": {
                "description": "The version's entity tag (quoted), for `If-Match`.",
                "schema": { "type": "string" },
            },
        },
        "responses": {
            "BadRequest": error_response("The request is malformed (path, body, header, query); nothing changed.", "validation_error"),
            "Unauthenticated": error_response("No credential, or one this deployment does not know.", "unauthenticated"),
            "Forbidden": error_response("The credential may not do this (scope, workspace, path).", "forbidden"),
            "NotFound": error_response("No such file, version, snapshot or route.", "not_found"),
            "Conflict": error_response("A precondition failed (If-Match, If-None-Match, an idempotency key reused for another request); `details.currentVersion` names the current version.", "workspace_conflict"),
            "Gone": error_response("Erased from history, or past the event stream's retention.", "gone"),
            "TooLarge": error_response("Over a limit (maxFileBytes, maxFiles, a declared size); `details.limit` names it.", "workspace_too_large"),
            "NotProvided": error_response("This deployment does not provide this capability.", "capability_not_provided"),
            "Unexpected": error_response("Anything else: 405 (with `Allow`), 500, 503 when the server sheds load.", "internal_error"),
        },
        "schemas": schemas(),
    })
}

fn schemas() -> Value {
    json!({
        "Error": {
            "type": "object",
            "required": ["error", "message"],
            "properties": {
                "error": { "type": "string", "description": "A stable code, e.g. validation_error, not_found, workspace_conflict." },
                "message": { "type": "string", "description": "What happened and what to do, for a person." },
                "details": { "type": "object", "description": "e.g. currentVersion on a conflict, limit on 413." },
            },
            "additionalProperties": false,
        },
        "FileMeta": {
            "type": "object",
            "required": ["path", "contentType", "version", "etag", "size", "updatedAt"],
            "properties": {
                "path": { "type": "string" },
                "contentType": { "type": "string" },
                "version": { "type": "integer", "minimum": 1 },
                "etag": { "type": "string" },
                "size": { "type": "integer", "minimum": 0 },
                "updatedAt": time(),
                "sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of the stored bytes (after redaction)." },
                "principal": { "type": "string", "description": "Who wrote this version (absent where an older record does not say)." },
            },
        },
        "File": {
            "description": "A file and its content: `content` when the bytes are UTF-8 text, `contentBase64` otherwise; a file over maxFileBytes answers `download` (a URL for exactly this version) instead.",
            "allOf": [schema("FileMeta"), {
                "type": "object",
                "properties": {
                    "content": { "type": "string" },
                    "contentBase64": { "type": "string", "contentEncoding": "base64" },
                    "download": schema("PresignedUrl"),
                },
            }],
        },
        "PutFile": {
            "description": "`content` (UTF-8 text) or `contentBase64` (any bytes), not both, with an optional contentType; or `uploadId` alone, committing a two-step upload.",
            "type": "object",
            "properties": {
                "content": { "type": "string" },
                "contentBase64": { "type": "string", "contentEncoding": "base64" },
                "contentType": { "type": "string", "maxLength": 255 },
                "uploadId": { "type": "string" },
            },
            "example": { "content": "# Today\n", "contentType": "text/markdown" },
        },
        "CommitRequest": {
            "description": "The operations of one commit, applied together or not at all, each path named once. A put gives `content` (UTF-8 text) or `contentBase64` (any bytes), not both. `ifMatch` (of a put's or delete's path, of a move's `from`): the current etag must be one of these (or `*`: it exists); `ifNoneMatch: *` (of a put's path, of a move's `to`): it must not exist. Unknown fields and operations are refused (400).",
            "type": "object",
            "required": ["operations"],
            "properties": {
                "operations": { "type": "array", "minItems": 1, "maxItems": 20, "items": { "oneOf": [
                    {
                        "type": "object",
                        "required": ["op", "path"],
                        "properties": {
                            "op": { "const": "put" },
                            "path": { "type": "string", "minLength": 1, "maxLength": 256 },
                            "content": { "type": "string" },
                            "contentBase64": { "type": "string", "contentEncoding": "base64" },
                            "contentType": { "type": "string", "maxLength": 255 },
                            "ifMatch": { "type": "string" },
                            "ifNoneMatch": { "const": "*" },
                        },
                        "additionalProperties": false,
                    },
                    {
                        "type": "object",
                        "required": ["op", "path"],
                        "properties": {
                            "op": { "const": "delete" },
                            "path": { "type": "string", "minLength": 1, "maxLength": 256 },
                            "ifMatch": { "type": "string" },
                        },
                        "additionalProperties": false,
                    },
                    {
                        "type": "object",
                        "required": ["op", "from", "to"],
                        "properties": {
                            "op": { "const": "move" },
                            "from": { "type": "string", "minLength": 1, "maxLength": 256 },
                            "to": { "type": "string", "minLength": 1, "maxLength": 256 },
                            "ifMatch": { "type": "string", "description": "Of `from`." },
                            "ifNoneMatch": { "const": "*", "description": "`to` must not exist." },
                        },
                        "additionalProperties": false,
                    },
                ] } },
                "message": { "type": "string", "maxLength": 1024, "description": "A note on the change (at most 1 KiB): logged with the commit, not stored." },
            },
            "additionalProperties": false,
            "example": { "operations": [
                { "op": "put", "path": "notes/today.md", "content": "# Today\n" },
                { "op": "move", "from": "drafts/plan.md", "to": "notes/plan.md" },
                { "op": "delete", "path": "drafts/old.md" },
            ], "message": "file today's notes" },
        },
        "CommitAnswer": {
            "type": "object",
            "required": ["results", "replayed"],
            "properties": {
                "results": { "type": "array", "description": "One per operation, in order.", "items": { "oneOf": [
                    { "allOf": [schema("FileMeta"), {
                        "type": "object",
                        "required": ["op"],
                        "properties": { "op": { "const": "put" } },
                    }] },
                    {
                        "type": "object",
                        "required": ["op", "path", "version"],
                        "properties": {
                            "op": { "const": "delete" },
                            "path": { "type": "string" },
                            "version": { "type": "integer", "minimum": 0, "description": "The deletion's version (0 in a replayed answer)." },
                        },
                    },
                    {
                        "type": "object",
                        "required": ["op", "from", "fromVersion", "to"],
                        "properties": {
                            "op": { "const": "move" },
                            "from": { "type": "string" },
                            "fromVersion": { "type": "integer", "minimum": 0, "description": "The deletion's version of `from` (0 in a replayed answer)." },
                            "to": schema("FileMeta"),
                        },
                    },
                ] } },
                "replayed": { "type": "boolean", "description": "A retry with the same Idempotency-Key: nothing was applied now; puts and moves answer the paths' current files." },
            },
        },
        "FileList": {
            "type": "object",
            "required": ["files"],
            "properties": {
                "files": { "type": "array", "items": schema("FileMeta") },
                "nextToken": { "type": "string" },
            },
        },
        "VersionList": {
            "type": "object",
            "required": ["path", "versions"],
            "properties": {
                "path": { "type": "string" },
                "versions": { "type": "array", "items": {
                    "type": "object",
                    "required": ["version", "etag", "size", "contentType", "updatedAt", "deleted"],
                    "properties": {
                        "version": { "type": "integer" },
                        "etag": { "type": "string" },
                        "size": { "type": "integer" },
                        "contentType": { "type": "string" },
                        "updatedAt": time(),
                        "deleted": { "type": "boolean" },
                        "lineage": { "type": "string" },
                        "erased": { "type": "object" },
                    },
                } },
                "nextToken": { "type": "string" },
            },
        },
        "Restore": {
            "type": "object",
            "required": ["restore"],
            "properties": { "restore": { "type": "integer", "minimum": 1, "description": "The version to write back as a new version." } },
            "example": { "restore": 1 },
        },
        "Diff": {
            "type": "object",
            "required": ["path", "from", "to", "binary"],
            "properties": {
                "path": { "type": "string" },
                "from": { "type": "integer" },
                "to": { "type": "integer" },
                "fromEtag": { "type": "string" },
                "toEtag": { "type": "string" },
                "binary": { "type": "boolean" },
                "diff": { "type": "string", "description": "A unified diff." },
            },
        },
        "SnapshotInfo": {
            "type": "object",
            "required": ["snapshotId", "createdAt", "keep"],
            "properties": {
                "snapshotId": { "type": "string" },
                "createdAt": time(),
                "expiresAt": { "type": ["string", "null"], "format": "date-time", "description": "null: kept until deleted." },
                "keep": { "type": "boolean" },
                "label": { "type": "string" },
                "workflowId": { "type": "string" },
            },
        },
        "Snapshot": {
            "allOf": [schema("SnapshotInfo"), {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": { "type": "array", "items": schema("PinnedFile") },
                    "paths": { "type": "array", "items": { "type": "string" }, "description": "The globs of the path-scoped key that took it." },
                    "moreFiles": { "type": "boolean", "description": "In a creation's answer only: it lists the first 100 files, and more follow (GET lists them all)." },
                },
            }],
        },
        "PinnedFile": {
            "type": "object",
            "required": ["path", "version", "etag"],
            "properties": {
                "path": { "type": "string" },
                "version": { "type": "integer" },
                "etag": { "type": "string" },
            },
        },
        "SnapshotList": {
            "type": "object",
            "required": ["snapshots"],
            "properties": {
                "snapshots": { "type": "array", "items": schema("SnapshotInfo") },
                "nextToken": { "type": "string" },
            },
        },
        "CreateSnapshot": {
            "type": "object",
            "properties": {
                "label": { "type": "string", "maxLength": 128 },
                "keep": { "type": "boolean" },
            },
            "example": { "label": "before the run", "keep": true },
        },
        "CreateFork": {
            "type": "object",
            "properties": {
                "from": { "type": "string", "description": "\"live\" (the default: the workspace as it is now), or a live snapshot's id: the workspace as that snapshot holds it." },
                "label": { "type": "string", "minLength": 1, "maxLength": 128 },
                "ttlSeconds": { "type": "integer", "minimum": 1, "description": "Default 7 days, at most 30 (WORKSPACE_FORK_TTL_SECONDS, WORKSPACE_FORK_MAX_TTL_SECONDS)." },
            },
            "additionalProperties": false,
            "example": { "label": "sub-agent 1", "ttlSeconds": 3600 },
        },
        "ForkBase": {
            "type": "object",
            "required": ["snapshotId", "createdAt"],
            "properties": { "snapshotId": { "type": "string" }, "createdAt": time() },
        },
        "Fork": {
            "type": "object",
            "required": ["forkId", "workspaceId", "parentWorkspaceId", "base", "createdAt", "expiresAt"],
            "properties": {
                "forkId": { "type": "string" },
                "workspaceId": { "type": "string", "description": "The same as forkId: name it in X-Workspace-Id." },
                "parentWorkspaceId": { "type": "string" },
                "base": schema("ForkBase"),
                "label": nullable("string"),
                "createdAt": time(),
                "expiresAt": time(),
            },
        },
        "ForkDetail": {
            "allOf": [schema("Fork"), {
                "type": "object",
                "required": ["changedPaths"],
                "properties": { "changedPaths": {
                    "type": "object",
                    "required": ["fork", "parent", "conflicts"],
                    "properties": {
                        "fork": { "type": "integer" },
                        "parent": { "type": "integer" },
                        "conflicts": { "type": "integer" },
                    },
                } },
            }],
        },
        "ForkList": {
            "type": "object",
            "required": ["forks"],
            "properties": {
                "forks": { "type": "array", "items": schema("Fork") },
                "nextToken": { "type": "string" },
            },
        },
        "ForkDiff": {
            "type": "object",
            "required": ["forkId", "base", "changes"],
            "properties": {
                "forkId": { "type": "string" },
                "base": schema("ForkBase"),
                "changes": { "type": "array", "items": {
                    "type": "object",
                    "required": ["path", "fork", "parent", "conflict"],
                    "properties": {
                        "path": { "type": "string" },
                        "fork": { "enum": ["added", "modified", "deleted", "unchanged"] },
                        "parent": { "enum": ["added", "modified", "deleted", "unchanged"] },
                        "baseVersion": { "type": "integer" },
                        "forkVersion": { "type": "integer" },
                        "parentVersion": { "type": "integer" },
                        "conflict": { "type": "boolean" },
                    },
                } },
                "nextToken": { "type": "string" },
            },
        },
        "MergeFork": {
            "type": "object",
            "properties": {
                "strategy": { "enum": ["fail", "fork-wins", "parent-wins", "three-way"], "description": "Default fail." },
                "resolutions": { "type": "object", "additionalProperties": {
                    "oneOf": [
                        { "enum": ["fork", "parent"] },
                        { "type": "object", "required": ["content"], "properties": { "content": { "type": "string" } }, "additionalProperties": false },
                        { "type": "object", "required": ["contentBase64"], "properties": { "contentBase64": { "type": "string", "contentEncoding": "base64" } }, "additionalProperties": false },
                    ],
                } },
                "dryRun": { "type": "boolean" },
                "discardFork": { "type": "boolean" },
            },
            "additionalProperties": false,
            "example": { "strategy": "three-way", "dryRun": true },
        },
        "MergeReport": {
            "type": "object",
            "required": ["mergeId", "forkId", "dryRun", "applied", "base", "forkDiscarded"],
            "properties": {
                "mergeId": { "type": "string" },
                "forkId": { "type": "string" },
                "dryRun": { "type": "boolean" },
                "applied": { "type": "array", "items": {
                    "type": "object",
                    "required": ["path", "operation"],
                    "properties": {
                        "path": { "type": "string" },
                        "operation": { "enum": ["put", "delete"] },
                        "version": { "type": "integer", "description": "A put: the version it made. A delete: the version it ended (the deleted head's). Absent in a dry run." },
                        "etag": { "type": "string", "description": "A put's new etag; absent for a delete (no content is left) and in a dry run." },
                    },
                } },
                "base": schema("ForkBase"),
                "forkDiscarded": { "type": "boolean" },
            },
        },
        "Rollback": {
            "type": "object",
            "properties": {
                "paths": { "type": "array", "items": { "type": "string" }, "description": "Only paths matching these globs." },
                "ifUnchangedSince": { "type": "string", "description": "A snapshot id or an RFC 3339 time: 409 if anything matching changed since." },
            },
            "additionalProperties": false,
        },
        "RollbackReport": {
            "type": "object",
            "required": ["restored", "deleted", "unchanged"],
            "properties": {
                "restored": { "type": "array", "items": { "type": "string" } },
                "deleted": { "type": "array", "items": { "type": "string" } },
                "unchanged": { "type": "array", "items": { "type": "string" } },
            },
        },
        "SearchResults": {
            "type": "object",
            "required": ["hits", "index"],
            "properties": {
                "hits": { "type": "array", "items": {
                    "type": "object",
                    "required": ["path", "version", "etag", "score", "lines"],
                    "properties": {
                        "path": { "type": "string" },
                        "version": { "type": "integer" },
                        "etag": { "type": "string" },
                        "score": { "type": "number" },
                        "lines": { "type": "array", "items": {
                            "type": "object",
                            "required": ["line", "text", "ranges"],
                            "properties": {
                                "line": { "type": "integer", "minimum": 1 },
                                "text": { "type": "string" },
                                "ranges": { "type": "array", "items": {
                                    "type": "array", "items": { "type": "integer", "minimum": 0 },
                                    "minItems": 2, "maxItems": 2,
                                } },
                            },
                        } },
                        "passage": {
                            "type": "object",
                            "description": "semantic, hybrid: the passage that matched by meaning (lines from 1, inclusive).",
                            "required": ["startLine", "endLine"],
                            "properties": {
                                "startLine": { "type": "integer", "minimum": 1 },
                                "endLine": { "type": "integer", "minimum": 1 },
                            },
                        },
                        "scores": {
                            "type": "object",
                            "description": "semantic, hybrid: each ranking's score and rank (keyword: BM25; semantic: cosine similarity; fused: reciprocal rank fusion).",
                            "properties": {
                                "keyword": { "type": "number" },
                                "keywordRank": { "type": "integer", "minimum": 1 },
                                "semantic": { "type": "number" },
                                "semanticRank": { "type": "integer", "minimum": 1 },
                                "fused": { "type": "number" },
                            },
                        },
                    },
                } },
                "index": {
                    "type": "object",
                    "required": ["mode", "indexed", "total", "pending", "consistency"],
                    "properties": {
                        "mode": { "type": "string", "enum": workspace_core::search::Mode::NAMES },
                        "model": { "type": "string", "description": "semantic, hybrid: the embedding model of the passages." },
                        "indexed": { "type": "integer" },
                        "total": { "type": "integer" },
                        "skipped": { "type": "array", "items": {
                            "type": "object",
                            "required": ["path", "reason"],
                            "properties": { "path": { "type": "string" }, "reason": { "type": "string" } },
                        } },
                        "pending": { "type": "integer" },
                        "consistency": { "type": "string", "enum": ["fresh", "eventual"] },
                    },
                },
                "nextToken": { "type": "string" },
            },
        },
        "ChangeList": {
            "type": "object",
            "required": ["changes"],
            "properties": {
                "changes": { "type": "array", "items": {
                    "type": "object",
                    "required": ["path", "version", "etag", "operation", "principal", "time"],
                    "properties": {
                        "path": { "type": "string" },
                        "version": { "type": "integer" },
                        "etag": { "type": "string" },
                        "operation": { "type": "string", "enum": ["put", "delete", "erase"] },
                        "principal": { "type": "string" },
                        "time": time(),
                        "size": { "type": "integer" },
                        "contentType": { "type": "string" },
                    },
                } },
                "nextToken": { "type": "string" },
            },
        },
        "StartRun": {
            "type": "object",
            "required": ["workflowId"],
            "properties": { "workflowId": { "type": "string" }, "inputs": {} },
        },
        "Run": {
            "type": "object",
            "required": ["runId", "workflowId", "createdAt", "snapshotId"],
            "properties": {
                "runId": { "type": "string" },
                "workflowId": { "type": "string" },
                "createdAt": time(),
                "expiresAt": time(),
                "snapshotId": { "type": "string" },
                "owner": {
                    "type": "object",
                    "description": "RFC 0048: who the run belongs to, from the identity that started it.",
                    "required": ["tenant", "workspace"],
                    "properties": {
                        "tenant": { "type": "string" },
                        "workspace": { "type": "string" },
                        "principal": { "type": "string" },
                    },
                },
                "workspace": { "type": "array", "items": schema("PinnedFile") },
            },
        },
        "RunList": {
            "type": "object",
            "required": ["runs"],
            "properties": {
                "runs": { "type": "array", "items": schema("Run") },
                "nextToken": { "type": "string" },
            },
        },
        "StartUpload": {
            "type": "object",
            "required": ["path", "size", "sha256"],
            "properties": {
                "path": { "type": "string" },
                "size": { "type": "integer", "minimum": 0 },
                "sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
                "contentType": { "type": "string" },
            },
        },
        "PresignedUrl": {
            "type": "object",
            "required": ["url", "method", "expiresAt"],
            "properties": {
                "url": { "type": "string" },
                "method": { "type": "string" },
                "expiresAt": time(),
                "headers": { "type": "object", "additionalProperties": { "type": "string" } },
            },
        },
        "UploadTicket": {
            "allOf": [schema("PresignedUrl"), {
                "type": "object",
                "required": ["uploadId"],
                "properties": { "uploadId": { "type": "string" } },
            }],
        },
        "MemoryCommand": {
            "type": "object",
            "required": ["command"],
            "description": "A tool call's `input` of Claude's memory tool (memory_20250818): view, create, str_replace, insert, delete, rename.",
            "properties": { "command": { "type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"] } },
            "example": { "command": "view", "path": "/memories" },
        },
        "MemoryAnswer": {
            "type": "object",
            "required": ["content", "isError"],
            "properties": { "content": { "type": "string" }, "isError": { "type": "boolean" } },
        },
        "JsonRpc": {
            "description": "A JSON-RPC 2.0 message or batch (MCP Streamable HTTP, stateless).",
            "type": ["object", "array"],
            "example": { "jsonrpc": "2.0", "id": 1, "method": "tools/list" },
        },
        "CacheEntry": {
            "type": "object",
            "required": ["key", "expiresAt"],
            "properties": { "key": { "type": "string" }, "value": {}, "expiresAt": time() },
        },
        "PutCache": {
            "type": "object",
            "required": ["value", "ttlSeconds"],
            "properties": { "value": {}, "ttlSeconds": { "type": "integer", "minimum": 1 } },
            "example": { "value": { "any": "json" }, "ttlSeconds": 60 },
        },
        "CacheStored": {
            "type": "object",
            "required": ["ok", "expiresAt"],
            "properties": { "ok": { "type": "boolean" }, "expiresAt": time() },
        },
        "BlobList": {
            "type": "object",
            "required": ["entries"],
            "properties": {
                "entries": { "type": "array", "items": {
                    "type": "object",
                    "required": ["key", "sizeBytes"],
                    "properties": { "key": { "type": "string" }, "sizeBytes": { "type": "integer" }, "updatedAt": time() },
                } },
                "nextCursor": { "type": "string" },
            },
        },
        "BlobStored": {
            "type": "object",
            "required": ["bucket", "key", "sizeBytes", "etag"],
            "properties": {
                "bucket": { "type": "string" },
                "key": { "type": "string" },
                "sizeBytes": { "type": "integer" },
                "etag": { "type": "string" },
            },
        },
        "Presign": {
            "type": "object",
            "required": ["key", "method", "expiresInSeconds"],
            "properties": {
                "key": { "type": "string" },
                "method": { "type": "string", "enum": ["GET", "PUT"] },
                "expiresInSeconds": { "type": "integer", "minimum": 1 },
                "contentType": { "type": "string" },
                "contentLength": { "type": "integer" },
            },
        },
        "Workspace": {
            "type": "object",
            "required": ["workspaceId", "workspaceScope", "tenantId", "userId", "createdAt", "lastActiveAt"],
            "properties": {
                "workspaceId": { "type": "string" },
                "workspaceScope": { "type": "string" },
                "tenantId": { "type": "string" },
                "userId": { "type": "string" },
                "createdAt": time(),
                "lastActiveAt": time(),
                "localPath": { "type": "string" },
            },
        },
        "WorkspaceList": {
            "type": "object",
            "required": ["workspaces"],
            "properties": {
                "workspaces": { "type": "array", "items": schema("Workspace") },
                "nextToken": nullable("string"),
            },
        },
        "CreateWorkspace": {
            "type": "object",
            "required": ["workspaceScope"],
            "properties": {
                "workspaceScope": { "type": "string", "enum": ["local", "general", "cloud"] },
                "localPath": { "type": "string" },
            },
        },
        "Artifact": {
            "type": "object",
            "required": ["artifactId", "artifactUri", "sessionId", "artifactType", "contentType", "size", "createdAt"],
            "properties": {
                "artifactId": { "type": "string" },
                "artifactUri": { "type": "string" },
                "sessionId": { "type": "string" },
                "artifactType": { "type": "string" },
                "contentType": { "type": "string" },
                "size": { "type": "integer" },
                "createdAt": time(),
                "taskId": { "type": "string" },
                "stepId": { "type": "string" },
                "artifactName": { "type": "string" },
            },
        },
        "UploadArtifact": {
            "type": "object",
            "required": ["sessionId", "artifactType"],
            "properties": {
                "sessionId": { "type": "string" },
                "artifactType": { "type": "string" },
                "contentBase64": { "type": "string", "contentEncoding": "base64" },
                "messages": { "type": "array", "items": { "type": "object" }, "description": "A session_history artifact's messages." },
                "contentType": { "type": "string" },
                "taskId": { "type": "string" },
                "stepId": { "type": "string" },
                "artifactName": { "type": "string" },
                "metadata": {},
            },
        },
        "ArtifactList": {
            "type": "object",
            "required": ["artifacts"],
            "properties": { "artifacts": { "type": "array", "items": schema("Artifact") } },
        },
        "SessionList": {
            "type": "object",
            "required": ["sessions"],
            "properties": {
                "sessions": { "type": "array", "items": { "type": "object" } },
                "nextToken": nullable("string"),
            },
        },
        "Health": {
            "type": "object",
            "required": ["status", "service"],
            "properties": { "status": { "type": "string" }, "service": { "type": "string" }, "version": { "type": "string" } },
        },
        "Discovery": {
            "type": "object",
            "required": ["protocol", "service", "version"],
            "description": "openwop discovery: the families this deployment provides (workspace, blobStorage, cache, events, search, mcp) and their limits.",
            "properties": {
                "protocol": { "const": "openwop" },
                "service": { "type": "string" },
                "version": { "type": "string" },
            },
        },
        "Object": { "type": "object" },
    })
}
