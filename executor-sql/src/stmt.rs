//! Statements the SQL core runs on any dialect: each dialect's file of the
//! same name, its parameters bound by name.
//!
//! A shared statement's file says, in its leading comment, the order its
//! text binds its parameters in: a line `-- params: ns, worker, term_ms`.
//! A dialect whose placeholders are positional (MySQL's `?`) names a
//! parameter once per use; one with numbered placeholders (PostgreSQL's
//! `$1`) once. The SQL core passes every value by name ([`Arg`]), so the
//! same call binds each dialect's text as it is written.

use executor_core::{Error, Result};
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Row, Type, query::Query};

use crate::{
    Dialect,
    conn::{Conns, RunOn},
};

/// A dialect's text of one shared statement and the order of its
/// parameters (from its `-- params:` line).
#[derive(Clone, Copy, Debug)]
pub struct Statement {
    /// The text sent, without the leading comment.
    pub text: &'static str,
    /// The names of the parameters in the order the text binds them,
    /// separated by commas.
    pub params: &'static str,
    /// The file's name (`leader/acquire`), for errors.
    pub name: &'static str,
}

/// The statement in the calling crate's `sql/<name>.sql` as a
/// [`Statement`].
#[macro_export]
macro_rules! statement {
    ($name:literal) => {{
        const FILE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/", $name, ".sql"));
        $crate::stmt::Statement { text: $crate::body(FILE), params: $crate::stmt::params(FILE), name: $name }
    }};
}

/// The parameter list of a statement file: what follows `-- params:` in its
/// leading comment, or nothing.
pub const fn params(file: &str) -> &str {
    const KEY: &[u8] = b"-- params:";
    let b = file.as_bytes();
    let mut i = 0;
    while i + KEY.len() <= b.len() {
        // Only the leading comment: stop at the first line that is not one.
        if b[i] != b'-' {
            return "";
        }
        let mut k = 0;
        while k < KEY.len() && b[i + k] == KEY[k] {
            k += 1;
        }
        let mut end = i;
        while end < b.len() && b[end] != b'\n' {
            end += 1;
        }
        if k == KEY.len() {
            let (_, rest) = file.split_at(i + KEY.len());
            return rest.split_at(end - i - KEY.len()).0;
        }
        i = end + 1;
    }
    ""
}

/// One value a shared statement binds, by the name its files use.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    /// Text.
    Text(&'a str),
    /// Text or NULL.
    OptText(Option<&'a str>),
    /// A signed integer (milliseconds, counts, lengths).
    Int(i64),
    /// A fence or a token: `BIGINT UNSIGNED` on MySQL, `BIGINT` (saturating)
    /// elsewhere ([`Dialect::bind_uint`]).
    Uint(u64),
    /// A fence or a token, or NULL.
    OptUint(Option<u64>),
    /// A signed integer or NULL (a time that may be unset).
    OptInt(Option<i64>),
    /// A truth value.
    Bool(bool),
    /// Bytes (a payload).
    Bytes(&'a [u8]),
}

/// A named value.
pub type Arg<'a> = (&'static str, Value<'a>);

/// Binding the values every dialect binds alike, and running a statement
/// on the storage's connections: what a database must do for the SQL
/// core's shared statements. Every sqlx database with the usual types has
/// it.
pub trait SqlDb: Database + Sized {
    /// Binds `v` to `q` (a `Uint` as a saturating `i64`; a dialect with
    /// unsigned columns binds it itself).
    fn bind<'q>(q: Query<'q, Self, Self::Arguments>, v: Value<'q>) -> Query<'q, Self, Self::Arguments>;

    /// Runs `q`; returns its result.
    fn execute<'q>(
        q: Query<'q, Self, Self::Arguments>,
        conns: &Conns<Self>,
    ) -> impl Future<Output = std::result::Result<Self::QueryResult, sqlx::Error>> + Send;

    /// Runs `q`; returns its rows.
    fn fetch_all<'q>(
        q: Query<'q, Self, Self::Arguments>,
        conns: &Conns<Self>,
    ) -> impl Future<Output = std::result::Result<Vec<Self::Row>, sqlx::Error>> + Send;

    /// Runs `q`; returns its first row, if any.
    fn fetch_optional<'q>(
        q: Query<'q, Self, Self::Arguments>,
        conns: &Conns<Self>,
    ) -> impl Future<Output = std::result::Result<Option<Self::Row>, sqlx::Error>> + Send;
}

impl<DB> SqlDb for DB
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> Option<&'e str>: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> Option<i64>: Encode<'e, DB> + Type<DB>,
    for<'e> bool: Encode<'e, DB> + Type<DB>,
    for<'e> &'e [u8]: Encode<'e, DB> + Type<DB>,
{
    fn bind<'q>(q: Query<'q, Self, Self::Arguments>, v: Value<'q>) -> Query<'q, Self, Self::Arguments> {
        match v {
            Value::Text(t) => q.bind(t),
            Value::OptText(t) => q.bind(t),
            Value::Int(i) => q.bind(i),
            Value::Uint(u) => q.bind(i64::try_from(u).unwrap_or(i64::MAX)),
            Value::OptUint(u) => q.bind(u.map(|u| i64::try_from(u).unwrap_or(i64::MAX))),
            Value::OptInt(i) => q.bind(i),
            Value::Bool(b) => q.bind(b),
            Value::Bytes(b) => q.bind(b),
        }
    }

    fn execute<'q>(
        q: Query<'q, Self, Self::Arguments>,
        conns: &Conns<Self>,
    ) -> impl Future<Output = std::result::Result<Self::QueryResult, sqlx::Error>> + Send {
        q.execute_on(conns)
    }

    fn fetch_all<'q>(
        q: Query<'q, Self, Self::Arguments>,
        conns: &Conns<Self>,
    ) -> impl Future<Output = std::result::Result<Vec<Self::Row>, sqlx::Error>> + Send {
        q.fetch_all_on(conns)
    }

    fn fetch_optional<'q>(
        q: Query<'q, Self, Self::Arguments>,
        conns: &Conns<Self>,
    ) -> impl Future<Output = std::result::Result<Option<Self::Row>, sqlx::Error>> + Send {
        q.fetch_optional_on(conns)
    }
}

/// Reading the columns every dialect reads alike, by name.
pub trait Cols {
    /// A text column.
    ///
    /// # Errors
    /// The column is missing, NULL or not text.
    fn text(&self, name: &'static str) -> std::result::Result<String, String>;

    /// A text column that may be NULL.
    ///
    /// # Errors
    /// The column is missing or not text.
    fn opt_text(&self, name: &'static str) -> std::result::Result<Option<String>, String>;

    /// A `BIGINT` column.
    ///
    /// # Errors
    /// The column is missing, NULL or not a `BIGINT`.
    fn int(&self, name: &'static str) -> std::result::Result<i64, String>;

    /// A `BIGINT` column that may be NULL.
    ///
    /// # Errors
    /// The column is missing or not a `BIGINT`.
    fn opt_int(&self, name: &'static str) -> std::result::Result<Option<i64>, String>;

    /// A boolean column.
    ///
    /// # Errors
    /// The column is missing, NULL or not a boolean.
    fn flag(&self, name: &'static str) -> std::result::Result<bool, String>;

    /// A bytes column.
    ///
    /// # Errors
    /// The column is missing, NULL or not bytes.
    fn bytes(&self, name: &'static str) -> std::result::Result<Vec<u8>, String>;
}

impl<R> Cols for R
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<i64>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, name: &'static str) -> std::result::Result<String, String> {
        crate::row::col(self, name)
    }

    fn opt_text(&self, name: &'static str) -> std::result::Result<Option<String>, String> {
        crate::row::col(self, name)
    }

    fn int(&self, name: &'static str) -> std::result::Result<i64, String> {
        crate::row::col(self, name)
    }

    fn opt_int(&self, name: &'static str) -> std::result::Result<Option<i64>, String> {
        crate::row::col(self, name)
    }

    fn flag(&self, name: &'static str) -> std::result::Result<bool, String> {
        crate::row::col(self, name)
    }

    fn bytes(&self, name: &'static str) -> std::result::Result<Vec<u8>, String> {
        crate::row::col(self, name)
    }
}

/// `statement` with `args` bound in the order its file names them.
///
/// # Errors
/// A parameter the file names that `args` lacks: the file and the code are
/// out of step (the conformance suites run every shared statement).
pub fn query<'q, D: Dialect>(statement: &Statement, args: &[Arg<'q>]) -> Result<Query<'q, D::Db, ArgsOf<D>>> {
    bind_named::<D>(sqlx::query::<D::Db>(statement.text), names(statement.params), args, statement.name)
}

/// [`query`] of `statement` without the lines ending in `-- if name` whose
/// name is not in `on` (and without that comment on the others): one file
/// for the shapes of a statement whose optional conditions pick different
/// indexes, such as the list page's. The parameters of the lines left out
/// are left out too; a dialect with numbered placeholders
/// ([`Dialect::NUMBERED_PLACEHOLDERS`]) writes the file numbered as if
/// every line were sent, and the lines sent are numbered `$1, $2, ..`
/// again.
///
/// # Errors
/// As [`query`].
pub fn query_only<'q, D: Dialect>(
    statement: &Statement,
    on: &[&str],
    args: &[Arg<'q>],
) -> Result<Query<'q, D::Db, ArgsOf<D>>> {
    let (text, params) = only(statement, on, D::NUMBERED_PLACEHOLDERS);
    bind_named::<D>(sqlx::query::<D::Db>(sqlx::AssertSqlSafe(text)), params.into_iter(), args, statement.name)
}

/// The parameter names of a `-- params:` line, in order.
fn names(params: &'static str) -> impl Iterator<Item = &'static str> {
    params.split(',').map(str::trim).filter(|n| !n.is_empty())
}

/// The text [`query_only`] sends and the names of its parameters, in the
/// order that text binds them.
fn only(statement: &Statement, on: &[&str], numbered: bool) -> (String, Vec<&'static str>) {
    let all: Vec<&'static str> = names(statement.params).collect();
    let name_of = |i: usize| all.get(i).copied().unwrap_or("");
    let mut text = String::with_capacity(statement.text.len());
    let mut sent = Vec::new();
    // The index of the file's next `?`, for positional placeholders.
    let mut next = 0;
    for line in statement.text.lines() {
        let (line, keep) = match line.split_once(" -- if ") {
            Some((line, name)) => (line.trim_end(), on.contains(&name.trim())),
            None => (line, true),
        };
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                quoted = !quoted;
            }
            if !quoted && numbered && c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
                let mut n = 0usize;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    n = n.saturating_mul(10).saturating_add(d as usize);
                    chars.next();
                }
                if keep {
                    sent.push(name_of(n.wrapping_sub(1)));
                    text.push_str(&format!("${}", sent.len()));
                }
                continue;
            }
            if !quoted && !numbered && c == '?' {
                if keep {
                    sent.push(name_of(next));
                }
                next += 1;
            }
            if keep {
                text.push(c);
            }
        }
        if keep {
            text.push('\n');
        }
    }
    (text, sent)
}

/// Binds `args` to `q` in the order of `params`.
fn bind_named<'q, D: Dialect>(
    mut q: Query<'q, D::Db, ArgsOf<D>>,
    params: impl Iterator<Item = &'static str>,
    args: &[Arg<'q>],
    statement: &str,
) -> Result<Query<'q, D::Db, ArgsOf<D>>> {
    for name in params {
        let Some((_, v)) = args.iter().find(|(n, _)| *n == name) else {
            return Err(Error::storage(
                std::io::Error::other(format!(
                    "statement `{statement}` binds `{name}`, which its caller does not give"
                )),
                false,
            ));
        };
        q = match v {
            Value::Uint(u) => D::bind_uint(q, Some(*u)),
            Value::OptUint(u) => D::bind_uint(q, *u),
            v => D::Db::bind(q, *v),
        };
    }
    Ok(q)
}

/// The arguments of a query of dialect `D`.
pub type ArgsOf<D> = <<D as Dialect>::Db as Database>::Arguments;

/// Runs a shared statement; returns the rows it changed (matched, on MySQL).
///
/// # Errors
/// As [`query`]; store failures, converted by the dialect's classes.
pub async fn execute<D: Dialect>(d: &D, statement: &Statement, args: &[Arg<'_>]) -> Result<u64> {
    let q = query::<D>(statement, args)?;
    let done = D::Db::execute(q, d.conns()).await.map_err(crate::error::storage::<D>)?;
    Ok(D::rows_affected(&done))
}

/// Runs a shared statement; returns its rows.
///
/// # Errors
/// As [`execute`].
pub async fn fetch_all<D: Dialect>(
    d: &D,
    statement: &Statement,
    args: &[Arg<'_>],
) -> Result<Vec<<D::Db as Database>::Row>> {
    let q = query::<D>(statement, args)?;
    D::Db::fetch_all(q, d.conns()).await.map_err(crate::error::storage::<D>)
}

/// Runs a shared statement; returns its first row, if any.
///
/// # Errors
/// As [`execute`].
pub async fn fetch_optional<D: Dialect>(
    d: &D,
    statement: &Statement,
    args: &[Arg<'_>],
) -> Result<Option<<D::Db as Database>::Row>> {
    let q = query::<D>(statement, args)?;
    D::Db::fetch_optional(q, d.conns()).await.map_err(crate::error::storage::<D>)
}

/// Milliseconds of a duration as the signed BIGINT the columns hold, capped
/// at [`executor_core::time::MAX_DURATION`]: every duration from a user is
/// validated against that bound at the entry points; internal ones (a
/// lease, a leadership term, a retention) are capped here so that
/// `now + d` can never overflow a BIGINT whatever a caller passes.
pub fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.min(executor_core::time::MAX_DURATION).as_millis()).unwrap_or(i64::MAX)
}

/// A timestamp as the signed BIGINT the columns hold.
pub fn ts(t: executor_core::Timestamp) -> i64 {
    i64::try_from(t.as_millis()).unwrap_or(i64::MAX)
}

/// The statements the SQL core runs on every dialect, one field per file
/// under the driver's `sql/`; a driver gets its own with [`crate::statements!`].
#[derive(Clone, Copy, Debug)]
pub struct Statements {
    /// `leader/acquire`: takes or renews the term; may return it.
    pub leader_acquire: Statement,
    /// `leader/read_term`: the term after `leader/acquire`, expired or not.
    pub leader_read_term: Statement,
    /// `leader/release`: ends the term early.
    pub leader_release: Statement,
    /// `leader/current`: the unexpired term.
    pub leader_current: Statement,
    /// `leader/announce`: a worker's announcement.
    pub leader_announce: Statement,
    /// `leader/delete_lapsed_workers`: forgets lapsed announcements.
    pub leader_delete_lapsed_workers: Statement,
    /// `leader/workers`: the unexpired announcements.
    pub leader_workers: Statement,
    /// `tier/now`: the server's clock.
    pub now: Statement,
    /// `schedule/put`: inserts a schedule or replaces its definition.
    pub schedule_put: Statement,
    /// `schedule/all`: every schedule of a namespace.
    pub schedule_all: Statement,
    /// `schedule/remove`: deletes one schedule.
    pub schedule_remove: Statement,
    /// `schedule/pause`: sets its pause flag.
    pub schedule_pause: Statement,
    /// `schedule/advance`: moves its cursor, fenced.
    pub schedule_advance: Statement,
    /// `query/counts`: tasks per state.
    pub query_counts: Statement,
    /// `query/get`: one task with its attempt log.
    pub query_get: Statement,
    /// `query/list`: a page of a state ([`query_only`]).
    pub query_list: Statement,
    /// `claim/move_to_error`: a row that cannot run, to `ERROR`.
    pub claim_move_to_error: Statement,
    /// `limits/delete_unlimited`: a queue's row that is not paused.
    pub limits_delete_unlimited: Statement,
    /// `limits/clear`: a paused queue's limits.
    pub limits_clear: Statement,
    /// `queues/running`: running tasks per queue.
    pub queues_running: Statement,
    /// `queues/pause`: a queue's row, created or flagged paused.
    pub queues_pause: Statement,
    /// `queues/resume_delete`: a paused queue's row that holds no limits.
    pub queues_resume_delete: Statement,
    /// `queues/resume`: the pause flag of a row that holds limits.
    pub queues_resume: Statement,
    /// `tier/import`: a task moved in from another tier.
    pub tier_import: Statement,
    /// `tier/exists`: whether a task exists.
    pub tier_exists: Statement,
    /// `history/read`: the buckets of a namespace from a minute on.
    pub history_read: Statement,
    /// `history/trim`: deletes minutes before a cutoff.
    pub history_trim: Statement,
    /// `tier/remove`: deletes a waiting task with its fence.
    pub tier_remove: Statement,
    /// `admin/cancel_waiting`: cancels a waiting task.
    pub admin_cancel_waiting: Statement,
    /// `admin/request_cancel`: flags a running one.
    pub admin_request_cancel: Statement,
    /// `admin/requeue`: a dead letter back to waiting.
    pub admin_requeue: Statement,
    /// `admin/delete`: deletes one task.
    pub admin_delete: Statement,
    /// `admin/run_now`: a waiting task due now.
    pub admin_run_now: Statement,
    /// `admin/state`: one task's state.
    pub admin_state: Statement,
    /// `storage/probe_tasks`: every column of the tasks table the statements use.
    pub probe_tasks: Statement,
    /// `storage/probe_leaders`: the leaders table.
    pub probe_leaders: Statement,
    /// `storage/probe_workers`: the workers table.
    pub probe_workers: Statement,
    /// `storage/probe_queues`: the queues table.
    pub probe_queues: Statement,
    /// `storage/probe_schedules`: the schedules table.
    pub probe_schedules: Statement,
    /// `storage/probe_history`: the history table.
    pub probe_history: Statement,
    /// `storage/purge_tasks`: up to 10,000 tasks of a namespace.
    pub purge_tasks: Statement,
    /// `storage/purge_leaders`: its leadership row.
    pub purge_leaders: Statement,
    /// `storage/purge_workers`: its announcements.
    pub purge_workers: Statement,
    /// `storage/purge_schedules`: its schedules.
    pub purge_schedules: Statement,
    /// `storage/purge_queues`: its queue rows.
    pub purge_queues: Statement,
    /// `storage/purge_history`: its history.
    pub purge_history: Statement,
}

/// The calling driver's [`Statements`]: each field its file under `sql/`,
/// included at compile time (a missing file fails the build).
#[macro_export]
macro_rules! statements {
    () => {
        $crate::stmt::Statements {
            leader_acquire: $crate::statement!("leader/acquire"),
            leader_read_term: $crate::statement!("leader/read_term"),
            leader_release: $crate::statement!("leader/release"),
            leader_current: $crate::statement!("leader/current"),
            leader_announce: $crate::statement!("leader/announce"),
            leader_delete_lapsed_workers: $crate::statement!("leader/delete_lapsed_workers"),
            leader_workers: $crate::statement!("leader/workers"),
            now: $crate::statement!("tier/now"),
            schedule_put: $crate::statement!("schedule/put"),
            schedule_all: $crate::statement!("schedule/all"),
            schedule_remove: $crate::statement!("schedule/remove"),
            schedule_pause: $crate::statement!("schedule/pause"),
            schedule_advance: $crate::statement!("schedule/advance"),
            query_counts: $crate::statement!("query/counts"),
            query_get: $crate::statement!("query/get"),
            query_list: $crate::statement!("query/list"),
            claim_move_to_error: $crate::statement!("claim/move_to_error"),
            limits_delete_unlimited: $crate::statement!("limits/delete_unlimited"),
            limits_clear: $crate::statement!("limits/clear"),
            queues_running: $crate::statement!("queues/running"),
            queues_pause: $crate::statement!("queues/pause"),
            queues_resume_delete: $crate::statement!("queues/resume_delete"),
            queues_resume: $crate::statement!("queues/resume"),
            tier_import: $crate::statement!("tier/import"),
            tier_exists: $crate::statement!("tier/exists"),
            history_read: $crate::statement!("history/read"),
            history_trim: $crate::statement!("history/trim"),
            tier_remove: $crate::statement!("tier/remove"),
            admin_cancel_waiting: $crate::statement!("admin/cancel_waiting"),
            admin_request_cancel: $crate::statement!("admin/request_cancel"),
            admin_requeue: $crate::statement!("admin/requeue"),
            admin_delete: $crate::statement!("admin/delete"),
            admin_run_now: $crate::statement!("admin/run_now"),
            admin_state: $crate::statement!("admin/state"),
            probe_tasks: $crate::statement!("storage/probe_tasks"),
            probe_leaders: $crate::statement!("storage/probe_leaders"),
            probe_workers: $crate::statement!("storage/probe_workers"),
            probe_queues: $crate::statement!("storage/probe_queues"),
            probe_schedules: $crate::statement!("storage/probe_schedules"),
            probe_history: $crate::statement!("storage/probe_history"),
            purge_tasks: $crate::statement!("storage/purge_tasks"),
            purge_leaders: $crate::statement!("storage/purge_leaders"),
            purge_workers: $crate::statement!("storage/purge_workers"),
            purge_schedules: $crate::statement!("storage/purge_schedules"),
            purge_queues: $crate::statement!("storage/purge_queues"),
            purge_history: $crate::statement!("storage/purge_history"),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::{Statement, only, params};

    #[test]
    fn optional_lines_leave_out_their_parameters_and_numbers() {
        let positional = Statement {
            text: "WHERE ns = ?\n  AND name = ? -- if name\n  AND id > ? -- if after\nLIMIT ?",
            params: "ns, name, id, limit",
            name: "list",
        };
        assert_eq!(
            only(&positional, &["after"], false),
            ("WHERE ns = ?\n  AND id > ?\nLIMIT ?\n".into(), vec!["ns", "id", "limit"])
        );
        let numbered = Statement {
            text: "WHERE ns = $1 AND x = '$9'\n  AND name = $2 -- if name\n  AND id > $3 -- if after\nLIMIT $4",
            params: "ns, name, id, limit",
            name: "list",
        };
        assert_eq!(
            only(&numbered, &["after"], true),
            ("WHERE ns = $1 AND x = '$9'\n  AND id > $2\nLIMIT $3\n".into(), vec!["ns", "id", "limit"])
        );
    }

    #[test]
    fn the_parameter_line_is_read_from_the_leading_comment_only() {
        assert_eq!(params("-- Does it.\n-- params: ns, worker\nSELECT ?"), " ns, worker");
        assert_eq!(params("-- Does it.\nSELECT 1\n-- params: ns\n"), "");
        assert_eq!(params("SELECT 1"), "");
        assert_eq!(params("-- params: ns"), " ns");
    }
}
