//! Workers whose clocks are an hour off (`faketime -f +1h` and `-1h`, from
//! the `faketime` package) behave like any other: due times, leases and the
//! recovery of a killed worker's tasks follow the store's clock.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use executor_chaos::{
    ledger::{Event, now_ms},
    process::{Signal, TempDir, signal},
    store::ChaosStore,
    worker::TASK_NAME,
};
use executor_core::{
    Namespace, TaskId, TaskState,
    storage::{Due, NewTask},
};

use crate::common::{self, TestResult, events, spawn_worker, wait_for};

const LEASE_MS: u64 = 2_000;

fn task(id: &str, due: Due) -> Result<NewTask, executor_core::Error> {
    Ok({
        let mut t = NewTask::new(TaskId::new(id)?, TASK_NAME.to_owned(), b"7".to_vec());
        t.due = due;
        t.max_attempts = 100;
        t
    })
}

fn faketime_lib() -> Option<String> {
    std::env::var("FAKETIME_LIB").ok().or_else(|| {
        ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]
            .iter()
            .map(|d| std::path::Path::new(d).join("libfaketime.so.1"))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    })
}

async fn skewed_workers<S: ChaosStore>(storage: S, backend: &str, url: &str) -> TestResult {
    let lib = faketime_lib()
        .ok_or("libfaketime not found: install it with `apt-get install faketime` (scripts/test.sh does)")?;
    let ns_text = common::unique_ns("skew");
    let ns = Namespace::new(ns_text.clone())?;
    let dir = TempDir::new("chaos-skew")?;
    let spawn = |skew: &str, name: &str| {
        // One directory per worker, so each worker's pid is read from its own ledger.
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub)?;
        let ledger = sub.join("ledger.log").display().to_string();
        let lease = LEASE_MS.to_string();
        let args = [
            "--storage",
            backend,
            "--url",
            url,
            "--ns",
            &ns_text,
            "--ledger",
            &ledger,
            "--lease-ms",
            &lease,
            "--concurrency",
            "4",
        ];
        spawn_worker(
            &[("LD_PRELOAD", &lib), ("FAKETIME", skew)],
            &args,
            &dir.path().join(format!("{name}.out")),
        )
    };
    let mut ahead = spawn("+1h", "ahead")?;
    let mut behind = spawn("-1h", "behind")?;
    let ups = wait_for(Duration::from_secs(30), || {
        let ups: Vec<(u32, u64)> = events(dir.path())
            .iter()
            .filter_map(|e| match e {
                Event::Up { pid, t, .. } => Some((*pid, *t)),
                _ => None,
            })
            .collect();
        (ups.len() == 2).then_some(ups)
    })
    .ok_or("the faketime'd workers did not start")?;
    let pid_of = |name: &str| {
        events(&dir.path().join(name)).iter().find_map(|e| match e {
            Event::Up { pid, .. } => Some(*pid),
            _ => None,
        })
    };
    let (ahead_pid, behind_pid) =
        (pid_of("ahead").ok_or("no ahead pid")?, pid_of("behind").ok_or("no behind pid")?);
    let real = now_ms() as i64;
    for (pid, t) in &ups {
        let skew = *t as i64 - real;
        println!("{backend}: worker {pid} clock is {skew:+} ms off");
        assert!((skew.abs() - 3_600_000).abs() < 120_000, "faketime did not skew worker {pid}: {skew} ms");
    }

    let mut ids = Vec::new();
    let mut batch = Vec::new();
    for i in 0..200 {
        let id = format!("now{i:04}");
        batch.push(task(&id, Due::Now)?);
        ids.push(id);
    }
    for i in 0..50 {
        let id = format!("later{i:04}");
        batch.push(task(&id, Due::After(Duration::from_secs(3)))?);
        ids.push(id);
    }
    for r in storage.submit_many(&ns, batch).await? {
        r?;
    }

    // Kill the worker that is an hour ahead while it holds tasks.
    let held = wait_for(Duration::from_secs(20), || {
        let ev = events(dir.path());
        let ended: HashSet<&str> = ev
            .iter()
            .filter_map(|e| match e {
                Event::End { task, pid, .. } if *pid == ahead_pid => Some(task.as_str()),
                _ => None,
            })
            .collect();
        let open: Vec<String> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Start { task, pid, .. } if *pid == ahead_pid && !ended.contains(task.as_str()) => {
                    Some(task.clone())
                }
                _ => None,
            })
            .collect();
        (ended.len() >= 5 && !open.is_empty()).then_some(())
    });
    if held.is_none() {
        let starts = events(dir.path())
            .iter()
            .filter(|e| matches!(e, Event::Start { pid, .. } if *pid == ahead_pid))
            .count();
        return Err(format!("the +1h worker did not hold tasks while others waited ({starts} starts)").into());
    }
    signal(ahead_pid, Signal::Kill);
    let killed_at = Instant::now();
    ahead.wait_exit(Duration::from_secs(5));
    let ev = events(dir.path());
    let ended: HashSet<&str> = ev
        .iter()
        .filter_map(|e| match e {
            Event::End { task, pid, .. } if *pid == ahead_pid => Some(task.as_str()),
            _ => None,
        })
        .collect();
    let orphans: Vec<String> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Start { task, pid, .. } if *pid == ahead_pid && !ended.contains(task.as_str()) => {
                Some(task.clone())
            }
            _ => None,
        })
        .collect();

    let mut recovered_in = None;
    for _ in 0..600 {
        let mut all = true;
        for id in &orphans {
            let r = storage.get(&ns, &TaskId::new(id.clone())?).await?;
            all &= r.is_some_and(|r| r.state == TaskState::Completed);
        }
        if all {
            recovered_in = Some(killed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let recovered_in = recovered_in.ok_or("the killed +1h worker's tasks were not recovered within 30 s")?;
    println!(
        "{backend}: {} tasks held by the killed +1h worker completed elsewhere {recovered_in:?} after the kill",
        orphans.len()
    );
    assert!(recovered_in < Duration::from_millis(LEASE_MS + 5_000), "{recovered_in:?}");

    let mut late_max = 0;
    for id in &ids {
        let mut rec = None;
        for _ in 0..600 {
            rec = storage.get(&ns, &TaskId::new(id.clone())?).await?;
            if rec.as_ref().is_some_and(|r| r.state.is_terminal()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let rec = rec.ok_or("task vanished")?;
        assert_eq!(rec.state, TaskState::Completed, "{rec:?}");
        let started = rec.started_at.ok_or("completed without started_at")?;
        assert!(started >= rec.due_at, "{id} started at {started:?} before its due time {:?}", rec.due_at);
        if id.starts_with("later") {
            late_max = late_max.max(started.as_millis() - rec.due_at.as_millis());
        }
    }
    println!("{backend}: delayed tasks started at most {late_max} ms after their due time (store clock)");
    assert!(
        late_max < 5_000,
        "a delayed task started {late_max} ms late (an hour would mean a worker clock was used)"
    );
    signal(behind_pid, Signal::Term);
    behind.wait_exit(Duration::from_secs(10));
    signal(behind_pid, Signal::Kill);
    storage.purge(&ns).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skewed_clocks_redis() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    let url = common::redis_url();
    let storage = executor_redis::RedisStorage::connect_once(&url)
        .await
        .map_err(|e| format!("Redis at {url} does not answer ({e}); start it with scripts/test.sh"))?;
    skewed_workers(storage, "redis", &url).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skewed_clocks_mysql() -> TestResult {
    let _one = crate::common::one_at_a_time_async().await;
    let url = common::mysql_url();
    let storage = executor_mysql::MySqlStorage::connect_once(&url)
        .await
        .map_err(|e| format!("MariaDB at {url} does not answer ({e}); start it with scripts/test.sh"))?;
    skewed_workers(storage, "mysql", &url).await
}
