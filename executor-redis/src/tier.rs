//! The tier methods of [`executor_core::storage::Storage`] (`now`, `due_before`,
//! `import`, `remove`), so Redis can serve as the hot tier of
//! `TieredStorage`: `tier_now.lua`, `due_before.lua`, `import.lua`,
//! `remove.lua`.

use executor_core::{
    Error, Namespace, Result, TaskId, TaskRecord, TaskState, Timestamp, storage::TierStorage,
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::{duration_ms, instant_ms},
    error::shape,
    record::{self, array, text},
};

/// Index entries one `due_before` call looks at per partition beyond the
/// limit: stale entries are skipped, never removed (the call changes nothing).
const STALE_SLACK: usize = 64;

/// Largest fence or count Lua's doubles hold exactly (2^53 - 1).
const SAFE: u64 = executor_core::storage::MAX_FENCE;

fn time(t: Timestamp) -> String {
    t.as_millis().to_string()
}

impl RedisStorage {
    /// Redis `TIME` on the node of the namespace's first partition, in ms.
    pub(crate) async fn now(&self, ns: &Namespace) -> Result<Timestamp> {
        let keys = self.keys(ns, 0);
        let v = self.run(&self.inner.scripts.tier_now, vec![keys.due().to_owned()], Vec::new()).await?;
        v.as_u64().map(Timestamp::from_millis).ok_or_else(|| shape("TIME did not answer a number"))
    }
}

/// Refuses a record whose numbers a script could not hold exactly: every
/// instant up to [`Timestamp::MAX`], durations up to
/// [`executor_core::time::MAX_DURATION`], fence below 2^53.
fn check_record(r: &TaskRecord) -> Result<()> {
    let instants = [
        ("created_at", Some(r.created_at)),
        ("due_at", Some(r.due_at)),
        ("started_at", r.started_at),
        ("finished_at", r.finished_at),
        ("deadline", r.deadline),
        ("lease_until", r.lease_until),
    ];
    for (what, t) in instants {
        if let Some(t) = t {
            instant_ms(what, t)?;
        }
    }
    if let Some(d) = r.timeout {
        duration_ms("timeout", d)?;
    }
    if r.fence >= SAFE {
        return Err(Error::invalid("fence", format!("{} is past {SAFE}", r.fence)));
    }
    if let Some(policy) = &r.retry {
        policy.validate()?;
    }
    executor_core::queue::check_priority(r.priority)?;
    Ok(())
}

/// The hash fields of a record beyond its state, as `import.lua` writes
/// them (names of `lua/common/01_values.lua`). Fields a record does not have are left
/// out, as `submit.lua` leaves them out.
fn fields(r: TaskRecord) -> Result<Vec<Value>> {
    let mut f: Vec<(&str, Value)> = vec![
        ("n", Value::from(r.name)),
        ("p", Value::Bytes(r.payload.into())),
        ("m", Value::from(r.max_attempts.to_string())),
        ("c", Value::from(time(r.created_at))),
        ("d", Value::from(time(r.due_at))),
    ];
    if r.attempts > 0 {
        f.push(("a", Value::from(r.attempts.to_string())));
    }
    if r.fence > 0 {
        f.push(("f", Value::from(r.fence.to_string())));
    }
    let optional = [
        ("b", r.started_at.map(time)),
        ("z", r.finished_at.map(time)),
        ("x", r.deadline.map(time)),
        ("o", r.timeout.map(|d| d.as_millis().to_string())),
        ("e", r.last_error),
        ("w", r.worker.map(|w| w.as_str().to_owned())),
        ("l", r.lease_until.map(time)),
        ("q", r.cancel_requested.then(|| "1".to_owned())),
        ("k", r.debounce_key),
        // Left out for the default queue and priority 0, as submit.lua does.
        ("g", (!r.queue.is_default()).then(|| r.queue.to_string())),
        ("v", (r.priority > 0).then(|| r.priority.to_string())),
    ];
    f.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| (k, Value::from(v)))));
    if !r.attempt_log.is_empty() {
        let json = serde_json::to_string(&r.attempt_log)
            .map_err(|e| Error::invalid("attempt log", format!("{e}: it cannot be moved")))?;
        f.push((record::LOG_FIELD, Value::from(json)));
    }
    if let Some(policy) = &r.retry {
        let json = serde_json::to_string(policy)
            .map_err(|e| Error::invalid("retry policy", format!("{e}; a custom policy cannot be moved")))?;
        f.push(("r", Value::from(json)));
    }
    Ok(f.into_iter().flat_map(|(k, v)| [Value::from(k), v]).collect())
}

impl TierStorage for RedisStorage {
    /// Waiting tasks due before `before`, earliest first, at most `limit`,
    /// merged over the partitions. Read only.
    async fn due_before(&self, ns: &Namespace, before: Timestamp, limit: usize) -> Result<Vec<TaskRecord>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let limit = limit.min(crate::claim::MAX_CLAIM);
        let mut out = Vec::new();
        for p in 0..self.partitions() {
            let args = vec![
                Value::from(time(before.min(Timestamp::MAX))),
                Value::from(limit.to_string()),
                Value::from((limit + STALE_SLACK).to_string()),
            ];
            let reply = self.run_in(&self.inner.scripts.due_before, &self.keys(ns, p), args).await?;
            for entry in array(reply)? {
                // Each entry is `{id, fields..., attempt log}`.
                let mut items = array(entry)?;
                let log = items.pop();
                let (id, values) = record::parse_entry(Value::Array(items))?;
                // One record that does not parse must not stop the tiers from
                // moving the others (no neighbour harm); a claim sets it aside.
                match record::parse(&id, &values) {
                    Ok(mut task) => {
                        task.attempt_log = record::attempt_log(&task.id, log.as_ref());
                        out.push(task);
                    }
                    Err(e) => tracing::warn!(task = %id, error = %e, "due_before skipped an unreadable task"),
                }
            }
        }
        out.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
        out.truncate(limit);
        Ok(out)
    }

    /// Stores `record` as given unless its id exists; indexes it by state and
    /// wakes sleepers when it is due.
    async fn import(&self, ns: &Namespace, record: TaskRecord) -> Result<bool> {
        if record.payload.len() > RedisStorage::MAX_PAYLOAD {
            return Err(Error::PayloadTooLarge {
                size: record.payload.len(),
                limit: RedisStorage::MAX_PAYLOAD,
            });
        }
        check_record(&record)?;
        let score = match record.state {
            TaskState::Created | TaskState::Pending => record.due_at,
            TaskState::Running => record.lease_until.unwrap_or(record.due_at),
            _ => record.finished_at.unwrap_or(record.created_at),
        };
        let due = record.state.is_waiting().then_some(record.due_at);
        let keys = self.keys(ns, self.inner.layout.partition_of(&record.id));
        let mut args = vec![
            Value::from(record.id.as_str()),
            Value::from(record.state.to_string()),
            Value::from(time(score)),
        ];
        let id = record.id.clone();
        args.extend(fields(record)?);
        let reply = array(self.run_in(&self.inner.scripts.import, &keys, args).await?)?;
        if reply.first().and_then(text).as_deref() == Some("2") {
            let reason = reply.get(2).and_then(text).unwrap_or_default();
            return Err(Error::Corrupt { id, reason });
        }
        let stored = reply.first().and_then(text).as_deref() == Some("1");
        let now = reply.get(1).and_then(text).and_then(|t| t.parse::<u64>().ok()).map(Timestamp::from_millis);
        if stored
            && let (Some(due), Some(now)) = (due, now)
            && due <= now
        {
            self.poke(ns).await?;
        }
        Ok(stored)
    }

    /// Deletes a waiting task with fence `fence` and its index entries.
    async fn remove(&self, ns: &Namespace, id: &TaskId, fence: u64) -> Result<bool> {
        let keys = self.keys(ns, self.inner.layout.partition_of(id));
        let args = vec![Value::from(id.as_str()), Value::from(fence.to_string())];
        let reply = self.run_in(&self.inner.scripts.remove, &keys, args).await?;
        Ok(reply.as_u64() == Some(1))
    }
}
