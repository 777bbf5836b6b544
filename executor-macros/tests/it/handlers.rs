//! `#[reliable_task]` used for real: the handlers below register at link
//! time, the registry finds them with their attribute's options, the typed
//! helpers build and submit the expected tasks, and an executor runs them.

use std::{
    sync::{Mutex, PoisonError},
    time::Duration,
};

use reliable_executor::{
    Client, Error, Executor, Handler, MemoryStorage, Namespace, Registry, RetryPolicy, SubmitOutcome,
    TaskContext, TaskError, TaskId, TaskOptions, TaskRecord, TaskState, reliable_task,
    storage::{Debounce, Due, NewTask, Storage, SubmitMode},
};
use serde::{Deserialize, Serialize};

// The handlers of data.rs register in these executors too.
use crate::data::with_their_data;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct OrderParam {
    order_id: u64,
}

static PROCESSED: Mutex<Vec<u64>> = Mutex::new(Vec::new());
static CONTEXTS: Mutex<Vec<(String, u32, u32)>> = Mutex::new(Vec::new());

#[reliable_task(
    name = "macros_test.process_order",
    retry_limit = 3,
    retry_interval = "2s",
    max_duration = "60s",
    timeout = "10s"
)]
async fn process_order(param: OrderParam) -> Result<(), TaskError> {
    PROCESSED.lock().unwrap_or_else(PoisonError::into_inner).push(param.order_id);
    Ok(())
}

#[reliable_task(name = "macros_test.send_notify")]
async fn send_notify() {}

#[reliable_task(
    name = "macros_test.with_context",
    exponential(base = "1s", factor = 3.0, cap = "1m", jitter = 0.5)
)]
async fn with_context(n: u32, ctx: TaskContext) -> Result<(), String> {
    CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner).push((ctx.id().to_string(), n, ctx.attempt()));
    Ok(())
}

#[reliable_task(name = "macros_test.context_only", levels = ["10s", "1m", "10m", "1h"])]
async fn context_only(ctx: TaskContext) {
    let _ = ctx.fence();
}

#[reliable_task(name = "macros_test.declined", retry_limit = 0)]
async fn declined(card: String) -> Result<(), TaskError> {
    Err(TaskError::abort(format!("card {card} declined")))
}

fn options(registry: &Registry, name: &str) -> Result<TaskOptions, String> {
    registry
        .get(name)
        .map(|h| h.default_options().clone())
        .ok_or_else(|| format!("`{name}` is not registered"))
}

#[test]
fn the_registry_finds_every_handler_with_its_attribute_options() -> TestResult {
    let registry = Registry::collect([])?;
    let expected = TaskOptions::new()
        .retry_limit(3)
        .retry(RetryPolicy::fixed(Duration::from_secs(2)))
        .max_duration(Duration::from_secs(60))
        .timeout(Duration::from_secs(10));
    assert_eq!(options(&registry, "macros_test.process_order")?, expected);
    assert_eq!(process_order::options(), expected);

    assert_eq!(options(&registry, "macros_test.send_notify")?, TaskOptions::new());

    let exponential = RetryPolicy::exponential(Duration::from_secs(1), 3.0, Duration::from_secs(60))?;
    assert_eq!(options(&registry, "macros_test.with_context")?.retry, exponential.with_jitter(0.5)?);

    let levels = RetryPolicy::levels([10, 60, 600, 3600].map(Duration::from_secs))?;
    assert_eq!(options(&registry, "macros_test.context_only")?.retry, levels);

    assert_eq!(options(&registry, "macros_test.declined")?.max_attempts(), 1);
    Ok(())
}

#[test]
fn a_duplicate_name_names_both_definitions() {
    let clash = Handler::new("macros_test.send_notify", |_: (), _ctx: TaskContext| async {});
    let err = Registry::collect([clash]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("`macros_test.send_notify` is registered twice"), "{err}");
    // The generated registration says where the handler is: module, fn, file and line.
    let at = "handlers::send_notify at executor-macros/tests/it/handlers.rs:";
    let line =
        err.split(at).nth(1).map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>());
    assert!(line.is_some_and(|l| !l.is_empty()), "{err}");
    assert!(err.contains("Handler::new at"), "{err}");
}

#[test]
fn the_typed_builder_produces_the_expected_task() -> TestResult {
    let task = process_order::with(OrderParam { order_id: 7 })
        .id("order_7_pay")
        .delay(Duration::from_secs(30))
        .into_new_task()?;
    let expected = {
        let mut t = NewTask::new(
            TaskId::new("order_7_pay")?,
            "macros_test.process_order".to_owned(),
            br#"{"order_id":7}"#.to_vec(),
        );
        t.due = Due::After(Duration::from_secs(30));
        t.max_attempts = 4;
        t.max_duration = Some(Duration::from_secs(60));
        t.timeout = Some(Duration::from_secs(10));
        // Two tasks built apart are two submits: compare under one nonce.
        t.with_nonce(std::num::NonZeroU64::new(task.nonce()).ok_or("a nonce is never 0")?)
    };
    assert_eq!(task, expected);

    // Per-submit overrides win over the attribute's defaults.
    let task = process_order::with(OrderParam { order_id: 8 })
        .retry_limit(0)
        .retry(RetryPolicy::fixed(Duration::from_millis(10)))
        .timeout(Duration::from_secs(1))
        .max_duration(Duration::from_secs(5))
        .debounce("order_8", Duration::from_secs(3))
        .into_new_task()?;
    assert_eq!(task.max_attempts, 1);
    assert_eq!(task.retry, Some(RetryPolicy::fixed(Duration::from_millis(10))));
    assert_eq!(task.timeout, Some(Duration::from_secs(1)));
    assert_eq!(task.max_duration, Some(Duration::from_secs(5)));
    let debounce = Debounce::new("order_8".to_owned(), Duration::from_secs(3));
    assert_eq!(task.mode, SubmitMode::Debounce(debounce));

    // No payload: `with()` takes nothing and sends JSON `null`.
    let task = send_notify::with().idempotent().into_new_task()?;
    assert_eq!((task.payload, task.mode), (b"null".to_vec(), SubmitMode::Idempotent));
    Ok(())
}

#[tokio::test]
async fn the_generated_submit_stores_the_task_through_a_client() -> TestResult {
    let client = Client::new(MemoryStorage::new(), Namespace::new("macros-submit")?)?;
    let id = process_order::submit(&client, OrderParam { order_id: 9 }).await?.id;
    let record = client.status(&id).await?.ok_or("submitted task not found")?;
    assert_eq!(record.name, process_order::NAME);
    assert_eq!(record.payload, br#"{"order_id":9}"#);
    assert_eq!(record.max_attempts, 4);
    assert!(record.state.is_waiting(), "{:?}", record.state);

    // The generated futures are `Send`: they can be spawned.
    let spawned = client.clone();
    let id = tokio::spawn(async move { send_notify::submit(&spawned).await }).await??.id;
    assert_eq!(client.status(&id).await?.map(|r| r.payload), Some(b"null".to_vec()));

    // The builder's id, and the store's refusal of a duplicate, come through.
    let again = || process_order::with(OrderParam { order_id: 10 }).id("order_10");
    let first = again().submit(&client).await?;
    assert_eq!((first.id.as_str(), first.outcome), ("order_10", SubmitOutcome::Created));
    assert!(matches!(again().submit(&client).await, Err(Error::DuplicateId(_))));
    // An idempotent repeat answers the same id, and says it found it.
    let repeat = again().idempotent().submit(&client).await?;
    assert_eq!((repeat.id.as_str(), repeat.outcome), ("order_10", SubmitOutcome::Existing));
    Ok(())
}

#[tokio::test]
async fn the_generated_submit_many_answers_per_task() -> TestResult {
    let client = Client::new(MemoryStorage::new(), Namespace::new("macros-many")?)?;
    let answers = process_order::submit_many(&client, (0..3).map(|n| OrderParam { order_id: n })).await;
    assert_eq!(answers.len(), 3);
    for answer in &answers {
        let submitted = answer.as_ref().map_err(|e| e.to_string())?;
        assert_eq!(submitted.outcome, reliable_executor::SubmitOutcome::Created);
        let record = client.status(&submitted.id).await?.ok_or("batched task not found")?;
        assert_eq!(record.name, process_order::NAME);
    }
    let builders = [
        process_order::with(OrderParam { order_id: 20 }).id("order_20"),
        process_order::with(OrderParam { order_id: 21 }).id("bad id"),
        process_order::with(OrderParam { order_id: 20 }).id("order_20").idempotent(),
        process_order::with(OrderParam { order_id: 22 }).delay(Duration::MAX),
    ];
    let answers = process_order::submit_many_with(&client, builders).await;
    assert!(
        matches!(&answers[0], Ok(s) if s.outcome == reliable_executor::SubmitOutcome::Created),
        "{answers:?}"
    );
    assert!(matches!(&answers[1], Err(Error::Invalid { what: "task id", .. })), "{answers:?}");
    assert!(
        matches!(&answers[2], Ok(s) if s.outcome == reliable_executor::SubmitOutcome::Existing),
        "{answers:?}"
    );
    assert!(matches!(&answers[3], Err(Error::Invalid { what: "delay", .. })), "{answers:?}");
    let notify = send_notify::submit_many_with(&client, [send_notify::with(), send_notify::with()]).await;
    assert!(notify.iter().all(Result::is_ok), "{notify:?}");
    Ok(())
}

async fn finished(executor: &Executor<MemoryStorage>, id: &TaskId) -> Result<TaskRecord, Error> {
    executor.wait_for(id, WAIT).await
}

#[tokio::test]
async fn an_executor_runs_the_handlers_with_their_payload_and_context() -> TestResult {
    let executor =
        with_their_data(Executor::builder(MemoryStorage::new())).namespace("macros-run").build().await?;
    let running = executor.start();

    let order = process_order::submit(&executor, OrderParam { order_id: 11 }).await?.id;
    let ctx = with_context::with(5).id("with_context_5").submit(&executor).await?.id;
    let notify = send_notify::submit(&executor).await?.id;
    let ctx_only = context_only::submit(&executor).await?.id;
    for id in [&order, &ctx, &notify, &ctx_only] {
        let record = finished(&executor, id).await?;
        assert_eq!(record.state, TaskState::Completed, "{record:?}");
    }
    assert!(PROCESSED.lock().unwrap_or_else(PoisonError::into_inner).contains(&11));
    let seen = CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(seen.contains(&("with_context_5".to_owned(), 5, 1)), "{seen:?}");

    // A handler's error is the task's last error; `abort` dead-letters at once.
    let id = declined::submit(&executor, "4242".to_owned()).await?.id;
    let record = finished(&executor, &id).await?;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.last_error.as_deref(), Some("card 4242 declined"));

    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn a_payload_that_does_not_decode_ends_in_error_with_the_reason() -> TestResult {
    let executor =
        with_their_data(Executor::builder(MemoryStorage::new())).namespace("macros-decode").build().await?;
    let running = executor.start();
    let client = executor.client();

    let id = client.submit_json(process_order::NAME, serde_json::json!({ "order_id": "seven" })).await?.id;
    let record = finished(&executor, &id).await?;
    assert_eq!(record.state, TaskState::Error, "{record:?}");
    let reason = record.last_error.unwrap_or_default();
    assert!(reason.starts_with("payload does not decode"), "{reason}");
    assert!(reason.contains("invalid type: string \"seven\", expected u64"), "{reason}");

    // A handler without a payload accepts whatever JSON it is sent.
    let id = client.submit_json(send_notify::NAME, serde_json::json!({ "ignored": true })).await?.id;
    assert_eq!(finished(&executor, &id).await?.state, TaskState::Completed);

    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn bytes_that_are_not_json_end_in_error_for_every_handler_shape() -> TestResult {
    // Written to the store directly, as a hand-edited or foreign record would be:
    // the client would refuse to encode such a payload.
    let storage = MemoryStorage::new();
    let namespace = Namespace::new("macros-garbage")?;
    let mut ids = Vec::new();
    for mut task in [
        process_order::with(OrderParam { order_id: 1 }).into_new_task()?,
        send_notify::with().into_new_task()?,
        context_only::with().into_new_task()?,
    ] {
        task.payload = b"{not json".to_vec();
        ids.push(storage.submit(&namespace, task).await?.id);
    }
    let executor = with_their_data(Executor::builder(storage)).namespace(namespace.as_str()).build().await?;
    let running = executor.start();
    for id in &ids {
        let record = finished(&executor, id).await?;
        assert_eq!(record.state, TaskState::Error, "{record:?}");
        let reason = record.last_error.unwrap_or_default();
        assert!(reason.starts_with("payload does not decode: key must be a string"), "{reason}");
    }
    running.shutdown().await?;
    Ok(())
}

#[tokio::test]
async fn the_function_is_still_an_ordinary_function() -> TestResult {
    assert!(process_order(OrderParam { order_id: 12 }).await.is_ok());
    let ctx = TaskContext::for_test(TaskId::new("direct")?, with_context::NAME);
    with_context(1, ctx).await?;
    assert!(declined("1".to_owned()).await.is_err());
    Ok(())
}
