//! `rex`: the operator's command-line tool for a Reliable Executor store.
//!
//! It works on any store [`executor_any::AnyStorage`] connects to, named by
//! `--url` or `REX_URL` (`redis://…`, `redis-cluster://…`, `mysql://…`, `postgres://…`,
//! `mariadb://…`), and one namespace, `--namespace` or `REX_NAMESPACE`.
//! Both are required: `memory:` would be a new, empty store.
//!
//! ```text
//! rex counts                                   tasks per state
//! rex list --state failed [--name N] [--limit 50]
//! rex show ID                                  every field, payload as JSON
//! rex requeue ID | rex requeue --all-dead      dead letters back to PENDING
//! rex cancel ID | rex delete ID
//! rex purge --state completed --older-than 7d [--yes]
//! rex watch [--interval 1s] [--iterations N]   counts and rates, live
//! rex schedules [pause|resume|remove NAME]
//! rex queues [pause|resume NAME]               depth, latency, paused, running, limits
//! rex queues limit NAME [--concurrency N] [--rate N/PERIOD] [--burst N] | --clear
//! rex completions bash|zsh|fish
//! ```
//!
//! Tables by default, `--json` for machines. A failure prints one line,
//! `rex: …`, on stderr and exits with:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | not found: no task with that id, no schedule with that name |
//! | 2 | usage or bad input: a flag, URL, id, queue name, state or duration; a transition the task's state refuses; a purge not confirmed |
//! | 3 | the store is unreachable or failing |
//! | 4 | anything else: a corrupt record, a store without the ability asked for |
//!
//! See `docs/cli.md` for a transcript of every command.

mod args;
mod commands;
mod error;
mod limits;
mod queues;
mod schedules;
mod table;
mod watch;

use std::{
    io::{self, Write},
    process::ExitCode,
};

use clap::{CommandFactory, Parser};

use crate::{
    args::{Cli, Command, Shell},
    error::{CliError, CliResult},
};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version print to stdout and exit 0; usage errors exit 2.
        Err(e) => e.exit(),
    };
    let result = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(run(&cli, &mut io::stdout().lock())),
        Err(e) => Err(CliError { code: CliError::OTHER, message: format!("cannot start the runtime: {e}") }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`rex list | head`) is the reader's choice, not a failure.
        Err(e) if e.code == 0 => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rex: {e}");
            ExitCode::from(e.code)
        }
    }
}

/// Runs one command, writing its output to `out`.
async fn run(cli: &Cli, out: &mut dyn Write) -> CliResult {
    if let Command::Completions { shell } = &cli.command {
        let shell = match shell {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        };
        clap_complete::generate(shell, &mut Cli::command(), "rex", out);
        return Ok(());
    }
    // A bad queue name or limit is bad input whether or not the store answers.
    if let Command::Queues { action: Some(action) } = &cli.command {
        queues::check(action)?;
    }
    let client = commands::connect(cli).await?;
    let json = cli.json;
    match &cli.command {
        Command::Counts => commands::counts(&client, json, out).await,
        Command::List(args) => commands::list(&client, args, json, out).await,
        Command::Show { id } => commands::show(&client, id, json, out).await,
        Command::Requeue(args) => commands::requeue(&client, args, json, out).await,
        Command::RunNow { id } => commands::run_now(&client, id, json, out).await,
        Command::Cancel { id } => commands::cancel(&client, id, json, out).await,
        Command::Delete { id } => commands::delete(&client, id, json, out).await,
        Command::Purge(args) => commands::purge(&client, args, json, out).await,
        Command::Watch(args) => watch::run(&client, args, json, out).await,
        Command::Schedules { action } => schedules::run(&client, action.as_ref(), json, out).await,
        Command::Queues { action } => queues::run(&client, action.as_ref(), json, out).await,
        Command::Completions { .. } => Ok(()),
    }
}
