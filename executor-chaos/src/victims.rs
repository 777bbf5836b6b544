//! Victims: tasks a run submits to go wrong on purpose, next to the ordinary
//! ones. A record corrupted in the store while it waits, a payload whose
//! `Deserialize` panics, a handler that panics before it returns its future,
//! a handler asking for a retry after `Duration::MAX`. Each must end dead
//! lettered (or be reported unreadable, or be gone) and never hurt another
//! task (bad input neither panics nor loses tasks, and harms no neighbour); the checker holds them to that.

use std::{fmt, sync::Arc, time::Duration};

use executor_core::{
    Error, Handler, Namespace, RetryPolicy, TaskContext, TaskError, TaskId, TaskState,
    storage::{Due, NewTask, SubmitMode},
};
use serde::{Deserialize, Deserializer};

use crate::{
    ledger::{Event, Ledger, now_ms},
    server::Backend,
    worker::TASK_NAME,
};

/// The task whose payload's `Deserialize` panics.
pub const PANIC_DECODE: &str = "chaos_panic_decode";
/// The task whose handler panics before it returns its future.
pub const PANIC_START: &str = "chaos_panic_start";
/// The task whose handler asks for a retry after `Duration::MAX`.
pub const RETRY_OVERFLOW: &str = "chaos_retry_overflow";
/// Text in every deliberate panic; the dead letter's reason must carry it.
pub const PANIC_TEXT: &str = "chaos: deliberate panic";
/// How long a corrupt victim waits before it is due: the controller edits
/// its record meanwhile, and it is claimed in a batch with ordinary tasks.
pub const CORRUPT_DELAY: Duration = Duration::from_millis(1_500);
/// The delay of a victim whose MariaDB row is corrupted: past a tiered
/// store's horizon ([`crate::tiered::HORIZON`]), so on a tiered store it
/// waits in the cold tier and the promotion meets the bad row.
pub const COLD_CORRUPT_DELAY: Duration = Duration::from_millis(4_500);

/// What kind of victim (`chaos run --victim-kinds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum VictimKind {
    /// A record edited into garbage while it waits (per backend, see [`Corruption`]).
    Corrupt,
    /// A payload whose `Deserialize` panics.
    PanicDecode,
    /// A handler that panics before it returns its future.
    PanicStart,
    /// A handler returning `TaskError::retry_after(.., Duration::MAX)`.
    RetryOverflow,
}

/// How a corrupt victim's record is edited. Redis: the task hash
/// `{re:<ns>}:t:<id>` (fields of `executor-redis/src/record.rs`); MariaDB
/// and PostgreSQL: the row of `reliable_executor_tasks`. PostgreSQL's CHECK
/// constraints refuse an unknown state and negative counters, and no
/// session can turn them off (MariaDB's can), so its corruptions are values
/// the constraints let through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Corruption {
    /// The hash is replaced by a string key.
    RedisWrongType,
    /// The hash is replaced by a list.
    RedisList,
    /// `f` (fence) is not a number.
    RedisFenceText,
    /// `a` (attempts) is far past `u32::MAX`.
    RedisAttemptsHuge,
    /// `d` (due) is not a number.
    RedisDueText,
    /// `f` (fence) is `1e400` (infinite in Lua).
    RedisFenceInf,
    /// `s` (state) is not a state name.
    RedisUnknownState,
    /// `s` (state) is deleted.
    RedisNoState,
    /// `state` is `Pending` (the column is `ascii_bin`).
    MysqlMixedCase,
    /// `state` is not a state name.
    MysqlUnknownState,
    /// `attempts` is `u32::MAX`.
    MysqlAttemptsMax,
    /// `fence` is `u64::MAX`.
    MysqlFenceMax,
    /// `attempts` is `INTEGER`'s maximum, 2^31-1 (one more attempt is out of range).
    PostgresAttemptsMax,
    /// `fence` is `BIGINT`'s maximum, 2^63-1.
    PostgresFenceMax,
    /// `retry` (the policy's JSON) is not JSON.
    PostgresRetryText,
    /// `due_at` is negative (no time a record can hold).
    PostgresDueNegative,
}

impl Corruption {
    /// The corruptions of a backend's store (a tiered store: both tiers).
    pub fn of(backend: Backend) -> &'static [Corruption] {
        use Corruption::*;
        match backend {
            Backend::Redis => &[
                RedisWrongType,
                RedisFenceText,
                RedisAttemptsHuge,
                RedisUnknownState,
                RedisNoState,
                RedisList,
                RedisDueText,
                RedisFenceInf,
            ],
            Backend::Mysql => &[MysqlMixedCase, MysqlUnknownState, MysqlAttemptsMax, MysqlFenceMax],
            Backend::Postgres => {
                &[PostgresAttemptsMax, PostgresRetryText, PostgresFenceMax, PostgresDueNegative]
            }
            // Hot (Redis) and cold (MariaDB) records in turn.
            Backend::Tiered => &[
                RedisWrongType,
                MysqlAttemptsMax,
                RedisFenceText,
                MysqlUnknownState,
                RedisAttemptsHuge,
                MysqlFenceMax,
                RedisUnknownState,
                MysqlMixedCase,
                RedisNoState,
                RedisList,
                RedisDueText,
                RedisFenceInf,
            ],
        }
    }

    /// A short name for ids and the summary.
    pub fn name(self) -> &'static str {
        use Corruption::*;
        match self {
            RedisWrongType => "wrong-type",
            RedisList => "list",
            RedisFenceText => "fence-text",
            RedisAttemptsHuge => "attempts-huge",
            RedisDueText => "due-text",
            RedisFenceInf => "fence-inf",
            RedisUnknownState => "unknown-state",
            RedisNoState => "no-state",
            MysqlMixedCase => "mixed-case-state",
            MysqlUnknownState => "unknown-state",
            MysqlAttemptsMax => "attempts-max",
            MysqlFenceMax => "fence-max",
            PostgresAttemptsMax => "attempts-max",
            PostgresFenceMax => "fence-max",
            PostgresRetryText => "retry-not-json",
            PostgresDueNegative => "due-negative",
        }
    }

    /// Whether the record is a MariaDB row (on a tiered store: in the cold tier).
    pub fn is_mysql(self) -> bool {
        self.mysql_update().is_some()
    }

    /// Whether the record is a PostgreSQL row.
    pub fn is_postgres(self) -> bool {
        self.postgres_update().is_some()
    }

    /// A Lua script that corrupts the hash `KEYS[1]` if the task still
    /// waits (`CREATED` or `PENDING`); returns 1 if it did.
    pub fn redis_script(self) -> Option<String> {
        use Corruption::*;
        let edit = match self {
            RedisWrongType => "redis.call('DEL', KEYS[1]) redis.call('SET', KEYS[1], 'not a task hash')",
            RedisList => "redis.call('DEL', KEYS[1]) redis.call('RPUSH', KEYS[1], 's', 'PENDING')",
            RedisFenceText => "redis.call('HSET', KEYS[1], 'f', 'seven')",
            RedisAttemptsHuge => "redis.call('HSET', KEYS[1], 'a', '99999999999999999999999')",
            RedisDueText => "redis.call('HSET', KEYS[1], 'd', 'soon')",
            RedisFenceInf => "redis.call('HSET', KEYS[1], 'f', '1e400')",
            RedisUnknownState => "redis.call('HSET', KEYS[1], 's', 'SLEEPING')",
            RedisNoState => "redis.call('HDEL', KEYS[1], 's')",
            _ => return None,
        };
        Some(format!(
            "local s = redis.call('HGET', KEYS[1], 's') \
             if s ~= 'CREATED' and s ~= 'PENDING' then return 0 end {edit} return 1"
        ))
    }

    /// The UPDATE that corrupts the row (binds: ns, id), made only while
    /// the task waits (`CREATED` or `PENDING`).
    pub fn mysql_update(self) -> Option<&'static str> {
        use Corruption::*;
        macro_rules! update {
            ($set:literal) => {
                concat!(
                    "UPDATE reliable_executor_tasks SET ",
                    $set,
                    " WHERE ns = ? AND id = ? AND state IN ('CREATED', 'PENDING')"
                )
            };
        }
        Some(match self {
            MysqlMixedCase => update!("state = 'Pending'"),
            MysqlUnknownState => update!("state = 'SLEEPING'"),
            MysqlAttemptsMax => update!("attempts = 4294967295"),
            MysqlFenceMax => update!("fence = 18446744073709551615"),
            _ => return None,
        })
    }

    /// The UPDATE that corrupts the row (binds: ns, id), made only while
    /// the task waits (`CREATED` or `PENDING`).
    pub fn postgres_update(self) -> Option<&'static str> {
        use Corruption::*;
        macro_rules! update {
            ($set:literal) => {
                concat!(
                    "UPDATE reliable_executor_tasks SET ",
                    $set,
                    " WHERE ns = $1 AND id = $2 AND state IN ('CREATED', 'PENDING')"
                )
            };
        }
        Some(match self {
            PostgresAttemptsMax => update!("attempts = 2147483647"),
            PostgresFenceMax => update!("fence = 9223372036854775807"),
            PostgresRetryText => update!("retry = 'not json'"),
            PostgresDueNegative => update!("due_at = -1"),
            _ => return None,
        })
    }
}

/// One victim of a run.
#[derive(Clone, Debug)]
pub struct Victim {
    /// Its id (`v-...`, never an ordinary task's `t...`).
    pub id: String,
    /// What kind.
    pub kind: VictimKind,
    /// For [`VictimKind::Corrupt`], how its record was edited.
    pub corruption: Option<Corruption>,
    /// Whether its submit was accepted.
    pub submitted: bool,
    /// Whether the edit was made before the task was claimed (a corrupt
    /// victim claimed first is an ordinary task that only has to settle).
    pub corrupted: bool,
    /// Whether the store refused the edit (a schema constraint): then it is
    /// an ordinary task too.
    pub edit_refused: bool,
}

/// Whether `id` is a victim's (ordinary tasks are `t0000123`).
pub fn is_victim(id: &str) -> bool {
    id.starts_with("v-")
}

impl Victim {
    /// The label the summary tallies outcomes under.
    pub fn label(&self) -> String {
        match self.corruption {
            Some(c) if self.edit_refused => format!("corrupt {} (edit refused by the store)", c.name()),
            Some(c) if !self.corrupted => format!("corrupt {} (claimed before the edit)", c.name()),
            Some(c) => format!("corrupt {}", c.name()),
            None => format!("{:?}", self.kind).to_lowercase(),
        }
    }

    /// How long a corrupt victim waits before it is due (its record is
    /// edited meanwhile).
    pub fn delay(&self) -> Duration {
        match self.corruption {
            Some(c) if c.is_mysql() => COLD_CORRUPT_DELAY,
            _ => CORRUPT_DELAY,
        }
    }

    /// The task to submit.
    ///
    /// # Errors
    /// The id is invalid (never, for ids made by [`plan`]).
    pub fn new_task(&self) -> Result<NewTask, Error> {
        let (name, payload, due) = match self.kind {
            VictimKind::Corrupt => (TASK_NAME, "0", Due::After(self.delay())),
            VictimKind::PanicDecode => (PANIC_DECODE, "{}", Due::Now),
            VictimKind::PanicStart => (PANIC_START, "0", Due::Now),
            VictimKind::RetryOverflow => (RETRY_OVERFLOW, "0", Due::Now),
        };
        let mut task = NewTask::new(TaskId::new(&self.id)?, name, payload.as_bytes().to_vec());
        task.due = due;
        // Attempts left, so a retry is really computed (one attempt would
        // dead-letter before any delay is looked at).
        task.max_attempts = 3;
        task.retry = Some(RetryPolicy::fixed(Duration::from_millis(200)));
        task.mode = SubmitMode::Idempotent;
        Ok(task)
    }

    /// Whether `outcome` is what this victim must end as.
    pub fn expected(&self, outcome: &Outcome) -> bool {
        match (self.kind, outcome) {
            // Only an edit made while the task waited has to be caught.
            (VictimKind::Corrupt, _) if !self.corrupted => outcome.is_settled(),
            (VictimKind::Corrupt, Outcome::Unreadable(_) | Outcome::Gone) => true,
            (VictimKind::Corrupt, Outcome::Record { state, error }) => {
                // PostgreSQL names what was wrong: "corrupt record: ...".
                let reason = |e: &str| match self.corruption {
                    Some(c) if c.is_postgres() => e.starts_with("corrupt record"),
                    _ => !e.is_empty(),
                };
                *state == TaskState::Error && error.as_deref().is_some_and(reason)
                    // `Pending` parses as PENDING (state names are case-blind):
                    // a store may also run it as the valid task it is.
                    || (self.corruption == Some(Corruption::MysqlMixedCase) && *state == TaskState::Completed)
            }
            (VictimKind::PanicDecode | VictimKind::PanicStart, Outcome::Record { state, error }) => {
                matches!(state, TaskState::Error | TaskState::Failed)
                    && error.as_deref().is_some_and(|e| e.contains(PANIC_TEXT))
            }
            (VictimKind::RetryOverflow, Outcome::Record { state, error }) => {
                matches!(state, TaskState::Error | TaskState::Failed)
                    && error.as_deref().is_some_and(|e| !e.is_empty())
            }
            _ => false,
        }
    }
}

/// What the store says of a victim at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A record that reads.
    Record {
        /// Its state.
        state: TaskState,
        /// Its `last_error`.
        error: Option<String>,
    },
    /// `get` answered `Error::Corrupt` (the record is reported unreadable).
    Unreadable(String),
    /// No such task.
    Gone,
    /// `get` failed otherwise.
    Failed(String),
}

impl Outcome {
    /// Reads victim `id` from `storage`.
    pub async fn read<S: executor_core::storage::Storage>(storage: &S, ns: &Namespace, id: &str) -> Self {
        let Ok(id) = TaskId::new(id) else { return Outcome::Failed("bad id".to_owned()) };
        match storage.get(ns, &id).await {
            Ok(Some(t)) => Outcome::Record { state: t.state, error: t.last_error },
            Ok(None) => Outcome::Gone,
            Err(Error::Corrupt { reason, .. }) => Outcome::Unreadable(reason),
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    /// Whether nothing more will happen to it (terminal, unreadable or gone).
    pub fn is_settled(&self) -> bool {
        match self {
            Outcome::Record { state, .. } => state.is_terminal(),
            Outcome::Unreadable(_) | Outcome::Gone => true,
            Outcome::Failed(_) => false,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Record { state, .. } => write!(f, "{state}"),
            Outcome::Unreadable(_) => f.write_str("unreadable"),
            Outcome::Gone => f.write_str("gone"),
            Outcome::Failed(e) => write!(f, "read failed: {e}"),
        }
    }
}

/// The victims of a run: `per_kind` of each of `kinds`, corrupt ones going
/// round the backend's corruptions, in the order they are submitted.
pub fn plan(backend: Backend, kinds: &[VictimKind], per_kind: usize) -> Vec<Victim> {
    let corruptions = Corruption::of(backend);
    let mut out = Vec::new();
    for n in 0..per_kind {
        for &kind in kinds {
            let corruption = (kind == VictimKind::Corrupt).then(|| corruptions[n % corruptions.len()]);
            let label = match corruption {
                Some(c) => c.name().to_owned(),
                None => format!("{kind:?}").to_lowercase(),
            };
            out.push(Victim {
                id: format!("v-{label}-{n:04}"),
                kind,
                corruption,
                submitted: false,
                corrupted: false,
                edit_refused: false,
            });
        }
    }
    out
}

/// A payload whose `Deserialize` panics, whatever the bytes.
#[derive(Debug)]
pub struct Explosive;

impl<'de> Deserialize<'de> for Explosive {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("{PANIC_TEXT} in Deserialize")
    }
}

/// The victims' handlers. The two that run user code record `Start` and
/// `End` like the ordinary handler, so the checker sees their attempts.
pub fn handlers(ledger: &Arc<Ledger>) -> Vec<Handler> {
    let record = |ledger: &Arc<Ledger>, ctx: &TaskContext| {
        let (task, fence, pid) = (ctx.id().as_str().to_owned(), ctx.fence(), std::process::id());
        ledger.record(&Event::Start { task: task.clone(), fence, attempt: ctx.attempt(), pid, t: now_ms() });
        ledger.record(&Event::End { task, fence, pid, t: now_ms() });
    };
    let (l1, l2) = (Arc::clone(ledger), Arc::clone(ledger));
    vec![
        Handler::new(PANIC_DECODE, |_: Explosive, _: TaskContext| async { Ok::<(), TaskError>(()) }),
        Handler::new(PANIC_START, move |_: u64, ctx: TaskContext| {
            record(&l1, &ctx);
            // Always true; the branch keeps the future below reachable for the compiler.
            if ctx.attempt() > 0 {
                panic!("{PANIC_TEXT} before the handler returned its future");
            }
            async { Ok::<(), TaskError>(()) }
        }),
        Handler::new(RETRY_OVERFLOW, move |_: u64, ctx: TaskContext| {
            record(&l2, &ctx);
            async {
                Err::<(), TaskError>(TaskError::retry_after(
                    "chaos: retry asked after Duration::MAX",
                    Duration::MAX,
                ))
            }
        }),
    ]
}
