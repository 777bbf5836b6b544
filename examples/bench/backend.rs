//! What the phases need beyond `Storage`: cleanup, and Redis's own figures.

use std::future::Future;

use executor_core::{MemoryStorage, Namespace};
use executor_mysql::MySqlStorage;
use executor_postgres::PostgresStorage;
use executor_redis::RedisStorage;
use fred::interfaces::ClientLike;

/// A store the benchmark can run on.
pub(crate) trait Backend: executor_core::storage::ExecutorStorage + Clone {
    /// Deletes a namespace's tasks.
    fn drop_namespace(&self, ns: &Namespace) -> impl Future<Output = ()> + Send;
    /// Redis `used_memory`, when the store is Redis.
    fn used_memory(&self) -> impl Future<Output = Option<u64>> + Send;
    /// CPU seconds the Redis server has used (`INFO cpu`), when the store is Redis.
    fn server_cpu(&self) -> impl Future<Output = Option<f64>> + Send;
    /// The Redis storage, when the store is Redis.
    fn redis(&self) -> Option<&RedisStorage>;
    /// One raw round trip of the store, the floor a lone submit is compared
    /// with: Redis `EVALSHA` of `return 1`, MySQL `DO 1`, PostgreSQL
    /// `SELECT 1`; `None` for a store
    /// without a server.
    fn raw_call(&self) -> impl Future<Output = Option<()>> + Send;
}

/// Calls and microseconds per command (`INFO commandstats`), when the
/// store is Redis: commands a script calls are counted apart from the
/// script's own `FCALL`/`EVALSHA`, whose time includes theirs.
pub(crate) type CommandStats = std::collections::BTreeMap<String, (u64, u64)>;

pub(crate) async fn command_stats<S: Backend>(storage: &S) -> Option<CommandStats> {
    let info: String =
        storage.redis()?.pool().next().info(Some(fred::types::InfoKind::CommandStats)).await.ok()?;
    let mut out = CommandStats::new();
    for line in info.lines() {
        let Some((name, rest)) = line.trim().strip_prefix("cmdstat_").and_then(|l| l.split_once(':')) else {
            continue;
        };
        let field = |key: &str| -> Option<u64> {
            rest.split(',').find_map(|kv| kv.strip_prefix(key)).and_then(|v| v.parse().ok())
        };
        if let (Some(calls), Some(usec)) = (field("calls="), field("usec=")) {
            out.insert(name.to_owned(), (calls, usec));
        }
    }
    Some(out)
}

/// Where the server's time per task went between two `command_stats`:
/// the scripts' calls (with everything they ran), then the commands they
/// ran, most time first; the bench's own `INFO` calls are left out.
pub(crate) fn per_task_commands(before: &CommandStats, after: &CommandStats, tasks: usize) -> String {
    let per = |name: &str| -> (f64, f64) {
        let (c0, u0) = before.get(name).copied().unwrap_or((0, 0));
        let (c1, u1) = after.get(name).copied().unwrap_or((0, 0));
        (c1.saturating_sub(c0) as f64 / tasks as f64, u1.saturating_sub(u0) as f64 / tasks as f64)
    };
    let scripts = ["fcall", "evalsha", "eval"];
    let show = |name: &str| {
        let (calls, usec) = per(name);
        format!("{name} {calls:.3} x {usec:.2} us")
    };
    let outer: Vec<String> = scripts.iter().filter(|n| per(n).0 > 0.0).map(|n| show(n)).collect();
    let mut inner: Vec<(&String, (f64, f64))> = after
        .keys()
        .filter(|n| !scripts.contains(&n.as_str()) && n.as_str() != "info")
        .map(|n| (n, per(n)))
        .filter(|(_, (calls, _))| *calls > 0.0)
        .collect();
    inner.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    let inner: Vec<String> = inner.iter().take(8).map(|(n, _)| show(n)).collect();
    format!("{}; commands: {}", outer.join(", "), inner.join(", "))
}

/// `return 1`, loaded once per server; its SHA-1.
async fn trivial_script(redis: &RedisStorage) -> Option<String> {
    use fred::interfaces::LuaInterface;
    redis.pool().next().script_load("return 1").await.ok()
}

async fn redis_raw_call(redis: &RedisStorage) -> Option<()> {
    use fred::interfaces::LuaInterface;
    static SHA: tokio::sync::OnceCell<Option<String>> = tokio::sync::OnceCell::const_new();
    let sha = SHA.get_or_init(|| trivial_script(redis)).await.as_ref()?;
    let reply: i64 = redis.pool().next().evalsha(sha.as_str(), (), ()).await.ok()?;
    (reply == 1).then_some(())
}

impl Backend for RedisStorage {
    async fn drop_namespace(&self, ns: &Namespace) {
        if let Err(e) = self.purge(ns).await {
            eprintln!("purge of {ns} failed: {e}");
        }
    }

    async fn used_memory(&self) -> Option<u64> {
        let info: String = self.pool().next().info(Some(fred::types::InfoKind::Memory)).await.ok()?;
        info.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok())
    }

    async fn server_cpu(&self) -> Option<f64> {
        let info: String = self.pool().next().info(Some(fred::types::InfoKind::Cpu)).await.ok()?;
        let field = |name: &str| -> Option<f64> {
            info.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok())
        };
        Some(field("used_cpu_sys:")? + field("used_cpu_user:")?)
    }

    fn redis(&self) -> Option<&RedisStorage> {
        Some(self)
    }

    async fn raw_call(&self) -> Option<()> {
        redis_raw_call(self).await
    }
}

impl Backend for MemoryStorage {
    async fn drop_namespace(&self, ns: &Namespace) {
        self.remove_namespace(ns);
    }

    async fn used_memory(&self) -> Option<u64> {
        None
    }

    async fn server_cpu(&self) -> Option<f64> {
        None
    }

    fn redis(&self) -> Option<&RedisStorage> {
        None
    }

    async fn raw_call(&self) -> Option<()> {
        None
    }
}

/// A SQL store: purge to clean up, no server figures, `raw` as the raw
/// round trip.
macro_rules! sql_backend {
    ($store:ty, $raw:literal) => {
        impl Backend for $store {
            async fn drop_namespace(&self, ns: &Namespace) {
                if let Err(e) = self.purge(ns).await {
                    eprintln!("purge of {ns} failed: {e}");
                }
            }

            async fn used_memory(&self) -> Option<u64> {
                None
            }

            async fn server_cpu(&self) -> Option<f64> {
                None
            }

            fn redis(&self) -> Option<&RedisStorage> {
                None
            }

            async fn raw_call(&self) -> Option<()> {
                sqlx::query($raw).execute(self.pool()).await.ok().map(|_| ())
            }
        }
    };
}

sql_backend!(MySqlStorage, "DO 1");
sql_backend!(PostgresStorage, "SELECT 1");

/// Redis (or any store) behind `AnyStorage`: the same figures as the store
/// it holds, so the erasure's cost shows against a direct `RedisStorage`.
impl Backend for executor_any::AnyStorage {
    async fn drop_namespace(&self, ns: &Namespace) {
        if let Err(e) = self.purge(ns).await {
            eprintln!("purge of {ns} failed: {e}");
        }
    }

    async fn used_memory(&self) -> Option<u64> {
        self.redis()?.used_memory().await
    }

    async fn server_cpu(&self) -> Option<f64> {
        self.redis()?.server_cpu().await
    }

    fn redis(&self) -> Option<&RedisStorage> {
        match self {
            executor_any::AnyStorage::Redis(r) => Some(r),
            _ => None,
        }
    }

    async fn raw_call(&self) -> Option<()> {
        redis_raw_call(self.redis()?).await
    }
}
