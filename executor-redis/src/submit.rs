//! Submitting: one `submit.lua` call per partition and chunk of tasks.
//!
//! Group commit: concurrent `submit` and `finish` calls of one process share
//! script calls ([`executor_core::storage::GroupCommit`]). A call that finds
//! its namespace idle is sent at once from the caller's task (a lone plain
//! task by `submit_one.lua`); under load a batch holds every call that
//! arrived during one round trip, so a no-op task costs a fraction of a
//! script call to submit and to finish. Each item keeps its own answer (a
//! duplicate id, a stale fence), exactly as if it had been sent alone.

use std::{sync::Arc, time::Duration};

use executor_core::{
    Error, Namespace, Result, SubmitOutcome, Submitted, TaskId,
    storage::{Debounce, Due, NewTask, SubmitMode},
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::{duration_ms, instant_ms},
    error::shape,
    keys::PartitionKeys,
    record::{array, text},
    storage::upgrade,
};

/// Tasks per script call: long enough to amortise the round trip, short
/// enough that one call does not hold the server for long.
const CHUNK: usize = 500;

impl RedisStorage {
    pub(crate) async fn submit(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        let weak = Arc::downgrade(&self.inner);
        let start = move || {
            move |ns: Namespace, items: Vec<NewTask>| {
                let storage = upgrade(&weak);
                async move { storage?.submit_many(&ns, items).await }
            }
        };
        match self.inner.submits.call(ns, task, start) {
            Ok(answer) => answer.await,
            // No runtime to batch on: sent alone, boxed as for finishes.
            Err(task) => Box::pin(self.submit_many(ns, vec![task]))
                .await?
                .pop()
                .unwrap_or_else(|| Err(shape("no answer"))),
        }
    }

    /// A debounced task, on a store of several partitions, with an id in its
    /// key's partition: the key's binding and the task must share a
    /// partition (one hash slot on a cluster) for the script to coalesce
    /// repeats atomically, whatever ids the repeats carry. An id that
    /// already lands there is kept. A generated id ([`TaskId::is_generated`])
    /// that does not is replaced by a fresh one that does (the answer
    /// carries it, as it carries the existing task's id when a repeat is
    /// debounced); a chosen one is refused, never changed. One store-wide
    /// partition keeps every id.
    fn in_key_partition(&self, mut task: NewTask) -> Result<NewTask> {
        let layout = &self.inner.layout;
        let SubmitMode::Debounce(debounce) = &task.mode else { return Ok(task) };
        if layout.partitions <= 1 {
            return Ok(task);
        }
        // Bad input is refused for what it is, before the placement.
        task.validate()?;
        let home = layout.partition_of_str(&debounce.key);
        if layout.partition_of(&task.id) != home && !task.id.is_generated() {
            return Err(Error::invalid(
                "task id",
                format!(
                    "`{}` is debounced under `{}`, whose tasks live in partition {home} of {}, and the id \
                     belongs to another: leave the id out (the builder generates one and the store places \
                     it), or choose ids in the key's partition",
                    task.id, debounce.key, layout.partitions
                ),
            ));
        }
        // One try in `partitions` lands there; a thousand times that many
        // failing is as likely as a broken random generator.
        for _ in 0..usize::from(layout.partitions).saturating_mul(1_000) {
            if layout.partition_of(&task.id) == home {
                return Ok(task);
            }
            task.id = TaskId::generate();
        }
        Err(Error::Runtime(format!("no task id found in partition {home} of the debounce key")))
    }

    /// `submit_one.lua` with the three keys, the payload, and the twelve
    /// other task values it reads joined by newlines into one argument, out
    /// of `args` as `submit.lua` takes them (count, then the 16 values). One
    /// argument instead of twelve: each costs the client about a microsecond
    /// of a lone submit's round trip (docs/benchmarks.md). None of them can
    /// hold a newline (ids, names and queues refuse whitespace, the rest are
    /// digits, a letter or compact JSON); should one ever, the script counts
    /// the values and refuses the call, so nothing is written.
    async fn submit_one(&self, keys: &PartitionKeys, args: Vec<Value>) -> Result<Value> {
        let mut payload = Value::Null;
        let mut packed = String::with_capacity(128);
        // id, name, payload, due kind, due value, max_attempts, max_duration,
        // timeout, retry, mode, the 3 debounce values, nonce, queue, priority.
        for (i, value) in args.into_iter().skip(1).enumerate() {
            match i {
                2 => payload = value,
                10..=12 => {}
                _ => {
                    if i > 0 {
                        packed.push('\n');
                    }
                    packed.push_str(&value.as_str().unwrap_or_default());
                }
            }
        }
        let lean = vec![Value::from(keys.base.as_str()), self.inline_wake(), payload, Value::from(packed)];
        let [due, .., wake, counts, _] = &keys.script_keys;
        self.run(&self.inner.scripts.submit_one, vec![due.clone(), wake.clone(), counts.clone()], lean).await
    }

    /// The 16 script arguments of one task, or why it cannot be stored. The
    /// task is checked here, at the store's entry point, whoever built it
    /// (invariant 6): every number that reaches the script is in range.
    fn submit_args(&self, task: NewTask) -> Result<Vec<Value>> {
        task.validate()?;
        if task.payload.len() > RedisStorage::MAX_PAYLOAD {
            return Err(Error::PayloadTooLarge {
                size: task.payload.len(),
                limit: RedisStorage::MAX_PAYLOAD,
            });
        }
        let retry = match &task.retry {
            None => String::new(),
            Some(policy) => serde_json::to_string(policy).map_err(|e| {
                Error::invalid(
                    "retry policy",
                    format!("{e}; custom policies can only be a handler's default"),
                )
            })?,
        };
        let (due_kind, due_value) = match task.due {
            Due::Now => ("n", "0".to_owned()),
            Due::After(d) => ("a", duration_ms("delay", d)?),
            Due::At(t) => ("t", instant_ms("run_at", t)?),
            other => {
                return Err(Error::unsupported(
                    "submit",
                    format!("due time {other:?} is newer than this store"),
                ));
            }
        };
        let optional = |what, d: Option<Duration>| d.map(|d| duration_ms(what, d)).transpose();
        let max_duration = optional("max_duration", task.max_duration)?.unwrap_or_default();
        let timeout = optional("timeout", task.timeout)?.unwrap_or_default();
        let (mode, key, window, max_wait) = match task.mode {
            SubmitMode::Plain => ("p", String::new(), String::new(), String::new()),
            SubmitMode::Idempotent => ("i", String::new(), String::new(), String::new()),
            SubmitMode::Debounce(Debounce { key, window, max_wait, .. }) => (
                "d",
                key,
                duration_ms("debounce window", window)?,
                optional("debounce max_wait", max_wait)?.unwrap_or_default(),
            ),
            other => {
                return Err(Error::unsupported(
                    "submit",
                    format!("submit mode {other:?} is newer than this store"),
                ));
            }
        };
        // Every mode carries a nonce: a resent call answers as the first did.
        let nonce = self.nonce();
        // The default queue and priority 0 are sent (and stored) as nothing:
        // such a task is written as before queues existed.
        let queue = if task.queue.is_default() { String::new() } else { task.queue.into() };
        let priority = if task.priority == 0 { String::new() } else { task.priority.to_string() };
        Ok(vec![
            Value::from(task.id.into_string()),
            Value::from(task.name),
            Value::Bytes(task.payload.into()),
            Value::from(due_kind),
            Value::from(due_value),
            Value::from(task.max_attempts.to_string()),
            Value::from(max_duration),
            Value::from(timeout),
            Value::from(retry),
            Value::from(mode),
            Value::from(key),
            Value::from(window),
            Value::from(max_wait),
            Value::from(nonce),
            Value::from(queue),
            Value::from(priority),
        ])
    }

    pub(crate) async fn submit_many(
        &self,
        ns: &Namespace,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<Result<Submitted>>> {
        let mut results: Vec<Option<Result<Submitted>>> = Vec::with_capacity(tasks.len());
        let mut groups: Vec<Vec<(usize, Vec<Value>)>> = vec![Vec::new(); usize::from(self.partitions())];
        for (i, task) in tasks.into_iter().enumerate() {
            let task = match self.in_key_partition(task) {
                Ok(task) => task,
                Err(e) => {
                    results.push(Some(Err(e)));
                    continue;
                }
            };
            let p = usize::from(self.inner.layout.partition_of(&task.id));
            match self.submit_args(task) {
                Ok(args) => {
                    groups[p].push((i, args));
                    results.push(None);
                }
                Err(e) => results.push(Some(Err(e))),
            }
        }
        let mut reached = false;
        for (p, group) in groups.into_iter().enumerate() {
            let keys = self.keys(ns, u16::try_from(p).unwrap_or(0));
            let mut group = group.into_iter().peekable();
            while group.peek().is_some() {
                let chunk: Vec<(usize, Vec<Value>)> = group.by_ref().take(CHUNK).collect();
                let mut args = Vec::with_capacity(1 + chunk.len() * 16);
                args.push(Value::from(chunk.len().to_string()));
                let mut indexes = Vec::with_capacity(chunk.len());
                for (i, a) in chunk {
                    indexes.push(i);
                    args.extend(a);
                }
                // A lone plain or idempotent task (the common submit inside
                // a request) takes the lean script, which skips the shared
                // prelude's definitions.
                let lone =
                    indexes.len() == 1 && matches!(args.get(10).and_then(text).as_deref(), Some("p" | "i"));
                let reply = if lone {
                    self.submit_one(&keys, args).await
                } else {
                    self.run_in(&self.inner.scripts.submit, &keys, args).await
                };
                match reply {
                    Ok(reply) => {
                        reached = true;
                        let outcomes = array(array(reply)?.into_iter().nth(1).unwrap_or(Value::Null))?;
                        if outcomes.len() != indexes.len() {
                            return Err(shape("submit answered for a different number of tasks"));
                        }
                        for (i, outcome) in indexes.into_iter().zip(outcomes) {
                            results[i] = Some(parse_outcome(outcome));
                        }
                    }
                    Err(e) if !reached => return Err(e),
                    Err(e) => {
                        for i in indexes {
                            results[i] = Some(Err(Error::storage(e.to_string(), e.is_retryable())));
                        }
                    }
                }
            }
        }
        if reached {
            self.poke(ns).await?;
        }
        Ok(results.into_iter().map(|r| r.unwrap_or_else(|| Err(shape("a task got no answer")))).collect())
    }
}

fn parse_outcome(v: Value) -> Result<Submitted> {
    let items = array(v)?;
    let word = items.first().and_then(text).unwrap_or_default();
    let id = items.get(1).and_then(text).ok_or_else(|| shape("submit outcome without id"))?;
    let id = TaskId::new(id)?;
    let reason = || items.get(2).and_then(text).unwrap_or_default();
    let outcome = match word.as_str() {
        "created" => SubmitOutcome::Created,
        "existing" => SubmitOutcome::Existing,
        "debounced" => SubmitOutcome::Debounced,
        "duplicate" => return Err(Error::DuplicateId(id)),
        "corrupt" => return Err(Error::Corrupt { id, reason: reason() }),
        "invalid" => return Err(Error::invalid("task", reason())),
        other => return Err(shape(&format!("submit outcome `{other}`"))),
    };
    Ok(Submitted::new(id, outcome))
}
