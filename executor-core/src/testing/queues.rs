//! Checks of named queues, priorities, claim plans and pause.

use std::{collections::BTreeMap, time::Duration};

use crate::{
    Error, Namespace, QueueName, TaskRecord, TaskState, Timestamp,
    queue::{ClaimPlan, QueueSet, QueueShare},
    storage::{Due, Finish, NewTask, QueueControl},
};

use super::{
    new_task,
    support::{LONG_LEASE, lease, ok, record, submit, worker},
};

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap_or_else(|e| panic!("queue name {name:?}: {e}"))
}

fn in_queue(id: &str, queue: &str, priority: u8) -> NewTask {
    let mut t = new_task(id);
    t.queue = q(queue);
    t.priority = priority;
    t
}

fn plan(shares: &[(&str, usize)], limit: usize) -> ClaimPlan {
    ClaimPlan::new(shares.iter().map(|(name, quota)| QueueShare::new(q(name), *quota)).collect(), limit)
}

async fn claim_plan<S: QueueControl>(s: &S, ns: &Namespace, plan: &ClaimPlan) -> Vec<TaskRecord> {
    ok("claim", s.claim(ns, &worker(), plan, LONG_LEASE).await)
}

fn ids(tasks: &[TaskRecord]) -> Vec<String> {
    tasks.iter().map(|t| t.id.to_string()).collect()
}

async fn submit_all<S: QueueControl>(s: &S, ns: &Namespace, tasks: Vec<NewTask>) {
    for chunk in tasks.chunks(1_000) {
        for (i, r) in ok("submit_many", s.submit_many(ns, chunk.to_vec()).await).into_iter().enumerate() {
            ok(&format!("submit {}", chunk[i].id), r);
        }
    }
}

/// Within a queue: highest priority first, then earliest due; a task not
/// yet due waits whatever its priority; queue and priority read back from
/// `get` and from the claim.
pub async fn queue_priority_order<S: QueueControl>(s: &S, ns: &Namespace) {
    let now = Timestamp::now_system();
    let ago = |secs| Due::At(now.saturating_sub(Duration::from_secs(secs)));
    for (id, priority, secs_ago) in
        [("p0-old", 0, 9), ("p5-new", 5, 1), ("p9-new", 9, 2), ("p5-old", 5, 8), ("p9-old", 9, 3)]
    {
        let mut t = in_queue(id, "prio", priority);
        t.due = ago(secs_ago);
        submit(s, ns, t).await;
    }
    let mut later = in_queue("p9-later", "prio", 9);
    later.due = Due::After(Duration::from_secs(3_600));
    submit(s, ns, later).await;
    let stored = record(s, ns, &crate::TaskId::new("p5-old").unwrap_or_else(|e| panic!("{e}"))).await;
    assert_eq!((stored.queue.as_str(), stored.priority), ("prio", 5), "get reads queue and priority back");

    let mut order = Vec::new();
    loop {
        let got = claim_plan(s, ns, &ClaimPlan::single(q("prio"), 1)).await;
        let Some(t) = got.first() else { break };
        assert_eq!((t.queue.as_str(), t.state), ("prio", TaskState::Running), "claimed record: {t:?}");
        order.push(t.id.to_string());
    }
    assert_eq!(
        order,
        ["p9-old", "p9-new", "p5-old", "p5-new", "p0-old"],
        "priority 9 before 5 before 0, earliest due first within one; the task due later waits"
    );
    let batch_order = {
        for (id, priority) in [("b1", 1), ("b7", 7), ("b3", 3)] {
            submit(s, ns, in_queue(id, "prio2", priority)).await;
        }
        ids(&claim_plan(s, ns, &ClaimPlan::single(q("prio2"), 10)).await)
    };
    let mut sorted = batch_order.clone();
    sorted.sort_by_key(|id| std::cmp::Reverse(id[1..].parse::<u8>().unwrap_or(0)));
    assert_eq!(batch_order.len(), 3, "one claim takes all three: {batch_order:?}");
    assert_eq!(batch_order, sorted, "a batch comes back in claim order");
}

/// A claim takes from the queues it names only: `claim` from the default
/// queue, a plan from its queues; each queue's tasks stay for its claimers.
pub async fn queue_claims_only_named_queues<S: QueueControl>(s: &S, ns: &Namespace) {
    submit(s, ns, in_queue("in-a", "a", 0)).await;
    submit(s, ns, in_queue("in-b", "b", 3)).await;
    submit(s, ns, new_task("in-default")).await;
    let me = worker();
    assert_eq!(
        ids(&ok("claim", s.claim(ns, &me, &ClaimPlan::default_queue(10), LONG_LEASE).await)),
        ["in-default"],
        "claim takes the default queue only"
    );
    assert_eq!(ids(&claim_plan(s, ns, &plan(&[("a", 10)], 10)).await), ["in-a"], "a plan of `a`");
    assert!(claim_plan(s, ns, &plan(&[("c", 10)], 10)).await.is_empty(), "an empty queue gives nothing");
    assert_eq!(ids(&claim_plan(s, ns, &plan(&[("b", 0)], 10)).await), ["in-b"], "quota 0 still fills");
}

/// Each share's quota first, in order; what a queue cannot use goes to the
/// others; the limit holds in all.
pub async fn queue_plan_quotas_then_fill<S: QueueControl>(s: &S, ns: &Namespace) {
    let mut tasks = Vec::new();
    for i in 0..6 {
        tasks.push(in_queue(&format!("x{i}"), "x", 0));
        tasks.push(in_queue(&format!("y{i}"), "y", 0));
    }
    tasks.push(in_queue("z0", "z", 0));
    submit_all(s, ns, tasks).await;
    let got = claim_plan(s, ns, &plan(&[("x", 2), ("y", 3), ("z", 3)], 7)).await;
    let per = count_by_queue(&got);
    assert_eq!(got.len(), 7, "the limit is filled: {per:?}");
    assert_eq!(per.get("z"), Some(&1), "z gives what it has: {per:?}");
    assert_eq!(per.get("y"), Some(&3), "y its quota: {per:?}");
    assert_eq!(per.get("x"), Some(&3), "x its quota and then z's unused slots: {per:?}");
    let rest = claim_plan(s, ns, &plan(&[("x", 0), ("y", 0)], 100)).await;
    assert_eq!(rest.len(), 6, "the remaining six, none twice");
}

fn count_by_queue(tasks: &[TaskRecord]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for t in tasks {
        *out.entry(t.queue.to_string()).or_insert(0) += 1;
    }
    out
}

/// Weighted claims over 10,000 tasks in three queues match the weights
/// within ±5 % while every queue has work.
pub async fn queue_weighted_claims_match_weights<S: QueueControl>(s: &S, ns: &Namespace) {
    let mut tasks = Vec::new();
    for (queue, n) in [("critical", 6_000), ("normal", 3_000), ("low", 1_000)] {
        tasks.extend((0..n).map(|i| in_queue(&format!("{queue}-{i:05}"), queue, 0)));
    }
    submit_all(s, ns, tasks).await;
    let mut set = QueueSet::weighted([("critical", 6), ("normal", 3), ("low", 1)])
        .unwrap_or_else(|e| panic!("queue set: {e}"));
    let mut got = BTreeMap::new();
    let mut total = 0;
    // Half of the tasks, in batches of 25: every queue still has work.
    while total < 5_000 {
        let claimed = claim_plan(s, ns, &set.plan(25)).await;
        assert_eq!(claimed.len(), 25, "every queue has work: a full batch");
        for (queue, n) in count_by_queue(&claimed) {
            *got.entry(queue).or_insert(0usize) += n;
        }
        total += claimed.len();
    }
    for (queue, weight) in [("critical", 0.6), ("normal", 0.3), ("low", 0.1)] {
        let share = *got.get(queue).unwrap_or(&0) as f64 / total as f64;
        assert!(
            (share - weight).abs() <= weight * 0.05,
            "{queue}: {share:.3} of the claims, weight {weight} (±5 %): {got:?}"
        );
    }
}

/// A paused queue gives nothing to any claim, whatever the plan, and says
/// so in `queues`; its tasks wait, counted, not dead-lettered; the other
/// queues of the same plan go on; resuming gives them back in order.
pub async fn queue_pause_stops_claims_and_resume_restarts<S: QueueControl>(s: &S, ns: &Namespace) {
    let now = Timestamp::now_system();
    for i in 0..3 {
        let mut t = in_queue(&format!("slow-{i}"), "slow", 0);
        t.due = Due::At(now.saturating_sub(Duration::from_secs(10 - i)));
        submit(s, ns, t).await;
        submit(s, ns, in_queue(&format!("fast-{i}"), "fast", 0)).await;
    }
    ok("pause", s.pause_queue(ns, &q("slow"), true).await);
    ok("pause again", s.pause_queue(ns, &q("slow"), true).await);
    ok("pause an empty queue", s.pause_queue(ns, &q("idle"), true).await);
    let infos = ok("queues", s.queues(ns).await);
    let slow = infos.iter().find(|i| i.queue.as_str() == "slow").unwrap_or_else(|| panic!("{infos:?}"));
    assert!(slow.paused && slow.waiting == 3, "slow is paused with 3 waiting: {slow:?}");
    assert!(
        infos.iter().any(|i| i.queue.as_str() == "idle" && i.paused && i.waiting == 0),
        "a paused queue without tasks is listed: {infos:?}"
    );
    let got = claim_plan(s, ns, &plan(&[("slow", 5), ("fast", 5)], 10)).await;
    assert_eq!(count_by_queue(&got).get("fast"), Some(&3), "the other queue goes on: {:?}", ids(&got));
    assert_eq!(got.len(), 3, "nothing from the paused queue: {:?}", ids(&got));
    assert!(claim_plan(s, ns, &plan(&[("slow", 5)], 5)).await.is_empty(), "still paused");
    assert_eq!(ok("counts", s.counts(ns).await).get(TaskState::Created), 3, "the paused tasks wait");

    ok("resume", s.pause_queue(ns, &q("slow"), false).await);
    let resumed = claim_plan(s, ns, &plan(&[("slow", 0)], 10)).await;
    assert_eq!(ids(&resumed), ["slow-0", "slow-1", "slow-2"], "resumed, in due order");
    let infos = ok("queues", s.queues(ns).await);
    assert!(!infos.iter().any(|i| i.queue.as_str() == "slow" && i.paused), "slow resumed: {infos:?}");
    ok("resume idle", s.pause_queue(ns, &q("idle"), false).await);
    ok("resume a queue never paused", s.pause_queue(ns, &q("never"), false).await);
}

/// `queues` reports each queue's waiting and due tasks and its oldest due
/// time; a queue with nothing waiting and not paused is not listed.
pub async fn queue_stats<S: QueueControl>(s: &S, ns: &Namespace) {
    let now = Timestamp::now_system();
    let oldest = now.saturating_sub(Duration::from_secs(30));
    let mut t = in_queue("st-old", "stats", 2);
    t.due = Due::At(oldest);
    submit(s, ns, t).await;
    submit(s, ns, in_queue("st-now", "stats", 0)).await;
    let mut later = in_queue("st-later", "stats", 9);
    later.due = Due::After(Duration::from_secs(3_600));
    submit(s, ns, later).await;
    submit(s, ns, new_task("st-default")).await;
    let infos = ok("queues", s.queues(ns).await);
    let names: Vec<&str> = infos.iter().map(|i| i.queue.as_str()).collect();
    assert_eq!(names, ["default", "stats"], "queues with waiting tasks, by name");
    let stats = &infos[1];
    assert_eq!((stats.waiting, stats.due, stats.paused), (3, 2, false), "{stats:?}");
    let got = stats.oldest_due.unwrap_or_else(|| panic!("no oldest due: {stats:?}"));
    assert!(got.as_millis().abs_diff(oldest.as_millis()) <= 1, "oldest due {got} is {oldest}");
    let done = claim_plan(s, ns, &plan(&[("stats", 0), ("default", 0)], 10)).await;
    assert_eq!(done.len(), 3);
    for t in &done {
        ok("complete", s.finish(ns, &lease(t), Finish::Completed).await);
    }
    let infos = ok("queues", s.queues(ns).await);
    let stats = infos.iter().find(|i| i.queue.as_str() == "stats").unwrap_or_else(|| panic!("{infos:?}"));
    assert_eq!((stats.waiting, stats.due, stats.oldest_due), (1, 0, None), "only the later task: {stats:?}");
    assert!(!infos.iter().any(|i| i.queue.as_str() == "default"), "default is empty: {infos:?}");
}

/// A task keeps its queue and priority through retry, release, postpone,
/// reap and requeue: it comes back to its own queue only.
pub async fn queue_kept_through_every_return<S: QueueControl>(s: &S, ns: &Namespace) {
    let mut t = in_queue("keeper", "keep", 4);
    t.max_attempts = 2;
    submit(s, ns, t).await;
    let only_keep = plan(&[("keep", 1)], 1);
    let again = |what: &'static str| {
        let only_keep = only_keep.clone();
        async move {
            assert!(
                ok("claim default", s.claim(ns, &worker(), &ClaimPlan::default_queue(10), LONG_LEASE).await)
                    .is_empty(),
                "{what}: not in default"
            );
            let got = claim_plan(s, ns, &only_keep).await;
            let rec = got.into_iter().next().unwrap_or_else(|| panic!("{what}: back in `keep`"));
            assert_eq!((rec.queue.as_str(), rec.priority), ("keep", 4), "{what}: {rec:?}");
            rec
        }
    };
    let rec = again("submit").await;
    let retry = Finish::Retry { delay: Duration::ZERO, error: "again".to_owned() };
    assert_eq!(ok("retry", s.finish(ns, &lease(&rec), retry).await), TaskState::Pending);
    let rec = again("retry").await;
    assert_eq!(ok("release", s.finish(ns, &lease(&rec), Finish::Released).await), TaskState::Pending);
    let rec = again("release").await;
    let postpone = Finish::Postponed { delay: Duration::ZERO, error: "later".to_owned() };
    assert_eq!(ok("postpone", s.finish(ns, &lease(&rec), postpone).await), TaskState::Pending);
    let rec = again("postpone").await;
    let fail = Finish::Failed { error: "dead".to_owned() };
    assert_eq!(ok("fail", s.finish(ns, &lease(&rec), fail).await), TaskState::Failed);
    ok("requeue", s.requeue(ns, &rec.id).await);
    again("requeue").await;
    // A lease that runs out comes back through the reaper.
    let mut short = in_queue("reaped", "keep", 4);
    short.max_attempts = 3;
    submit(s, ns, short).await;
    let got = ok("claim", s.claim(ns, &worker(), &only_keep, Duration::from_millis(1)).await);
    assert_eq!(got.len(), 1);
    super::wait_until(Duration::from_secs(10), || async {
        let _ = s.reap(ns, 100).await;
        record(s, ns, &got[0].id).await.state == TaskState::Pending
    })
    .await;
    let back = again("reap").await;
    assert_eq!(back.id, got[0].id);
}

/// Cancel and delete take a waiting task out of its queue.
pub async fn queue_cancel_and_delete_leave_it<S: QueueControl>(s: &S, ns: &Namespace) {
    let a = submit(s, ns, in_queue("gone-1", "gone", 1)).await;
    let b = submit(s, ns, in_queue("gone-2", "gone", 0)).await;
    ok("cancel", s.cancel(ns, &a).await);
    assert!(ok("delete", s.delete(ns, &b).await));
    assert!(claim_plan(s, ns, &plan(&[("gone", 10)], 10)).await.is_empty(), "nothing left to claim");
    let infos = ok("queues", s.queues(ns).await);
    assert!(!infos.iter().any(|i| i.queue.as_str() == "gone"), "the queue is empty: {infos:?}");
}

/// Waiting for work on some queues is not cut short by due tasks of other
/// or paused queues (a claimer would spin), and is ended by a submit to
/// one of them.
pub async fn queue_wait_ignores_other_and_paused_queues<S: QueueControl>(s: &S, ns: &Namespace) {
    submit(s, ns, in_queue("elsewhere", "other", 0)).await;
    submit(s, ns, in_queue("held", "held", 0)).await;
    ok("pause", s.pause_queue(ns, &q("held"), true).await);
    let served = [q("mine"), q("held")];
    // A wake-up left by the submits may end the first wait; the second
    // has nothing to end it but its limit.
    let _ = s.wait_for_work(ns, &served, Duration::from_millis(50)).await;
    let started = tokio::time::Instant::now();
    ok("wait", s.wait_for_work(ns, &served, Duration::from_millis(400)).await);
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "the wait returned after {:?}: due tasks of another or a paused queue ended it",
        started.elapsed()
    );
    let waiter = async { s.wait_for_work(ns, &served, Duration::from_secs(20)).await };
    let submitter = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        submit(s, ns, in_queue("mine-1", "mine", 0)).await;
    };
    let started = tokio::time::Instant::now();
    let (waited, ()) = tokio::join!(waiter, submitter);
    ok("wait", waited);
    assert!(started.elapsed() < Duration::from_secs(10), "a submit to a served queue ends the wait");
    ok("resume", s.pause_queue(ns, &q("held"), false).await);
}

/// Bad queue names and priorities are refused at submit, naming the field.
pub async fn queue_bad_priority_refused<S: QueueControl>(s: &S, ns: &Namespace) {
    let mut t = in_queue("too-high", "x", 0);
    t.priority = crate::queue::MAX_PRIORITY + 1;
    match s.submit(ns, t).await {
        Err(Error::Invalid { .. }) => {}
        other => panic!("priority above the maximum: {other:?}"),
    }
    assert!(QueueName::new("has space").is_err());
    assert!(QueueName::new("x".repeat(crate::queue::MAX_QUEUE_LEN + 1)).is_err());
    let mut top = in_queue("top", &"q".repeat(crate::queue::MAX_QUEUE_LEN), crate::queue::MAX_PRIORITY);
    top.due = Due::Now;
    let id = submit(s, ns, top).await;
    let rec = record(s, ns, &id).await;
    assert_eq!(
        (rec.queue.as_str().len(), rec.priority),
        (crate::queue::MAX_QUEUE_LEN, crate::queue::MAX_PRIORITY)
    );
}

async fn set_limits<S: QueueControl>(s: &S, ns: &Namespace, queue: &str, limits: crate::queue::QueueLimits) {
    ok("set_queue_limits", s.set_queue_limits(ns, &q(queue), &limits).await);
}

async fn info<S: QueueControl>(s: &S, ns: &Namespace, queue: &str) -> Option<crate::queue::QueueInfo> {
    ok("queues", s.queues(ns).await).into_iter().find(|i| i.queue.as_str() == queue)
}

/// A concurrency limit of N: no claim takes a task of the queue while N of
/// its tasks run, whatever the plan; a finish, a retry or a reap gives the
/// slot back; another queue in the same plan is not held up; raising and
/// clearing the limit takes effect at the next claim; an idle claimer is
/// not woken by due tasks of a queue at its limit.
pub async fn queue_concurrency_limit_holds<S: QueueControl>(s: &S, ns: &Namespace) {
    set_limits(s, ns, "lim", crate::queue::QueueLimits::new().concurrency(2)).await;
    let mut tasks: Vec<NewTask> = (0..8).map(|i| in_queue(&format!("lim-{i}"), "lim", 0)).collect();
    tasks.extend((0..20).map(|i| in_queue(&format!("free-{i}"), "free", 0)));
    submit_all(s, ns, tasks).await;
    let got = claim_plan(s, ns, &plan(&[("lim", 10), ("free", 10)], 21)).await;
    let per = count_by_queue(&got);
    assert_eq!(
        (per.get("lim"), per.get("free")),
        (Some(&2), Some(&19)),
        "2 of lim, the rest from free: {per:?}"
    );
    assert!(claim_plan(s, ns, &plan(&[("lim", 10)], 10)).await.is_empty(), "lim is at its limit");
    let running = info(s, ns, "lim").await.unwrap_or_else(|| panic!("lim is listed"));
    assert_eq!((running.running, running.limits.concurrency), (2, Some(2)), "{running:?}");
    assert_eq!(running.throttled, 2, "both claims were cut short by the limit, once each: {running:?}");

    // An idle claimer of lim alone is not woken by its due tasks. Wake-ups
    // the submits and claims above left behind (a push delivered late when
    // the server or the test is slow) are taken first: a wait that lasts its whole time says
    // none is left, and one that never does is the failure checked below.
    for _ in 0..10 {
        let t = tokio::time::Instant::now();
        let _ = s.wait_for_work(ns, &[q("lim")], Duration::from_millis(100)).await;
        if t.elapsed() >= Duration::from_millis(90) {
            break;
        }
    }
    let started = tokio::time::Instant::now();
    ok("wait", s.wait_for_work(ns, &[q("lim")], Duration::from_millis(400)).await);
    assert!(started.elapsed() >= Duration::from_millis(200), "a queue at its limit ended the wait");

    let lims: Vec<&TaskRecord> = got.iter().filter(|t| t.queue.as_str() == "lim").collect();
    ok("complete", s.finish(ns, &lease(lims[0]), Finish::Completed).await);
    assert_eq!(claim_plan(s, ns, &plan(&[("lim", 10)], 10)).await.len(), 1, "a finish frees one slot");
    let retry = Finish::Retry { delay: Duration::ZERO, error: "again".to_owned() };
    ok("retry", s.finish(ns, &lease(lims[1]), retry).await);
    let third = claim_plan(s, ns, &plan(&[("lim", 10)], 10)).await;
    assert_eq!(third.len(), 1, "a retry frees its slot");
    assert!(claim_plan(s, ns, &plan(&[("lim", 10)], 10)).await.is_empty(), "at the limit again");

    // Raising the limit lets two more run; clearing it lets the rest run.
    set_limits(s, ns, "lim", crate::queue::QueueLimits::new().concurrency(4)).await;
    assert_eq!(claim_plan(s, ns, &plan(&[("lim", 10)], 10)).await.len(), 2, "raised to 4");
    set_limits(s, ns, "lim", crate::queue::QueueLimits::new()).await;
    let rest = claim_plan(s, ns, &plan(&[("lim", 10)], 10)).await;
    assert_eq!(rest.len(), 3, "no limit: the other three (8 - 1 done - 4 running)");
    let cleared = info(s, ns, "lim").await.unwrap_or_else(|| panic!("lim runs tasks"));
    assert_eq!((cleared.running, cleared.limits), (7, crate::queue::QueueLimits::new()), "{cleared:?}");
}

/// A slot held by a task whose worker died comes back when the reaper
/// moves the task, one lease later, and not before.
pub async fn queue_concurrency_slot_returns_after_reap<S: QueueControl>(s: &S, ns: &Namespace) {
    set_limits(s, ns, "crash", crate::queue::QueueLimits::new().concurrency(1)).await;
    for i in 0..2 {
        let mut t = in_queue(&format!("crash-{i}"), "crash", 0);
        t.max_attempts = 5;
        submit(s, ns, t).await;
    }
    let short = plan(&[("crash", 1)], 1);
    let first = ok("claim", s.claim(ns, &worker(), &short, Duration::from_millis(300)).await);
    assert_eq!(first.len(), 1);
    ok("reap early", s.reap(ns, 100).await);
    assert!(claim_plan(s, ns, &short).await.is_empty(), "the slot is held while the lease runs");
    super::wait_until(Duration::from_secs(10), || async {
        let _ = s.reap(ns, 100).await;
        record(s, ns, &first[0].id).await.state == TaskState::Pending
    })
    .await;
    assert_eq!(claim_plan(s, ns, &short).await.len(), 1, "the reaped task's slot is free again");
}

/// A rate limit is a token bucket: a full bucket's worth at once, then the
/// refill rate, never more than the bucket after an idle spell; other
/// queues are not held up.
pub async fn queue_rate_limit_is_a_token_bucket<S: QueueControl>(s: &S, ns: &Namespace) {
    let rate = crate::queue::RateLimit::new(20, Duration::from_secs(1))
        .and_then(|r| r.burst(10))
        .unwrap_or_else(|e| panic!("rate: {e}"));
    set_limits(s, ns, "rl", crate::queue::QueueLimits::new().rate(rate)).await;
    let mut tasks: Vec<NewTask> = (0..200).map(|i| in_queue(&format!("rl-{i:03}"), "rl", 0)).collect();
    tasks.extend((0..10).map(|i| in_queue(&format!("other-{i}"), "other", 0)));
    submit_all(s, ns, tasks).await;
    let both = claim_plan(s, ns, &plan(&[("rl", 50), ("other", 50)], 100)).await;
    let per = count_by_queue(&both);
    assert_eq!(
        (per.get("rl"), per.get("other")),
        (Some(&10), Some(&10)),
        "the full bucket, and all of other: {per:?}"
    );
    let started = tokio::time::Instant::now();
    let mut total = 10;
    // The refill is counted up to when the last claim was sent: on a loaded
    // machine a claim can take a while to come back, and the bucket it
    // read was the one of when it ran.
    let mut last_sent = started.elapsed();
    while started.elapsed() < Duration::from_millis(1_500) {
        last_sent = started.elapsed();
        total += claim_plan(s, ns, &plan(&[("rl", 50)], 50)).await.len();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = last_sent.as_secs_f64();
    let expected = 10.0 + 20.0 * secs;
    assert!(
        (total as f64) <= expected + 2.0 && (total as f64) >= expected - 6.0,
        "{total} started in {secs:.2}s at 20/s after a bucket of 10: expected about {expected:.0}"
    );
    // An idle spell fills the bucket up to its size, no further.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let burst = claim_plan(s, ns, &plan(&[("rl", 50)], 50)).await.len();
    assert!((10..=11).contains(&burst), "after 1.2 s idle a claim takes the bucket (10), got {burst}");
    let shown = info(s, ns, "rl").await.unwrap_or_else(|| panic!("rl is listed"));
    assert_eq!(shown.limits.rate, Some(rate), "{shown:?}");
}
