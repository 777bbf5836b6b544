//! The in-process coalescer in front of a debounced task: 10,000 submits
//! over 100 keys from 4 concurrent producers run exactly 100 times, each with
//! its key's last payload, each after its key's last submit.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use reliable_executor::{
    Executor, Handler, MemoryStorage, Result, TaskBuilder, TaskContext, TaskOptions, TaskState,
    coalesce::Coalescer,
};
use tokio::time::Instant;

type Runs = Arc<Mutex<Vec<(u32, u64, Instant)>>>;

const KEYS: u32 = 100;
const PRODUCERS: u32 = 4;
const SUBMITS: u64 = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bursts_over_100_keys_run_exactly_once_per_key_with_the_last_payload() -> Result<()> {
    let runs: Runs = Arc::default();
    let r = Arc::clone(&runs);
    let handler = Handler::new("refresh", move |(key, seq): (u32, u64), _ctx: TaskContext| {
        let r = Arc::clone(&r);
        async move {
            r.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((key, seq, Instant::now()));
        }
    });
    let executor = Executor::builder(MemoryStorage::new())
        .namespace("coalesce")
        .concurrency(16)
        .handler(handler)
        .build()
        .await?;
    let running = executor.start();
    let coalescer = Coalescer::new(executor.clone()).rule("refresh", Duration::from_millis(100));

    // Keys are split among the producers so "the last submit of a key" is well defined.
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let coalescer = coalescer.clone();
        producers.push(tokio::spawn(async move {
            let mine: Vec<u32> = (0..KEYS).filter(|k| k % PRODUCERS == p).collect();
            let mut last: HashMap<u32, (u64, Instant)> = HashMap::new();
            let rounds = SUBMITS / u64::from(KEYS);
            for round in 0..rounds {
                for &key in &mine {
                    let seq = round * u64::from(KEYS) + u64::from(key);
                    TaskBuilder::new("refresh", (key, seq), TaskOptions::new())
                        .debounce(format!("key-{key}"), Duration::from_secs(1))
                        .submit(&coalescer)
                        .await?;
                    last.insert(key, (seq, Instant::now()));
                }
                if round % 10 == 9 {
                    tokio::task::yield_now().await; // bursts, not one smooth stream
                }
            }
            Ok::<_, reliable_executor::Error>(last)
        }));
    }
    let mut last_submit: HashMap<u32, (u64, Instant)> = HashMap::new();
    for p in producers {
        let last = p.await.map_err(|e| reliable_executor::Error::invalid("test", e.to_string()))??;
        last_submit.extend(last);
    }
    assert_eq!(last_submit.len(), KEYS as usize);

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let counts = executor.counts().await?;
        let waiting =
            counts.get(TaskState::Created) + counts.get(TaskState::Pending) + counts.get(TaskState::Running);
        if counts.get(TaskState::Completed) >= u64::from(KEYS) && waiting == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "runs did not finish: {counts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.shutdown().await?;

    let runs = runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    assert_eq!(runs.len(), KEYS as usize, "exactly one run per key");
    for (key, seq, ran_at) in runs {
        let (last_seq, last_at) = last_submit[&key];
        assert_eq!(seq, last_seq, "key {key} ran with payload {seq}, last submitted {last_seq}");
        assert!(ran_at >= last_at, "key {key} ran before its last submit");
    }
    let stats = coalescer.stats();
    assert_eq!(stats.absorbed + stats.forwarded, SUBMITS, "{stats:?}");
    println!("10,000 submits: {} absorbed in process, {} store writes", stats.absorbed, stats.store_writes());
    assert!(stats.store_writes() < SUBMITS / 4, "the coalescer absorbed too little: {stats:?}");
    Ok(())
}
