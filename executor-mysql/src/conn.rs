//! The connections the storage's own statements run on.
//!
//! sqlx 0.9 pings a connection when it leaves the pool and again when it
//! comes back, so a statement run on the pool costs three round trips. On
//! this 2-core machine that halves the rate of single-row UPDATEs (11,542/s
//! on held connections, 4,866/s through the pool, same run). So the storage
//! keeps the connections it has used in a small free list of its own and
//! hands them straight to the next statement. A connection goes back to the
//! sqlx pool (which pings it and drops it when broken) whenever a statement
//! on it failed or its future was dropped, and one idle for more than a
//! quarter of a second is pinged before reuse.

use std::{
    ops::{Deref, DerefMut},
    sync::{Arc, Mutex},
    time::Duration,
};

use crate::sql::BEGIN_READ_COMMITTED;
use sqlx::{
    Connection, MySql, MySqlConnection, MySqlPool, Transaction,
    mysql::{MySqlArguments, MySqlQueryResult, MySqlRow},
    pool::PoolConnection,
    query::Query,
};
use tokio::{
    sync::{OwnedSemaphorePermit, Semaphore},
    time::Instant,
};

/// Idle longer than this, a kept connection is pinged before reuse. Under
/// load connections come back within milliseconds and are never pinged; a
/// connection the server dropped while it was kept (`KILL`, a restart) and
/// that is reused within this window fails its statement once, with a
/// retryable error, and is discarded.
const FRESH: Duration = Duration::from_millis(250);

/// The free list and the bound on connections out at once.
#[derive(Debug)]
pub(crate) struct Conns {
    pool: MySqlPool,
    idle: Mutex<Vec<(PoolConnection<MySql>, Instant)>>,
    /// One permit per connection the storage may hold, in use or kept:
    /// fewer than the pool has, so callers of [`crate::MySqlStorage::pool`]
    /// always find one there.
    limit: Arc<Semaphore>,
}

impl Conns {
    pub(crate) fn new(pool: MySqlPool) -> Self {
        let max = pool.options().get_max_connections();
        let keep = usize::try_from(max.saturating_sub(2).max(1)).unwrap_or(1);
        Self { pool, idle: Mutex::new(Vec::new()), limit: Arc::new(Semaphore::new(keep)) }
    }

    pub(crate) fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    /// A connection for one statement or transaction: a kept one if any,
    /// else one from the pool.
    pub(crate) async fn get(&self) -> Result<Checkout<'_>, sqlx::Error> {
        let permit = Arc::clone(&self.limit).acquire_owned().await.map_err(|_| sqlx::Error::PoolClosed)?;
        loop {
            let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some((mut conn, since)) = kept else { break };
            if since.elapsed() < FRESH || conn.ping().await.is_ok() {
                return Ok(Checkout { conns: self, conn: Some(conn), _permit: permit });
            }
            // Dropped: back to the pool, which closes it.
        }
        let conn = self.pool.acquire().await?;
        Ok(Checkout { conns: self, conn: Some(conn), _permit: permit })
    }
}

/// A connection lent to one operation. [`Checkout::done`] keeps it for the
/// next; dropping it instead (an error, a cancelled future) returns it to
/// the pool, which checks it.
pub(crate) struct Checkout<'a> {
    conns: &'a Conns,
    conn: Option<PoolConnection<MySql>>,
    _permit: OwnedSemaphorePermit,
}

impl Checkout<'_> {
    /// Starts a READ COMMITTED transaction on this connection.
    pub(crate) async fn begin_read_committed(&mut self) -> Result<Transaction<'_, MySql>, sqlx::Error> {
        Connection::begin_with(&mut **self, BEGIN_READ_COMMITTED).await
    }

    /// The operation succeeded: keep the connection for the next one.
    pub(crate) fn done(mut self) {
        if let (Some(conn), Ok(mut idle)) = (self.conn.take(), self.conns.idle.lock()) {
            idle.push((conn, Instant::now()));
        }
    }
}

impl Deref for Checkout<'_> {
    type Target = MySqlConnection;
    fn deref(&self) -> &MySqlConnection {
        // Present from construction until `done` consumes the checkout.
        self.conn.as_deref().unwrap_or_else(|| unreachable!("checkout used after done"))
    }
}

impl DerefMut for Checkout<'_> {
    fn deref_mut(&mut self) -> &mut MySqlConnection {
        self.conn.as_deref_mut().unwrap_or_else(|| unreachable!("checkout used after done"))
    }
}

/// Runs a statement on a connection from [`Conns`], keeping the connection
/// when the statement succeeds.
pub(crate) trait RunOn {
    /// As `Query::execute`.
    async fn execute_on(self, conns: &Conns) -> Result<MySqlQueryResult, sqlx::Error>;
    /// As `Query::fetch_all`.
    async fn fetch_all_on(self, conns: &Conns) -> Result<Vec<MySqlRow>, sqlx::Error>;
    /// As `Query::fetch_optional`.
    async fn fetch_optional_on(self, conns: &Conns) -> Result<Option<MySqlRow>, sqlx::Error>;
    /// As `Query::fetch_one`.
    async fn fetch_one_on(self, conns: &Conns) -> Result<MySqlRow, sqlx::Error>;
}

impl RunOn for Query<'_, MySql, MySqlArguments> {
    async fn execute_on(self, conns: &Conns) -> Result<MySqlQueryResult, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.execute(&mut *c).await?;
        c.done();
        Ok(out)
    }

    async fn fetch_all_on(self, conns: &Conns) -> Result<Vec<MySqlRow>, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_all(&mut *c).await?;
        c.done();
        Ok(out)
    }

    async fn fetch_optional_on(self, conns: &Conns) -> Result<Option<MySqlRow>, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_optional(&mut *c).await?;
        c.done();
        Ok(out)
    }

    async fn fetch_one_on(self, conns: &Conns) -> Result<MySqlRow, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_one(&mut *c).await?;
        c.done();
        Ok(out)
    }
}
