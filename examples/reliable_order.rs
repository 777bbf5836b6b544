//! The order seed: orders are paid through a flaky gateway under a business
//! id (`order_<n>_pay`), with a retry limit, a retry interval and a deadline;
//! a listener reports completions and final failures. Exits by itself.
//!
//! ```sh
//! cargo run --example reliable_order
//! cargo run --example reliable_order -- --storage redis   # REDIS_URL
//! cargo run --example reliable_order -- --storage mysql   # MYSQL_URL
//! ```

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use clap::Parser;
use executor_core::{Executor, Listener, SubmitOutcome, TaskId, TaskRecord, TaskState, prelude::*};

#[derive(Debug, Serialize, Deserialize)]
struct PayOrder {
    order_id: u64,
    amount_cents: u64,
}

/// The payment gateway's client, given to the executor with `.data(..)`
/// (cheap to clone: clones share one call counter).
#[derive(Clone, Debug, Default)]
struct Gateway {
    calls: Arc<AtomicU32>,
}

/// Pays an order. The fake gateway declines order 13 for good, times out
/// on order 99 forever, and fails every other call once before it succeeds.
#[reliable_task(name = "pay_order", retry_limit = 3, retry_interval = "300ms", max_duration = "3s")]
async fn pay_order(order: PayOrder, gateway: Data<Gateway>, ctx: TaskContext) -> Result<(), TaskError> {
    gateway.calls.fetch_add(1, Ordering::SeqCst);
    match order.order_id {
        13 => Err(TaskError::abort("card declined (do not retry)")),
        99 => {
            // A hung gateway: only the deadline stops this one.
            ctx.cancelled().await;
            Err(TaskError::retry("gateway hung"))
        }
        _ if ctx.attempt() == 1 => Err(TaskError::retry("gateway 503, try again")),
        _ => {
            // Idempotent side effect: the gateway is told the task id, so a
            // re-run after a worker crash cannot charge twice.
            println!(
                "  gateway: charged {} cents for order {} (idempotency key {})",
                order.amount_cents,
                order.order_id,
                ctx.id()
            );
            Ok(())
        }
    }
}

/// Reports what a business would page on: completion and final failure.
#[derive(Debug)]
struct OrderDesk;

impl Listener for OrderDesk {
    fn on_submitted(&self, id: &TaskId, _name: &str, outcome: SubmitOutcome) {
        if outcome == SubmitOutcome::Existing {
            println!("  desk: {id} was already submitted; the existing task is kept");
        }
    }
    fn on_retry_scheduled(&self, task: &TaskRecord, error: &str, delay_ms: u64) {
        println!("  desk: {} attempt {} failed ({error}); retry in {delay_ms} ms", task.id, task.attempts);
    }
    fn on_completed(&self, task: &TaskRecord) {
        println!("  desk: {} PAID after {} attempt(s)", task.id, task.attempts);
    }
    fn on_dead_lettered(&self, task: &TaskRecord, state: TaskState, error: &str) {
        println!("  desk: {} gave up as {state}: {error}", task.id);
    }
}

#[derive(Debug, Parser)]
#[command(about = "Order payments with business ids, retries, a deadline and a listener")]
struct Args {
    #[command(flatten)]
    store: examples::StoreArgs,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let ns = format!("orders-{}", std::process::id());
    run(args.store.connect().await?, ns).await
}

async fn run<S: executor_core::storage::ExecutorStorage>(
    storage: S,
    ns: String,
) -> Result<(), Box<dyn std::error::Error>> {
    let gateway = Gateway::default();
    let executor = Executor::builder(storage)
        .namespace(ns)
        .concurrency(8)
        .data(gateway.clone())
        .listener(OrderDesk)
        .build()
        .await?;
    let running = executor.start();
    let mut ids = Vec::new();
    for (order_id, amount_cents) in [(12_345, 4_999), (13, 1_000), (99, 250), (12_346, 15_000)] {
        let id = pay_order::with(PayOrder { order_id, amount_cents })
            .id(format!("order_{order_id}_pay"))
            .submit(&executor)
            .await?
            .id;
        println!("submitted {id}");
        ids.push(id);
    }
    // A double click: the same business id again is refused...
    let again = pay_order::with(PayOrder { order_id: 12_345, amount_cents: 4_999 }).id("order_12345_pay");
    match again.submit(&executor).await {
        Err(e) => println!("second plain submit of order_12345_pay refused: {e}"),
        Ok(answer) => println!("unexpected: {} accepted twice", answer.id),
    }
    // ...or, asked idempotently, answers with the existing task.
    let answer = pay_order::with(PayOrder { order_id: 12_345, amount_cents: 4_999 })
        .id("order_12345_pay")
        .idempotent()
        .submit(&executor)
        .await?;
    println!("idempotent submit of {}: {}", answer.id, answer.outcome.as_str());

    println!();
    println!("{:<20} {:<10} {:>8}  last error", "task", "state", "attempts");
    for id in &ids {
        let t = executor.wait_for(id, Duration::from_secs(15)).await?;
        println!("{:<20} {:<10} {:>8}  {}", t.id, t.state, t.attempts, t.last_error.unwrap_or_default());
    }
    running.shutdown().await?;
    println!("\ngateway calls: {}", gateway.calls.load(Ordering::SeqCst));
    Ok(())
}
