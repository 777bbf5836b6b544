//! Claiming, renewing and finishing attempts: `claim.lua`, `heartbeat.lua`,
//! `finish.lua`.

use std::time::Duration;

use executor_core::{
    Error, Finish, Heartbeat, Lease, Namespace, Result, TaskId, TaskRecord, TaskState, WorkerId,
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::duration_ms,
    error::shape,
    keys::PartitionKeys,
    record::{self, array, text},
};

/// Most tasks one claim call takes: bounds the script's running time
/// whatever the backlog.
pub(crate) const MAX_CLAIM: usize = 1000;

/// Items per finish call.
const FINISH_CHUNK: usize = 500;

/// The script's outcome code, retry delay and error text of a finish, after
/// checking it at the store's entry point: one bad item is refused alone
/// (invariant 7).
fn finish_code(finish: &Finish) -> Result<(&'static str, String, String)> {
    finish.validate()?;
    Ok(match finish {
        Finish::Completed => ("C", String::new(), String::new()),
        Finish::Retry { delay, error } => ("R", duration_ms("retry delay", *delay)?, error.clone()),
        Finish::Failed { error } => ("F", String::new(), error.clone()),
        Finish::TimedOut { error } => ("T", String::new(), error.clone()),
        Finish::Errored { error } => ("E", String::new(), error.clone()),
        Finish::Cancelled => ("X", String::new(), String::new()),
        Finish::Released => ("L", String::new(), String::new()),
    })
}

/// Logs the records a script set aside as corrupt (`set_aside` in
/// `lua/common.lua`): `{{id, reason}...}`.
pub(crate) fn log_aside(script: &str, v: Option<Value>) {
    let Ok(entries) = array(v.unwrap_or(Value::Null)) else { return };
    for entry in entries {
        let items = array(entry).unwrap_or_default();
        let id = items.first().and_then(text).unwrap_or_default();
        let reason = items.get(1).and_then(text).unwrap_or_default();
        tracing::warn!(task = %id, %reason, script, "corrupt task record set aside (ERROR, dead letter)");
    }
}

impl RedisStorage {
    pub(crate) async fn claim_tasks(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let limit = limit.min(MAX_CLAIM);
        let lease = duration_ms("lease", lease)?;
        let mut out = Vec::new();
        let start = self.next_partition();
        let n = self.partitions();
        for k in 0..n {
            let want = limit - out.len();
            if want == 0 {
                break;
            }
            let keys = self.keys(ns, (start + k) % n);
            match self.claim_in(ns, &keys, worker, want, &lease).await {
                Ok(mut tasks) => out.append(&mut tasks),
                // Tasks already claimed from another partition must reach the
                // runtime; this partition is tried again next time.
                Err(e) if !out.is_empty() => {
                    tracing::warn!(error = %e, "claim failed in one partition");
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    async fn claim_in(
        &self,
        ns: &Namespace,
        keys: &PartitionKeys,
        worker: &WorkerId,
        want: usize,
        lease: &str,
    ) -> Result<Vec<TaskRecord>> {
        let args = vec![
            Value::from(worker.as_str()),
            Value::from(want.to_string()),
            Value::from(lease),
            Value::from(self.nonce()),
        ];
        let reply = array(self.run_in(&self.inner.scripts.claim, keys, args).await?)?;
        let mut reply = reply.into_iter().skip(1);
        let more = reply.next().and_then(|v| text(&v)).as_deref() == Some("1");
        let entries = array(reply.next().unwrap_or(Value::Null))?;
        log_aside("claim", reply.next());
        let mut out = Vec::with_capacity(entries.len());
        let mut unreadable = Vec::new();
        for entry in entries {
            let (id, values) = record::parse_entry(entry)?;
            match record::parse(&id, &values) {
                Ok(task) => out.push(task),
                Err(e) => {
                    // Claimed but unreadable by Rust (what Lua cannot check:
                    // the retry policy's shape, the worker id, UTF-8): dead-letter
                    // it with the reason rather than hand the runtime something
                    // it cannot run.
                    let fence = values.get(5).and_then(text).unwrap_or_default();
                    let reason = match e {
                        Error::Corrupt { reason, .. } => reason,
                        other => other.to_string(),
                    };
                    tracing::warn!(task = %id, %reason, "corrupt task record set aside (ERROR, dead letter)");
                    unreadable.extend([
                        Value::from(id),
                        Value::from(fence),
                        Value::from("E"),
                        Value::from(""),
                        Value::from(format!("corrupt task record: {reason}")),
                        Value::from(self.nonce()),
                    ]);
                }
            }
        }
        // The good tasks are claimed whatever happens here: a failed write
        // leaves the bad one to the reaper, which hands it back to a claim.
        if !unreadable.is_empty()
            && let Err(e) = self.finish_chunk(keys, unreadable.len() / 6, unreadable).await
        {
            tracing::warn!(error = %e, "could not dead-letter unreadable tasks; the reaper will retry");
        }
        if more && let Err(e) = self.poke(ns).await {
            tracing::warn!(error = %e, "could not set the wake marker after a claim");
        }
        Ok(out)
    }

    pub(crate) async fn heartbeat_leases(
        &self,
        ns: &Namespace,
        leases: &[Lease],
        lease: Duration,
    ) -> Result<Heartbeat> {
        let lease = duration_ms("lease", lease)?;
        let mut out = Heartbeat::default();
        for p in 0..self.partitions() {
            let mut args = vec![Value::from(lease.as_str())];
            for l in leases.iter().filter(|l| self.inner.layout.partition_of(&l.id) == p) {
                args.push(Value::from(l.id.as_str()));
                args.push(Value::from(l.fence.to_string()));
            }
            if args.len() == 1 {
                continue;
            }
            let reply = array(self.run_in(&self.inner.scripts.heartbeat, &self.keys(ns, p), args).await?)?;
            let mut reply = reply.into_iter();
            out.lost.extend(ids(reply.next())?);
            out.cancel_requested.extend(ids(reply.next())?);
        }
        Ok(out)
    }

    pub(crate) async fn finish_leases(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        let mut results: Vec<Option<Result<TaskState>>> = (0..items.len()).map(|_| None).collect();
        let mut groups: Vec<Vec<(usize, Lease, [String; 3])>> =
            vec![Vec::new(); usize::from(self.partitions())];
        for (i, (lease, finish)) in items.into_iter().enumerate() {
            match finish_code(&finish) {
                Ok((code, delay, error)) => {
                    let p = usize::from(self.inner.layout.partition_of(&lease.id));
                    groups[p].push((i, lease, [code.to_owned(), delay, error]));
                }
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        let mut reached = false;
        let mut woke = false;
        for (p, group) in groups.into_iter().enumerate() {
            let keys = self.keys(ns, u16::try_from(p).unwrap_or(0));
            for chunk in group.chunks(FINISH_CHUNK) {
                let mut args = Vec::with_capacity(chunk.len() * 6);
                for (_, lease, [code, delay, error]) in chunk {
                    args.extend([
                        Value::from(lease.id.as_str()),
                        Value::from(lease.fence.to_string()),
                        Value::from(code.as_str()),
                        Value::from(delay.as_str()),
                        Value::from(error.as_str()),
                        Value::from(self.nonce()),
                    ]);
                }
                match self.finish_chunk(&keys, chunk.len(), args).await {
                    Ok(states) => {
                        reached = true;
                        for ((i, lease, _), state) in chunk.iter().zip(states) {
                            woke |= state == "PENDING";
                            results[*i] = Some(match state.as_str() {
                                "STALE" => {
                                    Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence })
                                }
                                "INVALID" => Err(Error::invalid("retry delay", "not a whole number of ms")),
                                _ => state.parse::<TaskState>(),
                            });
                        }
                    }
                    Err(e) if !reached => return Err(e),
                    Err(e) => {
                        for (i, _, _) in chunk {
                            results[*i] = Some(Err(Error::storage(e.to_string(), e.is_retryable())));
                        }
                    }
                }
            }
        }
        if woke {
            self.poke(ns).await?;
        }
        Ok(results.into_iter().map(|r| r.unwrap_or_else(|| Err(shape("an item got no answer")))).collect())
    }

    /// One `finish.lua` call; the new state (or `STALE`) per item.
    async fn finish_chunk(&self, keys: &PartitionKeys, n: usize, items: Vec<Value>) -> Result<Vec<String>> {
        let mut args = Vec::with_capacity(items.len() + 1);
        args.push(Value::from(n.to_string()));
        args.extend(items);
        let reply = array(self.run_in(&self.inner.scripts.finish, keys, args).await?)?;
        let states: Vec<String> = array(reply.into_iter().nth(1).unwrap_or(Value::Null))?
            .iter()
            .map(|v| text(v).unwrap_or_default())
            .collect();
        if states.len() != n {
            return Err(shape("finish answered for a different number of items"));
        }
        Ok(states)
    }
}

/// A list of ids in a script reply.
pub(crate) fn ids(v: Option<Value>) -> Result<Vec<TaskId>> {
    array(v.unwrap_or(Value::Null))?
        .iter()
        .filter_map(text)
        .map(|id| TaskId::new(id).map_err(|e| shape(&format!("an id that is not valid: {e}"))))
        .collect()
}
