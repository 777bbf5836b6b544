//! Claiming due tasks and renewing the leases on them.

use executor_sql::dialect::Claim;
use executor_sql::{
    row::{self, to_error},
    stmt::Value,
};
use std::{collections::HashMap, time::Duration};

use executor_core::{
    Namespace, QueueName, Result, TaskRecord, TaskState, WorkerId,
    queue::{ClaimPlan, MAX_PRIORITY},
    storage::{Heartbeat, Lease},
};
use sqlx::{
    MySql, Row,
    mysql::{MySqlArguments, MySqlRow},
    query::Query,
};

use crate::{
    MySqlDialect,
    conn::RunOn,
    error,
    sql::{self, MAX_ATTEMPTS_COLUMN, MAX_FENCE_COLUMN, ms, padded, sql},
};

/// Most tasks one claim or heartbeat statement names.
const MAX_BATCH: usize = 1000;

/// Rounds of a claim that lost candidates to concurrent claimers.
const ROUNDS: usize = 3;

/// Priority ranks a waiting task can have (`queue_rank = 9 - priority`).
const RANKS: u32 = 10;

/// Every rank, as a mask (bit `r` for rank `r`).
const ALL_RANKS: u16 = (1 << RANKS) - 1;

/// Claims a rank stays read with locks after the last one that found a
/// task of it there.
const KEEP: u8 = 8;

/// Which priority ranks of a queue the claim reads with locks, per
/// (namespace, queue): the ranks where recent claims found due tasks.
///
/// A locking read (`FOR UPDATE SKIP LOCKED`) of a rank with no due task is
/// not free: InnoDB locks the first record past the empty range before it
/// sees the range has ended, and that record is the head of the next rank,
/// the rows every claimer is locking at that moment. Ten ranges of which
/// nine are empty (every task at the default priority) halved MariaDB's
/// processing rate (docs/mysql.md). So the claim reads the ranks where it
/// found due tasks lately with locks, and looks at the others with a
/// consistent read that takes no lock; what that read finds is claimed too
/// (the UPDATE checks every candidate again under its row lock, so two
/// claimers never take one task) and its rank is read with locks from the
/// next claim on. Every rank is read by every claim, one way or the other,
/// so the priority order holds whatever the hint says; only the cost moves.
#[derive(Debug, Default)]
pub(crate) struct RankHints(std::sync::Mutex<HashMap<(String, String), [u8; RANKS as usize]>>);

impl RankHints {
    /// The mask of ranks of `queue` to read with locks.
    fn locked(&self, ns: &Namespace, queue: &QueueName) -> u16 {
        let Ok(map) = self.0.lock() else { return ALL_RANKS };
        map.get(&(ns.as_str().to_owned(), queue.as_str().to_owned())).map_or(0, |keep| {
            keep.iter().enumerate().filter(|(_, k)| **k > 0).fold(0, |mask, (r, _)| mask | (1 << r))
        })
    }

    /// A claim of `queue` found due tasks of the ranks in `seen`.
    fn saw(&self, ns: &Namespace, queue: &QueueName, seen: u16) {
        let Ok(mut map) = self.0.lock() else { return };
        let key = (ns.as_str().to_owned(), queue.as_str().to_owned());
        if seen == 0 && !map.contains_key(&key) {
            return;
        }
        let keep = map.entry(key).or_default();
        for (r, k) in keep.iter_mut().enumerate() {
            *k = if seen & (1 << r) != 0 { KEEP } else { k.saturating_sub(1) };
        }
    }
}

/// What one round claimed, whether candidates went to another claimer,
/// and the queues of the plan it skipped because they have limits.
struct Round {
    tasks: Vec<TaskRecord>,
    lost_race: bool,
    limited: Vec<QueueName>,
}

/// What a claim still wants: each queue of the plan once, in the order of
/// its first share, with its quota (a queue named twice gets the sum), and
/// the limit.
struct Want {
    queues: Vec<(QueueName, usize)>,
    limit: usize,
}

impl Want {
    fn new(plan: &ClaimPlan) -> Self {
        let mut queues: Vec<(QueueName, usize)> = Vec::with_capacity(plan.shares.len());
        for share in &plan.shares {
            match queues.iter_mut().find(|(q, _)| *q == share.queue) {
                Some((_, quota)) => *quota = quota.saturating_add(share.quota),
                None => queues.push((share.queue.clone(), share.quota)),
            }
        }
        Self { queues, limit: plan.limit.min(MAX_BATCH) }
    }

    /// Leaves `queue` out of the plain claim's rounds.
    fn remove(&mut self, queue: &QueueName) {
        self.queues.retain(|(q, _)| q != queue);
    }

    /// Takes what a round claimed off the quotas and the limit.
    fn took(&mut self, tasks: &[TaskRecord]) {
        self.limit -= tasks.len().min(self.limit);
        for t in tasks {
            if let Some((_, quota)) = self.queues.iter_mut().find(|(q, _)| *q == t.queue) {
                *quota = quota.saturating_sub(1);
            }
        }
    }

    /// The candidates to take, in claim order: `per_queue[i]` holds queue
    /// `i`'s candidates in its claim order. Each queue's quota first, in
    /// order, then the rest of the limit from the same queues in order.
    fn pick(&self, mut per_queue: Vec<std::collections::VecDeque<String>>) -> Vec<String> {
        let mut out = Vec::with_capacity(self.limit);
        for (i, (_, quota)) in self.queues.iter().enumerate() {
            let Some(from) = per_queue.get_mut(i) else { break };
            let upto = (out.len() + quota).min(self.limit);
            while out.len() < upto {
                let Some(id) = from.pop_front() else { break };
                out.push(id);
            }
        }
        for from in &mut per_queue {
            while out.len() < self.limit {
                let Some(id) = from.pop_front() else { break };
                out.push(id);
            }
        }
        out
    }
}

async fn claim_once(
    s: &MySqlDialect,
    ns: &Namespace,
    worker: &WorkerId,
    want: &Want,
    lease: Duration,
) -> Result<Round> {
    let limit = want.limit;
    let per_branch = u32::try_from((limit * 2).min(2 * MAX_BATCH)).unwrap_or(u32::MAX);
    let several = want.queues.len() > 1;
    // Per queue, a branch over the ranks recent claims found due tasks in,
    // read with locks, and one over the others, read without (see
    // `RankHints` and the file).
    let mut branches: Vec<(usize, &QueueName, u16, bool)> = Vec::new();
    for (i, (queue, _)) in want.queues.iter().enumerate() {
        let locked = s.ranks.locked(ns, queue);
        for (ranks, lock) in [(locked, true), (!locked & ALL_RANKS, false)] {
            if ranks != 0 {
                branches.push((i, queue, ranks, lock));
            }
        }
    }
    let queues = padded(want.queues.iter().map(|(q, _)| q.as_str()));
    let mut text = String::new();
    for (_, _, ranks, lock) in &branches {
        let list: Vec<String> = (0..RANKS).filter(|r| ranks & (1 << r) != 0).map(|r| r.to_string()).collect();
        let branch = sql::only(sql!("claim/select_candidates"), if *lock { &["locked"] } else { &[] });
        text.push_str(&sql::literals(&branch, "ranks", &list.join(", ")));
        text.push_str(" UNION ALL ");
    }
    text.push_str(&sql::slice(sql!("claim/select_limited_queues"), "queues", queues.len()));
    let mut q = sql::query(text);
    for (i, queue, _, _) in &branches {
        q = q
            .bind(i64::try_from(*i).unwrap_or(i64::MAX))
            .bind(ns.as_str().to_owned())
            .bind(queue.as_str().to_owned())
            .bind(ns.as_str().to_owned())
            .bind(queue.as_str().to_owned())
            .bind(per_branch);
    }
    let q = sql::bind_all(q.bind(ns.as_str().to_owned()), &queues);
    let rows = q.fetch_all_on(&s.conns).await.map_err(error::storage)?;
    // Per queue: (rank, due, id) of each candidate, and the ranks seen.
    let mut per_queue: Vec<Vec<(u64, i64, String)>> = vec![Vec::new(); want.queues.len()];
    let mut seen = vec![0u16; want.queues.len()];
    let mut limited = Vec::new();
    for r in &rows {
        let id = row::raw_id(r);
        let branch: i64 = r.try_get("branch").map_err(error::storage)?;
        if branch < 0 {
            if let Some((queue, _)) = want.queues.iter().find(|(q, _)| q.as_str() == id) {
                limited.push(queue.clone());
            }
            continue;
        }
        // BIGINT (UNSIGNED): the union with branch -1 widens the columns.
        let attempts: u64 = r.try_get("attempts").map_err(error::storage)?;
        let fence: u64 = r.try_get("fence").map_err(error::storage)?;
        let priority: u64 = r.try_get("priority").map_err(error::storage)?;
        let rank: u64 = r.try_get("queue_rank").map_err(error::storage)?;
        let due: i64 = r.try_get("ready_at").map_err(error::storage)?;
        let Some(b) = usize::try_from(branch).ok().filter(|b| *b < per_queue.len()) else { continue };
        if let Some(bit) = u32::try_from(rank).ok().and_then(|r| 1u16.checked_shl(r)) {
            seen[b] |= bit & ALL_RANKS;
        }
        if attempts >= u64::from(MAX_ATTEMPTS_COLUMN) || fence == MAX_FENCE_COLUMN {
            // Bumping it would fail the claim "out of range", every time.
            let reason = format!("attempts {attempts} or fence {fence} is at its column's maximum");
            to_error(s, ns, &id, Value::OptUint(None), &reason).await?;
        } else if priority > u64::from(MAX_PRIORITY) {
            // Written with the checks off: any UPDATE of the row fails
            // `ck_tasks_priority`, so claiming it would fail the whole batch.
            let reason = format!("priority {priority} is outside 0..={MAX_PRIORITY}");
            to_error(s, ns, &id, Value::OptUint(None), &reason).await?;
        } else {
            per_queue[b].push((rank, due, id));
        }
    }
    for ((queue, _), seen) in want.queues.iter().zip(seen) {
        s.ranks.saw(ns, queue, seen);
    }
    // Each queue's candidates in claim order (the two reads of a queue each
    // come in order; together they interleave by rank). `id` compares as
    // its bytes, as the column's binary collation does.
    let per_queue: Vec<std::collections::VecDeque<String>> = per_queue
        .into_iter()
        .map(|mut c| {
            c.sort();
            c.into_iter().map(|(_, _, id)| id).collect()
        })
        .collect();
    // One queue: every candidate, of which the UPDATE takes the first
    // `limit` still waiting. Several: exactly the ones the plan picks.
    let (candidates, take) = if several {
        let picked = want.pick(per_queue);
        let n = picked.len();
        (picked, n)
    } else {
        (per_queue.into_iter().flatten().collect::<Vec<_>>(), limit)
    };
    if candidates.is_empty() || take == 0 {
        return Ok(Round { tasks: Vec::new(), lost_race: false, limited });
    }
    let token = sql::token();
    let changed = claim_update(ns, worker, lease, token, &candidates, Some(take))
        .execute_on(&s.conns)
        .await
        .map_err(error::storage)?
        .rows_affected();
    let lost_race = changed < u64::try_from(take.min(candidates.len())).unwrap_or(u64::MAX);
    if changed == 0 {
        return Ok(Round { tasks: Vec::new(), lost_race, limited });
    }
    let rows = claimed_read(ns, token, &candidates).fetch_all_on(&s.conns).await.map_err(error::storage)?;
    // Back in claim order: the order the candidates were picked in.
    let position: HashMap<&str, usize> =
        candidates.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let mut read: Vec<(usize, &MySqlRow)> = rows
        .iter()
        .map(|r| {
            (
                r.try_get::<&str, _>("id")
                    .ok()
                    .and_then(|id| position.get(id).copied())
                    .unwrap_or(usize::MAX),
                r,
            )
        })
        .collect();
    read.sort_by_key(|(at, _)| *at);
    let mut tasks = Vec::with_capacity(read.len());
    for (_, r) in read {
        match row::task::<MySqlDialect>(r) {
            Ok(task) => tasks.push(task),
            Err(reason) => to_error(s, ns, &row::raw_id(r), Value::OptUint(Some(token)), &reason).await?,
        }
    }
    Ok(Round { tasks, lost_race, limited })
}

async fn heartbeat_chunk(
    s: &MySqlDialect,
    ns: &Namespace,
    leases: &[Lease],
    lease: Duration,
    out: &mut Heartbeat,
) -> Result<()> {
    if leases.is_empty() {
        return Ok(());
    }
    let ids = padded(leases.iter().map(|l| l.id.as_str()));
    // The pairs padded as the ids are, repeating the last lease.
    let pad = ids.len() - leases.len();
    let pairs: Vec<&Lease> =
        leases.iter().chain(leases.last().into_iter().flat_map(|l| std::iter::repeat_n(l, pad))).collect();
    let text = sql::slice(&sql::slice(sql!("claim/renew_leases"), "ids", ids.len()), "leases", pairs.len());
    let mut q = sql::bind_all(sql::query(text).bind(ms(lease)).bind(ns.as_str().to_owned()), &ids);
    for l in pairs {
        q = q.bind(l.id.as_str().to_owned()).bind(l.fence);
    }
    q.execute_on(&s.conns).await.map_err(error::storage)?;

    let text = sql::slice(sql!("claim/read_leases"), "ids", ids.len());
    let q = sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids);
    let rows = q.fetch_all_on(&s.conns).await.map_err(error::storage)?;
    let mut current: HashMap<String, (u64, String, bool)> = HashMap::with_capacity(rows.len());
    for r in rows {
        let id: String = r.try_get("id").map_err(error::storage)?;
        let fence: u64 = r.try_get("fence").map_err(error::storage)?;
        let state: String = r.try_get("state").map_err(error::storage)?;
        let cancel: bool = r.try_get("cancel_requested").map_err(error::storage)?;
        current.insert(id, (fence, state, cancel));
    }
    for l in leases {
        match current.get(l.id.as_str()) {
            Some((fence, state, cancel)) if *fence == l.fence && state == TaskState::Running.as_str() => {
                if *cancel {
                    out.cancel_requested.push(l.id.clone());
                }
            }
            _ => out.lost.push(l.id.clone()),
        }
    }
    Ok(())
}

/// The claim's read-back: the rows of `candidates` that its `UPDATE` took
/// (`RUNNING` under `token`), by primary key (see the file).
pub(crate) fn claimed_read(
    ns: &Namespace,
    token: u64,
    candidates: &[String],
) -> Query<'static, MySql, MySqlArguments> {
    let ids = padded(candidates.iter().map(String::as_str));
    let text = sql::slice(sql!("claim/read_claimed"), "ids", ids.len());
    sql::bind_all(sql::query(text).bind(ns.as_str().to_owned()), &ids).bind(token)
}

/// The claim's `UPDATE` of `candidates` to `RUNNING` under `token`, each
/// re-checked under its row lock (still due, attempts and fence below their
/// columns' maximum); with `take`, only the first `take` still waiting, in
/// claim order.
pub(crate) fn claim_update(
    ns: &Namespace,
    worker: &WorkerId,
    lease: Duration,
    token: u64,
    candidates: &[String],
    take: Option<usize>,
) -> Query<'static, MySql, MySqlArguments> {
    let ids = padded(candidates.iter().map(String::as_str));
    let text = sql::only(sql!("claim/take_candidates"), if take.is_some() { &["ordered"] } else { &[] });
    let q = sql::query(sql::slice(&text, "ids", ids.len()))
        .bind(ms(lease))
        .bind(worker.as_str().to_owned())
        .bind(token)
        .bind(ns.as_str().to_owned());
    let q = sql::bind_all(q, &ids).bind(MAX_ATTEMPTS_COLUMN).bind(MAX_FENCE_COLUMN);
    match take {
        Some(take) => q.bind(u32::try_from(take).unwrap_or(u32::MAX)),
        None => q,
    }
}

impl Claim for MySqlDialect {
    /// Claims as `plan` says in three autocommit statements, none of which
    /// waits for the client while it holds a lock (a stopped process holds nothing others need: a claimer
    /// stopped at any point holds nothing; the tasks it claimed come back
    /// through the reaper one lease later):
    ///
    /// 1. per queue of the plan, `SELECT id ... WHERE queue = ? AND
    ///    queue_rank IN (ranks) AND ready_at <= now AND NOT EXISTS (a paused
    ///    row for the queue) ORDER BY queue_rank, ready_at, id LIMIT 2n FOR
    ///    UPDATE SKIP LOCKED` over the ranks where recent claims found due
    ///    tasks, and the same without `FOR UPDATE` over the other ranks
    ///    (`RankHints`), all joined by `UNION ALL` into one statement:
    ///    candidates (the locked ones no one is changing right now; the
    ///    locks end with the statement) of every rank, sorted into claim
    ///    order by the client, none from a paused queue (the pause is read
    ///    by the claim itself, so it holds from the next claim statement
    ///    on);
    /// 2. `UPDATE ... WHERE id IN (ids) AND ready_at <= now ORDER BY
    ///    queue_rank, ready_at, id LIMIT n`, stamping a fresh token: the
    ///    condition is checked again under the row lock, so two claimers
    ///    never take the same task (no two live attempts) and nothing is taken before
    ///    it is due (nothing starts before it is due, on the server's clock). With one queue the
    ///    ids are every candidate and the first `n` still waiting are taken;
    ///    with several, they are the ones the plan picks (each share's quota
    ///    in order, then the rest of the limit from the same queues in order);
    /// 3. the claimed rows read back by their ids and the token, returned in
    ///    claim order.
    ///
    /// A queue with fleet-wide limits is left out of these statements (its
    /// row in the queues table makes the select skip it, and a branch of
    /// the same select names it) and claimed in its own short transaction
    /// instead (`limits.rs`): the queues this process knows to be limited
    /// first, each up to its quota, then the rest of the plan as above,
    /// then the rest of the limit from limited queues that gave all they
    /// were asked for.
    ///
    /// Candidates are fetched twice over so that a concurrent claimer that
    /// picked the same ones leaves this one the rest; a claim that lost
    /// candidates that way tries again for what it still wants, up to
    /// `ROUNDS` times. A waiting row whose counters are at their column's
    /// maximum, or that does not parse, is moved to `ERROR` with the
    /// reason, so it can never block the queue.
    async fn claim(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        plan: &ClaimPlan,
        lease: Duration,
    ) -> Result<Vec<TaskRecord>> {
        let mut claimed: Vec<TaskRecord> = Vec::new();
        let mut want = Want::new(plan);
        let one_queue = want.queues.len() == 1;
        // Queues with limits (as far as this process knows) first, each up
        // to its quota, in their own transactions (`limits.rs`).
        let mut refill: Vec<QueueName> = Vec::new();
        let mut busy: Vec<(QueueName, usize)> = Vec::new();
        let known: Vec<(QueueName, usize)> =
            want.queues.iter().filter(|(q, _)| self.limited.known(ns, q)).cloned().collect();
        for (queue, quota) in known {
            let upto = quota.min(want.limit);
            if upto == 0 {
                // Nothing of its own to take now: only the fill may.
                want.remove(&queue);
                refill.push(queue);
                continue;
            }
            let take = self.claim_limited(ns, worker, &queue, upto, lease).await?;
            match take.outcome {
                executor_sql::limits::Outcome::Unlimited => {
                    self.limited.forget(ns, &queue);
                    continue;
                }
                executor_sql::limits::Outcome::Full => refill.push(queue.clone()),
                executor_sql::limits::Outcome::Busy => busy.push((queue.clone(), upto)),
                executor_sql::limits::Outcome::Done => {}
            }
            want.took(&take.tasks);
            want.remove(&queue);
            claimed.extend(take.tasks);
        }
        for _ in 0..ROUNDS {
            if want.limit == 0 || want.queues.is_empty() {
                break;
            }
            let round = error::retry_lock_conflicts(|| claim_once(self, ns, worker, &want, lease)).await?;
            want.took(&round.tasks);
            claimed.extend(round.tasks);
            // Queues the statement found limited: this process learns them
            // here, and they take their part in the fill below.
            for queue in round.limited {
                self.limited.remember(ns, &queue);
                want.remove(&queue);
                refill.push(queue);
            }
            if !round.lost_race {
                break;
            }
        }
        // The fill: the rest of the limit from limited queues that took all
        // they were asked for.
        for queue in refill {
            if want.limit == 0 {
                break;
            }
            let take = self.claim_limited(ns, worker, &queue, want.limit, lease).await?;
            if take.outcome == executor_sql::limits::Outcome::Busy {
                busy.push((queue, want.limit));
            }
            want.took(&take.tasks);
            claimed.extend(take.tasks);
        }
        // A queue another claimer was claiming: its transaction is a few
        // round trips, so a claim that got nothing else tries again shortly
        // rather than leave its caller to spin. Never waits while it holds
        // tasks of other queues, and a stopped holder costs at most this.
        if claimed.is_empty() {
            for pause_ms in [2, 8, 32] {
                if busy.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                let mut still = Vec::new();
                for (queue, upto) in busy {
                    let upto = upto.min(want.limit);
                    if upto == 0 {
                        continue;
                    }
                    let take = self.claim_limited(ns, worker, &queue, upto, lease).await?;
                    if take.outcome == executor_sql::limits::Outcome::Busy {
                        still.push((queue, upto));
                    }
                    want.took(&take.tasks);
                    claimed.extend(take.tasks);
                }
                busy = still;
                if !claimed.is_empty() {
                    break;
                }
            }
        }
        // A round after the first takes what an earlier one lost to other
        // claimers, which may come before what it took: one queue's batch
        // goes back into claim order (priority, due time, id), as one
        // round would have returned it.
        if one_queue {
            claimed.sort_by(|a, b| {
                b.priority
                    .cmp(&a.priority)
                    .then(a.due_at.cmp(&b.due_at))
                    .then_with(|| a.id.as_str().cmp(b.id.as_str()))
            });
        }
        Ok(claimed)
    }

    /// Renews every lease in one UPDATE (only rows still `RUNNING` with the
    /// lease's fence, so a lost lease is never revived: no two live attempts), then one
    /// SELECT tells which leases are lost and which tasks have a cancel request.
    async fn heartbeat(&self, ns: &Namespace, leases: &[Lease], lease: Duration) -> Result<Heartbeat> {
        let mut out = Heartbeat::default();
        for chunk in leases.chunks(MAX_BATCH) {
            heartbeat_chunk(self, ns, chunk, lease, &mut out).await?;
        }
        Ok(out)
    }
}
