//! Shared helpers of the example programs: the `--storage` flag and its
//! URLs, and the font of their charts.

use clap::ValueEnum;
use executor_any::AnyStorage;

/// Charts drawn with `plotters` (the soak's and the benchmark's).
pub mod plot {
    use plotters::style::FontStyle;

    /// Fonts tried for the labels, in order (Debian's DejaVu and Liberation).
    const FONTS: &[&str] = &[
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ];

    /// Registers the first font found as plotters' `sans-serif`.
    ///
    /// # Errors
    /// No font found, or one plotters cannot read.
    pub fn register_font() -> Result<(), Box<dyn std::error::Error>> {
        for path in FONTS {
            if let Ok(bytes) = std::fs::read(path) {
                // plotters keeps the font for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                    .map_err(|_| format!("{path} is not a font plotters can read").into());
            }
        }
        Err(format!("no font for the chart labels; install fonts-dejavu-core (looked for {FONTS:?})").into())
    }
}

/// Where an example's tasks live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StorageKind {
    /// `MemoryStorage`: no server, nothing kept.
    Memory,
    /// `RedisStorage` at `--redis-url` / `REDIS_URL`.
    Redis,
    /// `MySqlStorage` at `--mysql-url` / `MYSQL_URL`.
    Mysql,
    /// `PostgresStorage` at `--postgres-url` / `POSTGRES_URL`.
    Postgres,
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
    /// PostgreSQL URL for `--storage postgres`.
    #[arg(long, env = "POSTGRES_URL", default_value = "postgres://postgres@127.0.0.1:5432/test")]
    pub postgres_url: String,
}

impl StoreArgs {
    /// The URL of the chosen store (`memory:`, or the Redis, MySQL or
    /// PostgreSQL URL).
    pub fn url(&self) -> &str {
        match self.storage {
            StorageKind::Memory => "memory:",
            StorageKind::Redis => &self.redis_url,
            StorageKind::Mysql => &self.mysql_url,
            StorageKind::Postgres => &self.postgres_url,
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

/// The Rust code of the README and of `docs/*.md` runs as doc tests of this
/// crate (`cargo test -p examples --doc`), which depends on every crate the
/// pages use, so what they show compiles (and, unless marked `no_run`,
/// runs). `docs/handlers.md` is the macro crate's own (`cargo test -p
/// executor-macros --doc`).
#[cfg(doctest)]
mod docs {
    #[doc = include_str!("../../README.md")]
    mod readme {}
    #[doc = include_str!("../../docs/architecture.md")]
    mod architecture {}
    #[doc = include_str!("../../docs/cron.md")]
    mod cron {}
    #[doc = include_str!("../../docs/benchmarks.md")]
    mod benchmarks {}
    #[doc = include_str!("../../docs/mysql.md")]
    mod mysql {}
    #[doc = include_str!("../../docs/postgres.md")]
    mod postgres {}
    #[doc = include_str!("../../docs/operations.md")]
    mod operations {}
    #[doc = include_str!("../../docs/redis.md")]
    mod redis {}
    #[doc = include_str!("../../docs/reliability.md")]
    mod reliability {}
    #[doc = include_str!("../../docs/reliability-log.md")]
    mod reliability_log {}
    #[doc = include_str!("../../docs/service.md")]
    mod service {}
    #[doc = include_str!("../../docs/tiered.md")]
    mod tiered {}
    #[doc = include_str!("../../docs/upgrading.md")]
    mod upgrading {}
}
