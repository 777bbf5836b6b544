//! Handlers that receive the application's state as `Data<T>`: the executor
//! hands each its value, in any parameter order after the payload, and
//! `build()` refuses to start when a value is missing, naming the handler
//! and the type. Every executor built in this test binary registers these
//! handlers, so every one gives their data: [`with_their_data`].

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use reliable_executor::{
    Data, Error, Executor, ExecutorBuilder, MemoryStorage, TaskContext, TaskError, TaskState, reliable_task,
};
use serde::{Deserialize, Serialize};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Stands in for a database pool: cheap to clone, shared state inside.
#[derive(Clone, Debug, Default)]
struct Ledger(Arc<Mutex<Vec<String>>>);

impl Ledger {
    fn push(&self, line: String) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(line);
    }
}

#[derive(Clone, Debug)]
struct Config {
    currency: &'static str,
}

#[derive(Serialize, Deserialize)]
struct Charge {
    order: u64,
    cents: u64,
}

/// The data `charge` and `audit` take, for the executors of the other test
/// files in this binary: `#[reliable_task]` registers these handlers in every
/// executor built here, and `build()` refuses one that misses their data.
pub(crate) fn with_their_data<S: reliable_executor::storage::ExecutorStorage>(
    builder: ExecutorBuilder<S>,
) -> ExecutorBuilder<S> {
    builder.data(Ledger::default()).data(Config { currency: "EUR" })
}

#[reliable_task(name = "data_test.charge")]
async fn charge(
    c: Charge,
    config: Data<Config>,
    ctx: TaskContext,
    ledger: Data<Ledger>,
) -> Result<(), TaskError> {
    let line =
        format!("order {} charged {} {} (attempt {})", c.order, c.cents, config.currency, ctx.attempt());
    ledger.push(line);
    Ok(())
}

#[reliable_task(name = "data_test.audit")]
async fn audit(ledger: Data<Ledger>) {
    ledger.push("audited".to_owned());
}

#[tokio::test]
async fn handlers_receive_the_builders_data() -> TestResult {
    let ledger = Ledger::default();
    let executor = Executor::builder(MemoryStorage::new())
        .namespace("data-test")
        .data(ledger.clone())
        .data(Config { currency: "EUR" })
        .build()
        .await?;
    let running = executor.start();
    let a = charge::submit(&executor, Charge { order: 7, cents: 1_250 }).await?.id;
    let b = audit::submit(&executor).await?.id;
    for id in [&a, &b] {
        assert_eq!(executor.wait_for(id, Duration::from_secs(10)).await?.state, TaskState::Completed);
    }
    running.shutdown().await?;
    let mut lines = ledger.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
    lines.sort();
    assert_eq!(lines, ["audited", "order 7 charged 1250 EUR (attempt 1)"]);
    Ok(())
}

#[tokio::test]
async fn build_refuses_a_missing_value_naming_the_handler_and_type() {
    let built = Executor::builder(MemoryStorage::new()).data(Ledger::default()).build().await;
    match built {
        Err(Error::MissingData { handler, type_name, .. }) => {
            assert_eq!(handler, "data_test.charge");
            assert!(type_name.ends_with("Config"), "{type_name}");
        }
        other => panic!("expected MissingData, got {other:?}"),
    }
    let message = Executor::builder(MemoryStorage::new()).build().await.err().map(|e| e.to_string());
    let message = message.unwrap_or_default();
    assert!(message.contains("Data<") && message.contains(".data(value)"), "{message}");
}

#[tokio::test]
async fn a_handler_is_callable_directly_with_its_data() -> TestResult {
    let ledger = Ledger::default();
    let ctx = TaskContext::for_test(reliable_executor::TaskId::new("direct")?, "data_test.charge");
    charge(
        Charge { order: 1, cents: 5 },
        Data(Config { currency: "USD" }),
        ctx.clone(),
        Data(ledger.clone()),
    )
    .await
    .map_err(|e| e.message().to_owned())?;
    assert_eq!(ctx.with_data(7u8).data::<u8>().map(Data::into_inner), Some(7));
    assert_eq!(ledger.0.lock().unwrap_or_else(PoisonError::into_inner).len(), 1);
    Ok(())
}
