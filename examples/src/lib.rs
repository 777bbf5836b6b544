//! Shared helpers of the example programs: the `--storage` flag and its URLs.

use clap::ValueEnum;

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

/// Connects the chosen storage and evaluates `body` with it bound to `$s`
/// (each storage is a different type, so this is a macro, not a function).
/// Use inside an `async fn` returning `Result<_, Box<dyn Error>>`.
#[macro_export]
macro_rules! with_storage {
    ($args:expr, |$s:ident| $body:expr) => {{
        let args: &$crate::StoreArgs = &$args;
        match args.storage {
            $crate::StorageKind::Memory => {
                let $s = ::executor_core::MemoryStorage::new();
                $body
            }
            $crate::StorageKind::Redis => {
                let $s = ::executor_redis::RedisStorage::connect(&args.redis_url).await?;
                $body
            }
            $crate::StorageKind::Mysql => {
                let $s = ::executor_mysql::MySqlStorage::connect(&args.mysql_url).await?;
                $body
            }
        }
    }};
}

/// The README's Rust code runs as doc tests of this crate
/// (`cargo test -p examples --doc`), so its first program compiles and runs.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
