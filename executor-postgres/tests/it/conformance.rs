//! The storage, cron schedule and queue conformance suites of executor-core
//! against a real PostgreSQL (`POSTGRES_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`), one namespace per test,
//! deleted afterwards.

use crate::support::{cleanup, fresh};

executor_core::testing::storage_conformance_tests!(fresh, cleanup);
executor_core::testing::schedule_conformance_tests!(fresh, cleanup);
executor_core::testing::history_conformance_tests!(fresh, cleanup);
executor_core::testing::attempt_log_conformance_tests!(fresh, cleanup);
executor_core::testing::run_now_conformance_tests!(fresh, cleanup);
executor_core::testing::queue_conformance_tests!(fresh, cleanup);
executor_core::testing::queue_limit_conformance_tests!(fresh, cleanup);

/// The tier methods, for use as a tier of `TieredStorage`.
mod tier {
    use crate::support::{cleanup, fresh};

    executor_core::testing::tier_conformance_tests!(fresh, cleanup);
}

/// Three executors on three separately connected storages (as three
/// processes), concurrency 16 and a 60 s idle wait, serve a queue limited
/// to 5 running tasks: each freed slot is used at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_limited_queue_uses_each_freed_slot_at_once() {
    let ns = executor_core::testing::unique_namespace("pg-release");
    let stores = vec![
        crate::support::storage().await,
        crate::support::storage().await,
        crate::support::storage().await,
    ];
    let cleaner = crate::support::storage().await;
    let run = tokio::spawn({
        let ns = ns.clone();
        async move { executor_core::testing::limited_queue_uses_freed_slots(stores, &ns).await }
    });
    let outcome = run.await;
    crate::support::cleanup(&cleaner, &ns).await;
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}
