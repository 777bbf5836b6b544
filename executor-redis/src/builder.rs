//! Connecting: [`RedisStorageBuilder`] and its settings.

use std::{sync::Arc, time::Duration};

use executor_core::{DEFAULT_MAX_PAYLOAD, Error, Result};
use fred::{
    prelude::ClientLike,
    types::{
        Builder,
        config::{Config, ReconnectPolicy, ServerConfig, TcpConfig},
    },
};

use crate::{RedisStorage, error::storage, keys::Layout, storage::Inner};

/// Settings for [`RedisStorage`]; start with [`RedisStorage::builder`].
///
/// ```no_run
/// # async fn demo() -> executor_core::Result<()> {
/// use std::time::Duration;
/// use executor_redis::RedisStorage;
///
/// let storage = RedisStorage::builder("redis://127.0.0.1:6379")
///     .pool_size(8)
///     .max_payload(256 * 1024)
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
    max_payload: usize,
    partitions: u16,
    prefix: String,
    cluster: bool,
    command_timeout: Duration,
}

impl RedisStorageBuilder {
    pub(crate) fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            pool_size: 4,
            max_payload: DEFAULT_MAX_PAYLOAD,
            partitions: 1,
            prefix: "re".to_owned(),
            cluster: false,
            command_timeout: Duration::from_secs(5),
        }
    }

    /// Connections for commands (round robin); default 4. The blocking
    /// wake-up uses one more connection per waited-on namespace.
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = n.max(1);
        self
    }

    /// Largest payload accepted at submit, in bytes; default
    /// [`DEFAULT_MAX_PAYLOAD`] (1 MiB). Larger ones get
    /// [`Error::PayloadTooLarge`].
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// Splits every namespace into `n` partitions (1 to 1,024; default 1),
    /// each under its own hash tag, so one queue spreads over Redis Cluster
    /// slots. A task's partition is a hash of its id; claims rotate over the
    /// partitions. Every process sharing a namespace must use the same `n`.
    pub fn partitions(mut self, n: u16) -> Self {
        self.partitions = n.clamp(1, 1024);
        self
    }

    /// The first part of every key (default `re`): keys are
    /// `{<prefix>:<namespace>}:...`. Letters, digits, `-`, `_`, `.` only.
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

    /// Longest wait for one command (default 5 s), including time spent
    /// reconnecting; a command that times out returns a retryable error.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Connects the pool and loads the scripts.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad URL or key prefix; a retryable
    /// [`Error::Storage`] when Redis does not answer.
    pub async fn connect(self) -> Result<RedisStorage> {
        if self.prefix.is_empty()
            || !self.prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(Error::invalid(
                "key prefix",
                format!("`{}`: use 1 or more letters, digits, `-`, `_` or `.`", self.prefix),
            ));
        }
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
        let inner = Inner::new(pool, builder, layout, self.max_payload);
        inner.scripts.load(inner.pool.next()).await?;
        Ok(RedisStorage { inner: Arc::new(inner) })
    }
}
