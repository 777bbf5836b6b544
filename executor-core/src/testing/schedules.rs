//! Checks of the cron schedule methods: `put_schedule`, `schedules`,
//! `remove_schedule`, `pause_schedule`, `advance_schedule`.

use std::time::Duration;

use crate::{
    Namespace, TaskId, Timestamp,
    schedule::{Misfire, Overlap, Schedule},
    storage::{Advance, MAX_FENCE, ScheduleEntry, ScheduleStore},
};

use super::support::ok;

fn schedule(name: &str, cron: &str) -> Schedule {
    Schedule::new(name, "report", cron, "Europe/Berlin").unwrap_or_else(|e| panic!("test schedule: {e}"))
}

async fn entry<S: ScheduleStore>(s: &S, ns: &Namespace, name: &str) -> ScheduleEntry {
    ok("schedules", s.schedules(ns).await)
        .into_iter()
        .find(|e| e.schedule.name == name)
        .unwrap_or_else(|| panic!("schedule {name} is not listed"))
}

fn id(s: &str) -> TaskId {
    TaskId::new(s).unwrap_or_else(|e| panic!("test id: {e}"))
}

/// Stored schedules read back field for field, listed by name; a new one's
/// cursor is the store's now; a replaced one keeps its state; removing
/// answers whether it existed.
pub async fn schedule_put_list_replace_remove<S: ScheduleStore>(s: &S, ns: &Namespace) {
    assert!(ok("schedules", s.schedules(ns).await).is_empty(), "a fresh namespace has none");
    let before = ok("now", s.now(ns).await);
    let b = schedule("b.nightly:report-é", "0 0 2 * * *")
        .payload_json(r#"{"kind":"daily","note":"ünïcode \"quoted\""}"#)
        .unwrap_or_else(|e| panic!("{e}"))
        .misfire(Misfire::All { max: 7 })
        .overlap(Overlap::Skip);
    let long = "a".repeat(crate::schedule::MAX_SCHEDULE_NAME_LEN);
    let a = schedule(&long, "*/5 * * * *").misfire(Misfire::None);
    ok("put", s.put_schedule(ns, &b).await);
    ok("put", s.put_schedule(ns, &a).await);
    let after = ok("now", s.now(ns).await);
    let all = ok("schedules", s.schedules(ns).await);
    let names: Vec<&str> = all.iter().map(|e| e.schedule.name.as_str()).collect();
    assert_eq!(names, [long.as_str(), b.name.as_str()], "listed by name");
    assert_eq!(all[0].schedule, a, "read back as stored");
    assert_eq!(all[1].schedule, b, "read back as stored");
    for e in &all {
        assert!(!e.paused, "new schedules run");
        assert!(before <= e.cursor && e.cursor <= after, "cursor {:?} is the store's now", e.cursor);
        assert_eq!((e.fence, e.last_task.clone()), (0, None));
    }

    let cursor = all[1].cursor;
    let moved = Advance::new(cursor, cursor.saturating_add(Duration::from_secs(60)), 3, Some(id("b@1")));
    assert!(ok("advance", s.advance_schedule(ns, &b.name, &moved).await));
    ok("pause", s.pause_schedule(ns, &b.name, true).await);
    let replaced =
        schedule(&b.name, "*/10 * * * * *").payload_json("[1,2,3]").unwrap_or_else(|e| panic!("{e}"));
    ok("put", s.put_schedule(ns, &replaced).await);
    let e = entry(s, ns, &b.name).await;
    assert_eq!(e.schedule, replaced, "the definition is replaced");
    assert!(e.paused, "replacing keeps a pause");
    assert_eq!((e.cursor, e.fence, e.last_task), (moved.to, 3, Some(id("b@1"))), "and the cursor");

    assert!(ok("remove", s.remove_schedule(ns, &b.name).await), "it existed");
    assert!(!ok("remove", s.remove_schedule(ns, &b.name).await), "gone");
    assert!(!ok("remove", s.remove_schedule(ns, "never-there").await));
    let names: Vec<String> =
        ok("schedules", s.schedules(ns).await).into_iter().map(|e| e.schedule.name).collect();
    assert_eq!(names, [long]);
}

/// Pause and resume answer whether the schedule exists and change only the
/// flag.
pub async fn schedule_pause_resume<S: ScheduleStore>(s: &S, ns: &Namespace) {
    assert!(!ok("pause", s.pause_schedule(ns, "missing", true).await), "no such schedule");
    let sc = schedule("pausable", "* * * * *");
    ok("put", s.put_schedule(ns, &sc).await);
    let before = entry(s, ns, "pausable").await;
    assert!(ok("pause", s.pause_schedule(ns, "pausable", true).await));
    assert!(ok("pause again", s.pause_schedule(ns, "pausable", true).await), "idempotent");
    let paused = entry(s, ns, "pausable").await;
    assert!(paused.paused);
    assert_eq!((paused.cursor, paused.schedule), (before.cursor, before.schedule.clone()));
    assert!(ok("resume", s.pause_schedule(ns, "pausable", false).await));
    assert!(!entry(s, ns, "pausable").await.paused);
    assert!(
        ok("schedules", s.schedules(ns).await).iter().all(|e| e.schedule.name != "missing"),
        "not created"
    );
}

/// `advance_schedule` moves the cursor only from the cursor it names and
/// only for a fencing token at least the stored one; a move without a task
/// keeps the last task; concurrent moves from one cursor: exactly one wins.
pub async fn schedule_advance_is_fenced_and_conditional<S: ScheduleStore>(s: &S, ns: &Namespace) {
    let sc = schedule("fenced", "* * * * *");
    ok("put", s.put_schedule(ns, &sc).await);
    let c0 = entry(s, ns, "fenced").await.cursor;
    let minute = Duration::from_secs(60);
    let (c1, c2, c3) =
        (c0.saturating_add(minute), c0.saturating_add(minute * 2), c0.saturating_add(minute * 3));

    let wrong = Advance::new(c1, c2, 5, Some(id("fenced@x")));
    assert!(!ok("advance", s.advance_schedule(ns, "fenced", &wrong).await), "from a cursor not stored");
    let missing = Advance::new(c0, c1, 5, None);
    assert!(!ok("advance", s.advance_schedule(ns, "nope", &missing).await), "no such schedule");

    let first = Advance::new(c0, c1, 5, Some(id("fenced@1")));
    assert!(ok("advance", s.advance_schedule(ns, "fenced", &first).await));
    let e = entry(s, ns, "fenced").await;
    assert_eq!((e.cursor, e.fence, e.last_task.clone()), (c1, 5, Some(id("fenced@1"))));

    let deposed = Advance::new(c1, c2, 4, Some(id("fenced@stale")));
    assert!(!ok("advance", s.advance_schedule(ns, "fenced", &deposed).await), "a smaller token is refused");
    let skip = Advance::new(c1, c2, 5, None);
    assert!(ok("advance", s.advance_schedule(ns, "fenced", &skip).await), "the same term goes on");
    let e = entry(s, ns, "fenced").await;
    assert_eq!((e.cursor, e.last_task.clone()), (c2, Some(id("fenced@1"))), "a skip keeps the last task");

    let racers: Vec<_> = (0..8u64)
        .map(|i| {
            let a = Advance::new(c2, c3, 6, Some(id(&format!("fenced@race-{i}"))));
            async move { ok("advance", s.advance_schedule(ns, "fenced", &a).await) }
        })
        .collect();
    let won = futures_join_all(racers).await.into_iter().filter(|w| *w).count();
    assert_eq!(won, 1, "concurrent moves from one cursor: exactly one wins");
    let e = entry(s, ns, "fenced").await;
    assert_eq!((e.cursor, e.fence), (c3, 6));
    assert!(e.last_task.is_some_and(|t| t.as_str().starts_with("fenced@race-")));
    let far = Advance::new(c3, Timestamp::MAX, MAX_FENCE, None);
    assert!(ok("advance", s.advance_schedule(ns, "fenced", &far).await), "extreme values are stored");
    let e = entry(s, ns, "fenced").await;
    assert_eq!((e.cursor, e.fence), (Timestamp::MAX, MAX_FENCE));
}

/// Runs the futures concurrently on the current task.
async fn futures_join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut set = Vec::with_capacity(futures.len());
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    out.into_iter().flatten().collect()
}
