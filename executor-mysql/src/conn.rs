//! The connections the storage's own statements run on.
//!
//! sqlx 0.9 pings a connection when it leaves the pool and again when it
//! comes back, so a statement run on the pool costs three round trips. On
//! this 2-core machine that halves the rate of single-row UPDATEs (11,542/s
//! on held connections, 4,866/s through the pool, same run). So the storage
//! keeps the connections it has used in a small free list of its own and
//! hands them straight to the next statement. One idle for more than a
//! quarter of a second is pinged before reuse.
//!
//! A connection whose operation did not finish (its future was dropped: an
//! executor stopping drops its claim or wait mid-statement) is closed, not
//! returned to the sqlx pool, because sqlx 0.9 cannot always tell that such
//! a connection is out of step with the server, and the pool's own ping on
//! return does not catch it:
//!
//! - `ping` sends COM_PING without recording a pending reply. Dropped
//!   before the OK arrives, it leaves that OK unread; the pool's ping on
//!   return then reads it as its own reply and passes, leaving its own OK
//!   unread, and so on: every later command reads the reply to the command
//!   before it. A statement prepared for the first time on that connection
//!   fails with `PrepareOk expected 12 bytes but got 7 bytes` (the 7 bytes
//!   are a ping's OK), and a cached one silently gets the previous reply
//!   (a `SELECT` of an existing row answers no row).
//! - a multi-statement text query (the session setup below) dropped after
//!   it was sent leaves replies unread in the same way.
//!
//! `tests/it/cancelled_calls.rs` reproduces these. Closing costs a reconnect
//! after a dropped operation; a single statement that ends in the server's
//! error reply (a duplicate key) has been read in full and its connection
//! still goes back to the pool.
//!
//! Every statement of this crate is autocommit, so a process that stops
//! between two of them (SIGSTOP, a pause, a partition) holds no row lock
//! (invariant 9), with one exception: the claim of a queue with limits
//! (`limits.rs`) is a short transaction, whose session the server closes
//! after 2 s idle, so a stopped holder keeps its locks at most that long. Every connection
//! taken from the pool first gets [`SESSION_SETUP`] (READ COMMITTED, a 2 s
//! lock wait).

use std::{
    ops::{Deref, DerefMut},
    sync::{Arc, Mutex},
    time::Duration,
};

use crate::sql::SESSION_SETUP;
use sqlx::{
    Connection, MySql, MySqlConnection, MySqlPool,
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
        // The ping below runs inside the checkout, so a `get` dropped
        // mid-ping closes the connection (see the module docs).
        let mut c = Checkout { conns: self, conn: None, _permit: permit };
        loop {
            let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            let Some((conn, since)) = kept else { break };
            c.conn = Some(conn);
            if since.elapsed() < FRESH || c.ping().await.is_ok() {
                return Ok(c);
            }
            c.close();
        }
        c.conn = Some(self.pool.acquire().await?);
        // Inside the checkout too: dropped mid-setup, the connection closes.
        sqlx::raw_sql(SESSION_SETUP).execute(&mut *c).await?;
        Ok(c)
    }
}

/// A connection lent to one operation. [`Checkout::done`] keeps it for the
/// next; dropping it instead (an error, a cancelled future) closes it, so a
/// connection with an unread reply or a stray transaction is never reused.
pub(crate) struct Checkout<'a> {
    conns: &'a Conns,
    conn: Option<PoolConnection<MySql>>,
    _permit: OwnedSemaphorePermit,
}

impl Checkout<'_> {
    /// The operation succeeded: keep the connection for the next one.
    pub(crate) fn done(mut self) {
        if let (Some(conn), Ok(mut idle)) = (self.conn.take(), self.conns.idle.lock()) {
            idle.push((conn, Instant::now()));
        }
    }

    /// The statement ended in the server's error reply, read in full: the
    /// connection is in step and goes back to the pool.
    fn release(mut self) {
        drop(self.conn.take());
    }

    /// Closes the connection instead of returning it to the pool.
    fn close(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.close_on_drop();
        }
    }
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        self.close();
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
        let out = self.execute(&mut *c).await;
        finished(c, out)
    }

    async fn fetch_all_on(self, conns: &Conns) -> Result<Vec<MySqlRow>, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_all(&mut *c).await;
        finished(c, out)
    }

    async fn fetch_optional_on(self, conns: &Conns) -> Result<Option<MySqlRow>, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_optional(&mut *c).await;
        finished(c, out)
    }

    async fn fetch_one_on(self, conns: &Conns) -> Result<MySqlRow, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_one(&mut *c).await;
        finished(c, out)
    }
}

/// A statement's error, and whether the statement was handed to a
/// connection: an error while taking one (the pool timed out, a new
/// connection refused, a kept one that failed its ping) sent nothing, so
/// the statement did not run.
#[derive(Debug)]
pub(crate) struct RunError {
    pub(crate) error: sqlx::Error,
    pub(crate) sent: bool,
}

/// As [`RunOn::execute_on`], saying whether a failed statement was sent:
/// for the statements that create a task, whose outcome is unknown when
/// the connection fails after they were sent.
pub(crate) async fn execute_sent(
    query: Query<'_, MySql, MySqlArguments>,
    conns: &Conns,
) -> Result<MySqlQueryResult, RunError> {
    let mut c = conns.get().await.map_err(|error| RunError { error, sent: false })?;
    let out = query.execute(&mut *c).await;
    finished(c, out).map_err(|error| RunError { error, sent: true })
}

/// After a statement ran to its end: keeps the connection on success,
/// returns it to the pool after the server's error reply (a duplicate key
/// is an expected outcome of an idempotent submit) or no row for
/// `fetch_one`, and closes it after any other error (a broken socket, a
/// reply sqlx could not decode).
fn finished<T>(c: Checkout<'_>, out: Result<T, sqlx::Error>) -> Result<T, sqlx::Error> {
    match &out {
        Ok(_) => c.done(),
        Err(sqlx::Error::Database(_) | sqlx::Error::RowNotFound) => c.release(),
        Err(_) => drop(c),
    }
    out
}
