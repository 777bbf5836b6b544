//! [`PostgresOptions`]: how a [`PostgresStorage`] connects and behaves.

use executor_sql::Dialect as _;
use std::time::Duration;

use executor_core::{Error, Result};
use sqlx::{PgPool, postgres::PgPoolOptions};

use crate::{PostgresDialect, PostgresStorage, error};

/// Settings of a [`PostgresStorage`]; [`PostgresStorage::connect`] uses the defaults.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use reliable_executor_postgres::PostgresOptions;
///
/// let storage = PostgresOptions::new()
///     .max_connections(16)
///     .poll_interval(Duration::from_millis(50), Duration::from_secs(2))
///     .connect("postgres://postgres@127.0.0.1:5432/test")
///     .await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    pub(crate) poll_min: Duration,
    pub(crate) poll_max: Duration,
    pub(crate) migrate: bool,
    pub(crate) max_connections: u32,
    pub(crate) acquire_timeout: Duration,
    pub(crate) max_payload: usize,
}

/// The default payload limit: 16 MiB.
const DEFAULT_MAX_PAYLOAD: usize = 16 << 20;
/// The largest payload limit: 512 MiB (a `bytea` holds up to 1 GB, and a
/// payload is read whole into memory by every claim).
const MAX_MAX_PAYLOAD: usize = 512 << 20;

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            poll_min: Duration::from_millis(50),
            poll_max: Duration::from_secs(1),
            migrate: true,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            max_payload: DEFAULT_MAX_PAYLOAD,
        }
    }
}

impl PostgresOptions {
    /// The defaults: polling from 50 ms backing off to 1 s (besides the
    /// notifications),
    /// migrations on, 10 connections.
    pub fn new() -> Self {
        Self::default()
    }

    /// How often an idle [`executor_core::storage::Storage::wait_for_work`] asks the
    /// server for due work besides the notifications: `min` right after it
    /// starts waiting, doubling up to `max` while nothing turns up. Submits
    /// from any process wake it at once (LISTEN/NOTIFY); the poll is the
    /// safety net while the listening connection is being re-established
    /// after a loss. `min` is 1 ms to 60 s, `max` from `min` to 10 minutes
    /// (checked at connect).
    pub fn poll_interval(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max;
        self
    }

    /// Whether [`PostgresOptions::connect`] and [`PostgresOptions::open`] run the
    /// embedded migrations (default: yes). Turn it off when a DBA applies
    /// `executor-postgres/migrations/*.sql` by hand.
    pub fn run_migrations(mut self, on: bool) -> Self {
        self.migrate = on;
        self
    }

    /// Connections the storage's statements use at most (default 10);
    /// [`PostgresOptions::connect`] makes the pool three larger, for the
    /// listener and callers of [`PostgresStorage::pool`]. On a pool of your
    /// own ([`PostgresOptions::open`]), the storage uses all but two of its
    /// connections, and the listener one more. 1 to 10,000.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    /// How long a call waits for a free pooled connection before it fails
    /// with a retryable error (default 10 s; 1 ms to 1 hour).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// The largest payload a submit takes, in bytes (default 16 MiB; 1 byte
    /// to 512 MiB). A larger one is refused with
    /// [`executor_core::Error::PayloadTooLarge`] before anything is sent.
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// Connects a new pool to `url` (`postgres://user:password@host:port/database`, with
    /// `?sslmode=verify-full&sslrootcert=<file>` for TLS)
    /// and, unless turned off, runs the migrations.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming an option outside its range
    /// (before anything is sent); a retryable
    /// [`executor_core::Error::Storage`] when the server does not answer; a
    /// non-retryable one for a bad URL, bad credentials, a failed migration
    /// or an incomplete schema.
    pub async fn connect(self, url: &str) -> Result<PostgresStorage> {
        self.connect_dialect(url).await.map(PostgresStorage::new)
    }

    /// As [`PostgresOptions::connect`], the dialect's state alone.
    pub(crate) async fn connect_dialect(self, url: &str) -> Result<PostgresDialect> {
        self.validate()?;
        // Three more than the storage's statements use: the listener's
        // connection, and two for callers of `pool()` and the migrator (see
        // `conn.rs`).
        let pool = PgPoolOptions::new()
            .max_connections(self.max_connections.saturating_add(3))
            .acquire_timeout(self.acquire_timeout)
            .connect(url)
            .await
            .map_err(error::connect)?;
        self.open_dialect(pool).await
    }

    /// A storage on an existing pool; runs the migrations unless turned off,
    /// then checks that the schema is complete.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] for an option outside its range; a
    /// failed migration; an incomplete schema (migrations off and not
    /// applied by hand); store failures.
    pub async fn open(self, pool: PgPool) -> Result<PostgresStorage> {
        self.open_dialect(pool).await.map(PostgresStorage::new)
    }

    async fn open_dialect(self, pool: PgPool) -> Result<PostgresDialect> {
        self.validate()?;
        let migrate = self.migrate;
        let storage = PostgresDialect::with_options(pool, self);
        if migrate {
            storage.migrate().await?;
        } else {
            storage.check_schema().await?;
        }
        // Listening from the start, so a task submitted by another process
        // wakes this one's first wait.
        storage.listener.start().await;
        Ok(storage)
    }

    /// Checks every option against its range; [`PostgresOptions::connect`] and
    /// [`PostgresOptions::open`] call it first.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming the option and its range.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor_postgres::PostgresOptions;
    ///
    /// assert!(PostgresOptions::new().validate().is_ok());
    /// assert!(PostgresOptions::new().acquire_timeout(Duration::ZERO).validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        fn out(what: &'static str, value: impl std::fmt::Debug, range: &str) -> Error {
            Error::invalid(what, format!("{value:?} is outside {range}"))
        }
        if !(Duration::from_millis(1)..=Duration::from_secs(60)).contains(&self.poll_min) {
            return Err(out("poll_interval min", self.poll_min, "1 ms to 60 s"));
        }
        if !(self.poll_min..=Duration::from_secs(600)).contains(&self.poll_max) {
            return Err(out("poll_interval max", self.poll_max, "the min interval to 10 minutes"));
        }
        if !(1..=10_000).contains(&self.max_connections) {
            return Err(out("max_connections", self.max_connections, "1 to 10000"));
        }
        if !(Duration::from_millis(1)..=Duration::from_secs(3600)).contains(&self.acquire_timeout) {
            return Err(out("acquire_timeout", self.acquire_timeout, "1 ms to 1 hour"));
        }
        if !(1..=MAX_MAX_PAYLOAD).contains(&self.max_payload) {
            return Err(out("max_payload", self.max_payload, "1 byte to 512 MiB"));
        }
        Ok(())
    }
}
