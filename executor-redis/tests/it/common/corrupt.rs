//! Hand-made damage to the keys of a namespace, and a recount of its records
//! to compare with the counts the scripts keep.

use std::{collections::BTreeMap, str::FromStr};

use executor_core::{Namespace, TaskState, storage::Storage};
use fred::{
    clients::Client,
    interfaces::{HashesInterface, KeysInterface, LuaInterface, SortedSetsInterface},
    types::Value,
};
use reliable_executor_redis::RedisStorage;

pub type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// One way a task record gets damaged by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corruption {
    /// The hash replaced by a string (`SET {re:ns}:t:<id> x`).
    WrongType,
    /// `s` = `SLEEPING`.
    UnknownState,
    /// `HDEL s`.
    MissingState,
    /// `HDEL c`: the creation time is gone.
    MissingField,
    /// `d` past what a u64 (and a Lua double) holds.
    OutOfRange,
    /// `a` = `-1`.
    Negative,
    /// `m` = `1e3`: Lua reads it as a number, Rust does not.
    NotWhole,
    /// `r` = `{not json`.
    NotJson,
}

/// Every kind of damage.
pub const ALL: [Corruption; 8] = [
    Corruption::WrongType,
    Corruption::UnknownState,
    Corruption::MissingState,
    Corruption::MissingField,
    Corruption::OutOfRange,
    Corruption::Negative,
    Corruption::NotWhole,
    Corruption::NotJson,
];

/// A storage, a fresh namespace, and direct access to its keys.
pub struct Damage {
    pub storage: RedisStorage,
    pub ns: Namespace,
    pub redis: Client,
    base: String,
}

impl Damage {
    pub async fn new(prefix: &str) -> Self {
        let storage = super::connect().await;
        let ns = executor_core::testing::unique_namespace(prefix);
        let redis = storage.pool().next().clone();
        let base = format!("{{re:{ns}}}:");
        Self { storage, ns, redis, base }
    }

    /// A key of the namespace: `due`, `lease`, `dead`, `done`, `counts`, ...
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.base)
    }

    pub fn task_key(&self, id: &str) -> String {
        self.key(&format!("t:{id}"))
    }

    pub async fn apply(&self, id: &str, c: Corruption) -> TestResult {
        let key = self.task_key(id);
        let r = &self.redis;
        match c {
            Corruption::WrongType => {
                let _: i64 = r.del(&key).await?;
                let _: () = r.set(&key, "x", None, None, false).await?;
            }
            Corruption::UnknownState => r.hset(&key, ("s", "SLEEPING")).await?,
            Corruption::MissingState => r.hdel(&key, "s").await?,
            Corruption::MissingField => r.hdel(&key, "c").await?,
            Corruption::OutOfRange => r.hset(&key, ("d", "99999999999999999999")).await?,
            Corruption::Negative => r.hset(&key, ("a", "-1")).await?,
            Corruption::NotWhole => r.hset(&key, ("m", "1e3")).await?,
            Corruption::NotJson => r.hset(&key, ("r", "{not json")).await?,
        }
        Ok(())
    }

    /// `TYPE` of a key.
    pub async fn key_type(&self, key: &str) -> TestResult<String> {
        let t: String =
            self.redis.eval("return redis.call('TYPE', KEYS[1]).ok", vec![key], Vec::<String>::new()).await?;
        Ok(t)
    }

    /// The `s` field of a task hash (None when missing or not a hash).
    pub async fn state(&self, id: &str) -> TestResult<Option<String>> {
        if self.key_type(&self.task_key(id)).await? != "hash" {
            return Ok(None);
        }
        Ok(self.redis.hget(self.task_key(id), "s").await?)
    }

    /// The `e` field (last error) of a task hash.
    pub async fn last_error(&self, id: &str) -> TestResult<String> {
        let e: Option<String> = self.redis.hget(self.task_key(id), "e").await?;
        Ok(e.unwrap_or_default())
    }

    /// Whether index `index` (`due`, `lease`, `dead`, `done`) holds `id`.
    pub async fn indexed(&self, index: &str, id: &str) -> TestResult<bool> {
        let score: Option<f64> = self.redis.zscore(self.key(index), id).await?;
        Ok(score.is_some())
    }

    /// The indexes holding `id`, e.g. `["dead"]`.
    pub async fn indexes_of(&self, id: &str) -> TestResult<Vec<&'static str>> {
        let mut out = Vec::new();
        for index in ["due", "lease", "dead", "done"] {
            if self.indexed(index, id).await? {
                out.push(index);
            }
        }
        Ok(out)
    }

    /// A bad record after a script set it aside: out of every index but the
    /// dead letter, and an ERROR hash whose last error says why (unless it
    /// is not a hash at all).
    pub async fn assert_set_aside(&self, id: &str, c: Corruption) -> TestResult {
        assert_eq!(self.indexes_of(id).await?, ["dead"], "{c:?}: {id} is indexed as dead letter only");
        if c != Corruption::WrongType {
            assert_eq!(self.state(id).await?.as_deref(), Some("ERROR"), "{c:?}: {id} is ERROR");
            let e = self.last_error(id).await?;
            assert!(e.starts_with("corrupt task record: "), "{c:?}: {id} says why: {e}");
        }
        Ok(())
    }

    /// Recounts the records: every task hash by its state (which must be a
    /// known state, indexed where that state lives), every other key of a
    /// task as ERROR (it must have been set aside to the dead-letter index);
    /// every index entry must have its key. The result must equal the counts
    /// the scripts keep.
    pub async fn assert_counts_exact(&self) -> TestResult {
        let keys: Vec<String> = self
            .redis
            .eval(
                "return redis.call('KEYS', ARGV[1])",
                Vec::<String>::new(),
                vec![format!("{}t:*", self.base)],
            )
            .await?;
        let mut recount = BTreeMap::<TaskState, u64>::new();
        for key in keys {
            let id = key.strip_prefix(&format!("{}t:", self.base)).unwrap_or_default().to_owned();
            let state = if self.key_type(&key).await? == "hash" {
                let s: Option<String> = self.redis.hget(&key, "s").await?;
                let s = s.unwrap_or_default();
                let state =
                    TaskState::from_str(&s).map_err(|_| format!("{id}: state `{s}` was never set aside"))?;
                let index = match state {
                    TaskState::Created | TaskState::Pending => self.waiting_index(&id).await?,
                    TaskState::Running => "lease".to_owned(),
                    TaskState::Completed | TaskState::Cancelled => "done".to_owned(),
                    _ => "dead".to_owned(),
                };
                assert!(self.indexed(&index, &id).await?, "{id} in {state} is not in the {index} index");
                state
            } else {
                assert!(
                    self.indexed("dead", &id).await?,
                    "{id}: a key that is not a hash was never set aside"
                );
                TaskState::Error
            };
            *recount.entry(state).or_default() += 1;
        }
        for index in ["due", "lease", "dead", "done"] {
            let members: Vec<String> =
                self.redis.zrange(self.key(index), 0, -1, None, false, None, false).await?;
            for id in members {
                let n: i64 = self.redis.exists(self.task_key(&id)).await?;
                assert_eq!(n, 1, "{index} index entry {id} has no key");
            }
        }
        let counts = self.storage.counts(&self.ns).await?;
        assert_eq!(
            counts.iter().collect::<BTreeMap<_, _>>(),
            recount,
            "counts kept by the scripts vs the records"
        );
        Ok(())
    }

    /// The waiting index of a task hash: `due` for the default queue at
    /// priority 0, else its level's `qd:<priority>:<queue>`.
    pub async fn waiting_index(&self, id: &str) -> TestResult<String> {
        let gv: Vec<Option<String>> = self.redis.hmget(self.task_key(id), vec!["g", "v"]).await?;
        let queue = gv.first().cloned().flatten().unwrap_or_else(|| "default".to_owned());
        let priority = gv.get(1).cloned().flatten().unwrap_or_else(|| "0".to_owned());
        if queue == "default" && priority == "0" {
            return Ok("due".to_owned());
        }
        Ok(format!("qd:{priority}:{queue}"))
    }

    /// Runs `source` (prefixed with the prelude) with the partition's seven keys.
    pub async fn script(&self, source: &str, args: &[&str]) -> Result<Value, fred::error::Error> {
        let keys: Vec<String> = ["due", "lease", "dead", "done", "debounce", "wake", "counts"]
            .iter()
            .map(|k| self.key(k))
            .collect();
        let mut all = vec![self.base.clone(), "1".to_owned()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        self.redis.eval(format!("{}\n{source}", super::prelude()), keys, all).await
    }

    pub async fn cleanup(&self) {
        super::cleanup(&self.storage, &self.ns).await;
    }
}
