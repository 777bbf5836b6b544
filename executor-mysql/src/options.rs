//! [`MySqlOptions`]: how a [`MySqlStorage`] connects and behaves.

use std::time::Duration;

use executor_core::{DEFAULT_MAX_PAYLOAD, Result};
use sqlx::{MySqlPool, mysql::MySqlPoolOptions};

use crate::{MySqlStorage, error};

/// Settings of a [`MySqlStorage`]; [`MySqlStorage::connect`] uses the defaults.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use executor_mysql::MySqlOptions;
///
/// let storage = MySqlOptions::new()
///     .max_connections(16)
///     .max_payload(256 * 1024)
///     .poll_interval(Duration::from_millis(10), Duration::from_millis(500))
///     .connect("mysql://root@127.0.0.1:3306/test")
///     .await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MySqlOptions {
    pub(crate) max_payload: usize,
    pub(crate) poll_min: Duration,
    pub(crate) poll_max: Duration,
    pub(crate) migrate: bool,
    pub(crate) max_connections: u32,
    pub(crate) acquire_timeout: Duration,
}

impl Default for MySqlOptions {
    fn default() -> Self {
        Self {
            max_payload: DEFAULT_MAX_PAYLOAD,
            poll_min: Duration::from_millis(5),
            poll_max: Duration::from_millis(250),
            migrate: true,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

impl MySqlOptions {
    /// The defaults: 1 MiB payloads, polling from 5 ms backing off to 250 ms,
    /// migrations on, 10 connections.
    pub fn new() -> Self {
        Self::default()
    }

    /// Largest payload accepted at submit, in bytes; larger ones are refused
    /// with [`executor_core::Error::PayloadTooLarge`]. Keep it below the
    /// server's `max_allowed_packet`.
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// How often an idle [`executor_core::Storage::wait_for_work`] asks the
    /// server for due work: `min` right after it starts waiting, doubling up
    /// to `max` while nothing turns up. Submits from this process wake it at
    /// once; work submitted by other processes is seen within `max`.
    pub fn poll_interval(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min.max(Duration::from_millis(1));
        self.poll_max = max.max(self.poll_min);
        self
    }

    /// Whether [`MySqlOptions::connect`] and [`MySqlOptions::open`] run the
    /// embedded migrations (default: yes). Turn it off when a DBA applies
    /// `executor-mysql/migrations/*.sql` by hand.
    pub fn run_migrations(mut self, on: bool) -> Self {
        self.migrate = on;
        self
    }

    /// Connections the storage's statements use at most (default 10);
    /// [`MySqlOptions::connect`] makes the pool two larger, for callers of
    /// [`MySqlStorage::pool`]. On a pool of your own ([`MySqlOptions::open`]),
    /// the storage uses all but two of its connections.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a call waits for a free pooled connection before it fails
    /// with a retryable error (default 10 s).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Connects a new pool to `url` (`mysql://user:password@host:port/database`)
    /// and, unless turned off, runs the migrations.
    ///
    /// # Errors
    /// A retryable [`executor_core::Error::Storage`] when the server does not
    /// answer; a non-retryable one for a bad URL, bad credentials or a failed
    /// migration.
    pub async fn connect(self, url: &str) -> Result<MySqlStorage> {
        // Two more than the storage uses, for callers of `pool()` and the
        // migrator (see `conn.rs`).
        let pool = MySqlPoolOptions::new()
            .max_connections(self.max_connections.saturating_add(2))
            .acquire_timeout(self.acquire_timeout)
            .connect(url)
            .await
            .map_err(error::storage)?;
        self.open(pool).await
    }

    /// A storage on an existing pool; runs the migrations unless turned off.
    ///
    /// # Errors
    /// A failed migration.
    pub async fn open(self, pool: MySqlPool) -> Result<MySqlStorage> {
        let migrate = self.migrate;
        let storage = MySqlStorage::with_options(pool, self);
        if migrate {
            storage.migrate().await?;
        }
        Ok(storage)
    }
}
