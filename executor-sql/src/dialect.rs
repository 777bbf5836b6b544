//! What a dialect implements: one trait per part of a store, each in the
//! driver module of the same name (`submit.rs` implements [`Submit`],
//! `claim.rs` [`Claim`], ...). [`crate::SqlStorage`] puts them together
//! into the core's `Storage` and the ability traits, once for every
//! dialect; a part the SQL core does itself (the finish, the list cursor)
//! is not here.
//!
//! Each method means what the core trait method of the same name means
//! (`executor_core::storage`); the docs say only what differs.

use std::{future::Future, time::Duration};

use executor_core::{
    Namespace, QueueName, Result, Submitted, TaskRecord, Timestamp, WorkerId,
    query::Retention,
    queue::{ClaimPlan, QueueLimits},
    storage::{Heartbeat, HistoryCount, Lease, NewTask, Reaped},
};
use sqlx::{Database, Pool};

use crate::{
    ErrorClass, SqlOptions,
    conn::Conns,
    finish::{FinishGroup, FinishStatements},
    limits::Stored,
    queues::WaitingFigures,
    row::Counters,
    stmt::{ArgsOf, Cols, SqlDb, Statements, Value},
};

/// A dialect: its database, its state (what a storage of it holds, cheap to
/// clone), and the parts every store has. `storage.rs` of the driver
/// implements it.
pub trait Dialect:
    Clone + std::fmt::Debug + Send + Sync + ErrorClass + 'static + Submit + Claim + Wait + Housekeeping
{
    /// The sqlx database.
    type Db: SqlDb + Database<Row: Cols>;

    /// This dialect's texts of the statements the SQL core runs
    /// ([`crate::statements!`]).
    const SQL: Statements;

    /// The connections the storage's statements run on.
    fn conns(&self) -> &Conns<Self::Db>;

    /// The rows a statement changed (matched, where the server counts so).
    fn rows_affected(result: &<Self::Db as Database>::QueryResult) -> u64;

    /// Binds a fence or a token, or NULL. The default binds it as a
    /// saturating signed `BIGINT`; a dialect with unsigned columns binds it
    /// as it is.
    fn bind_uint(
        q: sqlx::query::Query<'_, Self::Db, ArgsOf<Self>>,
        v: Option<u64>,
    ) -> sqlx::query::Query<'_, Self::Db, ArgsOf<Self>> {
        Self::Db::bind(q, Value::OptUint(v))
    }

    /// The counters of a task row, whose column types differ by dialect.
    ///
    /// # Errors
    /// A column is missing, NULL, of another type or out of the record's
    /// range.
    fn counters(row: &<Self::Db as Database>::Row) -> std::result::Result<Counters, String>;

    /// Whether the statement files number their placeholders (`$1`) rather
    /// than write them in order (`?`) ([`crate::stmt::query_only`]).
    const NUMBERED_PLACEHOLDERS: bool;
    /// What every list cursor of this store starts with ([`crate::cursor`]).
    const CURSOR_PREFIX: &'static str;
    /// The most characters the id column holds.
    const MAX_ID_CHARS: usize;
    /// The largest `attempts` the column holds: a row at it cannot be
    /// claimed, so a tier move sends it to `ERROR` instead.
    const MAX_ATTEMPTS: u32;

    /// Refuses a record moved in from another tier that this store's
    /// columns cannot hold exactly (the payload limit and the priority are
    /// checked for every dialect). The default takes any.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming what does not fit.
    fn check_import(_record: &TaskRecord) -> Result<()> {
        Ok(())
    }

    /// Reads a fence or a token. The default reads a signed `BIGINT` and
    /// refuses a negative one; a dialect with unsigned columns reads it as
    /// it is.
    ///
    /// # Errors
    /// The column is missing, NULL, not an integer, or negative.
    fn uint(row: &<Self::Db as Database>::Row, name: &'static str) -> std::result::Result<u64, String> {
        let v = row.int(name)?;
        u64::try_from(v).map_err(|_| format!("column `{name}` is negative: {v}"))
    }
    /// The poll interval's default bounds ([`SqlOptions::poll_interval`]).
    const DEFAULT_POLL: (Duration, Duration);
    /// The payload limit's default; `None` where the server decides.
    const DEFAULT_MAX_PAYLOAD: Option<usize>;
    /// Connections of the pool [`SqlOptions::connect`] makes beyond those
    /// the storage's statements use: for callers of `pool()`, the
    /// migrator, a listener.
    const RESERVED_CONNECTIONS: u32;
    /// Where the driver's migrations are, for the message of an incomplete
    /// schema (`executor-mysql/migrations`).
    const MIGRATIONS_DIR: &'static str;

    /// A dialect on an existing pool with `options`; runs nothing.
    fn from_pool(pool: Pool<Self::Db>, options: SqlOptions<Self>) -> Self;

    /// Starts what the dialect runs once the schema is there (reads a
    /// server setting, starts a listener).
    fn opened(&self) -> impl Future<Output = Result<()>> + Send;

    /// The pool the storage's connections come from.
    fn pool(&self) -> &Pool<Self::Db>;

    /// Creates or upgrades the schema, then checks it is complete.
    fn migrate(&self) -> impl Future<Output = Result<()>> + Send;

    /// Stops what the dialect runs in the background (a listener), gives
    /// back the kept connections and closes the pool.
    fn close(&self) -> impl Future<Output = ()> + Send;

    /// The largest payload this store takes.
    fn max_payload(&self) -> impl Future<Output = Result<usize>> + Send;

    /// The task name of a history row. The default reads a text column; a
    /// dialect that stores the name as bytes reads those.
    ///
    /// # Errors
    /// The column is missing or not a name.
    fn history_name(row: &<Self::Db as Database>::Row) -> std::result::Result<String, String> {
        row.text("name")
    }

    /// Wakes idle claimers of this process: a change the SQL core made
    /// (a requeue, a run now, a delete that freed a slot) may have made
    /// work due.
    fn work_may_be_due(&self, ns: &Namespace);

    /// Tells claimers waiting on `ns` that work may be due after a change
    /// no task row shows (a queue resumed, a limit raised or removed): of
    /// this process where the dialect has no notifications, of every
    /// process where it has.
    fn announce_work(&self, ns: &Namespace) -> impl Future<Output = Result<()>> + Send;

    /// Where concurrent finishes of this process share a batch.
    fn finishes(&self) -> &FinishGroup;

    /// This dialect's finish statements (`finish.rs`), on this storage's
    /// connections.
    fn finish_statements(&self) -> impl FinishStatements;
}

/// Creating tasks (`submit.rs`).
pub trait Submit: Sized {
    /// As `Storage::submit`.
    fn submit(&self, ns: &Namespace, task: NewTask) -> impl Future<Output = Result<Submitted>> + Send;

    /// As `Storage::submit_many`.
    fn submit_many(
        &self,
        ns: &Namespace,
        tasks: Vec<NewTask>,
    ) -> impl Future<Output = Result<Vec<Result<Submitted>>>> + Send;
}

/// Creating a task inside the caller's transaction (`submit.rs`).
pub trait SubmitIn<C: ?Sized> {
    /// As `SubmitIn::submit_in`: the task is written by `conn`'s
    /// transaction, visible and claimable only once it commits.
    fn submit_in(
        &self,
        conn: &mut C,
        ns: &Namespace,
        task: NewTask,
    ) -> impl Future<Output = Result<Submitted>> + Send;
}

/// Taking due tasks and keeping their leases (`claim.rs`).
pub trait Claim {
    /// As `Storage::claim`.
    fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> impl Future<Output = Result<Vec<TaskRecord>>> + Send;

    /// As `Storage::heartbeat`.
    fn heartbeat(
        &self,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> impl Future<Output = Result<Heartbeat>> + Send;
}

/// Waiting for work (`wake.rs`).
pub trait Wait {
    /// As `Storage::wait_for_work`.
    fn wait_for_work(
        &self,
        ns: &Namespace,
        queues: &[QueueName],
        max_wait: Duration,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// The leader's upkeep (`housekeeping.rs`).
pub trait Housekeeping {
    /// As `Storage::reap`.
    fn reap(&self, ns: &Namespace, limit: usize) -> impl Future<Output = Result<Reaped>> + Send;

    /// As `Storage::trim`.
    fn trim(
        &self,
        ns: &Namespace,
        retention: &Retention,
        limit: usize,
    ) -> impl Future<Output = Result<u64>> + Send;
}

/// Moves between a hot and a cold tier (`tier.rs`); the SQL core reads the
/// rows, moves those no tier can take to `ERROR`, and imports.
pub trait Tier: Dialect {
    /// The rows (every task column and the attempt log) of up to `limit`
    /// waiting tasks due before `before`, earliest first.
    fn due_rows(
        &self,
        ns: &Namespace,
        before: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<<Self::Db as Database>::Row>>> + Send;
}

/// Queue limits and the reads behind the queue list (`queues.rs`); the SQL
/// core pauses, resumes and puts the list together.
pub trait Queues {
    /// The queues this process has seen with limits (a hint of the claim's).
    fn limited(&self) -> &crate::limits::LimitedQueues;

    /// Sets `queue`'s limits (validated, at least one of them set): the
    /// SQL core removes them itself.
    fn set_limits(
        &self,
        ns: &Namespace,
        queue: &QueueName,
        limits: &QueueLimits,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The waiting tasks' figures of each queue that has any, by the name
    /// as stored (a queue may come more than once: the SQL core adds
    /// them up).
    fn waiting_figures(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<WaitingFigures>>> + Send;

    /// Every row of `ns` in the queues table, by the name as stored.
    fn stored_queues(&self, ns: &Namespace) -> impl Future<Output = Result<Vec<(String, Stored)>>> + Send;
}

/// Adding to the throughput history (`history.rs`); the SQL core reads
/// and trims it.
pub trait History {
    /// As `HistoryStore::add_history`.
    fn add_history(&self, ns: &Namespace, counts: &[HistoryCount])
    -> impl Future<Output = Result<()>> + Send;
}
