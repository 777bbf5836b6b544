//! Shared helpers of the example programs: the `--storage` flag and its URLs.

use clap::ValueEnum;
use executor_any::AnyStorage;

/// Where an example's tasks live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageKind {
    /// `MemoryStorage`: no server, nothing kept.
    Memory,
    /// `RedisStorage` at `--redis-url` / `REDIS_URL`.
    Redis,
    /// `MySqlStorage` at `--mysql-url` / `MYSQL_URL`.
    Mysql,
}

/// The storage flags every example takes (`#[command(flatten)]`).
#[derive(Clone, Debug, clap::Args)]
pub struct StoreArgs {
    /// Where tasks live.
    #[arg(long, value_enum, default_value_t = StorageKind::Memory)]
    pub storage: StorageKind,
    /// Redis URL for `--storage redis`.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// MySQL/MariaDB URL for `--storage mysql`.
    #[arg(long, env = "MYSQL_URL", default_value = "mysql://root@127.0.0.1:3306/test")]
    pub mysql_url: String,
}

impl StoreArgs {
    /// The URL of the chosen store (`memory:`, or the Redis or MySQL URL).
    pub fn url(&self) -> &str {
        match self.storage {
            StorageKind::Memory => "memory:",
            StorageKind::Redis => &self.redis_url,
            StorageKind::Mysql => &self.mysql_url,
        }
    }

    /// Connects the chosen store as an [`AnyStorage`]: one executor type
    /// whatever the flag says.
    ///
    /// # Errors
    /// The driver's connect error.
    pub async fn connect(&self) -> executor_core::Result<AnyStorage> {
        AnyStorage::connect(self.url()).await
    }
}

/// The README's Rust code runs as doc tests of this crate
/// (`cargo test -p examples --doc`), so its first program compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
