//! [`PostgresStorage`]: the handle, its migrations, and the helpers every
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
    Namespace, Result, TaskState,
    storage::{Finish, GroupCommit, Lease},
};
use sqlx::{PgPool, Row, migrate::Migrator};

use crate::{
    PostgresOptions,
    conn::{Conns, RunOn},
    error,
    sql::sql,
    wake::{Listener, Wakes},
};

/// Name of the table that records which migrations ran.
pub const MIGRATIONS_TABLE: &str = "_reliable_executor_migrations";

/// The PostgreSQL dialect of the SQL core: what a `PostgresStorage` holds (the
/// connections, the options, the in-process wake-ups, the group-commit
/// queue, the claim's hints), shared by its clones.
#[derive(Clone, Debug)]
pub struct PostgresDialect {
    pub(crate) conns: Arc<Conns>,
    pub(crate) opts: Arc<PostgresOptions>,
    /// Per namespace, fired by every change that may make work due: by this
    /// process directly, and by others through the listener.
    pub(crate) wakes: Arc<Wakes>,
    /// The LISTEN connection, started by the first wait; stopped when the
    /// last clone of the storage is dropped.
    pub(crate) listener: Arc<Listener>,
    /// Where concurrent `finish` calls of this process queue to share one
    /// batch statement (group commit).
    pub(crate) finishes: Arc<GroupCommit<(Lease, Finish), TaskState>>,
    /// The queues this process has seen with limits: a hint for the claim.
    pub(crate) limited: Arc<executor_sql::limits::LimitedQueues>,
}

/// The advisory lock the migrations hold: a key of this crate's own, so it
/// never waits on (or holds up) an application's own sqlx migrations in the
/// same database. Advisory locks are per database.
const MIGRATION_LOCK_KEY: i64 = 0x5245_5845_435f_4d49; // "REXEC_MI"

/// Waits for the migration lock, polling, up to 10 minutes (a migration
/// that rebuilds a large table takes a while).
async fn migration_lock(conn: &mut sqlx::PgConnection) -> Result<()> {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(600);
    let mut said = false;
    loop {
        let row = sqlx::query(sql!("storage/take_migration_lock"))
            .bind(MIGRATION_LOCK_KEY)
            .fetch_one(&mut *conn)
            .await
            .map_err(error::storage)?;
        let granted: bool = row.try_get("granted").map_err(error::storage)?;
        if granted {
            return Ok(());
        }
        if tokio::time::Instant::now() >= give_up {
            return Err(executor_core::Error::storage(
                std::io::Error::other("another process held the migration lock for 10 minutes"),
                true,
            ));
        }
        if !std::mem::replace(&mut said, true) {
            tracing::info!("waiting for another process to finish the executor's migrations");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Dialect for PostgresDialect {
    type Db = sqlx::Postgres;

    const DEFAULT_POLL: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));
    const DEFAULT_MAX_PAYLOAD: Option<usize> = Some(16 << 20);
    const MIGRATIONS_DIR: &'static str = "executor-postgres/migrations";
    const RESERVED_CONNECTIONS: u32 = 3;
    const NUMBERED_PLACEHOLDERS: bool = true;
    const CURSOR_PREFIX: &'static str = "pg1.";
    const MAX_ID_CHARS: usize = executor_core::id::MAX_ID_LEN;
    const MAX_ATTEMPTS: u32 = crate::sql::MAX_ATTEMPTS_COLUMN;

    /// Signed columns (`INTEGER`, `BIGINT`, `SMALLINT`) whose CHECKs keep
    /// them non-negative; a negative one (the CHECK dropped) is a reason.
    fn counters(row: &sqlx::postgres::PgRow) -> std::result::Result<Counters, String> {
        fn unsigned<S, U>(v: S, name: &'static str) -> std::result::Result<U, String>
        where
            S: Copy + std::fmt::Display,
            U: TryFrom<S>,
        {
            U::try_from(v).map_err(|_| format!("column `{name}` is out of range: {v}"))
        }
        Ok(Counters {
            attempts: unsigned(row::col::<_, i32>(row, "attempts")?, "attempts")?,
            max_attempts: unsigned(row::col::<_, i32>(row, "max_attempts")?, "max_attempts")?,
            fence: Self::uint(row, "fence")?,
            priority: unsigned(row::col::<_, i16>(row, "priority")?, "priority")?,
        })
    }

    fn from_pool(pool: PgPool, options: PostgresOptions) -> Self {
        Self::with_options(pool, options)
    }

    const SQL: Statements = executor_sql::statements!();

    fn conns(&self) -> &Conns {
        &self.conns
    }

    fn rows_affected(result: &<sqlx::Postgres as sqlx::Database>::QueryResult) -> u64 {
        result.rows_affected()
    }

    /// Listening from the start, so a task submitted by another process
    /// wakes this one's first wait.
    async fn opened(&self) -> Result<()> {
        self.listener.start().await;
        Ok(())
    }

    fn work_may_be_due(&self, ns: &executor_core::Namespace) {
        self.notify_work(ns);
    }

    /// Every process's claimers, through `NOTIFY`: the triggers announce
    /// only what happens to tasks.
    async fn announce_work(&self, ns: &executor_core::Namespace) -> Result<()> {
        self.notify_work(ns);
        sqlx::query(sql!("storage/announce_work"))
            .bind(crate::wake::CHANNEL)
            .bind(ns.as_str())
            .execute_on(&self.conns)
            .await
            .map_err(error::storage)?;
        Ok(())
    }

    fn finishes(&self) -> &FinishGroup {
        &self.finishes
    }

    fn finish_statements(&self) -> impl FinishStatements {
        Finisher { conns: Arc::clone(&self.conns), wakes: Arc::clone(&self.wakes) }
    }

    /// Creates or upgrades the schema, then checks it is complete. Safe when
    /// many processes start at once: each holds an advisory lock of this
    /// crate's own while it migrates, so one process creates the tables and
    /// the others find them done. Each migration runs in a transaction of
    /// its own (PostgreSQL's DDL is transactional): a failed one leaves
    /// nothing half done.
    ///
    /// # Errors
    /// A failed or modified migration, a lock not granted within 10 minutes
    /// (another process still migrating), an incomplete schema, or a store
    /// failure.
    async fn migrate(&self) -> Result<()> {
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
        let ran = migrator.run_direct(None, &mut *conn, false).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(e) => error::storage(e),
            other => executor_core::Error::storage(other, false),
        });
        // Closing the connection releases the lock too.
        let unlocked = sqlx::query(sql!("storage/release_migration_lock"))
            .bind(MIGRATION_LOCK_KEY)
            .execute(&mut *conn)
            .await;
        if unlocked.is_err() {
            conn.close_on_drop();
        }
        ran?;
        executor_sql::schema::check(self).await
    }

    /// The largest payload this store takes ([`PostgresOptions::max_payload`]).
    async fn max_payload(&self) -> Result<usize> {
        Ok(self.opts.payload_limit().unwrap_or(16 << 20))
    }

    /// The pool, for operators' own queries and for the transactions that
    /// `PostgresStorage::submit_in` joins. Close the storage with
    /// `PostgresStorage::close`, not `pool().close()`: the storage keeps
    /// connections it used and one for the listener, and the pool's `close`
    /// waits for them.
    fn pool(&self) -> &PgPool {
        self.conns.pool()
    }

    /// Stops listening, gives back the connections the storage keeps and
    /// closes the pool (for every clone of the storage). Calls after it fail
    /// with a retryable "pool closed" error.
    async fn close(&self) {
        self.listener.stop().await;
        self.conns.release_kept();
        self.conns.pool().close().await;
    }
}

impl PostgresDialect {
    pub(crate) fn with_options(pool: PgPool, opts: PostgresOptions) -> Self {
        let wakes = Arc::new(Wakes::default());
        Self {
            listener: Arc::new(Listener::new(pool.clone(), Arc::clone(&wakes))),
            conns: Arc::new(Conns::new(pool, 3, crate::sql::SESSION_SETUP)),
            opts: Arc::new(opts),
            wakes,
            finishes: Arc::new(GroupCommit::new()),
            limited: Arc::default(),
        }
    }

    /// Tells waiters of `ns` in this process that work may be due.
    pub(crate) fn notify_work(&self, ns: &Namespace) {
        self.wakes.notify(ns.as_str());
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
                (20261205000001, "5ae0d3424c80b706"),
                (20261206000001, "d0a2dddaef66c3f5"),
                (20261207000001, "be4aa56fd9af6eb5"),
                (20261207000002, "ecd1f75ae6b68816"),
                (20261208000001, "749320dedec27d30"),
                (20261208000002, "b5e3e4f4113c9419"),
            ],
        );
    }
}
