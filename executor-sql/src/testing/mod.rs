//! Tests every SQL dialect passes alike, written once and run by each
//! driver's test binary through [`sql_dialect_tests!`](crate::sql_dialect_tests):
//! a submit whose answer is lost on the way back ([`outcome`]), connections
//! killed on the server under claimers ([`connection_loss`]), the store
//! as the cold tier of `TieredStorage` ([`cold_tier`]), history rows edited
//! by hand ([`history`]), transactional submits beside the caller's rows
//! ([`transactions`]). They need a running server of the dialect; one
//! that does not answer fails the test with how to start it ([`TestDb`]).
//!
//! The helpers ([`fresh`], [`cleanup`], [`run`]) serve the
//! drivers' own tests too.

pub mod cold_tier;
pub mod connection_loss;
pub mod history;
pub mod outcome;
pub mod transactions;

use std::time::Duration;

use executor_core::Namespace;
use sqlx::{Pool, pool::PoolOptions};

use crate::{
    Dialect, SqlStorage,
    stmt::{SqlDb, Value},
};

/// What a test returns.
pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A dialect's test server: where it is and how to start it. A driver's
/// test binary implements it on a type of its own.
pub trait TestDb {
    /// The dialect.
    type Dialect: Dialect + crate::dialect::Tier + crate::dialect::History;
    /// A short name, the prefix of the tests' namespaces (`my`, `pg`).
    const SHORT: &'static str;
    /// What a URL adds to connect without TLS (`ssl-mode=disabled`), so a
    /// proxy between the storage and the server reads the statements.
    const PLAIN_TEXT: &'static str;
    /// Connections of a test storage's pool: its statements' six, and
    /// what the dialect keeps beside them.
    const POOL: u32;
    /// The variable naming the test server's URL (`MYSQL_URL`).
    const URL_VAR: &'static str;
    /// The URL when the variable is not set: the local server the test
    /// script starts.
    const DEFAULT_URL: &'static str;
    /// How to start the server, shown when it does not answer.
    const START: &'static str;
    /// A query answering the server-side id of the connection it runs on,
    /// as a `BIGINT` column `id`.
    const CONNECTION_ID: &'static str;
    /// The statement that ends the connection of server-side id `id`; a
    /// row it answers says in a boolean column `killed` whether it did.
    fn kill(id: i64) -> String;
    /// Tasks of the killed-connections test: as many as its minute lets
    /// the server complete while its connections are killed.
    const KILL_TASKS: usize;
}

/// The test server's URL.
pub fn url<D: TestDb>() -> String {
    std::env::var(D::URL_VAR).unwrap_or_else(|_| D::DEFAULT_URL.to_owned())
}

/// Fails the test: the server does not answer, and how to start it.
pub fn down<D: TestDb>(e: impl std::fmt::Display) -> ! {
    panic!(
        "{} at {} does not answer ({e}).\nStart it with {}, or point {} at a server.",
        <D::Dialect as crate::ErrorClass>::SERVER,
        url::<D>(),
        D::START,
        D::URL_VAR
    )
}

/// A pool of `max` connections on the test server; fails the test saying
/// how to start the server.
pub async fn pool<D: TestDb>(max: u32) -> Pool<<D::Dialect as Dialect>::Db> {
    let opts = PoolOptions::<<D::Dialect as Dialect>::Db>::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(5));
    match opts.connect(&url::<D>()).await {
        Ok(p) => p,
        Err(e) => down::<D>(e),
    }
}

/// A migrated storage on a small pool of its own.
pub async fn storage<D: TestDb>() -> SqlStorage<D::Dialect> {
    match SqlStorage::<D::Dialect>::options().max_connections(6).open(pool::<D>(D::POOL).await).await {
        Ok(s) => s,
        Err(e) => down::<D>(e),
    }
}

/// A storage and a namespace no other test uses.
pub async fn fresh<D: TestDb>() -> (SqlStorage<D::Dialect>, Namespace) {
    (storage::<D>().await, executor_core::testing::unique_namespace(D::SHORT))
}

/// Deletes the namespace's rows. Retries retryable failures: after a test
/// that kills connections, a kept connection may fail once.
pub async fn cleanup<D: Dialect>(storage: &SqlStorage<D>, ns: &Namespace) {
    for _ in 0..5 {
        match storage.purge(ns).await {
            Ok(_) => return,
            Err(e) if e.is_retryable() => continue,
            Err(e) => {
                eprintln!("cleanup of {ns} failed: {e}");
                return;
            }
        }
    }
    eprintln!("cleanup of {ns} kept failing");
}

/// `text`, written with numbered placeholders (`$1`), as the dialect
/// writes them: `?` where they are positional (each number appearing once,
/// in order).
pub fn placeholders<D: Dialect>(text: &str) -> String {
    if D::NUMBERED_PLACEHOLDERS {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// Fails unless `migrator`'s migrations are exactly `pinned`: each
/// version with the first 8 bytes of its checksum, in hex. A migration a
/// database has run never changes: sqlx refuses to start on a database
/// whose applied migration's file differs ("previously applied but has
/// been modified"), and a fresh test database would not notice. A new
/// migration adds its line to the driver's list.
///
/// # Panics
/// The migrations differ from `pinned`.
pub fn assert_migrations_unchanged(migrator: &sqlx::migrate::Migrator, pinned: &[(i64, &str)]) {
    let found: Vec<(i64, String)> = migrator
        .iter()
        .map(|m| (m.version, m.checksum.iter().take(8).map(|b| format!("{b:02x}")).collect()))
        .collect();
    let pinned: Vec<(i64, String)> = pinned.iter().map(|(v, c)| (*v, (*c).to_owned())).collect();
    assert_eq!(found, pinned, "a released migration changed, or a new one is not pinned");
}

/// Runs `text`, written with numbered placeholders, with `binds` bound to
/// `$1, $2, ..` as text: a test's edit of rows by hand, on the storage's
/// connections. Returns the rows it changed.
///
/// # Errors
/// The statement failed.
pub async fn run<D: Dialect>(s: &SqlStorage<D>, text: &str, binds: &[&str]) -> Result<u64, sqlx::Error> {
    let mut q = sqlx::query::<D::Db>(sqlx::AssertSqlSafe(placeholders::<D>(text)));
    for b in binds {
        q = SqlDb::bind(q, Value::Text(b));
    }
    let done = D::Db::execute(q, s.dialect().conns()).await?;
    Ok(D::rows_affected(&done))
}

/// Held for its whole run by each test that loads the machine (child
/// processes, a thousand transactions, many claimers) or checks a latency,
/// so no two of them run at once in one test binary; the drivers' own
/// heavy tests take it too.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    SERIAL.lock().await
}

/// Runs the shared tests on the test server `$db` (a [`TestDb`]): one
/// `#[tokio::test]` each, named as the test function.
#[macro_export]
macro_rules! sql_dialect_tests {
    ($db:ty) => {
        $crate::__sql_dialect_tests! { $db;
            outcome::a_lone_submit_whose_answer_is_lost_is_unknown_and_its_resend_is_created,
            outcome::a_batch_whose_answer_is_lost_is_unknown_for_each_task,
            outcome::the_client_resends_a_lost_submit_and_answers_once,
            outcome::a_submit_that_reaches_no_server_is_not_unknown,
            cold_tier::long_delays_wait_in_the_cold_tier_and_move_to_hot_before_due,
            cold_tier::a_cold_row_past_the_fence_range_is_dead_lettered_by_the_promotion,
            history::a_corrupt_history_row_is_left_out_and_purge_deletes_the_rest,
            transactions::a_rolled_back_submit_never_exists,
            transactions::a_thousand_concurrent_transactions_run_exactly_the_committed_tasks,
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn killed_connections_lose_nothing_and_double_claim_nothing() -> $crate::testing::TestResult {
            $crate::testing::connection_loss::killed_connections_lose_nothing_and_double_claim_nothing::<$db>().await
        }

        #[tokio::test(flavor = "current_thread")]
        #[ignore = "helper: started as a child process by `a_process_killed_before_its_commit_leaves_neither`"]
        async fn crash_child() -> $crate::testing::TestResult {
            $crate::testing::transactions::crash_child::<$db>().await
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_process_killed_before_its_commit_leaves_neither() -> $crate::testing::TestResult {
            // This module's path in the test binary, without the crate's name.
            let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
            let child = format!("{module}::crash_child");
            $crate::testing::transactions::a_process_killed_before_its_commit_leaves_neither::<$db>(&child).await
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __sql_dialect_tests {
    ($db:ty; $($module:ident :: $test:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() -> $crate::testing::TestResult {
                $crate::testing::$module::$test::<$db>().await
            }
        )*
    };
}
