//! The connections a storage's own statements run on.
//!
//! sqlx pings a connection when it leaves the pool (and the MySQL driver
//! again when it comes back), so a statement run on the pool costs extra
//! round trips per statement, a cost as large as the statement itself for
//! a single-row UPDATE (`docs/benchmarks.md` has the figures). So the
//! storage keeps the connections it has used in
//! a small free list of its own and hands them straight to the next
//! statement. One idle for more than a quarter of a second is pinged before
//! reuse.
//!
//! A connection whose operation did not finish (its future was dropped: an
//! executor stopping drops its claim or wait mid-statement) is closed, not
//! returned to the sqlx pool, because sqlx cannot always tell that such a
//! connection is out of step with the server, and the pool's own ping on
//! return does not catch it. On MySQL:
//!
//! - `ping` sends COM_PING without recording a pending reply. Dropped
//!   before the OK arrives, it leaves that OK unread; the pool's ping on
//!   return then reads it as its own reply and passes, leaving its own OK
//!   unread, and so on: every later command reads the reply to the command
//!   before it. A statement prepared for the first time on that connection
//!   fails with `PrepareOk expected 12 bytes but got 7 bytes` (the 7 bytes
//!   are a ping's OK), and a cached one silently gets the previous reply
//!   (a `SELECT` of an existing row answers no row).
//! - a multi-statement text query (the session setup) dropped after it was
//!   sent leaves replies unread in the same way.
//!
//! The MySQL driver's `tests/it/cancelled_calls.rs` reproduces these.
//! Closing costs a reconnect after a dropped operation; a single statement
//! that ends in the server's error reply (a duplicate key) has been read in
//! full and its connection still goes back to the pool.
//!
//! Every connection taken from the pool first gets the dialect's session
//! setup (isolation level, lock wait, idle timeouts).

use std::{
    ops::{Deref, DerefMut},
    sync::{Arc, Mutex},
    time::Duration,
};

use sqlx::{Connection, Database, Executor, IntoArguments, Pool, pool::PoolConnection, query::Query};
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
pub struct Conns<DB: Database> {
    pool: Pool<DB>,
    idle: Mutex<Vec<(PoolConnection<DB>, Instant)>>,
    /// One permit per connection the storage may hold, in use or kept:
    /// fewer than the pool has, so callers of [`crate::SqlStorage::pool`]
    /// (and a dialect's listener) always find one there.
    limit: Arc<Semaphore>,
    /// Run on every connection taken from the pool, before its first statement.
    session_setup: &'static str,
}

impl<DB: Database> Conns<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    /// Connections of `pool`, keeping `reserve` of the pool's for others
    /// (callers of `pool()`, a listener), each set up with `session_setup`
    /// (statements separated by `;`) when it is first taken from the pool.
    pub fn new(pool: Pool<DB>, reserve: u32, session_setup: &'static str) -> Self {
        let max = pool.options().get_max_connections();
        let keep = usize::try_from(max.saturating_sub(reserve).max(1)).unwrap_or(1);
        Self { pool, idle: Mutex::new(Vec::new()), limit: Arc::new(Semaphore::new(keep)), session_setup }
    }

    /// The pool the connections come from.
    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    /// Gives every kept connection back to the pool (so its `close` can
    /// finish).
    pub fn release_kept(&self) {
        let kept: Vec<_> = self.idle.lock().map(|mut idle| idle.drain(..).collect()).unwrap_or_default();
        drop(kept);
    }

    /// A connection for one statement or transaction: a kept one if any,
    /// else one from the pool.
    ///
    /// # Errors
    /// The pool's: closed, timed out, a new connection refused.
    pub async fn get(&self) -> Result<Checkout<'_, DB>, sqlx::Error> {
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
        sqlx::raw_sql(self.session_setup).execute(&mut *c).await?;
        Ok(c)
    }
}

/// A connection lent to one operation. [`Checkout::done`] keeps it for the
/// next; dropping it instead (an error, a cancelled future) closes it, so a
/// connection with an unread reply or a stray transaction is never reused.
pub struct Checkout<'a, DB: Database> {
    conns: &'a Conns<DB>,
    conn: Option<PoolConnection<DB>>,
    _permit: OwnedSemaphorePermit,
}

impl<DB: Database> Checkout<'_, DB> {
    /// The operation succeeded: keep the connection for the next one.
    pub fn done(mut self) {
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

impl<DB: Database> std::fmt::Debug for Checkout<'_, DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkout").field("open", &self.conn.is_some()).finish_non_exhaustive()
    }
}

impl<DB: Database> Drop for Checkout<'_, DB> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<DB: Database> Deref for Checkout<'_, DB> {
    type Target = DB::Connection;
    fn deref(&self) -> &DB::Connection {
        // Present from construction until `done` consumes the checkout.
        self.conn.as_deref().unwrap_or_else(|| unreachable!("checkout used after done"))
    }
}

impl<DB: Database> DerefMut for Checkout<'_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        self.conn.as_deref_mut().unwrap_or_else(|| unreachable!("checkout used after done"))
    }
}

/// Runs a statement on a connection from [`Conns`], keeping the connection
/// when the statement succeeds.
pub trait RunOn<DB: Database> {
    /// As `Query::execute`.
    fn execute_on(
        self,
        conns: &Conns<DB>,
    ) -> impl Future<Output = Result<DB::QueryResult, sqlx::Error>> + Send;
    /// As `Query::fetch_all`.
    fn fetch_all_on(
        self,
        conns: &Conns<DB>,
    ) -> impl Future<Output = Result<Vec<DB::Row>, sqlx::Error>> + Send;
    /// As `Query::fetch_optional`.
    fn fetch_optional_on(
        self,
        conns: &Conns<DB>,
    ) -> impl Future<Output = Result<Option<DB::Row>, sqlx::Error>> + Send;
    /// As `Query::fetch_one`.
    fn fetch_one_on(self, conns: &Conns<DB>) -> impl Future<Output = Result<DB::Row, sqlx::Error>> + Send;
}

impl<'q, DB, A> RunOn<DB> for Query<'q, DB, A>
where
    DB: Database,
    A: 'q + Send + IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    async fn execute_on(self, conns: &Conns<DB>) -> Result<DB::QueryResult, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.execute(&mut *c).await;
        finished(c, out)
    }

    async fn fetch_all_on(self, conns: &Conns<DB>) -> Result<Vec<DB::Row>, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_all(&mut *c).await;
        finished(c, out)
    }

    async fn fetch_optional_on(self, conns: &Conns<DB>) -> Result<Option<DB::Row>, sqlx::Error> {
        let mut c = conns.get().await?;
        let out = self.fetch_optional(&mut *c).await;
        finished(c, out)
    }

    async fn fetch_one_on(self, conns: &Conns<DB>) -> Result<DB::Row, sqlx::Error> {
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
pub struct RunError {
    /// What failed.
    pub error: sqlx::Error,
    /// Whether the statement reached a connection.
    pub sent: bool,
}

/// As [`RunOn::execute_on`], saying whether a failed statement was sent:
/// for the statements that create a task, whose outcome is unknown when
/// the connection fails after they were sent.
///
/// # Errors
/// As [`RunOn::execute_on`], with whether the statement was sent.
pub async fn execute_sent<'q, DB, A>(
    query: Query<'q, DB, A>,
    conns: &Conns<DB>,
) -> Result<DB::QueryResult, RunError>
where
    DB: Database,
    A: 'q + Send + IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let mut c = conns.get().await.map_err(|error| RunError { error, sent: false })?;
    let out = query.execute(&mut *c).await;
    finished(c, out).map_err(|error| RunError { error, sent: true })
}

/// As [`RunOn::fetch_all_on`], saying whether a failed statement was sent
/// (see [`execute_sent`]).
///
/// # Errors
/// As [`RunOn::fetch_all_on`], with whether the statement was sent.
pub async fn fetch_all_sent<'q, DB, A>(
    query: Query<'q, DB, A>,
    conns: &Conns<DB>,
) -> Result<Vec<DB::Row>, RunError>
where
    DB: Database,
    A: 'q + Send + IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let mut c = conns.get().await.map_err(|error| RunError { error, sent: false })?;
    let out = query.fetch_all(&mut *c).await;
    finished(c, out).map_err(|error| RunError { error, sent: true })
}

/// After a statement ran to its end: keeps the connection on success,
/// returns it to the pool after the server's error reply (a duplicate key
/// is an expected outcome of an idempotent submit) or no row for
/// `fetch_one`, and closes it after any other error (a broken socket, a
/// reply sqlx could not decode).
fn finished<DB: Database, T>(c: Checkout<'_, DB>, out: Result<T, sqlx::Error>) -> Result<T, sqlx::Error> {
    match &out {
        Ok(_) => c.done(),
        Err(sqlx::Error::Database(_) | sqlx::Error::RowNotFound) => c.release(),
        Err(_) => drop(c),
    }
    out
}
