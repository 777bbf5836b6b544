//! Claiming and renewing attempts: `claim.lua`, `heartbeat.lua`.
//!
//! A claim plan walks the partitions as a plain claim does; each
//! partition's script applies what is left of the quotas and the limit, so
//! the plan holds across partitions, and one partition's claim is atomic.

use std::{collections::BTreeSet, time::Duration};

use executor_core::{
    Error, Namespace, QueueName, Result, TaskRecord, WorkerId,
    queue::ClaimPlan,
    storage::{Heartbeat, Lease},
};
use fred::{
    interfaces::{ClientLike, HashesInterface},
    types::Value,
};

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
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        if plan.limit == 0 {
            return Ok(Vec::new());
        }
        // The default queue alone is the plain claim: no plan arguments.
        if plan.shares.len() == 1 && plan.is_default_only() {
            return self.claim_plan(ns, worker, &[], plan.limit, lease).await;
        }
        if plan.shares.len() > executor_core::queue::MAX_QUEUES {
            return Err(Error::invalid(
                "claim plan",
                format!("{} queues; at most {}", plan.shares.len(), executor_core::queue::MAX_QUEUES),
            ));
        }
        let shares: Vec<(QueueName, usize)> =
            plan.shares.iter().map(|s| (s.queue.clone(), s.quota.min(MAX_CLAIM))).collect();
        if shares.is_empty() {
            return Ok(Vec::new());
        }
        self.claim_plan(ns, worker, &shares, plan.limit, lease).await
    }

    /// A claim over the partitions: `shares` empty for the default queue
    /// alone, else the plan. On one partition the script applies quotas and
    /// fill at once. On several, a first walk applies the quotas only and a
    /// second fills what is left of the limit, so one partition's fill
    /// cannot take the slots another partition's quotas would have filled.
    /// A batch from several partitions is put in claim order (share, then
    /// highest priority, earliest due, id), as one partition returns it.
    async fn claim_plan(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        shares: &[(QueueName, usize)],
        limit: usize,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let limit = limit.min(MAX_CLAIM);
        let lease = duration_ms("lease", lease)?;
        let mut shares = shares.to_vec();
        let mut out = Vec::new();
        let mut cut = BTreeSet::new();
        if shares.is_empty() || self.partitions() == 1 {
            self.walk(ns, worker, &mut shares, "a", limit, &lease, &mut out, &mut cut).await?;
        } else {
            let quotas = shares.iter().map(|(_, quota)| *quota).sum::<usize>().min(limit);
            if quotas > 0 {
                self.walk(ns, worker, &mut shares, "q", quotas, &lease, &mut out, &mut cut).await?;
            }
            if out.len() < limit {
                shares.iter_mut().for_each(|share| share.1 = 0);
                if let Err(e) =
                    self.walk(ns, worker, &mut shares, "a", limit, &lease, &mut out, &mut cut).await
                {
                    // Tasks claimed by the first walk must reach the runtime.
                    if out.is_empty() {
                        return Err(e);
                    }
                    tracing::warn!(error = %e, "claim failed in one partition");
                }
            }
        }
        self.count_throttled(ns, &cut).await;
        if self.partitions() > 1 {
            let rank = |t: &TaskRecord| shares.iter().position(|(q, _)| *q == t.queue).unwrap_or(0);
            out.sort_by(|a, b| {
                (rank(a), std::cmp::Reverse(a.priority), a.due_at, &a.id).cmp(&(
                    rank(b),
                    std::cmp::Reverse(b.priority),
                    b.due_at,
                    &b.id,
                ))
            });
        }
        Ok(out)
    }

    /// Adds one to the throttled total of each queue a limit cut this claim
    /// short, once per claim however many scripts it ran (`{re:ns}:throttled`,
    /// beside the limits). A statistic: a failed write is logged, and the
    /// claimed tasks reach the runtime whatever happens here.
    async fn count_throttled(&self, ns: &Namespace, cut: &BTreeSet<String>) {
        if cut.is_empty() {
            return;
        }
        let key = format!("{}throttled", self.inner.layout.base(ns, 0));
        let Ok(client) = self.client() else { return };
        let client = client.with_options(&self.inner.options);
        for queue in cut {
            let counted: std::result::Result<i64, _> = client.hincrby(key.as_str(), queue.as_str(), 1).await;
            if let Err(e) = counted {
                tracing::warn!(error = %e, queue = %queue, "could not count a throttled claim");
            }
        }
    }

    /// One walk over the partitions, from the next in rotation, until `out`
    /// holds `limit` tasks; each share's quota shrinks by what it got, and
    /// `cut` gathers the queues a limit cut short.
    #[allow(clippy::too_many_arguments, reason = "the parts of one claim, passed down unchanged")]
    async fn walk(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        shares: &mut [(QueueName, usize)],
        mode: &str,
        limit: usize,
        lease: &str,
        out: &mut Vec<TaskRecord>,
        cut: &mut BTreeSet<String>,
    ) -> Result<()> {
        let start = self.next_partition();
        let n = self.partitions();
        for k in 0..n {
            let want = limit.saturating_sub(out.len());
            if want == 0 {
                break;
            }
            let keys = self.keys(ns, (start + k) % n);
            match self.claim_in(ns, &keys, worker, shares, mode, want, lease, cut).await {
                Ok(mut tasks) => {
                    for task in &tasks {
                        if let Some(share) = shares.iter_mut().find(|(q, _)| *q == task.queue) {
                            share.1 = share.1.saturating_sub(1);
                        }
                    }
                    out.append(&mut tasks);
                }
                // Tasks already claimed from another partition must reach the
                // runtime; this partition is tried again next time.
                Err(e) if !out.is_empty() => {
                    tracing::warn!(error = %e, "claim failed in one partition");
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments, reason = "the parts of one claim, passed down unchanged")]
    async fn claim_in(
        &self,
        ns: &Namespace,
        keys: &PartitionKeys,
        worker: &WorkerId,
        shares: &[(QueueName, usize)],
        mode: &str,
        want: usize,
        lease: &str,
        cut: &mut BTreeSet<String>,
    ) -> Result<Vec<TaskRecord>> {
        let mut args = Vec::with_capacity(6 + shares.len() * 2);
        args.extend([
            Value::from(worker.as_str()),
            Value::from(want.to_string()),
            Value::from(lease),
            Value::from(self.nonce()),
        ]);
        if !shares.is_empty() {
            args.push(Value::from(mode));
            args.push(Value::from(shares.len().to_string()));
            for (queue, quota) in shares {
                args.push(Value::from(queue.as_str()));
                args.push(Value::from(quota.to_string()));
            }
        }
        let reply = array(self.run_in(&self.inner.scripts.claim, keys, args).await?)?;
        let mut reply = reply.into_iter().skip(1);
        let more = reply.next().and_then(|v| text(&v)).as_deref() == Some("1");
        let entries = array(reply.next().unwrap_or(Value::Null))?;
        log_aside("claim", reply.next());
        if let Some(queues) = reply.next() {
            cut.extend(array(queues)?.iter().filter_map(text));
        }
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
