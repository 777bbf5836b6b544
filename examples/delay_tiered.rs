//! The hot/cold seed: notifications with delays from seconds to days. Tasks
//! due within the horizon live in Redis (hot); later ones in MySQL (cold),
//! promoted shortly before they fall due. Handlers fail at first and retry at
//! escalating levels, then dead-letter. Levels and horizon are shortened
//! (seconds for minutes) so the run ends in about half a minute; it prints
//! where each task lives as time passes.
//!
//! ```sh
//! cargo run --example delay_tiered       # two in-memory tiers, no server
//! cargo run --example delay_tiered -- --hot redis://127.0.0.1:6379 --cold mysql://root@127.0.0.1:3306/test
//! ```
//!
//! Each tier is a store URL, connected as an `AnyStorage`: any memory,
//! Redis or MySQL store can be either tier.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Instant,
};

use clap::Parser;
use executor_any::AnyStorage;
use executor_core::{Executor, Namespace, TaskId, TaskRecord, TaskState, Tier, TieredStorage, prelude::*};

#[derive(Debug, Serialize, Deserialize)]
struct Notice {
    to: String,
    /// How many attempts fail before this one succeeds (99: never).
    failures: u32,
}

/// The SMS gateway's client, given to the executor with `.data(..)`; counts
/// what it sent.
#[derive(Clone, Debug, Default)]
struct SmsGateway {
    sent: Arc<AtomicU32>,
}

/// The seed's levels were 10 s, 1 min, 10 min, then dead letter; here 1 s, 3 s, 6 s.
#[reliable_task(name = "notify", retry_limit = 3, levels = ["1s", "3s", "6s"])]
async fn notify(notice: Notice, sms: Data<SmsGateway>, ctx: TaskContext) -> Result<(), TaskError> {
    if ctx.attempt() <= notice.failures {
        return Err(TaskError::retry(format!(
            "SMS gateway refused {} (attempt {})",
            notice.to,
            ctx.attempt()
        )));
    }
    sms.sent.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[derive(Debug, Parser)]
#[command(about = "Hot/cold tiered delays with escalating retry levels")]
struct Args {
    /// The hot tier's store URL (`memory:`, `redis://…`, `mysql://…`): tasks due within the horizon.
    #[arg(long, default_value = "memory:")]
    hot: String,
    /// The cold tier's store URL: tasks due later, promoted before they fall due. A
    /// different store from the hot one (two tiers in one store would share keys).
    #[arg(long, default_value = "memory:")]
    cold: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let ns = Namespace::new(format!("tiered-demo-{}", std::process::id()))?;
    // The seed's horizon was 5 minutes; 3 seconds here.
    let horizon = Duration::from_secs(3);
    let hot = AnyStorage::connect(&args.hot).await?;
    let cold = AnyStorage::connect(&args.cold).await?;
    println!("hot tier: {}, cold tier: {}", hot.kind(), cold.kind());
    let storage = TieredStorage::new(hot.clone(), cold.clone()).horizon(horizon);
    let out = run(storage, &ns).await;
    // Leaves nothing behind in a shared Redis or MySQL.
    hot.purge(&ns).await?;
    cold.purge(&ns).await?;
    out
}

async fn run(
    storage: TieredStorage<AnyStorage, AnyStorage>,
    ns: &Namespace,
) -> Result<(), Box<dyn std::error::Error>> {
    let sms = SmsGateway::default();
    let executor = Executor::builder(storage.clone())
        .namespace(ns.as_str())
        .concurrency(8)
        .data(sms.clone())
        .housekeeping_interval(Duration::from_millis(250))
        .build()
        .await?;
    let running = executor.start();
    let started = Instant::now();
    let plan: [(&str, Duration, u32); 6] = [
        ("now_ok", Duration::ZERO, 0),
        ("in_2s_ok", Duration::from_secs(2), 0),
        ("in_8s_retry_once", Duration::from_secs(8), 1),
        ("in_15s_retry_twice", Duration::from_secs(15), 2),
        ("now_always_fails", Duration::ZERO, 99),
        ("in_2_days", Duration::from_secs(2 * 86_400), 0),
    ];
    let mut ids: Vec<TaskId> = Vec::new();
    for (id, delay, failures) in plan {
        let task = notify::with(Notice { to: format!("+1-555-{id}"), failures }).id(id).delay(delay);
        ids.push(task.submit(&executor).await?.id);
    }

    println!("{:>5}  {}", "t(s)", ids.iter().map(|i| format!("{:<22}", i.as_str())).collect::<String>());
    let mut last_line = String::new();
    loop {
        let mut line = String::new();
        let mut settled = true;
        for id in &ids {
            let place = storage.locate(ns, id).await?;
            let cell = match &place {
                Some((tier, r)) => format!("{}:{}", tier_name(*tier), short(r)),
                None => "-".to_owned(),
            };
            if id.as_str() != "in_2_days" && place.as_ref().is_none_or(|(_, r)| !r.state.is_terminal()) {
                settled = false;
            }
            line.push_str(&format!("{cell:<22}"));
        }
        if line != last_line {
            println!("{:>5.1}  {line}", started.elapsed().as_secs_f64());
            last_line = line;
        }
        if settled || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running.shutdown().await?;
    let far = storage.locate(ns, &TaskId::new("in_2_days")?).await?;
    println!("\nnotifications sent: {}", sms.sent.load(Ordering::SeqCst));
    if let Some((tier, r)) = far {
        println!(
            "in_2_days waits in the {} store, due in {:?}",
            tier_name(tier),
            r.due_at.since(r.created_at)
        );
    }
    for id in &ids {
        if let Some(r) = executor.status(id).await?
            && r.state == TaskState::Failed
        {
            let error = r.last_error.unwrap_or_default();
            println!("{} dead-lettered after {} attempts: {error}", r.id, r.attempts);
        }
    }
    Ok(())
}

fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Hot => "hot",
        Tier::Cold => "cold",
    }
}

fn short(r: &TaskRecord) -> String {
    format!("{}#{}", r.state, r.attempts)
}
