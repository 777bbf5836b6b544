//! Cron schedules end to end on `MemoryStorage` with paused time: exactly
//! one task per tick across processes and leader failovers, the misfire and
//! overlap policies, pause and resume, the attribute's schedule.
//!
//! Its own test binary: the `#[reliable_task(cron = ..)]` handler below is
//! registered in every executor of the binary, and must not fire tasks into
//! other tests' namespaces.

use reliable_executor::storage::ScheduleStore;
use std::{
    collections::{BTreeSet, HashMap},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use rand::{Rng, SeedableRng, rngs::StdRng};
use reliable_executor::{
    Executor, ExecutorBuilder, ListQuery, MemoryStorage, Namespace, Result, RunningExecutor, TaskState,
    Timestamp, WorkerId,
    query::Retention,
    reliable_task,
    schedule::{Misfire, Overlap, Schedule},
    storage::{Leadership, Storage},
    testing::{Intercept, Intercepted},
};

type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Every minute, in the attribute: stored by each executor when it starts;
/// its ticks' tasks wait in the handler's queue, at its priority.
#[reliable_task(
    name = "minutely",
    cron = "*/1 * * * *",
    timezone = "Europe/Berlin",
    queue = "ticks",
    priority = 3
)]
async fn minutely() {}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Report {
    kind: String,
}

/// Takes a payload with `Default`: the attribute's schedule sends the
/// default.
#[reliable_task(name = "daily_report", cron = "0 0 2 * * *")]
async fn daily_report(_report: Report) {}

/// Runs for `seconds` of (paused) time.
#[reliable_task(name = "slow")]
async fn slow(seconds: u64) {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
}

/// A process that stops renewing its leadership, as a crashed one would
/// (the store keeps its term until the lease runs out).
#[derive(Clone, Debug, Default)]
struct Crash(Arc<AtomicBool>);

impl<S: Storage> Intercept<S> for Crash {
    async fn acquire_leadership(
        &self,
        inner: &S,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        if self.0.load(Ordering::SeqCst) {
            return Err(reliable_executor::Error::storage("crashed", true));
        }
        inner.acquire_leadership(ns, worker, ttl).await
    }
}

type Store = Intercepted<MemoryStorage, Crash>;

fn builder<S: reliable_executor::storage::ExecutorStorage>(
    store: S,
    ns: &Namespace,
    worker: String,
) -> ExecutorBuilder<S> {
    Executor::builder(store)
        .namespace(ns.as_str())
        .worker_id(worker)
        .concurrency(4)
        .lease(Duration::from_secs(6))
        .heartbeat_interval(Duration::from_secs(2))
        .housekeeping_interval(Duration::from_secs(2))
        // Keeps a simulated day's finished tasks for the final count.
        .retention(Retention::default().completed(Duration::from_secs(7 * 86_400)))
}

/// The ids of the tasks named `name` in every state, by listing each.
async fn ids_of<S: reliable_executor::storage::ScheduleStore>(
    store: &S,
    ns: &Namespace,
    name: &str,
) -> Result<Vec<(String, TaskState)>> {
    let mut out = Vec::new();
    for state in TaskState::ALL {
        let mut cursor = None;
        loop {
            let mut q = ListQuery::new(state, 500);
            if let Some(c) = cursor.take() {
                q = q.after(c);
            }
            let page = store.list(ns, q).await?;
            for t in page.tasks {
                if t.name == name {
                    out.push((t.id.as_str().to_owned(), t.state));
                }
            }
            match page.next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
    }
    Ok(out)
}

/// 3 processes over 24 simulated hours of a per-minute schedule, the
/// leader crashed at random instants (and replaced): exactly one task per
/// tick, 1,440 of them, each run once.
#[tokio::test(start_paused = true)]
async fn three_processes_a_day_of_minutes_leader_crashes_exactly_one_task_per_tick() -> TestResult {
    let memory = MemoryStorage::new();
    let ns = Namespace::new("cron-day")?;
    let mut rng = StdRng::seed_from_u64(0x15);
    let mut running: Vec<(String, Crash, RunningExecutor)> = Vec::new();
    let mut next_worker = 0;
    let mut start = |memory: &MemoryStorage| {
        next_worker += 1;
        let crash = Crash::default();
        let store: Store = Intercepted::new(memory.clone(), crash.clone());
        (format!("w{next_worker}"), crash, store)
    };
    for _ in 0..3 {
        let (worker, crash, store) = start(&memory);
        let executor = builder(store, &ns, worker.clone()).build().await?;
        running.push((worker, crash, executor.start()));
    }
    // The attribute's schedule is stored once, whatever the number of
    // processes, with its zone and a cursor at the store's now.
    let first = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(e) = memory.schedules(&ns).await?.into_iter().find(|e| e.schedule.name == "minutely")
            {
                return Result::<_>::Ok(e);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await??;
    assert_eq!(
        (first.schedule.cron.as_str(), first.schedule.timezone.as_str()),
        ("*/1 * * * *", "Europe/Berlin")
    );
    let t0 = first.cursor;
    let end = t0.saturating_add(Duration::from_secs(86_400));

    let mut crashes = 0;
    while memory.now() < end {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1_000..1_800_000))).await;
        if memory.now() >= end {
            break;
        }
        let Some(term) = memory.leader(&ns).await? else { continue };
        let Some(i) = running.iter().position(|(w, ..)| *w == term.worker.as_str()) else { continue };
        let (_, crash, executor) = running.swap_remove(i);
        crash.0.store(true, Ordering::SeqCst);
        crashes += 1;
        // The crashed process is gone for good once its term has lapsed;
        // a new one takes its place.
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(7)).await;
            let _ = executor.shutdown().await;
        });
        let (worker, crash, store) = start(&memory);
        let executor = builder(store, &ns, worker.clone()).build().await?;
        running.push((worker, crash, executor.start()));
    }
    // The last tick's task runs, then everything stops.
    tokio::time::sleep(Duration::from_secs(30)).await;
    for (_, _, executor) in running {
        executor.shutdown().await?;
    }
    let cron = first.schedule.parsed()?;
    let expected: BTreeSet<String> = cron
        .ticks_between(t0, end, 10_000)
        .into_iter()
        .map(|t| first.schedule.tick_id(t).map(|id| id.as_str().to_owned()))
        .collect::<Result<_>>()?;
    let tasks = ids_of(&memory, &ns, "minutely").await?;
    let fired: BTreeSet<String> = tasks.iter().map(|(id, _)| id.clone()).collect();
    let in_window: BTreeSet<String> =
        fired.iter().filter(|id| **id <= format!("minutely@{}", rfc(end))).cloned().collect();
    assert!(crashes >= 20, "the leader crashed {crashes} times");
    assert_eq!(expected.len(), 1_440, "a day of minutes");
    let missed: Vec<&String> = expected.difference(&in_window).collect();
    let extra: Vec<&String> = in_window.difference(&expected).collect();
    assert!(missed.is_empty() && extra.is_empty(), "missed ticks {missed:?}, extra tasks {extra:?}");
    let not_done: Vec<_> =
        tasks.iter().filter(|(id, s)| expected.contains(id) && *s != TaskState::Completed).collect();
    assert!(not_done.is_empty(), "every tick's task ran: {not_done:?}");
    let some = expected.iter().next().ok_or("no tick")?;
    let rec = memory.get(&ns, &reliable_executor::TaskId::new(some.clone())?).await?.ok_or("no task")?;
    assert_eq!((rec.queue.as_str(), rec.priority), ("ticks", 3), "a tick's task has the handler's queue");
    println!("1,440 ticks over 24 simulated hours, {crashes} leader crashes: one task each");
    Ok(())
}

fn rfc(t: Timestamp) -> String {
    i64::try_from(t.as_millis())
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(String::new, |i| i.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// What each policy fires after an outage of every process: `Skip` the
/// latest missed tick, `All { max: 3 }` the three latest, `None` nothing;
/// the tick after the outage fires under each.
#[tokio::test(start_paused = true)]
async fn misfire_policies_after_an_outage() -> TestResult {
    let memory = MemoryStorage::new();
    let ns = Namespace::new("cron-misfire")?;
    align_to_minute(&memory).await;
    let executor =
        builder(memory.clone(), &ns, "a".to_owned()).misfire_grace(Duration::from_secs(10)).build().await?;
    let schedules = executor.schedules();
    for (name, misfire) in
        [("skip", Misfire::Skip), ("all", Misfire::All { max: 3 }), ("none", Misfire::None)]
    {
        schedules.put(slow::every("0 * * * * *").name(name).payload(0).misfire(misfire)).await?;
    }
    let running = executor.start();
    tokio::time::sleep(Duration::from_secs(150)).await;
    running.shutdown().await?;
    let before: HashMap<String, usize> = count_by_schedule(&memory, &ns).await?;
    for name in ["skip", "all", "none"] {
        assert_eq!(before.get(name), Some(&2), "{name}: two ticks in 150 s: {before:?}");
    }
    // Every process down for 10 minutes.
    tokio::time::sleep(Duration::from_secs(600)).await;
    let running = builder(memory.clone(), &ns, "b".to_owned())
        .misfire_grace(Duration::from_secs(10))
        .build()
        .await?
        .start();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let after = count_by_schedule(&memory, &ns).await?;
    assert_eq!(after.get("skip"), Some(&3), "skip: the latest missed tick once: {after:?}");
    assert_eq!(after.get("all"), Some(&5), "all: the three latest: {after:?}");
    assert_eq!(after.get("none"), Some(&2), "none: nothing missed: {after:?}");
    tokio::time::sleep(Duration::from_secs(60)).await;
    running.shutdown().await?;
    let later = count_by_schedule(&memory, &ns).await?;
    for (name, n) in [("skip", 4), ("all", 6), ("none", 3)] {
        assert_eq!(later.get(name), Some(&n), "{name} fires on time again: {later:?}");
    }
    Ok(())
}

/// Sleeps until one second past the store's next whole minute, so the
/// ticks of a per-minute schedule fall at known offsets.
async fn align_to_minute(store: &MemoryStorage) {
    let into = store.now().as_millis() % 60_000;
    tokio::time::sleep(Duration::from_millis(60_000 - into + 1_000)).await;
}

async fn count_by_schedule(store: &MemoryStorage, ns: &Namespace) -> Result<HashMap<String, usize>> {
    let mut out = HashMap::new();
    for (id, _) in ids_of(store, ns, "slow").await? {
        let schedule = id.split('@').next().unwrap_or_default().to_owned();
        *out.entry(schedule).or_insert(0) += 1;
    }
    Ok(out)
}

/// `Overlap::Skip` skips ticks while the last run waits or runs; `Allow`
/// overlaps. Pause passes ticks without a task and resume fires none of
/// them.
#[tokio::test(start_paused = true)]
async fn overlap_skip_and_pause_resume() -> TestResult {
    let memory = MemoryStorage::new();
    let ns = Namespace::new("cron-overlap")?;
    align_to_minute(&memory).await;
    let executor = builder(memory.clone(), &ns, "a".to_owned()).build().await?;
    let schedules = executor.schedules();
    // Each run takes 150 s; a tick every 60 s.
    schedules.put(slow::every("0 * * * * *").name("skip").payload(150).overlap(Overlap::Skip)).await?;
    schedules.put(slow::every("0 * * * * *").name("allow").payload(150)).await?;
    schedules.put(slow::every("0 * * * * *").name("paused").payload(0)).await?;
    let running = executor.start();
    tokio::time::sleep(Duration::from_secs(90)).await;
    assert!(schedules.pause("paused").await?);
    tokio::time::sleep(Duration::from_secs(510)).await;
    let counts = count_by_schedule(&memory, &ns).await?;
    // 10 ticks in 600 s; a skip run lasts 150 s, so one run per three ticks.
    assert_eq!(counts.get("allow"), Some(&10), "{counts:?}");
    let skip = counts.get("skip").copied().unwrap_or(0);
    assert!((3..=4).contains(&skip), "overlap skip: one run per three ticks, got {skip}: {counts:?}");
    assert_eq!(counts.get("paused"), Some(&1), "one tick before the pause: {counts:?}");
    let info = schedules.get("paused").await?.ok_or("listed")?;
    assert!(info.paused);
    assert!(schedules.resume("paused").await?);
    tokio::time::sleep(Duration::from_secs(61)).await;
    let counts = count_by_schedule(&memory, &ns).await?;
    assert_eq!(counts.get("paused"), Some(&2), "resume fires the next tick only: {counts:?}");
    assert!(schedules.remove("paused").await?);
    running.shutdown().await?;
    Ok(())
}

/// The attribute's schedule of a handler with a payload sends the payload
/// type's default; a schedule of an unknown task is refused by a checking
/// client; a bad expression is refused with its name.
#[tokio::test(start_paused = true)]
async fn attribute_payload_default_and_bad_schedules() -> TestResult {
    let memory = MemoryStorage::new();
    let ns = Namespace::new("cron-attr")?;
    let executor = builder(memory.clone(), &ns, "a".to_owned()).build().await?;
    let running = executor.start();
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(info) = executor.schedules().get("daily_report").await? {
                return Result::<_>::Ok(info);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await??;
    assert_eq!(found.schedule.payload, r#"{"kind":""}"#);
    assert_eq!(found.schedule.timezone, "UTC");
    assert!(found.next_fire.is_some());
    let e = executor.schedules().put(Schedule::new("x", "no_such_task", "* * * * *", "UTC")?).await;
    assert!(matches!(e, Err(reliable_executor::Error::UnknownTask(_))), "{e:?}");
    let e = executor.schedules().put(slow::every("not cron").payload(1)).await;
    assert!(e.as_ref().is_err_and(|e| e.to_string().contains("not cron")), "{e:?}");
    let e = executor.schedules().put(slow::every("* * * * *")).await;
    assert!(e.as_ref().is_err_and(|e| e.to_string().contains(".payload(")), "{e:?}");
    running.shutdown().await?;
    Ok(())
}
