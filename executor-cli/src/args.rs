//! The command line: global options and one subcommand per operator task.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The exit codes, shown at the end of `rex --help`.
const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  not found (no task with that id, no schedule with that name)
  2  usage or bad input (unknown flag, bad URL, id, queue name, limit, state or duration; a refused transition)
  3  the store is unreachable or failing
  4  anything else (a corrupt record, a store without the ability asked for)";

/// rex: inspect and repair the tasks of a Reliable Executor store.
#[derive(Debug, Parser)]
#[command(name = "rex", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The store: redis://host:6379, redis-cluster://..., mysql://user:pass@host/db, mariadb://..., postgres://user:pass@host/db
    #[arg(long, env = "REX_URL", global = true, hide_env_values = true)]
    pub(crate) url: Option<String>,
    /// The namespace whose tasks to show or change.
    #[arg(long, env = "REX_NAMESPACE", global = true)]
    pub(crate) namespace: Option<String>,
    /// Machine output: JSON instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// One operator task.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Tasks per state.
    Counts,
    /// Tasks in one state, oldest cursor first.
    List(ListArgs),
    /// Every field of one task.
    Show {
        /// The task id.
        id: String,
    },
    /// Moves a dead-lettered task (FAILED, TIMEOUT, ERROR) back to PENDING, due now.
    Requeue(RequeueArgs),
    /// Makes a waiting task (CREATED, PENDING: delayed, backing off, debounced) due now.
    RunNow {
        /// The task id.
        id: String,
    },
    /// Cancels a waiting task, or asks a running one to stop.
    Cancel {
        /// The task id.
        id: String,
    },
    /// Deletes one task in any state.
    Delete {
        /// The task id.
        id: String,
    },
    /// Deletes the tasks of a finished state that finished longer ago than a duration.
    Purge(PurgeArgs),
    /// Counts and per-state rates, refreshed until stopped.
    Watch(WatchArgs),
    /// The cron schedules; with a subcommand, pauses, resumes or removes one.
    Schedules {
        /// What to do to a schedule; without one, lists them.
        #[command(subcommand)]
        action: Option<ScheduleAction>,
    },
    /// The named queues with waiting or running tasks, paused or limited; with a subcommand, pauses,
    /// resumes or limits one.
    Queues {
        /// What to do to a queue; without one, lists them.
        #[command(subcommand)]
        action: Option<QueueAction>,
    },
    /// Prints a shell completion script: `rex completions bash > ~/.local/share/bash-completion/completions/rex`.
    Completions {
        /// The shell.
        shell: Shell,
    },
}

/// `rex list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The state: created, pending, running, completed, failed, timeout, error, cancelled.
    #[arg(long)]
    pub(crate) state: String,
    /// Only tasks of this name (the store filters: an index in the SQL stores).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Most tasks to show.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
}

/// `rex requeue`: one task or every dead letter.
#[derive(Debug, Args)]
pub(crate) struct RequeueArgs {
    /// The task id.
    #[arg(required_unless_present = "all_dead", conflicts_with = "all_dead")]
    pub(crate) id: Option<String>,
    /// Every FAILED, TIMEOUT and ERROR task of the namespace.
    #[arg(long)]
    pub(crate) all_dead: bool,
}

/// `rex purge`.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// A finished state: completed, failed, timeout, error, cancelled.
    #[arg(long)]
    pub(crate) state: String,
    /// Only tasks that finished longer ago than this: 30s, 12h, 7d.
    #[arg(long)]
    pub(crate) older_than: String,
    /// Deletes without asking.
    #[arg(long)]
    pub(crate) yes: bool,
}

/// `rex watch`.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// Time between refreshes: 500ms, 1s, 1m.
    #[arg(long, default_value = "1s")]
    pub(crate) interval: String,
    /// Stops after this many refreshes (default: until interrupted).
    #[arg(long)]
    pub(crate) iterations: Option<u64>,
}

/// `rex schedules <action>`.
#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleAction {
    /// Pauses a schedule: its ticks pass without a task.
    Pause {
        /// The schedule's name.
        name: String,
    },
    /// Resumes a schedule from its next tick.
    Resume {
        /// The schedule's name.
        name: String,
    },
    /// Removes a schedule (the tasks it submitted stay).
    Remove {
        /// The schedule's name.
        name: String,
    },
}

/// `rex queues <action>`.
#[derive(Debug, Subcommand)]
pub(crate) enum QueueAction {
    /// Pauses a queue on every process: none of its tasks starts until it is resumed.
    Pause {
        /// The queue's name.
        name: String,
    },
    /// Resumes a paused queue: its tasks are claimed again, in order.
    Resume {
        /// The queue's name.
        name: String,
    },
    /// Sets a queue's fleet-wide limits, replacing the ones it had (a limit not given is removed), or
    /// clears them.
    Limit(LimitArgs),
}

/// `rex queues limit`. The values are read by `rex` itself, so that a bad
/// one is one line on stderr, like every other bad input.
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    /// The queue's name.
    pub(crate) name: String,
    /// At most this many of its tasks running at once, across the fleet (1 to 1,000,000).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub(crate) concurrency: Option<String>,
    /// At most N starts per PERIOD, across the fleet: 50/s, 600/1m, 10/500ms (token bucket).
    #[arg(long, value_name = "N/PERIOD", allow_hyphen_values = true)]
    pub(crate) rate: Option<String>,
    /// The rate's bucket: most starts at once after an idle spell (default: N of --rate).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub(crate) burst: Option<String>,
    /// Removes both limits.
    #[arg(long)]
    pub(crate) clear: bool,
}

/// The shells `rex completions` writes scripts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Shell {
    /// Bash.
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
}
