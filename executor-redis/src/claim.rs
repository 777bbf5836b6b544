//! Claiming and renewing attempts: `claim.lua`, `heartbeat.lua`.

use std::time::Duration;

use executor_core::{
    Error, Namespace, Result, TaskRecord, WorkerId,
    storage::{Heartbeat, Lease},
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::duration_ms,
    keys::PartitionKeys,
    record::{self, array, ids, log_aside, text},
};

/// Most tasks one claim call takes: bounds the script's running time
/// whatever the backlog.
pub(crate) const MAX_CLAIM: usize = 1000;

impl RedisStorage {
    pub(crate) async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
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

    pub(crate) async fn heartbeat(
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
}
