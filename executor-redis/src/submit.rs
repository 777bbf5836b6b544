//! Submitting: one `submit.lua` call per partition and chunk of tasks.
//!
//! Group commit: concurrent `submit` and `finish` calls of one process share
//! script calls ([`executor_core::storage::GroupCommit`]). A call that finds
//! its namespace idle is sent at once from the caller's task (a lone plain
//! or idempotent task by `submit_one.lua`, whatever its id); under load a
//! batch holds every call that arrived during one round trip, so a no-op
//! task costs a fraction of a script call to submit and to finish. Each item keeps its own answer (a
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
    error::{answer_lost, sent, shape},
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

    /// A lone plain or idempotent task by `submit_one.lua`, the path of a
    /// submit awaited inside a request: one script call that writes the
    /// task, its index entry, the count and the wake marker, with as little
    /// as possible around it (every microsecond here is one the request
    /// waits). Its keys are the due key (and the wake marker's, where
    /// scripts set it); its arguments the key base and the twelve task
    /// values it reads joined by newlines, then the payload: one argument
    /// instead of thirteen, since each costs the client about a microsecond
    /// (docs/benchmarks.md). None of the values can hold a newline (ids,
    /// names and queues refuse whitespace, the rest are digits, a letter or
    /// compact JSON); should one ever, the script counts the values and
    /// refuses the call, so nothing is written. The script answers a created
    /// task with a bare integer (the server's clock), anything else as
    /// `submit.lua` does. As for a batch, the outer error is the call's, the
    /// inner the task's answer; a call whose answer was lost is the task's
    /// [`Error::OutcomeUnknown`] (the task's nonce makes its resend answer
    /// `created` if the lost call stored it).
    async fn submit_lone(&self, ns: &Namespace, task: Encoded) -> Result<Result<Submitted>> {
        let layout = &self.inner.layout;
        let base = layout.base(ns, layout.partition_of(&task.id));
        let mut keys = vec![format!("{base}due")];
        if layout.inline_wake {
            keys.push(layout.wake(ns));
        }
        let packed = task.packed(&base);
        let Encoded { id, payload, .. } = task;
        let args = vec![Value::from(packed), Value::Bytes(payload.into())];
        let reply = match self.run(&self.inner.scripts.submit_one, keys, args).await {
            Ok(reply) => reply,
            Err(e) => return Ok(Err(sent(e, &id))),
        };
        self.wake_after_submit(ns).await;
        match reply {
            Value::Integer(_) => Ok(Ok(Submitted::new(id, SubmitOutcome::Created))),
            other => {
                match <[Value; 1]>::try_from(array(array(other)?.into_iter().nth(1).unwrap_or(Value::Null))?)
                {
                    Ok([outcome]) => Ok(parse_outcome(outcome)),
                    Err(_) => Err(shape("submit answered for a different number of tasks")),
                }
            }
        }
    }

    /// Sets the wake marker where the scripts cannot ([`RedisStorage::poke`])
    /// after tasks were submitted. A marker that cannot be set is logged and
    /// does not fail the submit, whose tasks are stored: an error would
    /// invite a submit again under a new id. Waiters still find the tasks
    /// at their next poll.
    async fn wake_after_submit(&self, ns: &Namespace) {
        if let Err(e) = self.poke(ns).await {
            tracing::warn!(error = %e, namespace = %ns, "the wake marker could not be set after a submit");
        }
    }

    /// One task's values as the scripts take them, or why it cannot be
    /// stored. The task is checked here, at the store's entry point, whoever
    /// built it (bad input never panics nor loses tasks): every number that reaches a script is in
    /// range.
    fn encode(&self, task: NewTask) -> Result<Encoded> {
        task.validate()?;
        // The submit's own nonce, kept in the task's `h` field: a resend of
        // the same submit answers `created` whether its lost try stored the
        // task or not.
        let nonce = format!("{:x}", task.nonce());
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
        let (mode, debounce) = match task.mode {
            SubmitMode::Plain => ("p", None),
            SubmitMode::Idempotent => ("i", None),
            SubmitMode::Debounce(Debounce { key, window, max_wait, .. }) => (
                "d",
                Some([
                    key,
                    duration_ms("debounce window", window)?,
                    optional("debounce max_wait", max_wait)?.unwrap_or_default(),
                ]),
            ),
            other => {
                return Err(Error::unsupported(
                    "submit",
                    format!("submit mode {other:?} is newer than this store"),
                ));
            }
        };
        // The default queue and priority 0 are sent (and stored) as nothing:
        // such a task is written as before queues existed.
        let queue = if task.queue.is_default() { String::new() } else { task.queue.into() };
        Ok(Encoded {
            id: task.id,
            name: task.name,
            payload: task.payload,
            due_kind,
            due_value,
            max_attempts: task.max_attempts,
            max_duration,
            timeout,
            retry,
            mode,
            debounce,
            // Every mode carries a nonce: a resent call answers as the first did.
            nonce,
            queue,
            priority: task.priority,
        })
    }

    pub(crate) async fn submit_many(
        &self,
        ns: &Namespace,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<Result<Submitted>>> {
        // A lone plain or idempotent task (the common submit inside a
        // request) takes the lean script and the short path.
        if let [task] = tasks.as_slice()
            && matches!(task.mode, SubmitMode::Plain | SubmitMode::Idempotent)
        {
            let task = tasks.into_iter().next().ok_or_else(|| shape("no task"))?;
            return Ok(vec![match self.encode(task) {
                Ok(task) => self.submit_lone(ns, task).await?,
                Err(e) => Err(e),
            }]);
        }
        let mut results: Vec<Option<Result<Submitted>>> = Vec::with_capacity(tasks.len());
        // Each task's place in `tasks`, its id (a created task is answered
        // with `1` alone) and its script arguments, by partition.
        let mut groups: Vec<Vec<(usize, TaskId, Vec<Value>)>> =
            vec![Vec::new(); usize::from(self.partitions())];
        for (i, task) in tasks.into_iter().enumerate() {
            let task = match self.in_key_partition(task) {
                Ok(task) => task,
                Err(e) => {
                    results.push(Some(Err(e)));
                    continue;
                }
            };
            let p = usize::from(self.inner.layout.partition_of(&task.id));
            match self.encode(task) {
                Ok(task) => {
                    groups[p].push((i, task.id.clone(), task.into_args()));
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
                let chunk: Vec<(usize, TaskId, Vec<Value>)> = group.by_ref().take(CHUNK).collect();
                let mut args = Vec::with_capacity(1 + chunk.len() * 16);
                args.push(Value::from(chunk.len().to_string()));
                let mut indexes = Vec::with_capacity(chunk.len());
                for (i, id, a) in chunk {
                    indexes.push((i, id));
                    args.extend(a);
                }
                match self.run_in(&self.inner.scripts.submit, &keys, args).await {
                    Ok(reply) => {
                        reached = true;
                        let outcomes = array(array(reply)?.into_iter().nth(1).unwrap_or(Value::Null))?;
                        if outcomes.len() != indexes.len() {
                            return Err(shape("submit answered for a different number of tasks"));
                        }
                        for ((i, id), outcome) in indexes.into_iter().zip(outcomes) {
                            results[i] = Some(match outcome {
                                Value::Integer(1) => Ok(Submitted::new(id, SubmitOutcome::Created)),
                                other => parse_outcome(other),
                            });
                        }
                    }
                    // The call may have run and its answer was lost: each
                    // task's outcome is unknown, under its own id (each
                    // carries its nonce, so a resend answers `created`).
                    Err(e) if answer_lost(&e) => {
                        reached = true;
                        let shown = match &e {
                            Error::Storage { source, .. } => source.to_string(),
                            other => other.to_string(),
                        };
                        for (i, id) in indexes {
                            results[i] = Some(Err(Error::outcome_unknown(id, shown.clone())));
                        }
                    }
                    Err(e) if !reached => return Err(e),
                    Err(e) => {
                        for (i, _) in indexes {
                            results[i] = Some(Err(Error::storage(e.to_string(), e.is_retryable())));
                        }
                    }
                }
            }
        }
        if reached {
            self.wake_after_submit(ns).await;
        }
        Ok(results.into_iter().map(|r| r.unwrap_or_else(|| Err(shape("a task got no answer")))).collect())
    }
}

/// One task's values as the scripts take them ([`RedisStorage::encode`]).
struct Encoded {
    id: TaskId,
    name: String,
    payload: Vec<u8>,
    due_kind: &'static str,
    due_value: String,
    max_attempts: u32,
    max_duration: String,
    timeout: String,
    retry: String,
    mode: &'static str,
    /// A debounced task's key, window and max_wait.
    debounce: Option<[String; 3]>,
    nonce: String,
    queue: String,
    priority: u8,
}

impl Encoded {
    /// The 16 values `submit.lua` takes for each task.
    fn into_args(self) -> Vec<Value> {
        let [key, window, max_wait] = self.debounce.unwrap_or_default();
        let priority = if self.priority == 0 { String::new() } else { self.priority.to_string() };
        vec![
            Value::from(self.id.into_string()),
            Value::from(self.name),
            Value::Bytes(self.payload.into()),
            Value::from(self.due_kind),
            Value::from(self.due_value),
            Value::from(self.max_attempts.to_string()),
            Value::from(self.max_duration),
            Value::from(self.timeout),
            Value::from(self.retry),
            Value::from(self.mode),
            Value::from(key),
            Value::from(window),
            Value::from(max_wait),
            Value::from(self.nonce),
            Value::from(self.queue),
            Value::from(priority),
        ]
    }

    /// `submit_one.lua`'s first argument: the key base, then the values
    /// `into_args` gives less the payload and the debounce ones, joined by
    /// newlines.
    fn packed(&self, base: &str) -> String {
        use std::fmt::Write;
        let mut s = String::with_capacity(base.len() + self.id.as_str().len() + self.name.len() + 96);
        let _ = write!(
            s,
            "{base}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n",
            self.id.as_str(),
            self.name,
            self.due_kind,
            self.due_value,
            self.max_attempts,
            self.max_duration,
            self.timeout,
            self.retry,
            self.mode,
            self.nonce,
            self.queue,
        );
        if self.priority != 0 {
            let _ = write!(s, "{}", self.priority);
        }
        s
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
