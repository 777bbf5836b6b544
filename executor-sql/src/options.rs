//! [`SqlOptions`]: how a storage of any SQL dialect connects and behaves
//! (`MySqlOptions` and `PostgresOptions` are this over their dialect).

use std::{fmt, marker::PhantomData, time::Duration};

use executor_core::{Error, Result};
use sqlx::{Pool, pool::PoolOptions};

use crate::{Dialect, SqlStorage};

/// The largest payload limit: 512 MiB (a payload is read whole into memory
/// by every claim).
const MAX_MAX_PAYLOAD: usize = 512 << 20;

/// Settings of a storage of dialect `D`; `SqlStorage::connect` uses the
/// defaults. The drivers name it `MySqlOptions` and `PostgresOptions`, with
/// an example each.
pub struct SqlOptions<D> {
    poll_min: Duration,
    poll_max: Duration,
    migrate: bool,
    max_connections: u32,
    acquire_timeout: Duration,
    max_payload: Option<usize>,
    dialect: PhantomData<fn() -> D>,
}

impl<D> Clone for SqlOptions<D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D> Copy for SqlOptions<D> {}

impl<D> fmt::Debug for SqlOptions<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlOptions")
            .field("poll_min", &self.poll_min)
            .field("poll_max", &self.poll_max)
            .field("migrate", &self.migrate)
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("max_payload", &self.max_payload)
            .finish()
    }
}

impl<D: Dialect> Default for SqlOptions<D> {
    fn default() -> Self {
        let (poll_min, poll_max) = D::DEFAULT_POLL;
        Self {
            poll_min,
            poll_max,
            migrate: true,
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            max_payload: D::DEFAULT_MAX_PAYLOAD,
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> SqlOptions<D> {
    /// The defaults: polling as the dialect's wake-ups need it (MySQL from
    /// 5 ms backing off to 250 ms; PostgreSQL, woken by notifications, from
    /// 50 ms to 1 s), migrations on, 10 connections, a 10 s wait for a
    /// connection, the dialect's payload limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// How often an idle `wait_for_work` asks the server for due work
    /// besides the wake-ups: `min` right after it starts waiting, doubling
    /// up to `max` while nothing turns up. Submits from this process wake it
    /// at once; on PostgreSQL submits from any process do (LISTEN/NOTIFY),
    /// and the poll is the safety net while the listening connection is
    /// re-established after a loss; on MySQL work submitted by other
    /// processes is seen within `max`. `min` is 1 ms to 60 s, `max` from
    /// `min` to 10 minutes (checked at connect).
    pub fn poll_interval(mut self, min: Duration, max: Duration) -> Self {
        self.poll_min = min;
        self.poll_max = max;
        self
    }

    /// Whether [`SqlOptions::connect`] and [`SqlOptions::open`] run the
    /// embedded migrations (default: yes). Turn it off when a DBA applies
    /// the driver's `migrations/*.sql` by hand.
    pub fn run_migrations(mut self, on: bool) -> Self {
        self.migrate = on;
        self
    }

    /// Connections the storage's statements use at most (default 10);
    /// [`SqlOptions::connect`] makes the pool larger by what the dialect
    /// keeps for others (callers of `pool()` and the migrator; on
    /// PostgreSQL the listener too). On a pool of your own
    /// ([`SqlOptions::open`]), the storage uses all but those. 1 to 10,000.
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

    /// The largest payload a submit takes, in bytes (1 byte to 512 MiB). A
    /// larger one is refused with [`executor_core::Error::PayloadTooLarge`]
    /// before anything is sent. PostgreSQL's default is 16 MiB; MySQL's is
    /// the server's `max_allowed_packet` less room for the rest of the row,
    /// and a limit set here applies only when it is lower.
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = Some(bytes);
        self
    }

    /// The poll interval's bounds ([`SqlOptions::poll_interval`]).
    pub fn poll_bounds(&self) -> (Duration, Duration) {
        (self.poll_min, self.poll_max)
    }

    /// The payload limit set ([`SqlOptions::max_payload`]), or the
    /// dialect's default; `None` where the server decides.
    pub fn payload_limit(&self) -> Option<usize> {
        self.max_payload
    }

    /// Connects a new pool to `url` (`mysql://user:password@host:port/database`,
    /// `postgres://..`, with the dialect's TLS settings in the query) and,
    /// unless turned off, runs the migrations.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming an option outside its range
    /// (before anything is sent); a retryable
    /// [`executor_core::Error::Storage`] when the server does not answer; a
    /// non-retryable one for a bad URL, bad credentials, a TLS failure, a
    /// failed migration or an incomplete schema.
    pub async fn connect(self, url: &str) -> Result<SqlStorage<D>> {
        self.connect_dialect(url).await.map(SqlStorage::new)
    }

    /// As [`SqlOptions::connect`], the dialect's state alone.
    pub(crate) async fn connect_dialect(self, url: &str) -> Result<D> {
        self.validate()?;
        let pool = PoolOptions::<D::Db>::new()
            .max_connections(self.max_connections.saturating_add(D::RESERVED_CONNECTIONS))
            .acquire_timeout(self.acquire_timeout)
            .connect(url)
            .await
            .map_err(crate::error::connect::<D>)?;
        self.open_dialect(pool).await
    }

    /// A storage on an existing pool; runs the migrations unless turned off,
    /// then checks that the schema is complete and starts what the dialect
    /// runs (reads MySQL's packet size, starts PostgreSQL's listener).
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] for an option outside its range; a
    /// failed migration; an incomplete schema (migrations off and not
    /// applied by hand); store failures.
    pub async fn open(self, pool: Pool<D::Db>) -> Result<SqlStorage<D>> {
        self.open_dialect(pool).await.map(SqlStorage::new)
    }

    async fn open_dialect(self, pool: Pool<D::Db>) -> Result<D> {
        self.validate()?;
        let dialect = D::from_pool(pool, self);
        if self.migrate {
            dialect.migrate().await?;
        } else {
            crate::schema::check(&dialect).await?;
        }
        dialect.opened().await?;
        Ok(dialect)
    }

    /// Checks every option against its range; [`SqlOptions::connect`] and
    /// [`SqlOptions::open`] call it first.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] naming the option and its range.
    pub fn validate(&self) -> Result<()> {
        fn out(what: &'static str, value: impl fmt::Debug, range: &str) -> Error {
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
        if let Some(bytes) = self.max_payload
            && !(1..=MAX_MAX_PAYLOAD).contains(&bytes)
        {
            return Err(out("max_payload", bytes, "1 byte to 512 MiB"));
        }
        Ok(())
    }
}
