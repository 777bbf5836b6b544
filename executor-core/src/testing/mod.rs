//! The storage conformance suite (feature `testing`): one check per state
//! transition and per invariant of the design, run by every [`Storage`](crate::storage::Storage)
//! (memory, Redis, MySQL) against fresh, isolated stores.
//!
//! A storage crate runs the whole suite with one macro call in a test file;
//! it needs `tokio` (features `macros`, `rt-multi-thread`) as a dev-dependency:
//!
//! ```
//! use reliable_executor::{MemoryStorage, Namespace, testing};
//!
//! // A fresh, isolated store and a namespace no other test uses.
//! async fn fresh() -> (MemoryStorage, Namespace) {
//!     (MemoryStorage::new(), testing::unique_namespace("mem"))
//! }
//!
//! // Removes what the test left; runs even when the check panicked.
//! async fn cleanup(storage: &MemoryStorage, ns: &Namespace) {
//!     storage.remove_namespace(ns);
//! }
//!
//! reliable_executor::testing::storage_conformance_tests!(fresh, cleanup);
//! # fn main() {}
//! ```
//!
//! Each check is also a plain async function, `check(&storage, &namespace)`,
//! that panics with a message naming the broken rule. The checks use real
//! time (leases of a few hundred milliseconds) and poll with timeouts, never
//! sleep-and-hope; the suite takes a few seconds per backend.
//!
//! It also holds [`Intercepted`], a store wrapper for test doubles and
//! recorders that bend or watch claims, heartbeats and finishes.

mod attempt_log;
mod bad_input;
mod cancel;
mod claiming;
mod concurrency;
mod fresh;
mod history;
mod housekeeping;
mod intercept;
pub mod proxy;
mod queries;
mod queues;
mod release;
mod run_now;
mod schedules;
mod submission;
mod support;
mod tiering;

use std::{future::Future, time::Duration};

use crate::{
    Namespace, TaskId,
    storage::{Due, NewTask, SubmitMode},
};

/// The points of a tier promotion where [`crate::TieredStorage::crash_after`]
/// stops it, as if the process died there.
pub use crate::tiered::promote::PromoteStep;
pub use attempt_log::*;
pub use bad_input::*;
pub use cancel::*;
pub use claiming::*;
pub use concurrency::*;
pub use fresh::*;
pub use history::*;
pub use housekeeping::*;
pub use intercept::{Intercept, Intercepted};
pub use queries::*;
pub use queues::*;
pub use release::*;
pub use run_now::*;
pub use schedules::*;
pub use submission::*;
pub use tiering::*;

// A `#[macro_export]` macro is always at the crate root; there the
// conformance macros are hidden (the paths of earlier releases, listed in
// docs/upgrading.md), and this module is where they are documented.
#[doc(inline)]
pub use crate::{
    attempt_log_conformance_tests, history_conformance_tests, queue_conformance_tests,
    queue_limit_conformance_tests, run_now_conformance_tests, schedule_conformance_tests,
    storage_conformance_tests, tier_conformance_tests,
};

/// Generates one `#[tokio::test]` per conformance check for a storage.
///
/// `fresh` is an `async fn() -> (S, Namespace)` returning a fresh store and a
/// namespace unique to the test; `cleanup` is an
/// `async fn(&S, &Namespace)` that removes what the test left. Each test
/// runs on a 4-thread runtime: `fresh()`, the check (in its own task, with a
/// 60 s limit), then `cleanup` even if the check panicked, then the check's
/// panic is resumed. The calling crate needs `tokio` as a dev-dependency.
/// See the [module docs](crate::testing) for an example.
///
/// A store whose design departs from one rule on purpose leaves that check
/// out by name, and says why beside the call:
///
/// ```
/// # use reliable_executor::{MemoryStorage, Namespace, testing};
/// # async fn fresh() -> (MemoryStorage, Namespace) { (MemoryStorage::new(), testing::unique_namespace("x")) }
/// # async fn cleanup(_: &MemoryStorage, _: &Namespace) {}
/// // Earliest-due-first holds per partition only in this store.
/// reliable_executor::testing::storage_conformance_tests!(fresh, cleanup, except(claim_orders_by_due_and_respects_limit));
/// # fn main() {}
/// ```
///
/// A name in `except(..)` that is not a check is a compile error.
#[doc(hidden)]
#[macro_export]
macro_rules! storage_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::testing::storage_conformance_tests!($fresh, $cleanup, except());
    };
    ($fresh:path, $cleanup:path, except($($skip:ident),* $(,)?) $(,)?) => {
        $crate::__conformance_except! {
            [$fresh, $cleanup] [$($skip)*] [
            submit_and_get
            fresh_id_submit_reads_back
            fresh_id_claimed_in_submit_order
            fresh_id_delayed_not_claimed_before_due
            fresh_id_cancel_and_delete_before_a_claim
            fresh_id_another_submit_is_a_duplicate
            duplicate_id_refused
            idempotent_submit_returns_existing
            debounce_moves_due_and_replaces_payload
            debounce_max_wait_caps_postponement
            debounce_key_released_when_cancelled
            submit_many_answers_each_task
            resend_is_answered_as_the_first_submit
            payload_cap_is_the_stores_own
            delayed_task_not_claimed_before_due
            run_at
            claim_orders_by_due_and_respects_limit
            claim_increments_fence_and_attempts
            complete_with_fence
            stale_fence_refused
            retry_moves_to_pending_with_delay
            fail_timeout_error_dead_letter
            release_does_not_count_attempt
            postpone_does_not_count_attempt
            finish_many_answers_each_item
            finish_many_completed_with_a_stale_item
            heartbeat_extends_and_reports_lost
            cancel_pending
            cancel_running_requested_and_delivered_by_heartbeat
            cancel_finished_is_illegal
            cancel_missing_is_not_found
            requeue_from_each_dead_letter_state
            requeue_illegal_states
            reap_after_lease_expiry
            retention_trim
            retention_by_count
            leadership_exclusive_renew_release_takeover
            counts_by_state
            list_pagination_visits_each_once
            list_by_name_visits_each_once
            list_refuses_foreign_cursor
            wait_for_work_wakes_on_submit
            wait_for_work_wakes_at_due_time
            wait_for_work_returns_by_max_wait
            release_requeue_wakes_claimers
            release_backoff_and_debounce_end_waits
            no_loss_no_double_claim_concurrent
            out_of_range_options_refused
            extreme_valid_options_read_back
            finish_out_of_range_refused_alone
            delete_removes_any_state
            random_options_never_corrupt
            transitions_follow_the_table
            ]
        }
    };
}

/// Expands the checks of a list that are not in the `except` list: a local
/// macro whose first arms swallow the excepted names.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_except {
    ([$fresh:path, $cleanup:path] [$($skip:ident)*] [$($check:ident)*]) => {
        const _: () = {
            #[allow(dead_code)]
            fn __excepted_checks_exist() {
                $( let _ = $crate::testing::$skip::<$crate::MemoryStorage>; )*
            }
        };
        macro_rules! __conformance_one {
            $( ($skip) => {}; )*
            $( ($check) => { $crate::__storage_conformance_tests! { $fresh, $cleanup; $check } }; )*
        }
        $( __conformance_one!($check); )*
    };
}

/// Generates the checks of the tier methods (`now`, `due_before`, `import`,
/// `remove`) for a store that serves as a tier of `TieredStorage`; same
/// arguments as [`storage_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! tier_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::__storage_conformance_tests! {
            $fresh, $cleanup;
            tier_due_before_lists_waiting_tasks,
            tier_import_is_idempotent_by_id,
            tier_remove_needs_waiting_and_fence,
        }
    };
}

/// Generates the checks of [`crate::storage::RunNow::run_now`] (an
/// operator's "run now" of a waiting task) for a store that
/// implements it; same arguments as [`storage_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! run_now_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::__storage_conformance_tests! {
            $fresh, $cleanup;
            run_now_makes_a_delayed_task_due,
            run_now_cuts_a_retry_backoff,
            run_now_keeps_a_due_tasks_place,
            run_now_refuses_finished_tasks,
            run_now_races_claims_without_double_runs,
            release_run_now_wakes_claimers,
        }
    };
}

/// Generates the checks of the cron schedule methods (`put_schedule`,
/// `schedules`, `remove_schedule`, `pause_schedule`, `advance_schedule`)
/// for a store that keeps schedules; same arguments as
/// [`storage_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! schedule_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::__storage_conformance_tests! {
            $fresh, $cleanup;
            schedule_put_list_replace_remove,
            schedule_pause_resume,
            schedule_advance_is_fenced_and_conditional,
        }
    };
}

/// Generates the checks of the throughput history methods (`add_history`,
/// `history`, `trim_history`) for a store that keeps history;
/// same arguments as [`storage_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! history_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::__storage_conformance_tests! {
            $fresh, $cleanup;
            history_adds_read_back_in_the_current_minute,
            history_adds_sum_exactly,
            history_names_stay_distinct,
            history_namespaces_are_isolated,
            history_since_filters,
            history_trim_removes_older_keeps_newer,
        }
    };
}

/// Generates the checks of the attempt log (`TaskRecord::attempt_log`:
/// retries, reaps and requeues logged, the bound); same arguments as
/// [`storage_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! attempt_log_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::__storage_conformance_tests! {
            $fresh, $cleanup;
            attempt_log_keeps_retried_attempts,
            attempt_log_written_by_finish_many,
            attempt_log_keeps_reaped_attempts,
            attempt_log_requeue_keeps_the_dead_attempt,
            attempt_log_keeps_the_newest,
        }
    };
}

/// Generates the checks of named queues, priorities, claim plans and pause
/// (`claim` with a plan, `pause_queue`, `queues`, `wait_for_work` over the
/// served queues) for a store that has queues; same arguments as
/// [`storage_conformance_tests!`], `except(..)` included (a partitioned
/// store orders a queue's priorities per partition only, as it orders due
/// times).
#[doc(hidden)]
#[macro_export]
macro_rules! queue_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::testing::queue_conformance_tests!($fresh, $cleanup, except());
    };
    ($fresh:path, $cleanup:path, except($($skip:ident),* $(,)?) $(,)?) => {
        $crate::__conformance_except! {
            [$fresh, $cleanup] [$($skip)*] [
            queue_priority_order
            queue_fresh_id_kept
            queue_claims_only_named_queues
            queue_plan_quotas_then_fill
            queue_weighted_claims_match_weights
            queue_pause_stops_claims_and_resume_restarts
            queue_stats
            queue_kept_through_every_return
            queue_cancel_and_delete_leave_it
            queue_wait_ignores_other_and_paused_queues
            queue_bad_priority_refused
            release_resumed_queue_wakes_claimers
            ]
        }
    };
}

/// Generates the checks of fleet-wide queue limits (`set_queue_limits`:
/// concurrency and rate, enforced inside the claim) for a store that has
/// them; same arguments as [`storage_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! queue_limit_conformance_tests {
    ($fresh:path, $cleanup:path $(,)?) => {
        $crate::__storage_conformance_tests! {
            $fresh, $cleanup;
            queue_concurrency_limit_holds,
            queue_concurrency_slot_returns_after_reap,
            queue_rate_limit_is_a_token_bucket,
            release_freed_slot_wakes_claimers,
            release_raised_limit_wakes_claimers,
            release_refilled_tokens_wake_claimers,
        }
    };
}

/// Expands [`storage_conformance_tests!`]: one test per named check.
#[doc(hidden)]
#[macro_export]
macro_rules! __storage_conformance_tests {
    ($fresh:path, $cleanup:path; $($check:ident),+ $(,)?) => {$(
        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $check() {
            let (storage, ns) = $fresh().await;
            let storage = ::std::sync::Arc::new(storage);
            let run = ::tokio::spawn({
                let (storage, ns) = (::std::sync::Arc::clone(&storage), ns.clone());
                async move {
                    $crate::testing::__bounded(
                        ::std::stringify!($check),
                        $crate::testing::$check(&*storage, &ns),
                    )
                    .await
                }
            });
            let outcome = run.await;
            $cleanup(&*storage, &ns).await;
            $crate::testing::__resume(::std::stringify!($check), outcome);
        }
    )+};
}

/// Longest a single check may take before it is reported as hung.
const CHECK_LIMIT: Duration = Duration::from_secs(60);

/// Runs a check with a time limit. Used by [`storage_conformance_tests!`].
#[doc(hidden)]
pub async fn __bounded(name: &str, check: impl Future<Output = ()>) {
    if tokio::time::timeout(CHECK_LIMIT, check).await.is_err() {
        panic!("conformance check `{name}` did not finish within {CHECK_LIMIT:?}: a storage call hangs");
    }
}

/// Re-raises a check's panic after cleanup. Used by [`storage_conformance_tests!`].
#[doc(hidden)]
pub fn __resume(name: &str, outcome: Result<(), tokio::task::JoinError>) {
    if let Err(e) = outcome {
        match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("conformance check `{name}` was cancelled: {e}"),
        }
    }
}

/// A namespace no other test uses: `prefix` plus a random suffix.
///
/// # Panics
/// If `prefix` has characters a namespace does not allow.
pub fn unique_namespace(prefix: &str) -> Namespace {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let keep = prefix.len().min(crate::id::MAX_NAMESPACE_LEN - 1 - 16);
    let prefix = prefix.get(..keep).unwrap_or("t");
    Namespace::new(format!("{prefix}-{}", &suffix[..16]))
        .unwrap_or_else(|e| panic!("unique_namespace({prefix:?}): {e}"))
}

/// Polls `condition` (every few milliseconds, backing off to 50 ms) until
/// it is true.
///
/// # Panics
/// When it is still false after `timeout`.
pub async fn wait_until<F, Fut>(timeout: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_for(timeout, "condition", || {
        let probe = condition();
        async move { probe.await.then_some(()) }
    })
    .await;
}

/// Polls `probe` like [`wait_until`] until it returns `Some`, and returns
/// that value.
///
/// # Panics
/// When it is still `None` after `timeout`, naming `what`.
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let give_up = tokio::time::Instant::now() + timeout;
    let mut pause = Duration::from_millis(2);
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        if tokio::time::Instant::now() >= give_up {
            panic!("wait_for: {what} still not met after {timeout:?}");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Most spans open at one instant: the concurrency a set of handler runs
/// (start, end) reached. An end and a start at the same instant do not
/// overlap (a slot freed and taken again).
///
/// ```
/// use reliable_executor::testing::max_overlap;
///
/// assert_eq!(max_overlap(&[(0, 10), (5, 15), (10, 20)]), 2);
/// assert_eq!(max_overlap::<u32>(&[]), 0);
/// ```
pub fn max_overlap<T: Ord + Copy>(spans: &[(T, T)]) -> usize {
    let mut edges: Vec<(T, i8)> = spans.iter().flat_map(|(a, b)| [(*a, 1), (*b, -1)]).collect();
    // Ends (-1) sort before starts (+1) at the same instant.
    edges.sort();
    let (mut open, mut most) = (0usize, 0usize);
    for (_, d) in edges {
        open = if d > 0 { open + 1 } else { open.saturating_sub(1) };
        most = most.max(open);
    }
    most
}

/// A plain task named `conformance`, due now, with 3 attempts, no deadline
/// and payload `{"n":1}`.
///
/// # Panics
/// If `id` is not a valid [`TaskId`].
pub fn new_task(id: &str) -> NewTask {
    NewTask {
        id: TaskId::new(id).unwrap_or_else(|e| panic!("new_task({id:?}): {e}")),
        name: "conformance".to_owned(),
        payload: br#"{"n":1}"#.to_vec(),
        due: Due::Now,
        max_attempts: 3,
        max_duration: None,
        timeout: None,
        retry: None,
        mode: SubmitMode::Plain,
        queue: crate::QueueName::default(),
        priority: 0,
        nonce: crate::records::task::new_nonce(),
    }
}
