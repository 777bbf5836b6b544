//! Connecting: [`RedisStorageBuilder`] and its settings.

use std::{borrow::Cow, path::PathBuf, sync::Arc, time::Duration};

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
/// use reliable_executor_redis::RedisStorage;
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
    tls: TlsFiles,
    functions: bool,
}

/// The files a TLS connection uses beyond the system's CA certificates.
#[derive(Clone, Debug, Default)]
struct TlsFiles {
    ca: Option<PathBuf>,
    client: Option<(PathBuf, PathBuf)>,
}

impl TlsFiles {
    fn any(&self) -> bool {
        self.ca.is_some() || self.client.is_some()
    }
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
            tls: TlsFiles::default(),
            functions: true,
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

    /// Whether to run the storage's Lua code as a Redis Functions library
    /// (`FUNCTION LOAD` once, then `FCALL`; default `true`). Its shared
    /// definitions then run once at load instead of at every call, which
    /// saves tens of microseconds of server time per call (see
    /// `docs/redis.md`). A server that refuses the library (before Redis 7,
    /// or an ACL or proxy that denies `FUNCTION`) gets plain scripts
    /// (`EVALSHA`) anyway, with a warning; `false` asks for them outright,
    /// for a proxy that accepts `FUNCTION LOAD` but not `FCALL`. Both run
    /// the same Lua and answer alike; processes of either kind can share a
    /// namespace.
    ///
    /// ```no_run
    /// # async fn demo() -> executor_core::Result<()> {
    /// let storage = reliable_executor_redis::RedisStorage::builder("redis://127.0.0.1:6379")
    ///     .functions(false)
    ///     .connect()
    ///     .await?;
    /// # drop(storage);
    /// # Ok(())
    /// # }
    /// ```
    pub fn functions(mut self, yes: bool) -> Self {
        self.functions = yes;
        self
    }

    /// Longest wait for one command, 1 ms to [`Self::MAX_COMMAND_TIMEOUT`] (one
    /// hour); default 5 s, including time spent reconnecting. A command that
    /// times out returns a retryable error.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Trusts the CA certificates in this PEM file, instead of the system's,
    /// for a TLS URL (`rediss://`, `rediss-cluster://`): for a server whose
    /// certificate a private CA signed (Memorystore's server CA, a
    /// self-managed Redis). Without it, the server's certificate is checked
    /// against the system's CA certificates (Debian: the `ca-certificates`
    /// package), which is right for ElastiCache and Azure Cache. Either way
    /// the URL's host must be a name or IP address the certificate lists.
    ///
    /// ```no_run
    /// # async fn demo() -> executor_core::Result<()> {
    /// let storage = reliable_executor_redis::RedisStorage::builder("rediss://10.0.0.3:6378")
    ///     .tls_ca_file("/etc/redis/server-ca.pem")
    ///     .connect()
    ///     .await?;
    /// # drop(storage);
    /// # Ok(())
    /// # }
    /// ```
    pub fn tls_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.tls.ca = Some(path.into());
        self
    }

    /// Presents this certificate chain and private key (PEM files) to a Redis
    /// that asks clients for one (`tls-auth-clients yes`, mutual TLS).
    pub fn tls_client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.tls.client = Some((cert.into(), key.into()));
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
        let (plain, tls) = split_tls(&self.url);
        Config::from_url(&plain).map_err(|e| Error::invalid("redis url", e.details().to_owned()))?;
        if tls && !cfg!(feature = "tls") {
            return Err(Error::invalid(
                "redis url",
                "a `rediss` URL needs executor-redis's `tls` feature, which is on by default: \
                 do not turn default features off, or add `features = [\"tls\"]`",
            ));
        }
        if !tls && self.tls.any() {
            return Err(Error::invalid(
                "redis url",
                "a TLS file is set (tls_ca_file or tls_client_cert) but the URL is plain text: \
                 use `rediss://` (or `rediss-cluster://`)",
            ));
        }
        Ok(())
    }

    /// Checks the settings ([`RedisStorageBuilder::validate`]), connects the
    /// pool and loads the scripts.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a setting out of range, a bad URL or key
    /// prefix; a retryable [`Error::Storage`] when Redis does not answer; a
    /// non-retryable one when TLS fails (a certificate either side refuses,
    /// TLS to a port without it or the reverse), saying what is wrong and
    /// which setting fixes it.
    pub async fn connect(self) -> Result<RedisStorage> {
        self.validate()?;
        #[cfg_attr(
            not(feature = "tls"),
            allow(unused_variables, reason = "validate refuses a TLS URL without the `tls` feature")
        )]
        let (plain, tls) = split_tls(&self.url);
        // fred parses the plain form: its own TLS set-up would pick rustls'
        // process-wide crypto provider, which panics when an application
        // links two; ours names ring.
        let mut config =
            Config::from_url(&plain).map_err(|e| Error::invalid("redis url", e.details().to_owned()))?;
        #[cfg(feature = "tls")]
        let tls_config = if tls {
            let client = tls::client_config(&self.tls)?;
            config.tls = Some(fred::types::config::TlsConnector::from(client.clone()).into());
            Some(Arc::new(client))
        } else {
            None
        };
        #[cfg(feature = "tls")]
        let servers = config.server.hosts();
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
        if let Err(e) = pool.init().await {
            #[cfg(feature = "tls")]
            return Err(probe::connect_error(e, tls_config, &servers).await);
            #[cfg(not(feature = "tls"))]
            return Err(storage(e));
        }
        let layout = Layout {
            prefix: self.prefix,
            partitions: self.partitions,
            inline_wake: !(cluster && self.partitions > 1),
        };
        let inner = Inner::new(pool, builder, layout);
        inner.scripts.load(inner.pool.next(), self.functions).await?;
        Ok(RedisStorage { inner: Arc::new(inner) })
    }
}

/// `url` with a TLS scheme (`rediss`, `rediss-cluster`, `valkeys`, ..) made
/// plain, and whether it asked for TLS.
fn split_tls(url: &str) -> (Cow<'_, str>, bool) {
    let Some((scheme, rest)) = url.split_once("://") else { return (Cow::Borrowed(url), false) };
    let lower = scheme.to_ascii_lowercase();
    let plain = match lower.as_str() {
        "rediss" => "redis",
        "rediss-cluster" => "redis-cluster",
        "rediss-sentinel" => "redis-sentinel",
        "valkeys" => "valkey",
        "valkeys-cluster" => "valkey-cluster",
        "valkeys-sentinel" => "valkey-sentinel",
        _ => return (Cow::Borrowed(url), false),
    };
    (Cow::Owned(format!("{plain}://{rest}")), true)
}

/// Why a first connection failed, when TLS is to blame.
#[cfg(feature = "tls")]
mod probe;

/// The rustls set-up for a `rediss` URL.
#[cfg(feature = "tls")]
mod tls {
    use std::{path::Path, sync::Arc};

    use executor_core::{Error, Result};
    use rustls::{
        ClientConfig, RootCertStore,
        pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    };

    use super::TlsFiles;

    /// A client trusting `files.ca` (or the system's CA certificates) and
    /// presenting `files.client` when set, on the ring provider.
    pub(super) fn client_config(files: &TlsFiles) -> Result<ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::invalid("tls", e.to_string()))?
            .with_root_certificates(roots(files.ca.as_deref())?);
        let config = match &files.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = certificates(cert, "tls_client_cert")?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| Error::invalid("tls_client_cert", format!("key {}: {e}", key.display())))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| Error::invalid("tls_client_cert", e.to_string()))?
            }
        };
        Ok(config)
    }

    fn roots(ca: Option<&Path>) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        match ca {
            Some(path) => {
                for cert in certificates(path, "tls_ca_file")? {
                    roots.add(cert).map_err(|e| {
                        Error::invalid(
                            "tls_ca_file",
                            format!("{}: not a usable CA certificate: {e}", path.display()),
                        )
                    })?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
                    return Err(Error::invalid(
                        "tls",
                        format!(
                            "no CA certificate found on this system{why}: install them (Debian: \
                             `apt-get install ca-certificates`) or give the server's CA with \
                             RedisStorageBuilder::tls_ca_file"
                        ),
                    ));
                }
            }
        }
        Ok(roots)
    }

    /// The certificates in a PEM file; an error when there is none.
    fn certificates(path: &Path, setting: &'static str) -> Result<Vec<CertificateDer<'static>>> {
        let read =
            |e: rustls::pki_types::pem::Error| Error::invalid(setting, format!("{}: {e}", path.display()));
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(read)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(read)?;
        if certs.is_empty() {
            return Err(Error::invalid(setting, format!("{}: holds no PEM certificate", path.display())));
        }
        Ok(certs)
    }
}
