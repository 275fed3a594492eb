//! `ws`: a command-line client for any deployment of the Agent Workspace API.
//!
//! Exit codes: 0 ok, 1 conflict, 2 not found, 3 auth, 4 bad input, 5 server or network.

mod cli;
mod client;
mod commands;
mod config;
mod content;
mod discovery;
mod error;
mod mount;
mod output;
mod route;
mod source;
mod state;
mod sync;
mod upload;
mod watch;
mod write;

use clap::Parser;
use error::Kind;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Help and version are answers; anything else is a bad command line (4, where
            // clap would say 2, which here means "not found").
            return if e.use_stderr() {
                ExitCode::from(Kind::BadInput.exit_code())
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // The mount calls the API from FUSE's threads through the runtime's handle, so its
    // runtime must drive I/O on threads of its own.
    let builder = if matches!(cli.command, cli::Command::Mount(_)) {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match { builder }.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ws: cannot start: {e}");
            return ExitCode::from(Kind::Server.exit_code());
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.kind.exit_code())
        }
    }
}
