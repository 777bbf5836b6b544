//! The quickstart: every feature of the executor in one short run on the
//! in-memory storage, no server needed. Exits by itself within ~10 seconds.
//!
//! ```sh
//! cargo run --example quickstart
//! # the same program on a real store:
//! cargo run --example quickstart -- --storage redis   # REDIS_URL, default redis://127.0.0.1:6379
//! cargo run --example quickstart -- --storage mysql   # MYSQL_URL, default mysql://root@127.0.0.1:3306/test
//! cargo run --example quickstart -- --storage postgres   # POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/test
//! ```

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU32, Ordering},
    },
    time::Instant,
};

use clap::Parser;
use executor_core::{Executor, Listener, SubmitOutcome, TaskId, TaskRecord, TaskState, prelude::*};

// ---- the application's state, given to the executor with `.data(..)` ----

/// When the run started: handlers and the listener print times from it.
#[derive(Clone, Copy, Debug)]
struct Clock(Instant);

impl Clock {
    fn say(&self, line: &str) {
        println!("{:>6} ms  {line}", self.0.elapsed().as_millis());
    }
}

/// A payment gateway that is down for its first two calls.
#[derive(Clone, Debug, Default)]
struct Gateway {
    calls: Arc<AtomicU32>,
}

/// A CRM that rejects every sync until its bug is fixed.
#[derive(Clone, Debug, Default)]
struct Crm {
    bug_fixed: Arc<AtomicBool>,
}

/// How often the statistics were recomputed.
#[derive(Clone, Debug, Default)]
struct Stats {
    refreshes: Arc<AtomicU32>,
}

// ---- handlers: plain async fns, registered by the attribute ----

#[derive(Debug, Serialize, Deserialize)]
struct Welcome {
    user: String,
}

/// Runs at once.
#[reliable_task(name = "send_welcome")]
async fn send_welcome(param: Welcome, clock: Data<Clock>) -> Result<(), TaskError> {
    clock.say(&format!("    send_welcome: hello, {}!", param.user));
    Ok(())
}

/// Submitted with a delay.
#[reliable_task(name = "send_reminder")]
async fn send_reminder(param: Welcome, clock: Data<Clock>) {
    clock.say(&format!("    send_reminder: don't forget us, {}", param.user));
}

/// Fails twice, then succeeds: retried with exponential backoff.
#[reliable_task(name = "charge_card", retry_limit = 4, exponential(base = "200ms", factor = 2.0, cap = "2s"))]
async fn charge_card(
    order_id: u64,
    gateway: Data<Gateway>,
    clock: Data<Clock>,
    ctx: TaskContext,
) -> Result<(), TaskError> {
    let n = gateway.calls.fetch_add(1, Ordering::SeqCst) + 1;
    if n <= 2 {
        return Err(TaskError::retry(format!("payment gateway unavailable (attempt {})", ctx.attempt())));
    }
    clock.say(&format!("    charge_card: order {order_id} charged on attempt {}", ctx.attempt()));
    Ok(())
}

/// Always fails until the "bug" is fixed: ends FAILED, then is requeued by hand.
#[reliable_task(name = "sync_crm", retry_limit = 1, retry_interval = "100ms")]
async fn sync_crm(customer_id: u64, crm: Data<Crm>, clock: Data<Clock>) -> Result<(), TaskError> {
    if !crm.bug_fixed.load(Ordering::SeqCst) {
        return Err(TaskError::retry(format!("CRM rejected customer {customer_id}: field `email` missing")));
    }
    clock.say(&format!("    sync_crm: customer {customer_id} synced"));
    Ok(())
}

/// Debounced: a burst of submits runs it once, with the last payload.
#[reliable_task(name = "refresh_stats")]
async fn refresh_stats(views: u32, stats: Data<Stats>, clock: Data<Clock>) {
    stats.refreshes.fetch_add(1, Ordering::SeqCst);
    clock.say(&format!("    refresh_stats: recomputed with {views} views"));
}

/// Takes far longer than its max_duration: ends TIMEOUT.
#[reliable_task(name = "build_report", max_duration = "1s")]
async fn build_report(ctx: TaskContext) {
    tokio::select! {
        () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
        () = ctx.cancelled() => {}
    }
}

// ---- a listener that prints the timeline ----

#[derive(Debug)]
struct Timeline(Clock);

impl Listener for Timeline {
    fn on_submitted(&self, id: &TaskId, name: &str, outcome: SubmitOutcome) {
        // Repeats of a debounced submit are summarised after the burst.
        if outcome == SubmitOutcome::Created {
            self.0.say(&format!("{name} {id}: submitted"));
        }
    }
    fn on_started(&self, task: &TaskRecord) {
        self.0.say(&format!("{} {}: attempt {} started", task.name, task.id, task.attempts));
    }
    fn on_completed(&self, task: &TaskRecord) {
        self.0.say(&format!("{} {}: COMPLETED", task.name, task.id));
    }
    fn on_retry_scheduled(&self, task: &TaskRecord, error: &str, delay_ms: u64) {
        self.0.say(&format!("{} {}: failed ({error}); retry in {delay_ms} ms", task.name, task.id));
    }
    fn on_dead_lettered(&self, task: &TaskRecord, state: TaskState, error: &str) {
        self.0.say(&format!("{} {}: {state} (dead letter): {error}", task.name, task.id));
    }
    fn on_cancelled(&self, id: &TaskId) {
        self.0.say(&format!("{id}: CANCELLED"));
    }
}

#[derive(Debug, Parser)]
#[command(about = "Every feature of Reliable Executor in one short run")]
struct Args {
    #[command(flatten)]
    store: examples::StoreArgs,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    println!("Reliable Executor quickstart ({:?} storage)\n", args.store.storage);
    // A namespace per run, so business ids like `reminder_ada` are fresh each time.
    let namespace = format!("quickstart-{}", std::process::id());
    let outcome = run(args.store.connect().await?, namespace).await?;

    println!("\n{:<16} {:<40} {:<10} {:>8}", "task", "id", "state", "attempts");
    for t in &outcome.tasks {
        println!("{:<16} {:<40} {:<10} {:>8}", t.name, t.id, t.state, t.attempts);
    }
    println!("\nrefresh_stats ran {} time(s) for 20 submits", outcome.refreshes);
    Ok(())
}

/// What a run ended with.
#[derive(Debug)]
struct Outcome {
    /// The final record of every task submitted, in submit order.
    tasks: Vec<TaskRecord>,
    /// How often the debounced `refresh_stats` ran.
    refreshes: u32,
}

async fn run<S: executor_core::storage::ExecutorStorage>(
    storage: S,
    namespace: String,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let clock = Clock(Instant::now());
    let (crm, stats) = (Crm::default(), Stats::default());
    // Every handler above takes some of these; `build` refuses to start if one is missing.
    let executor = Executor::builder(storage)
        .namespace(namespace)
        .concurrency(8)
        .data(clock)
        .data(Gateway::default())
        .data(crm.clone())
        .data(stats.clone())
        .listener(Timeline(clock))
        .build()
        .await?;
    let running = executor.start();
    let mut ids: Vec<TaskId> = Vec::new();

    // 1. A plain submit, typed: a wrong payload type would not compile.
    ids.push(send_welcome::submit(&executor, Welcome { user: "ada".into() }).await?.id);
    // 2. A delayed task with a business id.
    ids.push(
        send_reminder::with(Welcome { user: "ada".into() })
            .id("reminder_ada")
            .delay(Duration::from_millis(1_500))
            .submit(&executor)
            .await?
            .id,
    );
    // 3. Fails twice, then succeeds under exponential backoff.
    ids.push(charge_card::with(12_345).id("order_12345_pay").submit(&executor).await?.id);
    // 4. Always fails: ends FAILED in the dead letter (requeued below).
    let crm_task = sync_crm::submit(&executor, 77).await?.id;
    ids.push(crm_task.clone());
    // 5. Submitted, then cancelled before it runs.
    let cancelled = send_reminder::with(Welcome { user: "bob".into() })
        .id("reminder_bob")
        .delay(Duration::from_secs(60))
        .submit(&executor)
        .await?
        .id;
    executor.cancel(&cancelled).await?;
    ids.push(cancelled);
    // 6. A burst of 20 debounced submits within ~200 ms runs once, with the last payload.
    let (mut debounced, mut created) = (None, 0);
    for views in 1..=20u32 {
        let answer = refresh_stats::with(views)
            .debounce("stats:user-42", Duration::from_millis(500))
            .submit(&executor)
            .await?;
        // Each submit says what it did: the first created the task, the
        // others moved it.
        if answer.outcome == SubmitOutcome::Created {
            created += 1;
        }
        debounced.get_or_insert(answer.id);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(id) = debounced {
        clock.say(&format!(
            "refresh_stats {id}: 20 submits under one debounce key ({created} created, {} debounced), \
             due 500 ms after the last",
            20 - created
        ));
        ids.push(id);
    }
    // 7. Runs past its max_duration: TIMEOUT.
    ids.push(build_report::submit(&executor).await?.id);
    // 8. A batch in one call: one answer per task (created, existing, debounced, or its error).
    let batch = ["grace", "linus"].map(|user| Welcome { user: user.into() });
    for answer in send_welcome::submit_many(&executor, batch).await {
        ids.push(answer?.id);
    }

    // The dead letter: fix the "bug", then requeue by hand.
    let failed = executor.wait_for(&crm_task, Duration::from_secs(10)).await?;
    clock.say(&format!(
        "sync_crm {crm_task}: in the dead letter as {}; fixing the bug and requeueing",
        failed.state
    ));
    crm.bug_fixed.store(true, Ordering::SeqCst);
    executor.requeue(&crm_task).await?;

    for id in &ids {
        executor.wait_for(id, Duration::from_secs(10)).await?;
    }
    let report = running.shutdown().await?;
    clock.say(&format!("shut down: {} drained, {} released", report.drained, report.released));

    let mut tasks = Vec::with_capacity(ids.len());
    for id in &ids {
        tasks.extend(executor.status(id).await?);
    }
    Ok(Outcome { tasks, refreshes: stats.refreshes.load(Ordering::SeqCst) })
}

/// `cargo test -p examples` runs the whole quickstart (this example has
/// `test = true` in `Cargo.toml`) and checks where every task ended.
#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_quickstart_runs_to_the_end() -> Result<(), Box<dyn std::error::Error>> {
        let namespace = format!("quickstart-test-{}", std::process::id());
        let outcome =
            tokio::time::timeout(Duration::from_secs(60), run(MemoryStorage::new(), namespace)).await??;
        let states: Vec<(&str, TaskState)> =
            outcome.tasks.iter().map(|t| (t.name.as_str(), t.state)).collect();
        assert_eq!(
            states,
            [
                ("send_welcome", TaskState::Completed),
                ("send_reminder", TaskState::Completed),
                ("charge_card", TaskState::Completed),
                ("sync_crm", TaskState::Completed),
                ("send_reminder", TaskState::Cancelled),
                ("refresh_stats", TaskState::Completed),
                ("build_report", TaskState::Timeout),
                ("send_welcome", TaskState::Completed),
                ("send_welcome", TaskState::Completed),
            ]
        );
        assert_eq!(outcome.tasks[2].attempts, 3, "charge_card fails twice, then succeeds");
        assert_eq!(outcome.refreshes, 1, "20 debounced submits run once");
        Ok(())
    }
}
