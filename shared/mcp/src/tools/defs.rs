//! What `tools/list` answers. The first six keep the published workspace tool's names,
//! parameter names and types and required lists; the rest are additions. Parameters that
//! carry a count use JSON Schema `number` as the published tool does (whole numbers are
//! required at call time).

use serde_json::{json, Value};
use workspace_core::service::commits::{MAX_COMMIT_BYTES, MAX_COMMIT_OPERATIONS};

/// Kept with discovery, which advertises them without linking this crate; the test below
/// holds `tools/list` equal to them.
pub const TOOL_NAMES: &[&str] = workspace_http::discovery::MCP_TOOLS;

const PATH_HELP: &str =
    "Path relative to the workspace root, or absolute under /workspace (e.g. notes/todo.md or /workspace/notes/todo.md)";
const EXPECTED_VERSION_HELP: &str =
    "Optional optimistic concurrency: the version you last read. The call fails with an Error naming the current version if the file changed since (0 = the file must not exist yet)";

fn path_param() -> Value {
    json!({ "type": "string", "description": PATH_HELP })
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": { "type": "object", "properties": properties, "required": required },
    })
}

pub fn definitions() -> Vec<Value> {
    vec![
        tool(
            "read_file",
            "Read the complete contents of a file from the workspace. Use 'head' or 'tail' to read only the first or last N lines, or 'offset' (1-based line number) and 'limit' to read a range of lines.",
            json!({
                "path": path_param(),
                "head": { "type": "number", "description": "If provided, returns only the first N lines of the file" },
                "tail": { "type": "number", "description": "If provided, returns only the last N lines of the file" },
                "offset": { "type": "number", "description": "First line to return, counting from 1" },
                "limit": { "type": "number", "description": "Most lines to return (from 'offset', or from the start)" },
            }),
            &["path"],
        ),
        tool(
            "write_file",
            "Create a new file or completely overwrite an existing file in the workspace. Parent directories are implied. Every write makes a new version; the answer names it.",
            json!({
                "path": path_param(),
                "content": { "type": "string", "description": "The complete new content of the file (UTF-8 text)" },
                "expected_version": { "type": "number", "description": EXPECTED_VERSION_HELP },
            }),
            &["path", "content"],
        ),
        tool(
            "list_directory",
            "List the files and directories directly inside a directory of the workspace. Entries are marked [DIR] or [FILE] and sorted by name.",
            json!({ "path": path_param() }),
            &["path"],
        ),
        tool(
            "create_directory",
            "Create a directory in the workspace (parents implied). Succeeds without change if the directory already exists.",
            json!({ "path": path_param() }),
            &["path"],
        ),
        tool(
            "get_file_info",
            "Get metadata about a file or directory: type, size, creation and modification times, and for files the current version and ETag.",
            json!({ "path": path_param() }),
            &["path"],
        ),
        tool(
            "search_files",
            "Find files and directories below a directory whose path (relative to that directory) matches a glob pattern: * and ? within one path segment, ** across segments, [abc] character classes, {a,b} alternatives.",
            json!({
                "path": path_param(),
                "pattern": { "type": "string", "description": "Glob pattern, e.g. *.md or **/*.{ts,js}" },
                "max_results": { "type": "number", "description": "Most matches to return (default 100)" },
            }),
            &["path", "pattern"],
        ),
        tool(
            "delete_file",
            "Delete a file from the workspace. Its history stays readable over the HTTP API until retention removes it; writing the path again starts at version 1.",
            json!({
                "path": path_param(),
                "expected_version": { "type": "number", "description": EXPECTED_VERSION_HELP },
            }),
            &["path"],
        ),
        tool(
            "move_file",
            "Move or rename a file. Fails if the destination already exists.",
            json!({
                "source": { "type": "string", "description": "The file to move. ".to_owned() + PATH_HELP },
                "destination": { "type": "string", "description": "Its new path. ".to_owned() + PATH_HELP },
            }),
            &["source", "destination"],
        ),
        tool(
            "edit_file",
            "Replace exact text in a file. old_text must match exactly once unless replace_all is true; an ambiguous match is refused so the edit lands where intended.",
            json!({
                "path": path_param(),
                "old_text": { "type": "string", "description": "Text to find, exactly as it appears in the file" },
                "new_text": { "type": "string", "description": "Text to put in its place" },
                "replace_all": { "type": "boolean", "description": "Replace every occurrence (default false)" },
                "expected_version": { "type": "number", "description": EXPECTED_VERSION_HELP },
            }),
            &["path", "old_text", "new_text"],
        ),
        tool(
            super::commit::NAME,
            &format!("Apply several file changes together, all or nothing: write (path, content), delete (path) and move (source, destination) operations in one atomic step that no reader sees half of. expected_version on an operation (write, delete: the path's; move: the source's) makes it conditional; if any check fails nothing is applied and the Error names the path and its current version. A move never replaces an existing destination. At most {} operations and {} MiB of content per commit.", MAX_COMMIT_OPERATIONS, MAX_COMMIT_BYTES / (1024 * 1024)),
            json!({
                "operations": {
                    "type": "array",
                    "description": "The changes, applied in one step",
                    "minItems": 1,
                    "maxItems": MAX_COMMIT_OPERATIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "op": { "type": "string", "enum": ["write", "delete", "move"] },
                            "path": { "type": "string", "description": "write, delete: the file. ".to_owned() + PATH_HELP },
                            "content": { "type": "string", "description": "write: the complete new content of the file (UTF-8 text)" },
                            "source": { "type": "string", "description": "move: the file to move. ".to_owned() + PATH_HELP },
                            "destination": { "type": "string", "description": "move: its new path, which must not exist. ".to_owned() + PATH_HELP },
                            "expected_version": { "type": "number", "description": EXPECTED_VERSION_HELP },
                        },
                        "required": ["op"],
                    },
                },
            }),
            &["operations"],
        ),
        tool(
            "grep",
            "Search file contents with a regular expression; answers matching lines as path:line: text.",
            json!({
                "pattern": { "type": "string", "description": "Regular expression (Rust regex syntax)" },
                "path": { "type": "string", "description": "File or directory to search (default: the whole workspace). ".to_owned() + PATH_HELP },
                "glob": { "type": "string", "description": "Only files whose path below 'path' matches this glob, e.g. **/*.md" },
                "max_results": { "type": "number", "description": "Most matching lines to return (default 100)" },
            }),
            &["pattern"],
        ),
        tool(
            "search",
            "Find the files that best match a query, ranked: keyword (words, any form: 'deploying' finds 'deploy'; the default), exact (a literal substring, punctuation included), regex, semantic (by meaning: describe what the file is about in your own words) or hybrid (keyword and meaning together: best when unsure). Sees every write already made. Answers each hit as path@version with its matching lines (semantic, hybrid: the passage that matched).",
            json!({
                "query": { "type": "string", "description": "Words to look for (keyword), the exact text (exact), a regular expression (regex), or a description of what you look for (semantic, hybrid)" },
                "mode": { "type": "string", "enum": ["keyword", "exact", "regex", "semantic", "hybrid"], "description": "How to read the query (default keyword)" },
                "path": { "type": "string", "description": "Directory to search (default: the whole workspace). ".to_owned() + PATH_HELP },
                "glob": { "type": "string", "description": "Only files whose path below 'path' matches this glob, e.g. **/*.md" },
                "ignore_case": { "type": "boolean", "description": "exact and regex: ignore case (default false)" },
                "max_results": { "type": "number", "description": "Most files to return (default 100, at most 100)" },
            }),
            &["query"],
        ),
        tool(
            "memory",
            "Claude's memory tool (memory_20250818) on this workspace's /memories directory: the same commands, parameters and answers. Memories are workspace files under the memory prefix, versioned like every file.",
            json!({
                "command": { "type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"] },
                "path": { "type": "string", "description": "A path under /memories (view, create, str_replace, insert, delete)" },
                "view_range": { "type": "array", "items": { "type": "integer" }, "description": "view: [first, last] line, 1-based, -1 = to the end" },
                "file_text": { "type": "string", "description": "create: the file's text" },
                "old_str": { "type": "string", "description": "str_replace: text that occurs exactly once" },
                "new_str": { "type": "string", "description": "str_replace: its replacement" },
                "insert_line": { "type": "integer", "description": "insert: the line after which to insert (0 = before the first)" },
                "insert_text": { "type": "string", "description": "insert: the text to insert" },
                "old_path": { "type": "string", "description": "rename: the file or directory to rename" },
                "new_path": { "type": "string", "description": "rename: its new path" },
            }),
            &["command"],
        ),
        tool(
            "fork_workspace",
            "Fork this workspace: a private copy for a sub-agent (no file is copied; it reads this workspace as it is now until it writes). Answers the fork's id: hand a sub-agent a key for it, or name it in X-Workspace-Id. Merge it back with merge_fork.",
            json!({
                "label": { "type": "string", "description": "A name for the fork (e.g. the sub-agent's task)" },
                "ttl_seconds": { "type": "number", "description": "How long the fork lives (default 7 days)" },
            }),
            &[],
        ),
        tool(
            "fork_diff",
            "What changed since a fork was made, path by path, on the fork and in this workspace, and which paths conflict (changed differently on both sides).",
            json!({
                "fork_id": { "type": "string", "description": "The fork's id, as fork_workspace answered it" },
                "prefix": { "type": "string", "description": "Only paths starting with this" },
            }),
            &["fork_id"],
        ),
        tool(
            "merge_fork",
            "Merge a fork's changes into this workspace. A dry run (nothing changes) unless apply is true. Conflicts are listed with the text merged with conflict markers; settle each with resolutions, or choose a strategy, and call again. Nothing is applied while a conflict is left.",
            json!({
                "fork_id": { "type": "string", "description": "The fork's id" },
                "strategy": { "type": "string", "enum": ["fail", "fork-wins", "parent-wins", "three-way"], "description": "How paths changed on both sides are settled (default fail: each is a conflict; three-way merges text line by line)" },
                "resolutions": { "type": "object", "description": "Per path: \"fork\", \"parent\", or {\"content\": \"<the text to keep>\"}; wins over the strategy", "additionalProperties": true },
                "apply": { "type": "boolean", "description": "true: merge for real (default: a dry run)" },
                "discard_fork": { "type": "boolean", "description": "Discard the fork after merging" },
            }),
            &["fork_id"],
        ),
        tool(
            "discard_fork",
            "Discard a fork: its files and versions go; this workspace is untouched.",
            json!({ "fork_id": { "type": "string", "description": "The fork's id" } }),
            &["fork_id"],
        ),
        tool(
            super::watch::NAME,
            &format!(
                "Wait until something in the workspace changes, then answer what changed (time, operation put/delete/erase, path, version, principal), oldest first, with a cursor. Pass that cursor as 'since' on the next call to get exactly the changes after these. Answers at once when changes are already there; otherwise waits up to timeout_seconds (default {}, at most {}) and answers 'No changes' with a cursor. Only paths this credential may read are shown.",
                super::watch::DEFAULT_TIMEOUT_SECONDS,
                super::watch::MAX_TIMEOUT_SECONDS
            ),
            json!({
                "since": { "type": "string", "description": "The cursor the previous call answered, or an RFC 3339 time (changes at or after it). Absent: only changes from now on" },
                "prefix": { "type": "string", "description": "Only paths starting with this (e.g. notes/ or /workspace/notes/)" },
                "timeout_seconds": { "type": "number", "description": format!(
                    "Longest wait in seconds, 0 to {} (default {}); 0 answers at once",
                    super::watch::MAX_TIMEOUT_SECONDS,
                    super::watch::DEFAULT_TIMEOUT_SECONDS
                ) },
            }),
            &[],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_tool_is_defined_once_with_its_required_params_declared() {
        let defs = definitions();
        let names: Vec<&str> = defs.iter().filter_map(|d| d["name"].as_str()).collect();
        assert_eq!(names, TOOL_NAMES);
        for d in &defs {
            let props = d["inputSchema"]["properties"].as_object().unwrap();
            for r in d["inputSchema"]["required"].as_array().unwrap() {
                assert!(props.contains_key(r.as_str().unwrap()), "{d}");
            }
        }
    }
}
