//! [`RedisStorage`]: the handle, its shared state and the calls every
//! operation uses.

use std::{
    collections::HashMap,
    fmt,
    hash::{BuildHasher, Hasher},
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
};

use executor_core::{Namespace, Result};
use fred::{
    clients::{Client, Pool},
    interfaces::ClientLike,
    interfaces::SortedSetsInterface,
    types::{Builder, Value, config::Options},
};

use crate::{
    RedisStorageBuilder,
    error::storage,
    keys::{Layout, PartitionKeys},
    scripts::{Lua, Scripts},
};

/// Tasks in Redis: a hash per task, ZSETs for due times, leases, dead letter
/// and finished tasks, every state change one Lua script (see the crate docs
/// and `docs/redis.md`). Cheap to clone: clones share the connection pool.
///
/// ```no_run
/// # async fn demo() -> executor_core::Result<()> {
/// use executor_core::{Namespace, storage::Storage};
/// use reliable_executor_redis::RedisStorage;
///
/// let storage = RedisStorage::connect("redis://127.0.0.1:6379").await?;
/// let counts = storage.counts(&Namespace::new("my-app")?).await?;
/// println!("{} tasks", counts.total());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisStorage {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) builder: Builder,
    pub(crate) layout: Layout,
    pub(crate) scripts: Scripts,
    /// Commands fail at once while the connection is down instead of
    /// queueing until it returns, so a submit says Redis is unreachable.
    pub(crate) options: Options,
    rotation: AtomicUsize,
    nonce_seed: u64,
    nonce_counter: AtomicU64,
    /// Where `finish` and `submit` calls queue for the next batch (`submit.rs`,
    /// `finish.rs`).
    pub(crate) finishes: executor_core::storage::GroupCommit<
        (executor_core::storage::Lease, executor_core::storage::Finish),
        executor_core::TaskState,
    >,
    pub(crate) submits:
        executor_core::storage::GroupCommit<executor_core::storage::NewTask, executor_core::Submitted>,
    /// One wake-up watcher per namespace waited on (see `wake.rs`).
    pub(crate) watchers: Mutex<HashMap<Namespace, crate::wake::Watch>>,
}

impl Inner {
    pub(crate) fn new(pool: Pool, builder: Builder, layout: Layout) -> Self {
        Self {
            pool,
            builder,
            layout,
            scripts: Scripts::new(),
            options: Options { fail_fast: true, ..Default::default() },
            rotation: AtomicUsize::new(0),
            nonce_seed: std::collections::hash_map::RandomState::new().build_hasher().finish(),
            nonce_counter: AtomicU64::new(0),
            finishes: executor_core::storage::GroupCommit::new(),
            submits: executor_core::storage::GroupCommit::new(),
            watchers: Mutex::new(HashMap::new()),
        }
    }
}

impl fmt::Debug for RedisStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStorage")
            .field("prefix", &self.inner.layout.prefix)
            .field("partitions", &self.inner.layout.partitions)
            .field("pool_size", &self.inner.pool.size())
            .finish_non_exhaustive()
    }
}

impl RedisStorage {
    /// The largest payload Redis holds, in bytes: 512 MiB, the longest
    /// string it stores. The limit users set is
    /// `ExecutorBuilder::max_payload` (default 1 MiB); this one applies when
    /// lower, and refuses larger payloads whoever sends them.
    pub const MAX_PAYLOAD: usize = 512 << 20;

    /// Connects with default settings: a pool of 4 connections, 1 MiB
    /// payload limit, one partition, key prefix `re`. A `redis-cluster://`
    /// URL connects to a Redis Cluster.
    ///
    /// # Errors
    /// [`executor_core::Error::Invalid`] for a bad URL; a retryable
    /// [`executor_core::Error::Storage`] when Redis does not answer.
    pub async fn connect(url: &str) -> Result<RedisStorage> {
        Self::builder(url).connect().await
    }

    /// Settings beyond the defaults of [`RedisStorage::connect`].
    pub fn builder(url: &str) -> RedisStorageBuilder {
        RedisStorageBuilder::new(url)
    }

    /// The fred connection pool, for commands of your own (e.g. `INFO`).
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// Deletes every key of `ns` (all partitions): tasks, indexes, leader.
    /// Walks the keyspace of the node holding each partition with `SCAN`, in
    /// short script calls (1,000 keys looked at per call); meant for tests
    /// and for retiring an application.
    ///
    /// # Errors
    /// Store failures.
    pub async fn purge(&self, ns: &Namespace) -> Result<u64> {
        let mut n = 0;
        for p in 0..self.inner.layout.partitions {
            let keys = vec![self.keys(ns, p).due().to_owned()];
            let pattern = self.inner.layout.pattern(ns, p);
            let mut cursor = "0".to_owned();
            loop {
                let args = vec![Value::from(cursor.as_str()), Value::from(pattern.as_str())];
                let reply =
                    crate::record::array(self.run(&self.inner.scripts.purge, keys.clone(), args).await?)?;
                cursor = reply.first().and_then(crate::record::text).unwrap_or_else(|| "0".to_owned());
                n += reply.get(1).and_then(Value::as_u64).unwrap_or(0);
                if cursor == "0" {
                    break;
                }
            }
        }
        Ok(n)
    }

    pub(crate) fn keys(&self, ns: &Namespace, partition: u16) -> PartitionKeys {
        self.inner.layout.partition(ns, partition)
    }

    pub(crate) fn partitions(&self) -> u16 {
        self.inner.layout.partitions
    }

    /// The partition to start the next claim at: claims rotate so that no
    /// partition starves.
    pub(crate) fn next_partition(&self) -> u16 {
        let n = usize::from(self.partitions());
        u16::try_from(self.inner.rotation.fetch_add(1, Ordering::Relaxed) % n).unwrap_or(0)
    }

    /// Every partition once, starting at the next in rotation: a reap or
    /// trim limited to fewer tasks than are due starts elsewhere next time,
    /// so no partition starves.
    pub(crate) fn rotated_partitions(&self) -> impl Iterator<Item = u16> + use<> {
        let (n, start) = (self.partitions(), self.next_partition());
        (0..n).map(move |i| ((u32::from(start) + u32::from(i)) % u32::from(n)) as u16)
    }

    /// A value unique to one call, so a resent script recognises itself.
    pub(crate) fn nonce(&self) -> String {
        let c = self.inner.nonce_counter.fetch_add(1, Ordering::Relaxed);
        format!("{:x}", self.inner.nonce_seed.wrapping_add(c))
    }

    /// Whether scripts set the wake marker themselves.
    pub(crate) fn inline_wake(&self) -> Value {
        Value::from(if self.inner.layout.inline_wake { "1" } else { "0" })
    }

    /// The next connected client of the pool. While none is connected (Redis
    /// is down, fred is reconnecting) calls fail at once with a retryable
    /// error instead of waiting for the command timeout.
    pub(crate) fn client(&self) -> Result<&Client> {
        let client = self.inner.pool.next_connected();
        if client.is_connected() {
            Ok(client)
        } else {
            Err(executor_core::Error::storage(
                "not connected to Redis (it is down or unreachable; reconnecting in the background)",
                true,
            ))
        }
    }

    /// Runs a script on the next pooled connection.
    pub(crate) async fn run(&self, lua: &Lua, keys: Vec<String>, args: Vec<Value>) -> Result<Value> {
        lua.run(self.client()?, &self.inner.options, keys, args).await
    }

    /// Runs a state-change script of partition `p`: the eight keys, then the
    /// key base and the inline-wake flag ahead of `args`.
    pub(crate) async fn run_in(&self, lua: &Lua, keys: &PartitionKeys, args: Vec<Value>) -> Result<Value> {
        let mut all = Vec::with_capacity(args.len() + 2);
        all.push(Value::from(keys.base.as_str()));
        all.push(self.inline_wake());
        all.extend(args);
        self.run(lua, keys.script_keys.to_vec(), all).await
    }

    /// Sets the namespace's wake marker from outside a script: only needed on
    /// a cluster with several partitions, where the marker lives in another
    /// slot than the script's keys.
    pub(crate) async fn poke(&self, ns: &Namespace) -> Result<()> {
        if self.inner.layout.inline_wake {
            return Ok(());
        }
        let client = self.client()?;
        let _: Value = fred::interfaces::ClientLike::with_options(client, &self.inner.options)
            .zadd(self.inner.layout.wake(ns), None, None, false, false, (0.0, "w"))
            .await
            .map_err(storage)?;
        Ok(())
    }
}

/// The storage behind a batcher, while anyone still holds it.
pub(crate) fn upgrade(weak: &Weak<Inner>) -> Result<RedisStorage> {
    weak.upgrade()
        .map(|inner| RedisStorage { inner })
        .ok_or_else(|| executor_core::Error::storage("the storage was dropped", false))
}
