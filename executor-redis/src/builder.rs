//! Connecting: [`RedisStorageBuilder`] and its settings.

use std::{sync::Arc, time::Duration};

use executor_core::{Error, Result};
use fred::{
    prelude::ClientLike,
    types::{
        Builder,
        config::{Config, ReconnectPolicy, ServerConfig, TcpConfig},
    },
};

use crate::{RedisStorage, error::storage, keys::Layout, storage::Inner};

/// Longest key prefix, in bytes.
const MAX_PREFIX_LEN: usize = 64;

/// Settings for [`RedisStorage`]; start with [`RedisStorage::builder`].
///
/// ```no_run
/// # async fn demo() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use executor_redis::RedisStorage;
///
/// let storage = RedisStorage::builder("redis://127.0.0.1:6379")
///     .pool_size(8)
///     .key_prefix("billing")
///     .command_timeout(Duration::from_secs(2))
///     .connect()
///     .await?;
/// # drop(storage);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RedisStorageBuilder {
    url: String,
    pool_size: usize,
    partitions: u16,
    prefix: String,
    cluster: bool,
    command_timeout: Duration,
}

impl RedisStorageBuilder {
    /// Most pooled connections [`RedisStorageBuilder::pool_size`] accepts.
    pub const MAX_POOL_SIZE: usize = 256;
    /// Most partitions [`RedisStorageBuilder::partitions`] accepts.
    pub const MAX_PARTITIONS: u16 = 1024;
    /// Longest [`RedisStorageBuilder::command_timeout`]: one hour.
    pub const MAX_COMMAND_TIMEOUT: Duration = Duration::from_secs(3600);

    pub(crate) fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            pool_size: 4,
            partitions: 1,
            prefix: "re".to_owned(),
            cluster: false,
            command_timeout: Duration::from_secs(5),
        }
    }

    /// Connections for commands (round robin), 1 to [`Self::MAX_POOL_SIZE`];
    /// default 4. The blocking wake-up uses one more connection per
    /// waited-on namespace.
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = n;
        self
    }

    /// Splits every namespace into `n` partitions (1 to 1,024; default 1),
    /// each under its own hash tag, so one queue spreads over Redis Cluster
    /// slots. A task's partition is a hash of its id; claims rotate over the
    /// partitions. Every process sharing a namespace must use the same `n`.
    pub fn partitions(mut self, n: u16) -> Self {
        self.partitions = n;
        self
    }

    /// The first part of every key (default `re`): keys are
    /// `{<prefix>:<namespace>}:...`. 1 to 64 letters, digits, `-`, `_`, `.`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Connects to a Redis Cluster. Also chosen by a `redis-cluster://` URL
    /// (`redis-cluster://host:port?node=host2:port2`).
    pub fn cluster(mut self, yes: bool) -> Self {
        self.cluster = yes;
        self
    }

    /// Longest wait for one command, 1 ms to [`Self::MAX_COMMAND_TIMEOUT`] (one
    /// hour); default 5 s, including time spent reconnecting. A command that
    /// times out returns a retryable error.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Checks every setting, naming the one out of range and its range;
    /// [`RedisStorageBuilder::connect`] calls it before connecting.
    ///
    /// # Errors
    /// [`Error::Invalid`] for the first setting out of range.
    pub fn validate(&self) -> Result<()> {
        let out_of = |what, value: String, range: &str| {
            Err(Error::invalid(what, format!("{value} is outside its range, {range}")))
        };
        if !(1..=Self::MAX_POOL_SIZE).contains(&self.pool_size) {
            return out_of(
                "pool_size",
                self.pool_size.to_string(),
                &format!("1 to {} connections", Self::MAX_POOL_SIZE),
            );
        }
        if !(1..=Self::MAX_PARTITIONS).contains(&self.partitions) {
            return out_of(
                "partitions",
                self.partitions.to_string(),
                &format!("1 to {}", Self::MAX_PARTITIONS),
            );
        }
        if !(Duration::from_millis(1)..=Self::MAX_COMMAND_TIMEOUT).contains(&self.command_timeout) {
            return out_of("command_timeout", format!("{:?}", self.command_timeout), "1 ms to 1 hour");
        }
        if self.prefix.is_empty()
            || self.prefix.len() > MAX_PREFIX_LEN
            || !self.prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(Error::invalid(
                "key prefix",
                format!(
                    "`{}`: use 1 to {MAX_PREFIX_LEN} letters, digits, `-`, `_` or `.`",
                    self.prefix.escape_debug()
                ),
            ));
        }
        Config::from_url(&self.url).map_err(|e| Error::invalid("redis url", e.details().to_owned()))?;
        Ok(())
    }

    /// Checks the settings ([`RedisStorageBuilder::validate`]), connects the
    /// pool and loads the scripts.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a setting out of range, a bad URL or key
    /// prefix; a retryable [`Error::Storage`] when Redis does not answer.
    pub async fn connect(self) -> Result<RedisStorage> {
        self.validate()?;
        let mut config =
            Config::from_url(&self.url).map_err(|e| Error::invalid("redis url", e.details().to_owned()))?;
        if self.cluster
            && let ServerConfig::Centralized { server } = &config.server
        {
            config.server =
                ServerConfig::Clustered { hosts: vec![server.clone()], policy: Default::default() };
        }
        let cluster = matches!(config.server, ServerConfig::Clustered { .. });
        let mut builder = Builder::from_config(config);
        // Reconnect at once, then back off to at most 500 ms between tries, so
        // claims resume well within a second of Redis coming back.
        builder
            .set_policy(ReconnectPolicy::new_exponential(0, 10, 500, 2))
            .with_connection_config(|c| {
                c.connection_timeout = Duration::from_secs(2);
                c.internal_command_timeout = Duration::from_secs(2);
                c.tcp = TcpConfig { nodelay: Some(true), ..Default::default() };
            })
            .with_performance_config(|p| p.default_command_timeout = self.command_timeout);
        let pool = builder.build_pool(self.pool_size).map_err(storage)?;
        pool.init().await.map_err(storage)?;
        let layout = Layout {
            prefix: self.prefix,
            partitions: self.partitions,
            inline_wake: !(cluster && self.partitions > 1),
        };
        let inner = Inner::new(pool, builder, layout);
        inner.scripts.load(inner.pool.next()).await?;
        Ok(RedisStorage { inner: Arc::new(inner) })
    }
}
