//! One module per command; [`run`] sets up what they share and dispatches.

mod cat;
mod commit;
mod fork;
mod history;
mod login;
mod ls;
mod put;
mod rm;
mod search;
mod snapshot;

use crate::cli::{Cli, Command};
use crate::client::Client;
use crate::config;
use crate::error::Result;
use crate::state::State;
use std::io::IsTerminal;

/// What every command but `login` works with.
pub struct Ctx {
    pub client: Client,
    pub json: bool,
    pub state: State,
}

impl Ctx {
    /// A progress bar only for a person watching: not with --json, not into a pipe or file.
    pub fn progress(&self) -> bool {
        !self.json && std::io::stderr().is_terminal()
    }
}

pub async fn run(cli: Cli) -> Result<()> {
    let config_path = config::config_path()?;
    if let Command::Login = cli.command {
        return login::run(&cli.global, &config_path).await;
    }
    // Unmounting needs no credential: the mount process commits with its own.
    if let Command::Unmount { dir } = &cli.command {
        return crate::mount::unmount(dir);
    }
    let stored = config::load(&config_path)?;
    let settings = config::resolve(&cli.global, stored)?;
    let state = State::open(&config_path, &settings);
    let mut ctx = Ctx {
        client: Client::new(settings)?,
        json: cli.global.json,
        state,
    };
    let result = dispatch(&mut ctx, cli.command).await;
    // What was learnt before a failure (say, sync's first files) is kept too.
    ctx.state.save();
    result
}

async fn dispatch(ctx: &mut Ctx, command: Command) -> Result<()> {
    match command {
        // `run` handles it before a context exists.
        Command::Login => Ok(()),
        Command::Ls { prefix, page_size } => ls::run(ctx, prefix, page_size).await,
        Command::Cat {
            path,
            version,
            snapshot,
        } => cat::run(ctx, &path, version, snapshot).await,
        Command::Put {
            path,
            file,
            if_match,
            safe,
            content_type,
        } => put::run(ctx, &path, file, if_match, safe, content_type).await,
        Command::Rm {
            path,
            if_match,
            safe,
        } => rm::run(ctx, &path, if_match, safe).await,
        Command::Search {
            query,
            exact,
            regex,
            semantic,
            hybrid,
            ignore_case,
            prefix,
            glob,
            limit,
            snapshot,
        } => {
            let mode = if exact {
                "exact"
            } else if regex {
                "regex"
            } else if semantic {
                "semantic"
            } else if hybrid {
                "hybrid"
            } else {
                "keyword"
            };
            let q = search::Query {
                q: query,
                mode,
                ignore_case,
                prefix,
                glob,
                limit,
                snapshot,
            };
            search::run(ctx, q).await
        }
        Command::Commit(args) => commit::run(ctx, args).await,
        Command::Log { path } => history::log(ctx, &path).await,
        Command::Diff { path, from, to } => history::diff(ctx, &path, from, to).await,
        Command::Restore {
            path,
            version,
            if_match,
        } => history::restore(ctx, &path, version, if_match).await,
        Command::Snapshot(cmd) => snapshot::run(ctx, cmd).await,
        Command::Fork(cmd) => fork::run(ctx, cmd).await,
        Command::Sync { dir, prefix } => crate::sync::run(ctx, &dir, prefix.as_deref()).await,
        Command::Watch { after } => crate::watch::run(ctx, after).await,
        Command::Mount(args) => {
            let client = crate::client::Client::new(ctx.client.settings().clone())?;
            crate::mount::run(client, args).await
        }
        Command::Unmount { .. } => Ok(()),
    }
}
