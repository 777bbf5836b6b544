//! [`MySqlStorage`]: the handle, its migrations, and the helpers every
//! section of the `Storage` impl shares (payload limit, wake-up).

use executor_sql::{
    dialect::Dialect,
    finish::{FinishGroup, FinishStatements},
    row::{self, Counters},
    stmt::Statements,
};

use crate::finish::Finisher;
use std::{sync::Arc, time::Duration};

use executor_core::{
    Result, TaskState,
    storage::{Finish, GroupCommit, Lease},
};
use sqlx::{MySqlPool, Row, migrate::Migrator};
use tokio::sync::{Notify, OnceCell};

use crate::{
    MySqlOptions,
    conn::{Conns, RunOn},
    error,
    sql::sql,
};

/// Name of the table that records which migrations ran.
pub const MIGRATIONS_TABLE: &str = "_reliable_executor_migrations";

/// The MySQL/MariaDB dialect of the SQL core: what a `MySqlStorage` holds (the
/// connections, the options, the in-process wake-ups, the group-commit
/// queue, the claim's hints), shared by its clones.
#[derive(Clone, Debug)]
pub struct MySqlDialect {
    pub(crate) conns: Arc<Conns>,
    pub(crate) opts: Arc<MySqlOptions>,
    /// Fired by every change in this process that may make work due, so a
    /// waiting claimer here starts it without waiting for its next poll.
    pub(crate) wake: Arc<Notify>,
    /// Where concurrent `finish` calls of this process queue to share one
    /// batch statement (group commit).
    pub(crate) finishes: Arc<GroupCommit<(Lease, Finish), TaskState>>,
    /// The server's `max_allowed_packet`, read once.
    packet: Arc<OnceCell<usize>>,
    /// The queues this process has seen with limits: a hint for the claim.
    pub(crate) limited: Arc<executor_sql::limits::LimitedQueues>,
    /// Which priority ranks of each queue the claim reads with locks
    /// (`claim.rs`).
    pub(crate) ranks: Arc<crate::claim::RankHints>,
}

/// Bytes of a packet kept for everything but the payload: the statement,
/// the other columns of the row (ids, name, retry policy, up to 60 KB of
/// `last_error` when the row is read back).
const PACKET_OVERHEAD: usize = 128 * 1024;

/// Takes the migration lock (see the file).
const TAKE_MIGRATION_LOCK: &str = sql!("storage/take_migration_lock");
/// Releases it.
const RELEASE_MIGRATION_LOCK: &str = sql!("storage/release_migration_lock");

/// Waits for the migration lock, in 10 s rounds, up to 10 minutes (a
/// migration that rebuilds a large table takes a while). `GET_LOCK` answers
/// 1 (granted), 0 (timed out) or NULL (an error): only 1 goes ahead.
async fn migration_lock(conn: &mut sqlx::MySqlConnection) -> Result<()> {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(600);
    loop {
        let row = sqlx::query(TAKE_MIGRATION_LOCK).fetch_one(&mut *conn).await.map_err(error::storage)?;
        let granted: Option<i64> = row.try_get("granted").map_err(error::storage)?;
        match granted {
            Some(1) => return Ok(()),
            Some(_) if tokio::time::Instant::now() < give_up => {
                tracing::info!("waiting for another process to finish the executor's migrations");
            }
            Some(_) => {
                return Err(executor_core::Error::storage(
                    std::io::Error::other("another process held the migration lock for 10 minutes"),
                    true,
                ));
            }
            None => {
                return Err(executor_core::Error::storage(
                    std::io::Error::other("GET_LOCK for the migrations answered NULL"),
                    false,
                ));
            }
        }
    }
}

impl Dialect for MySqlDialect {
    type Db = sqlx::MySql;

    const DEFAULT_POLL: (Duration, Duration) = (Duration::from_millis(5), Duration::from_millis(250));
    const DEFAULT_MAX_PAYLOAD: Option<usize> = None;
    const MIGRATIONS_DIR: &'static str = "executor-mysql/migrations";
    const RESERVED_CONNECTIONS: u32 = 2;
    const NUMBERED_PLACEHOLDERS: bool = false;
    const CURSOR_PREFIX: &'static str = "my1.";
    const MAX_ID_CHARS: usize = crate::sql::ID_COLUMN_CHARS;
    const MAX_ATTEMPTS: u32 = crate::sql::MAX_ATTEMPTS_COLUMN;

    /// Unsigned columns, read as they are.
    fn counters(row: &sqlx::mysql::MySqlRow) -> std::result::Result<Counters, String> {
        Ok(Counters {
            attempts: row::col(row, "attempts")?,
            max_attempts: row::col(row, "max_attempts")?,
            fence: Self::uint(row, "fence")?,
            priority: row::col(row, "priority")?,
        })
    }

    /// A name or a debounce key longer than its column would be cut or
    /// refused by the server.
    fn check_import(record: &executor_core::TaskRecord) -> Result<()> {
        use crate::sql::{ID_COLUMN_CHARS, NAME_COLUMN_CHARS};
        if record.name.chars().count() > NAME_COLUMN_CHARS
            || record.debounce_key.as_ref().is_some_and(|k| k.chars().count() > ID_COLUMN_CHARS)
        {
            return Err(executor_core::Error::invalid(
                "imported task",
                "name or debounce key longer than the MySQL columns",
            ));
        }
        Ok(())
    }

    fn from_pool(pool: MySqlPool, options: MySqlOptions) -> Self {
        Self::with_options(pool, options)
    }

    const SQL: Statements = executor_sql::statements!();

    fn conns(&self) -> &Conns {
        &self.conns
    }

    fn rows_affected(result: &<sqlx::MySql as sqlx::Database>::QueryResult) -> u64 {
        result.rows_affected()
    }

    /// Fences and tokens are `BIGINT UNSIGNED` columns.
    fn bind_uint(
        q: sqlx::query::Query<'_, sqlx::MySql, sqlx::mysql::MySqlArguments>,
        v: Option<u64>,
    ) -> sqlx::query::Query<'_, sqlx::MySql, sqlx::mysql::MySqlArguments> {
        q.bind(v)
    }

    fn uint(row: &sqlx::mysql::MySqlRow, name: &'static str) -> std::result::Result<u64, String> {
        executor_sql::row::col(row, name)
    }

    /// Reads `max_allowed_packet` now, so the first submit does not wait for it.
    async fn opened(&self) -> Result<()> {
        self.max_payload().await.map(drop)
    }

    /// The name is `VARBINARY` (compared by its bytes); one that is not
    /// UTF-8 (edited by hand) is a reason, and its row is left out.
    fn history_name(row: &sqlx::mysql::MySqlRow) -> std::result::Result<String, String> {
        let name: Vec<u8> = executor_sql::row::col(row, "name")?;
        String::from_utf8(name).map_err(|_| "column `name` is not UTF-8".to_owned())
    }

    fn work_may_be_due(&self, _ns: &executor_core::Namespace) {
        self.notify_work();
    }

    /// This process's claimers only: MySQL has no notifications, and
    /// other processes find the work at their next poll.
    async fn announce_work(&self, _ns: &executor_core::Namespace) -> Result<()> {
        self.notify_work();
        Ok(())
    }

    fn finishes(&self) -> &FinishGroup {
        &self.finishes
    }

    fn finish_statements(&self) -> impl FinishStatements {
        Finisher { conns: Arc::clone(&self.conns), wake: Arc::clone(&self.wake) }
    }

    /// Gives back the connections the storage keeps and closes the pool.
    async fn close(&self) {
        self.conns.release_kept();
        self.conns.pool().close().await;
    }

    /// Creates or upgrades the schema, then checks it is complete. Safe when
    /// many processes start at once: each holds a server lock named after the
    /// database (`GET_LOCK` with a checked result; sqlx's own `GET_LOCK(name,
    /// -1)` returns NULL at once on MariaDB and serialises nothing) while it
    /// migrates, so one process creates the tables and the others find them
    /// done.
    ///
    /// # Errors
    /// A failed or modified migration, a lock not granted within 10 minutes
    /// (another process still migrating), an incomplete schema, or a store
    /// failure.
    async fn migrate(&self) -> Result<()> {
        // The schema is embedded at compile time. Its bookkeeping lives in
        // its own table so it never mixes with an application's own sqlx
        // migrations in the same database.
        let mut migrator: Migrator = sqlx::migrate!("./migrations");
        migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
        // During a rolling upgrade, processes of the previous release start
        // against a schema a newer one already migrated; migrations are
        // written to be additive so they keep working.
        migrator.set_ignore_missing(true);
        migrator.set_locking(false);
        let mut conn = self.conns.pool().acquire().await.map_err(error::storage)?;
        if let Err(e) = migration_lock(&mut conn).await {
            conn.close_on_drop();
            return Err(e);
        }
        // `run_direct` on the connection that holds the lock: what
        // `Migrator::run` does after acquiring, without going through
        // `Acquire` (whose impl for `&mut MySqlConnection` is "not general
        // enough" for a `Send` future).
        let ran = migrator.run_direct(None, &mut *conn, false).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(e) => error::storage(e),
            other => executor_core::Error::storage(other, false),
        });
        // Closing the connection releases the lock too.
        if sqlx::query(RELEASE_MIGRATION_LOCK).execute(&mut *conn).await.is_err() {
            conn.close_on_drop();
        }
        ran?;
        executor_sql::schema::check(self).await
    }

    /// The largest payload this store holds: the server's
    /// `max_allowed_packet` less room for the rest of the row and the
    /// statement. A larger payload would make the server drop the connection
    /// (which looks retryable and would be retried forever), so it is
    /// refused before it is sent. Read once, at connect or the first submit.
    /// A lower limit set in the options ([`MySqlOptions::max_payload`])
    /// applies instead.
    async fn max_payload(&self) -> Result<usize> {
        let packet = self.packet_size().await?.saturating_sub(PACKET_OVERHEAD);
        Ok(self.opts.payload_limit().map_or(packet, |set| set.min(packet)))
    }

    /// The pool, for operators' own queries.
    fn pool(&self) -> &MySqlPool {
        self.conns.pool()
    }
}

impl MySqlDialect {
    pub(crate) fn with_options(pool: MySqlPool, opts: MySqlOptions) -> Self {
        Self {
            conns: Arc::new(Conns::new(pool, 2, crate::sql::SESSION_SETUP)),
            opts: Arc::new(opts),
            wake: Arc::new(Notify::new()),
            finishes: Arc::new(GroupCommit::new()),
            packet: Arc::new(OnceCell::new()),
            limited: Arc::default(),
            ranks: Arc::default(),
        }
    }

    /// The server's `max_allowed_packet`, in bytes.
    pub(crate) async fn packet_size(&self) -> Result<usize> {
        self.packet
            .get_or_try_init(|| async {
                let row = sqlx::query(sql!("storage/max_allowed_packet"))
                    .fetch_one_on(&self.conns)
                    .await
                    .map_err(error::storage)?;
                let packet: i64 = row.try_get("packet").map_err(error::storage)?;
                Ok::<_, executor_core::Error>(usize::try_from(packet).unwrap_or(0))
            })
            .await
            .copied()
    }

    /// Tells waiters in this process that work may be due.
    pub(crate) fn notify_work(&self) {
        self.wake.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    /// The released migrations, as `executor_sql::testing::assert_migrations_unchanged` says.
    #[test]
    fn released_migrations_are_unchanged() {
        executor_sql::testing::assert_migrations_unchanged(
            &sqlx::migrate!("./migrations"),
            &[
                (20261130000001, "26f442aad74e4eec"),
                (20261130000002, "966a613997dbbad6"),
                (20261201000001, "8a6627f4c40bf5ba"),
                (20261202000001, "cf4599c68fb13a94"),
                (20261203000001, "d3fee1e7bb986e78"),
                (20261204000001, "e9d55a2055415c97"),
                (20261206000001, "0ca110cec8f61a7b"),
                (20261207000001, "551c7b3f4144f47f"),
                (20261207000002, "8e888981792cfe4e"),
                (20261208000002, "27fb614922336b5c"),
            ],
        );
    }
}
