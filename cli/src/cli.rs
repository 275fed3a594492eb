//! The command line: global flags and one subcommand each (clap derive).

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "ws",
    version,
    about = "A command-line client for the Agent Workspace API",
    after_help = "Exit codes: 0 ok, 1 conflict, 2 not found, 3 auth, 4 bad input, 5 server or network."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args)]
pub struct Global {
    /// Print the server's JSON (or a JSON summary) instead of text
    #[arg(long, global = true)]
    pub json: bool,
    /// The deployment's base URL (overrides the stored one)
    #[arg(long, global = true, env = "WS_URL", value_name = "URL")]
    pub url: Option<String>,
    /// The API key or bearer token (overrides the stored one)
    // hide_env_values: `--help` would otherwise print the key from WS_KEY.
    #[arg(
        long,
        global = true,
        env = "WS_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub key: Option<String>,
    /// The workspace, sent as X-Workspace-Id (needed with tenant-wide keys)
    #[arg(long, global = true, env = "WS_WORKSPACE", value_name = "W")]
    pub workspace: Option<String>,
}

// By hand: the derived one would print the key.
impl std::fmt::Debug for Global {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global")
            .field("json", &self.json)
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "<hidden>"))
            .field("workspace", &self.workspace)
            .finish()
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a credential with one request, then store it (0600) for later commands
    ///
    /// Without --key (or WS_KEY) the key is read from the first line of standard input.
    Login,
    /// List live files (every page), optionally under a prefix
    Ls {
        /// Only paths that start with this
        prefix: Option<String>,
        /// Files asked for per request (the server's default when absent)
        #[arg(long, value_name = "N")]
        page_size: Option<u32>,
    },
    /// Write a file's exact bytes to standard output
    Cat {
        /// The file's path in the workspace
        path: String,
        /// Read this version of the current lineage
        #[arg(long, value_name = "N", conflicts_with = "snapshot")]
        version: Option<u64>,
        /// Read the file as it was when a snapshot was taken
        #[arg(long, value_name = "ID")]
        snapshot: Option<String>,
    },
    /// Write a file from a local file, or standard input (`-` or no file)
    Put {
        /// The file's path in the workspace
        path: String,
        /// The local file; `-` or absent: standard input
        file: Option<PathBuf>,
        /// Write only if the file's current etag is this one
        #[arg(long, value_name = "ETAG", conflicts_with = "safe")]
        if_match: Option<String>,
        /// Write only if the file is still the version this machine last read or wrote
        /// (or, if it never saw one, only if the file does not exist)
        #[arg(long)]
        safe: bool,
        /// The content type (the server guesses from the name when absent)
        #[arg(long, value_name = "TYPE")]
        content_type: Option<String>,
    },
    /// Delete a file
    Rm {
        /// The file's path in the workspace
        path: String,
        /// Delete only if the file's current etag is this one
        #[arg(long, value_name = "ETAG", conflicts_with = "safe")]
        if_match: Option<String>,
        /// Delete only if the file is still the version this machine last read or wrote
        #[arg(long)]
        safe: bool,
    },
    /// Apply several writes, deletes and moves together: all of them, or none
    ///
    /// Each path may be named once. With --if-match or --if-absent an operation is
    /// conditional; if any condition fails nothing is applied (exit 1). At most 20
    /// operations and 8 MiB of content per commit.
    Commit(CommitArgs),
    /// A file's version history, newest first
    Log {
        /// The file's path in the workspace
        path: String,
    },
    /// The unified diff of a file from version A to version B (default: the latest)
    Diff {
        /// The file's path in the workspace
        path: String,
        /// The version to diff from
        #[arg(value_name = "A")]
        from: u64,
        /// The version to diff to (default: the latest)
        #[arg(value_name = "B")]
        to: Option<u64>,
    },
    /// Write version N of a file back as its newest version
    Restore {
        /// The file's path in the workspace
        path: String,
        /// The version to bring back
        #[arg(value_name = "N")]
        version: u64,
        /// Restore only if the file's current etag is this one
        #[arg(long, value_name = "ETAG")]
        if_match: Option<String>,
    },
    /// Search the workspace: ranked words (default), an exact substring, a regex, or by
    /// meaning; the best files first, each with its version and matching lines
    Search {
        /// What to look for (with --semantic or --hybrid: what it is about, in any words)
        query: String,
        /// The literal text, punctuation included
        #[arg(long, conflicts_with_all = ["regex", "semantic", "hybrid"])]
        exact: bool,
        /// A regular expression
        #[arg(long, conflicts_with_all = ["semantic", "hybrid"])]
        regex: bool,
        /// By meaning: the passages closest to the query (needs the server's model)
        #[arg(long, conflicts_with = "hybrid")]
        semantic: bool,
        /// Words and meaning together, fused (needs the server's model)
        #[arg(long)]
        hybrid: bool,
        /// With --exact or --regex: ignore case
        #[arg(long, short = 'i')]
        ignore_case: bool,
        /// Only paths that start with this
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
        /// Only paths matching this glob (`*` within a segment, `**` across)
        #[arg(long, value_name = "G")]
        glob: Option<String>,
        /// Most files to show (1-100; default 20)
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// Search a snapshot as it was
        #[arg(long, value_name = "ID")]
        snapshot: Option<String>,
    },
    /// Snapshots: every live file as it was at one instant
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Forks: a private copy of the workspace for a sub-agent, its diff, the merge back
    #[command(subcommand)]
    Fork(ForkCommand),
    /// Push every regular file under DIR, skipping those whose content is unchanged
    Sync {
        /// The local directory
        dir: PathBuf,
        /// Where under the workspace the files go (`P/<relative path>`)
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
    },
    /// Mount the workspace as a folder (FUSE, Linux): every write a new version, every
    /// conflict kept as a conflict copy
    ///
    /// A file is committed when it is closed or fsynced, conditional on the version it was
    /// opened at; if the workspace changed meanwhile, close fails (EIO) and the bytes are
    /// written next to it as NAME.conflict-<version>-<mount id>. See docs/mount.md.
    Mount(MountArgs),
    /// Unmount a folder `ws mount` mounted (it commits what is open first)
    Unmount {
        /// The mounted folder
        dir: PathBuf,
    },
    /// Follow the workspace's change events (server-sent events), one line each
    ///
    /// Starts with every event the server still retains, unless --after says where to resume.
    Watch {
        /// Resume after this event id (the first column of each line)
        #[arg(long, value_name = "ID")]
        after: Option<u64>,
    },
}

#[derive(Debug, clap::Args)]
pub struct MountArgs {
    /// The (empty) folder to mount on
    pub dir: PathBuf,
    /// Mount this fork (its own workspace) instead
    #[arg(long, value_name = "ID", conflicts_with = "snapshot")]
    pub fork: Option<String>,
    /// Mount this snapshot, read-only
    #[arg(long, value_name = "ID")]
    pub snapshot: Option<String>,
    /// Refuse every write (EROFS)
    #[arg(long)]
    pub read_only: bool,
    /// Where bodies, write buffers, the log and the conflict list are kept
    /// (default: a folder per mount point under the user's cache folder)
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Most megabytes of file bodies cached on disk
    #[arg(long, value_name = "MB", default_value_t = 1024)]
    pub cache_max_mb: u64,
    /// How often the change log is read for changes made elsewhere, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub refresh_ms: u64,
    /// Stay in the foreground (logs on stderr) instead of returning once mounted
    #[arg(long)]
    pub foreground: bool,
    /// List the mount's unresolved conflicts and kept bytes, then exit
    #[arg(long)]
    pub status: bool,
}

#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// Write REMOTE with the bytes of the local file LOCAL (`-`: standard input)
    #[arg(long = "put", value_name = "REMOTE=LOCAL")]
    pub put: Vec<String>,
    /// Delete REMOTE
    #[arg(long = "delete", value_name = "REMOTE")]
    pub delete: Vec<String>,
    /// Move FROM to TO (the bytes, as a new version of TO)
    #[arg(long = "move", value_name = "FROM=TO")]
    pub moves: Vec<String>,
    /// Only if PATH (a --put or --delete path, or a --move's FROM) is at this etag
    #[arg(long = "if-match", value_name = "PATH=ETAG")]
    pub if_match: Vec<String>,
    /// Only if PATH (a --put path, or a --move's TO) does not exist
    #[arg(long = "if-absent", value_name = "PATH")]
    pub if_absent: Vec<String>,
    /// The operations as the API's JSON body (`{"operations": [...]}`); `-`: standard input
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["put", "delete", "moves", "if_match", "if_absent"]
    )]
    pub file: Option<PathBuf>,
    /// A message recorded with the commit
    #[arg(long, value_name = "M")]
    pub message: Option<String>,
    /// A retry with the same key and request answers the first outcome, applying nothing twice
    #[arg(long, value_name = "K")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Pin every live file now; prints the snapshot id
    Create {
        /// A label, which makes it a checkpoint
        #[arg(long, value_name = "L")]
        label: Option<String>,
        /// Keep it until it is deleted (no expiry)
        #[arg(long)]
        keep: bool,
    },
    /// List live snapshots, newest first
    Ls,
    /// Show a snapshot and the files it pins
    Show {
        /// The snapshot id (as `ws snapshot create` or `ws snapshot ls` printed it)
        #[arg(value_name = "ID")]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ForkCommand {
    /// Fork the workspace now; prints the fork's id (use it with --workspace)
    Create {
        /// A name for the fork
        #[arg(long, value_name = "L")]
        label: Option<String>,
        /// How long it lives, in seconds (default: the server's, 7 days)
        #[arg(long, value_name = "S")]
        ttl: Option<u64>,
    },
    /// List the workspace's live forks, newest first
    Ls,
    /// What changed on each side since the fork was made (! marks a conflict)
    Diff {
        #[arg(value_name = "FORK")]
        fork: String,
    },
    /// Merge the fork back (--dry-run to only see what would be applied)
    Merge {
        #[arg(value_name = "FORK")]
        fork: String,
        #[command(flatten)]
        how: MergeArgs,
        /// Discard the fork after merging
        #[arg(long)]
        discard: bool,
    },
    /// Bring the workspace's changes into the fork
    Rebase {
        #[arg(value_name = "FORK")]
        fork: String,
        #[command(flatten)]
        how: MergeArgs,
    },
    /// Discard a fork (the workspace is untouched)
    Rm {
        #[arg(value_name = "FORK")]
        fork: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// fail (default), fork-wins, parent-wins or three-way
    #[arg(long, value_name = "S")]
    pub strategy: Option<String>,
    /// Settle one path: PATH=fork, PATH=parent, or PATH=@FILE (that local file's content)
    #[arg(long = "resolve", value_name = "PATH=HOW")]
    pub resolve: Vec<String>,
    /// Only report what would be applied
    #[arg(long)]
    pub dry_run: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cat_takes_version_although_ws_has_a_version_flag() {
        let cli = Cli::try_parse_from(["ws", "cat", "a.md", "--version", "2"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Cat {
                version: Some(2),
                ..
            }
        ));
    }

    #[test]
    fn global_flags_go_before_or_after_the_subcommand() {
        let cli = Cli::try_parse_from(["ws", "ls", "--json", "--workspace", "w"]).unwrap();
        assert!(cli.global.json);
        assert_eq!(cli.global.workspace.as_deref(), Some("w"));
    }
}
