//! The quickstart: every feature of the executor in one short run on the
//! in-memory storage, no server needed. Exits by itself within ~10 seconds.
//!
//! ```sh
//! cargo run --example quickstart
//! # the same program on a real store:
//! cargo run --example quickstart -- --storage redis   # REDIS_URL, default redis://127.0.0.1:6379
//! cargo run --example quickstart -- --storage mysql   # MYSQL_URL, default mysql://root@127.0.0.1:3306/test
//! ```

use std::{
    sync::{
        OnceLock,
        atomic::{AtomicBool, AtomicU32, Ordering},
    },
    time::Instant,
};

use clap::Parser;
use executor_core::{Executor, Listener, Storage, SubmitOutcome, TaskId, TaskRecord, TaskState, prelude::*};

// ---- handlers: plain async fns, registered by the attribute ----

#[derive(Debug, Serialize, Deserialize)]
struct Welcome {
    user: String,
}

/// Runs at once.
#[reliable_task(name = "send_welcome")]
async fn send_welcome(param: Welcome) -> Result<(), TaskError> {
    say(&format!("    send_welcome: hello, {}!", param.user));
    Ok(())
}

/// Submitted with a delay.
#[reliable_task(name = "send_reminder")]
async fn send_reminder(param: Welcome) {
    say(&format!("    send_reminder: don't forget us, {}", param.user));
}

static FLAKY_CALLS: AtomicU32 = AtomicU32::new(0);

/// Fails twice, then succeeds: retried with exponential backoff.
#[reliable_task(name = "charge_card", retry_limit = 4, exponential(base = "200ms", factor = 2.0, cap = "2s"))]
async fn charge_card(order_id: u64, ctx: TaskContext) -> Result<(), TaskError> {
    let n = FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    if n <= 2 {
        return Err(TaskError::retry(format!("payment gateway unavailable (attempt {})", ctx.attempt())));
    }
    say(&format!("    charge_card: order {order_id} charged on attempt {}", ctx.attempt()));
    Ok(())
}

static BUG_FIXED: AtomicBool = AtomicBool::new(false);

/// Always fails until the "bug" is fixed: ends FAILED, then is requeued by hand.
#[reliable_task(name = "sync_crm", retry_limit = 1, retry_interval = "100ms")]
async fn sync_crm(customer_id: u64) -> Result<(), TaskError> {
    if !BUG_FIXED.load(Ordering::SeqCst) {
        return Err(TaskError::retry(format!("CRM rejected customer {customer_id}: field `email` missing")));
    }
    say(&format!("    sync_crm: customer {customer_id} synced"));
    Ok(())
}

static REFRESHES: AtomicU32 = AtomicU32::new(0);

/// Debounced: a burst of submits runs it once, with the last payload.
#[reliable_task(name = "refresh_stats")]
async fn refresh_stats(views: u32) {
    REFRESHES.fetch_add(1, Ordering::SeqCst);
    say(&format!("    refresh_stats: recomputed with {views} views"));
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

fn start_time() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn say(line: &str) {
    println!("{:>6} ms  {line}", start_time().elapsed().as_millis());
}

#[derive(Debug)]
struct Timeline;

impl Listener for Timeline {
    fn on_submitted(&self, id: &TaskId, name: &str, outcome: SubmitOutcome) {
        // Repeats of a debounced submit are summarised after the burst.
        if outcome == SubmitOutcome::Created {
            say(&format!("{name} {id}: submitted"));
        }
    }
    fn on_started(&self, task: &TaskRecord) {
        say(&format!("{} {}: attempt {} started", task.name, task.id, task.attempts));
    }
    fn on_completed(&self, task: &TaskRecord) {
        say(&format!("{} {}: COMPLETED", task.name, task.id));
    }
    fn on_retry_scheduled(&self, task: &TaskRecord, error: &str, delay_ms: u64) {
        say(&format!("{} {}: failed ({error}); retry in {delay_ms} ms", task.name, task.id));
    }
    fn on_dead_lettered(&self, task: &TaskRecord, state: TaskState, error: &str) {
        say(&format!("{} {}: {state} (dead letter): {error}", task.name, task.id));
    }
    fn on_cancelled(&self, id: &TaskId) {
        say(&format!("{id}: CANCELLED"));
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
    start_time();
    println!("Reliable Executor quickstart ({:?} storage)\n", args.store.storage);
    // A namespace per run, so business ids like `reminder_ada` are fresh each time.
    let namespace = format!("quickstart-{}", std::process::id());
    examples::with_storage!(args.store, |storage| run(storage, namespace).await)
}

async fn run<S: Storage>(storage: S, namespace: String) -> Result<(), Box<dyn std::error::Error>> {
    let executor =
        Executor::builder(storage).namespace(namespace).concurrency(8).listener(Timeline).build().await?;
    let running = executor.start();
    let mut ids: Vec<TaskId> = Vec::new();

    // 1. A plain submit, typed: a wrong payload type would not compile.
    ids.push(send_welcome::submit(&executor, Welcome { user: "ada".into() }).await?);
    // 2. A delayed task with a business id.
    ids.push(
        send_reminder::with(Welcome { user: "ada".into() })
            .id("reminder_ada")
            .delay(Duration::from_millis(1_500))
            .submit(&executor)
            .await?,
    );
    // 3. Fails twice, then succeeds under exponential backoff.
    ids.push(charge_card::with(12_345).id("order_12345_pay").submit(&executor).await?);
    // 4. Always fails: ends FAILED in the dead letter (requeued below).
    let crm = sync_crm::submit(&executor, 77).await?;
    ids.push(crm.clone());
    // 5. Submitted, then cancelled before it runs.
    let cancelled = send_reminder::with(Welcome { user: "bob".into() })
        .id("reminder_bob")
        .delay(Duration::from_secs(60))
        .submit(&executor)
        .await?;
    executor.cancel(&cancelled).await?;
    ids.push(cancelled);
    // 6. A burst of 20 debounced submits within ~200 ms runs once, with the last payload.
    let mut debounced = None;
    for views in 1..=20u32 {
        let id = refresh_stats::with(views)
            .debounce("stats:user-42", Duration::from_millis(500))
            .submit(&executor)
            .await?;
        debounced.get_or_insert(id);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if let Some(id) = debounced {
        say(&format!("refresh_stats {id}: 20 submits under one debounce key, due 500 ms after the last"));
        ids.push(id);
    }
    // 7. Runs past its max_duration: TIMEOUT.
    ids.push(build_report::submit(&executor).await?);

    // The dead letter: fix the "bug", then requeue by hand.
    let failed = executor.wait_for(&crm, Duration::from_secs(10)).await?;
    say(&format!("sync_crm {crm}: in the dead letter as {}; fixing the bug and requeueing", failed.state));
    BUG_FIXED.store(true, Ordering::SeqCst);
    executor.requeue(&crm).await?;

    for id in &ids {
        executor.wait_for(id, Duration::from_secs(10)).await?;
    }
    let report = running.shutdown().await?;
    say(&format!("shut down: {} drained, {} released", report.drained, report.released));

    println!("\n{:<16} {:<40} {:<10} {:>8}", "task", "id", "state", "attempts");
    for id in &ids {
        if let Some(t) = executor.status(id).await? {
            println!("{:<16} {:<40} {:<10} {:>8}", t.name, t.id, t.state, t.attempts);
        }
    }
    println!("\nrefresh_stats ran {} time(s) for 20 submits", REFRESHES.load(Ordering::SeqCst));
    Ok(())
}
