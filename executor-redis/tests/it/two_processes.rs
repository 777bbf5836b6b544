//! Two executor processes on one namespace over 20,000 tasks: every task
//! runs exactly once, so none runs twice or concurrently. The parent test
//! starts this test binary twice more, each child running `child_executor`
//! as a full executor against `REDIS_URL`.

use std::{collections::HashMap, process::Stdio, time::Duration};

use executor_core::{
    Executor, Handler, TaskContext, TaskId, TaskState,
    storage::{NewTask, Storage},
};
use fred::interfaces::{HashesInterface, KeysInterface};
use tokio::time::Instant;

use crate::common;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TASKS: usize = 20_000;
const NS_VAR: &str = "EXECUTOR_REDIS_TWO_PROCESS_NS";
/// `child_executor` as the test harness names it (module path in `it`).
const CHILD: &str = "two_processes::child_executor";

/// Where the children record runs: task id -> `<pid>` per run, appended.
fn runs_key(ns: &str) -> String {
    format!("test-runs:{ns}")
}

/// One executor process: each `mark` task appends this process's id to the
/// task's entry in the runs hash; stops when nothing waits or runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "helper: started as a child process by `two_processes_run_each_task_once`"]
async fn child_executor() -> TestResult {
    let ns = std::env::var(NS_VAR)?;
    let storage = common::connect().await;
    let pool = storage.pool().clone();
    let key = runs_key(&ns);
    let me = std::process::id();
    let handler = Handler::new("mark", move |_: (), ctx: TaskContext| {
        let (pool, key) = (pool.clone(), key.clone());
        async move {
            let client = pool.next();
            let previous: Option<String> =
                client.hget(&key, ctx.id().as_str()).await.map_err(|e| e.to_string())?;
            let runs = previous.map(|p| format!("{p},{me}")).unwrap_or_else(|| me.to_string());
            client
                .hset::<i64, _, _>(&key, (ctx.id().as_str(), runs))
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        }
    });
    let executor = Executor::builder(storage).namespace(ns).concurrency(32).handler(handler).build().await?;
    let running = executor.start();
    let give_up = Instant::now() + Duration::from_secs(100);
    loop {
        let c = executor.counts().await?;
        let busy = c.get(TaskState::Created) + c.get(TaskState::Pending) + c.get(TaskState::Running);
        if (c.total() > 0 && busy == 0) || Instant::now() > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_run_each_task_once() -> TestResult {
    let _serial = common::serial().await;
    let (storage, ns) = common::fresh().await;
    let tasks: Vec<NewTask> = (0..TASKS)
        .map(|_| {
            let mut t = executor_core::testing::new_task(TaskId::generate().as_str());
            t.name = "mark".to_owned();
            t.payload = b"null".to_vec();
            t
        })
        .collect();
    // Both processes start before the tasks land, so both compete for them.
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let mut children = Vec::new();
    for _ in 0..2 {
        children.push(
            tokio::process::Command::new(&exe)
                // The full name in the test binary `it`: `--exact` matches it whole.
                .args(["--exact", CHILD, "--ignored", "--nocapture", "--test-threads=1"])
                .env(NS_VAR, ns.as_str())
                .stdout(Stdio::null())
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    for r in storage.submit_many(&ns, tasks).await? {
        r?;
    }
    for mut child in children {
        let status = tokio::time::timeout(Duration::from_secs(120), child.wait()).await??;
        assert!(status.success(), "an executor process failed: {status}");
    }
    let elapsed = started.elapsed();

    let counts = storage.counts(&ns).await?;
    let client = storage.pool().next();
    let runs: HashMap<String, String> = client.hgetall(runs_key(ns.as_str())).await?;
    let _: i64 = client.del(runs_key(ns.as_str())).await?;
    common::cleanup(&storage, &ns).await;
    assert_eq!(counts.get(TaskState::Completed), TASKS as u64, "{counts:?}");
    assert_eq!(runs.len(), TASKS, "every task ran");
    let twice: Vec<_> = runs.iter().filter(|(_, r)| r.contains(',')).take(5).collect();
    assert!(twice.is_empty(), "tasks ran more than once: {twice:?}");
    let mut per_process: HashMap<&str, usize> = HashMap::new();
    for pid in runs.values() {
        *per_process.entry(pid.as_str()).or_default() += 1;
    }
    assert_eq!(per_process.len(), 2, "both processes ran tasks: {per_process:?}");
    eprintln!("two processes ran {TASKS} tasks once each in {elapsed:?} (incl. start-up): {per_process:?}");
    Ok(())
}
