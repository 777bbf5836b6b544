//! Bad input, fuzzed with proptest (stable Rust; `cargo fuzz` needs nightly):
//! payload decoding, duration strings, and task hashes / rows edited into
//! garbage in a real Redis and MariaDB. Case counts are small for CI; run
//! more with `PROPTEST_CASES=100000 cargo test -p executor-chaos --test it -- bad_input::`.

use std::{
    collections::BTreeMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use executor_chaos::store::ChaosStore;
use executor_core::{
    Error, Executor, Handler, Namespace, TaskContext, TaskError, TaskId, TaskState, retry::parse_duration,
    storage::NewTask,
};
use proptest::prelude::*;
use serde::Deserialize;

use crate::common;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[derive(Debug, Deserialize)]
#[allow(dead_code, reason = "only decoded")]
struct Order {
    id: u64,
    lines: Vec<(String, f64)>,
    note: Option<String>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Whatever bytes the store hands back, starting an attempt decodes or
    /// refuses them with a reason; it never panics.
    #[test]
    fn handler_start_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256), json in "[\\[\\]{}\",:0-9a-z.eE+-]{0,64}") {
        let handlers = [
            Handler::new("u64", |_: u64, _: TaskContext| async { Ok::<(), TaskError>(()) }),
            Handler::new("order", |_: Order, _: TaskContext| async { Ok::<(), TaskError>(()) }),
            Handler::new("unit", |_: (), _: TaskContext| async { Ok::<(), TaskError>(()) }),
            Handler::new("strings", |_: Vec<String>, _: TaskContext| async { Ok::<(), TaskError>(()) }),
        ];
        for h in &handlers {
            for input in [bytes.as_slice(), json.as_bytes()] {
                let ctx = TaskContext::for_test(TaskId::generate(), h.name());
                if let Err(reason) = h.start(ctx, input) {
                    prop_assert!(!reason.is_empty());
                }
            }
        }
    }

    /// Duration strings: any text parses or is refused with a reason.
    #[test]
    fn parse_duration_never_panics(s in "\\PC{0,24}", digits in "[0-9]{1,40}", unit in "(ms|s|m|h|d|us|w|)") {
        let _ = parse_duration(&s);
        match parse_duration(&format!("{digits}{unit}")) {
            Ok(_) => {}
            Err(e) => prop_assert!(matches!(e, Error::Invalid { .. }), "{e}"),
        }
    }
}

/// What garbage does to one task, tallied over all cases and printed.
static OUTCOMES: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn tally(key: String) {
    *OUTCOMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(key).or_default() += 1;
}

const NAME: &str = "garbage_step";
const HEALTHY: usize = 6;

/// Submits `corrupt.len()` tasks to corrupt and `HEALTHY` others, applies
/// `edit` to the first ones, runs an executor, and checks that the healthy
/// tasks and a fresh one still complete, and that each edited task reads
/// back as a record or `Error::Corrupt`.
async fn run_with_garbage<S, F, Fut>(
    storage: S,
    label: &str,
    corrupt: usize,
    edit: F,
) -> Result<(), TestCaseError>
where
    S: ChaosStore,
    F: FnOnce(S, Namespace, Vec<TaskId>) -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let step = |what: &'static str| move |e: Error| TestCaseError::fail(format!("{what}: {e}"));
    let ns = Namespace::new(common::unique_ns("garbage")).map_err(step("namespace"))?;
    let mut ids = Vec::new();
    for i in 0..corrupt + HEALTHY {
        let id = TaskId::new(format!("g{i}")).map_err(step("id"))?;
        let task = {
            let mut t = executor_core::testing::new_task(id.as_str());
            t.name = NAME.to_owned();
            t.payload = i.to_string().into_bytes();
            t
        };
        storage.submit(&ns, task).await.map_err(step("submit"))?;
        ids.push(id);
    }
    let edits = edit(storage.clone(), ns.clone(), ids[..corrupt].to_vec()).await;
    let executor = Executor::builder(storage.clone())
        .namespace(ns.as_str())
        .concurrency(4)
        .lease(Duration::from_millis(800))
        .heartbeat_interval(Duration::from_millis(200))
        .housekeeping_interval(Duration::from_millis(100))
        .max_idle_wait(Duration::from_millis(200))
        .handler(Handler::new(NAME, |_: u64, _: TaskContext| async { Ok::<(), TaskError>(()) }))
        .build()
        .await
        .map_err(step("build"))?;
    let running = executor.start();
    for id in &ids[corrupt..] {
        let rec = executor.wait_for(id, Duration::from_secs(10)).await.map_err(|e| {
            TestCaseError::fail(format!("healthy task {id} did not finish beside garbage {edits:?}: {e}"))
        })?;
        prop_assert_eq!(rec.state, TaskState::Completed);
    }
    // Settle: give edited tasks a few leases to be claimed, errored or reaped.
    let settle = Instant::now() + Duration::from_secs(3);
    let mut last = Vec::new();
    while Instant::now() < settle {
        last.clear();
        for id in &ids[..corrupt] {
            last.push(storage.get(&ns, id).await);
        }
        let settled = last.iter().all(|r| match r {
            Ok(Some(rec)) => rec.state.is_terminal(),
            _ => true,
        });
        if settled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (edit, r) in edits.iter().zip(&last) {
        let outcome = match r {
            Ok(Some(rec)) if rec.state == TaskState::Error => {
                // A state edited to the valid name ERROR is the one ERROR with no reason to give.
                if rec.last_error.as_deref().is_none_or(str::is_empty) {
                    prop_assert!(edit.contains("\"ERROR\""), "ERROR without a reason after {}", edit);
                    "ERROR (set by hand)".to_owned()
                } else {
                    "ERROR with reason".to_owned()
                }
            }
            Ok(Some(rec)) => format!("{}", rec.state),
            Ok(None) => "gone".to_owned(),
            Err(Error::Corrupt { .. }) => "get: Corrupt".to_owned(),
            Err(e) => return Err(TestCaseError::fail(format!("get after {edit}: unexpected error {e}"))),
        };
        let field = edit.split('=').next().unwrap_or(edit);
        let how = edit.rsplit('(').next().unwrap_or("").trim_end_matches(')');
        tally(format!("{label} {field} ({how}) -> {outcome}"));
    }
    // The claim loop is alive: a fresh task still runs.
    let fresh = TaskId::new("fresh").map_err(step("id"))?;
    let task = {
        let mut t = NewTask::new(fresh.clone(), NAME.to_owned(), b"1".to_vec());
        t.max_attempts = 1;
        t
    };
    storage.submit(&ns, task).await.map_err(step("submit fresh"))?;
    let rec = executor.wait_for(&fresh, Duration::from_secs(10)).await.map_err(step("fresh task"))?;
    prop_assert_eq!(rec.state, TaskState::Completed);
    running.shutdown().await.map_err(step("shutdown"))?;
    storage.purge(&ns).await.map_err(step("purge"))?;
    Ok(())
}

fn garbage() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..24),
        Just(Vec::new()),
        "-?[0-9]{1,25}".prop_map(String::into_bytes),
        prop::sample::select(vec![
            "CREATED",
            "PENDING",
            "RUNNING",
            "COMPLETED",
            "ERROR",
            "nan",
            "inf",
            "{",
            "null"
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        "[a-zA-Z0-9{}\\[\\]\":,]{0,20}".prop_map(String::into_bytes),
    ]
}

const REDIS_FIELDS: [&str; 18] =
    ["s", "n", "p", "a", "m", "f", "c", "d", "b", "z", "x", "o", "r", "e", "w", "l", "q", "k"];

fn runtime() -> Result<tokio::runtime::Runtime, TestCaseError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| TestCaseError::fail(e.to_string()))
}

fn store_cases<T: std::fmt::Debug>(
    label: &str,
    strategy: impl Strategy<Value = T>,
    case: impl Fn(T) -> Result<(), TestCaseError>,
) -> Result<(), String> {
    let config = ProptestConfig { cases: cases(6), failure_persistence: None, ..ProptestConfig::default() };
    let result = proptest::test_runner::TestRunner::new(config).run(&strategy, case);
    let map = OUTCOMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for (k, v) in map.iter().filter(|(k, _)| k.starts_with(label)) {
        println!("{k}: {v}");
    }
    result.map_err(|e| e.to_string())
}

/// The failure of a case whose store does not answer, saying how to start it.
fn down(store: &'static str, url: &str) -> impl FnOnce(executor_core::Error) -> TestCaseError + use<> {
    let url = url.to_owned();
    move |e| {
        TestCaseError::fail(format!("{store} at {url} does not answer ({e}); start it with scripts/test.sh"))
    }
}

/// Fields of task hashes set to garbage with HSET (field codes of
/// `executor-redis/src/record.rs`).
#[test]
fn redis_hash_garbage() -> Result<(), String> {
    let _one = crate::common::one_at_a_time();
    let strategy = proptest::collection::vec((0..REDIS_FIELDS.len(), garbage()), 1..6);
    store_cases("redis", strategy, |edits| {
        runtime()?.block_on(async {
            let url = common::redis_url();
            let storage =
                executor_redis::RedisStorage::connect_once(&url).await.map_err(down("Redis", &url))?;
            let n = edits.len();
            run_with_garbage(storage, "redis", n, |s, ns, ids| async move {
                use fred::interfaces::HashesInterface;
                let mut done = Vec::new();
                for (id, (field, value)) in ids.iter().zip(edits) {
                    let key = format!("{{re:{}}}:t:{}", ns.as_str(), id.as_str());
                    let f = REDIS_FIELDS[field];
                    let v = fred::types::Value::Bytes(value.clone().into());
                    let r: Result<i64, _> = s.pool().next().hset(key, (f, v)).await;
                    let how = if r.is_ok() { "set" } else { "refused" };
                    done.push(format!("{f}={:?} ({how})", String::from_utf8_lossy(&value)));
                }
                done
            })
            .await
        })
    })
}

const MYSQL_TEXT: [&str; 7] = ["state", "name", "payload", "retry", "last_error", "worker", "debounce_key"];
const MYSQL_INT: [&str; 11] = [
    "attempts",
    "max_attempts",
    "fence",
    "created_at",
    "due_at",
    "started_at",
    "finished_at",
    "deadline",
    "timeout_ms",
    "lease_until",
    "cancel_requested",
];

fn mysql_update(column: &str) -> Option<&'static str> {
    macro_rules! pick {
        ($($c:literal),*) => { match column { $($c => Some(concat!("UPDATE reliable_executor_tasks SET ", $c, " = ? WHERE ns = ? AND id = ?")),)* _ => None } };
    }
    pick!(
        "state",
        "name",
        "payload",
        "retry",
        "last_error",
        "worker",
        "debounce_key",
        "attempts",
        "max_attempts",
        "fence",
        "created_at",
        "due_at",
        "started_at",
        "finished_at",
        "deadline",
        "timeout_ms",
        "lease_until",
        "cancel_requested"
    )
}

fn int_garbage() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        Just(None),
        any::<i64>().prop_map(Some),
        // u32::MAX in `attempts` blocks every claim: see mysql_poisoned_row.rs.
        prop::sample::select(vec![0i64, -1, 1, i64::MAX, i64::MIN, 253_402_300_799_999]).prop_map(Some),
    ]
}

/// Columns of task rows set to garbage with UPDATE, where the column type
/// lets the server take the value (strict mode refuses the rest; counted).
#[test]
fn mysql_row_garbage() -> Result<(), String> {
    let _one = crate::common::one_at_a_time();
    let strategy = proptest::collection::vec(
        (0..MYSQL_TEXT.len() + MYSQL_INT.len(), proptest::option::of(garbage()), int_garbage()),
        1..6,
    );
    store_cases("mysql", strategy, |edits| {
        runtime()?.block_on(async {
            let url = common::mysql_url();
            let storage =
                executor_mysql::MySqlStorage::connect_once(&url).await.map_err(down("MariaDB", &url))?;
            let n = edits.len();
            run_with_garbage(storage, "mysql", n, |s, ns, ids| async move {
                let mut done = Vec::new();
                for (id, (col, bytes, int)) in ids.iter().zip(edits) {
                    let (column, shown, query) = if col < MYSQL_TEXT.len() {
                        let c = MYSQL_TEXT[col];
                        let shown =
                            format!("{:?}", bytes.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()));
                        (c, shown, mysql_update(c).map(|q| sqlx::query(q).bind(bytes)))
                    } else {
                        let c = MYSQL_INT[col - MYSQL_TEXT.len()];
                        (c, format!("{int:?}"), mysql_update(c).map(|q| sqlx::query(q).bind(int)))
                    };
                    let Some(query) = query else { continue };
                    let r = query.bind(ns.as_str()).bind(id.as_str()).execute(s.pool()).await;
                    let how = match r {
                        Ok(_) => "set".to_owned(),
                        Err(_) => "refused by the schema".to_owned(),
                    };
                    done.push(format!("{column}={shown} ({how})"));
                }
                done
            })
            .await
        })
    })
}
