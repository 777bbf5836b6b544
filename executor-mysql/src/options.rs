//! [`MySqlOptions`]: how a [`MySqlStorage`] connects and behaves.

use executor_sql::Dialect as _;
use std::time::Duration;

use executor_core::{Error, Result};
use sqlx::{MySqlPool, mysql::MySqlPoolOptions};

use crate::{MySqlDialect, MySqlStorage, error};

/// Settings of a [`MySqlStorage`]; [`MySqlStorage::connect`] uses the defaults.
///
/// ```no_run
/// # async fn run() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use reliable_executor_mysql::MySqlOptions;
///
/// let storage = MySqlOptions::new()
///     .max_connections(16)
///     .poll_interval(Duration::from_millis(10), Duration::from_millis(500))
///     .connect("mysql://root@127.0.0.1:3306/test")
///     .await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct MySqlOptions {
    pub(crate) poll_min: Duration,
    pub(crate) poll_max: Duration,
    pub(crate) migrate: bool,
    pub(crate) max_connections: u32,
    pub(crate) acquire_timeout: Duration,
}

impl Default for MySqlOptions {
    fn default() -> Self {
        Self {
            poll_min: Duration::from_millis(5),
            poll_max: Duration::from_millis(250),
            migrate: true,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

impl MySqlOptions {
    /// The defaults: polling from 5 ms backing off to 250 ms,
    /// migrations on, 10 connections.
    pub fn new() -> Self {
        Self::default()
    }

    /// How often an idle [`executor_core::storage::Storage::wait_for_work`] asks the
    /// server for due work: `min` right after it starts waiting, doubling up
    /// to `max` while nothing turns up. Submits from this process wake it at
    /// once; work submitted by other processes is seen within `max`. `min`
    /// is 1 ms to 60 s, `max` from `min` to 10 minutes (checked at connect).
    pub fn poll_interval(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max;
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
    /// the storage uses all but two of its connections. 1 to 10,000.
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

    /// Connects a new pool to `url` (`mysql://user:password@host:port/database`)
    /// and, unless turned off, runs the migrations.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming an option outside its range
    /// (before anything is sent); a retryable
    /// [`executor_core::Error::Storage`] when the server does not answer; a
    /// non-retryable one for a bad URL, bad credentials, a failed migration
    /// or an incomplete schema.
    pub async fn connect(self, url: &str) -> Result<MySqlStorage> {
        self.connect_dialect(url).await.map(MySqlStorage::new)
    }

    /// As [`MySqlOptions::connect`], the dialect's state alone.
    pub(crate) async fn connect_dialect(self, url: &str) -> Result<MySqlDialect> {
        self.validate()?;
        // Two more than the storage uses, for callers of `pool()` and the
        // migrator (see `conn.rs`).
        let pool = MySqlPoolOptions::new()
            .max_connections(self.max_connections.saturating_add(2))
            .acquire_timeout(self.acquire_timeout)
            .connect(url)
            .await
            .map_err(error::connect)?;
        self.open_dialect(pool).await
    }

    /// A storage on an existing pool; runs the migrations unless turned off,
    /// then checks that the schema is complete and reads the server's
    /// `max_allowed_packet`.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] for an option outside its range; a
    /// failed migration; an incomplete schema (migrations off and not
    /// applied by hand); store failures.
    pub async fn open(self, pool: MySqlPool) -> Result<MySqlStorage> {
        self.open_dialect(pool).await.map(MySqlStorage::new)
    }

    async fn open_dialect(self, pool: MySqlPool) -> Result<MySqlDialect> {
        self.validate()?;
        let migrate = self.migrate;
        let storage = MySqlDialect::with_options(pool, self);
        if migrate {
            storage.migrate().await?;
        } else {
            storage.check_schema().await?;
        }
        storage.max_payload().await?;
        Ok(storage)
    }

    /// Checks every option against its range; [`MySqlOptions::connect`] and
    /// [`MySqlOptions::open`] call it first.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming the option and its range.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reliable_executor_mysql::MySqlOptions;
    ///
    /// assert!(MySqlOptions::new().validate().is_ok());
    /// assert!(MySqlOptions::new().acquire_timeout(Duration::ZERO).validate().is_err());
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
        Ok(())
    }
}
