//! Cron schedules: a nightly report declared in the attribute (Berlin time),
//! and a per-second schedule added at run time, fired by the namespace's
//! leader with exactly one task per tick. Runs `--ticks` ticks of the
//! per-second schedule, then prints how late each tick was submitted (fire
//! lag: the task's creation on the store's clock minus the tick) and how
//! late it started.
//!
//! ```sh
//! cargo run --example cron                                   # memory, 10 ticks
//! cargo run --release --example cron -- --storage redis --ticks 1000
//! cargo run --release --example cron -- --storage mysql --ticks 1000
//! cargo run --release --example cron -- --storage postgres --ticks 1000
//! ```

use clap::Parser;
use examples::StoreArgs;
use executor_core::{
    Executor, Namespace, TaskState, Timestamp,
    prelude::*,
    schedule::{Overlap, ScheduleInfo},
};

/// What the nightly report covers; the attribute's schedule sends the
/// default.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Report {
    /// Empty: the day before.
    day: Option<String>,
}

/// Builds the nightly report at 02:00 in Berlin, every day, on one process
/// of the fleet.
#[reliable_task(name = "nightly_report", cron = "0 0 2 * * *", timezone = "Europe/Berlin")]
async fn nightly_report(report: Report) {
    tracing::info!(?report, "nightly report built");
}

/// One beat of a per-second schedule added at run time.
#[reliable_task(name = "beat")]
async fn beat(_label: String) {}

#[derive(Debug, Parser)]
#[command(about = "Cron schedules: exactly one task per tick, and how late ticks fire")]
struct Args {
    #[command(flatten)]
    store: StoreArgs,
    /// Ticks of the per-second schedule to run.
    #[arg(long, default_value_t = 10)]
    ticks: u32,
}

/// What a run measured.
#[derive(Debug)]
struct Outcome {
    schedules: Vec<ScheduleInfo>,
    /// The store's clock when they were listed.
    now: Timestamp,
    /// Ticks between the schedule's start and the end of the run.
    expected: usize,
    /// Tasks the schedule submitted, completed.
    completed: usize,
    /// Fire lag (created − tick) and start lag (started − tick), in ms.
    fire_lag: Vec<f64>,
    start_lag: Vec<f64>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args = Args::parse();
    let ns = format!("cron-example-{}", std::process::id());
    let storage = args.store.connect().await?;
    let out = run(storage.clone(), ns.clone(), args.ticks).await;
    // Leaves nothing behind in a shared Redis or MySQL.
    storage.purge(&Namespace::new(ns)?).await?;
    let out = out?;
    for s in &out.schedules {
        let next = s.next_fire.map_or_else(|| "never".to_owned(), |t| in_words(t.since(out.now)));
        println!(
            "schedule {:<15} {:<14} {:<14} next fire {next}",
            s.schedule.name, s.schedule.cron, s.schedule.timezone
        );
    }
    let (f50, f99, fmax) = percentiles(out.fire_lag);
    let (s50, s99, smax) = percentiles(out.start_lag);
    println!(
        "ticks {} expected, {} completed; fire lag p50 {f50:.1} ms, p99 {f99:.1} ms, max {fmax:.1} ms; \
         start lag p50 {s50:.1} ms, p99 {s99:.1} ms, max {smax:.1} ms",
        out.expected, out.completed
    );
    Ok(())
}

async fn run<S: executor_core::storage::ExecutorStorage + Clone>(
    storage: S,
    ns: String,
    ticks: u32,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let executor = Executor::builder(storage.clone()).namespace(ns.as_str()).concurrency(8).build().await?;
    let running = executor.start();
    // One beat a second; a beat that is still running skips the next tick.
    executor
        .schedules()
        .put(beat::every("* * * * * *").payload("beat".to_owned()).overlap(Overlap::Skip))
        .await?;
    let start = executor.schedules().get("beat").await?.ok_or("the schedule was just stored")?;
    let from = start.last_tick;
    tokio::time::sleep(Duration::from_secs(u64::from(ticks)) + Duration::from_millis(500)).await;
    let until = storage.now(executor.namespace()).await?;
    // Every tick's task finishes (a no-op) before the executor stops.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let schedules = executor.schedules().list().await?;
    let now = storage.now(executor.namespace()).await?;
    running.shutdown().await?;

    let ticks = start.schedule.parsed()?.ticks_between(from, until, usize::MAX);
    let mut out = Outcome {
        schedules,
        now,
        expected: ticks.len(),
        completed: 0,
        fire_lag: Vec::new(),
        start_lag: Vec::new(),
    };
    let ms = |later: Timestamp, tick: Timestamp| later.as_millis().saturating_sub(tick.as_millis()) as f64;
    for tick in ticks {
        let id = start.schedule.tick_id(tick)?;
        let Some(record) = executor.status(&id).await? else { continue };
        if record.state == TaskState::Completed {
            out.completed += 1;
        }
        out.fire_lag.push(ms(record.created_at, tick));
        if let Some(started) = record.started_at {
            out.start_lag.push(ms(started, tick));
        }
    }
    Ok(out)
}

/// `d` as "in 3 s" or "in 15 h 21 min".
fn in_words(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 { format!("in {s} s") } else { format!("in {} h {} min", s / 3_600, s % 3_600 / 60) }
}

/// p50, p99 and max of `values`.
fn percentiles(mut values: Vec<f64>) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), at(1.0))
}

#[cfg(test)]
mod tests {
    use executor_core::MemoryStorage;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn three_ticks_three_tasks_and_the_nightly_schedule_is_listed()
    -> Result<(), Box<dyn std::error::Error>> {
        let out = run(MemoryStorage::new(), format!("cron-example-test-{}", std::process::id()), 3).await?;
        assert!((3..=4).contains(&out.expected), "{out:?}");
        assert_eq!(out.completed, out.expected, "one completed task per tick: {out:?}");
        let names: Vec<&str> = out.schedules.iter().map(|s| s.schedule.name.as_str()).collect();
        assert_eq!(names, ["beat", "nightly_report"]);
        let nightly = &out.schedules[1];
        assert_eq!(
            (nightly.schedule.timezone.as_str(), nightly.schedule.payload.as_str()),
            ("Europe/Berlin", r#"{"day":null}"#)
        );
        Ok(())
    }
}
