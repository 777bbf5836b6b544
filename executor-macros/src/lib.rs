//! `#[reliable_task]`: registers an async fn as a task handler and generates
//! its typed submit helpers. Use it through `reliable_executor::reliable_task`
//! (or `reliable_executor::prelude::*`); the guide is `docs/handlers.md`.

mod diagnostics;
mod duration;
mod expand;
mod krate;
mod parse;
mod signature;

use proc_macro::TokenStream;

/// Registers an `async fn` as the handler of a task name, and generates its
/// typed submit helpers.
///
/// ```
/// use reliable_executor::prelude::*;
///
/// #[derive(Serialize, Deserialize)]
/// struct OrderParam {
///     order_id: u64,
/// }
///
/// #[reliable_task(name = "process_order", retry_limit = 3, retry_interval = "2s", max_duration = "60s")]
/// async fn process_order(param: OrderParam) -> Result<(), TaskError> {
///     if param.order_id == 0 {
///         return Err(TaskError::abort("order 0 does not exist"));
///     }
///     Ok(())
/// }
///
/// // The function is still an ordinary function:
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// assert!(process_order(OrderParam { order_id: 7 }).await.is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
///
/// // The helpers carry the name and the defaults...
/// assert_eq!(process_order::NAME, "process_order");
/// assert_eq!(process_order::options().retry_limit, 3);
/// assert_eq!(process_order::options().max_duration, Some(Duration::from_secs(60)));
///
/// // ...and submit only the handler's own payload type, with per-submit overrides:
/// let task = process_order::with(OrderParam { order_id: 8 })
///     .id("order_8_pay")
///     .delay(Duration::from_secs(30))
///     .into_new_task()?;
/// assert_eq!(task.name, "process_order");
/// assert_eq!(task.max_attempts, 4);
///
/// // `process_order::submit(&client, OrderParam { order_id: 9 }).await?` stores it
/// // through a `Client` or an `Executor` and returns its id.
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Keys
///
/// | key | meaning | example |
/// |---|---|---|
/// | `name` (required) | the task's name in the store; keep it stable | `name = "process_order"` |
/// | `retry_limit` | retries after the first attempt (default 3) | `retry_limit = 5` |
/// | `retry_interval` | fixed delay before each retry (default 1s) | `retry_interval = "2s"` |
/// | `exponential(..)` | `base * factor^(n-1)`, at most `cap` (default 1h), less up to `jitter` | `exponential(base = "1s", factor = 2.0, cap = "1m", jitter = 0.2)` |
/// | `levels` | one delay per retry, the last repeats | `levels = ["10s", "1m", "10m", "1h"]` |
/// | `max_duration` | deadline from creation; past it the task ends `TIMEOUT` | `max_duration = "60s"` |
/// | `timeout` | limit of one attempt; an attempt past it is retried | `timeout = "10s"` |
/// | `queue` | the queue its tasks wait in (default `"default"`); executors serve it unless given other queues | `queue = "emails"` |
/// | `priority` | 0 (default) to 9 within its queue, higher claimed first | `priority = 5` |
/// | `crate` | where the runtime is reached, when the `Cargo.toml` that names it is not the one compiling the handler (a macro of your own that expands to this one) | `crate = ::my_executor` |
///
/// Durations are a whole number and a unit: `"500ms"`, `"2s"`, `"1m"`, `"1h"`, `"1d"`.
/// `retry_interval`, `exponential(..)` and `levels` are alternatives: give one.
///
/// # Signatures
///
/// `async fn` with an optional payload first (`Serialize + DeserializeOwned +
/// Send + 'static`), then in any order an optional `TaskContext` and any
/// number of `Data<T>` (the application's state, given to the executor
/// builder with `.data(value)`; `build()` refuses to start without it);
/// returning nothing, `()`, or `Result<(), E>` with `E: Display`. A bad
/// attribute or signature is a compile error on the offending token.
///
/// # Generated
///
/// Next to the function, a type of the same name (types and functions live in
/// different namespaces) with `NAME`, `options()`, `with(payload)`,
/// `submit(&client, payload)`, `submit_many(&client, payloads)` and
/// `submit_many_with(&client, builders)`, and the handler's link-time
/// registration (with the `Data` types it takes).
#[proc_macro_attribute]
pub fn reliable_task(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::reliable_task(attr.into(), item.into(), krate::runtime).into()
}

/// The handler guide's examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/handlers.md")]
mod handlers_guide {}
