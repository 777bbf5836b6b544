//! The root paths of earlier releases still name the same items as their
//! documented paths in the modules. The one place in the workspace that
//! uses them: it keeps them from being dropped by accident.

use std::any::TypeId;

use reliable_executor as rex;

fn same<A: ?Sized + 'static, B: ?Sized + 'static>() -> bool {
    TypeId::of::<A>() == TypeId::of::<B>()
}

#[test]
fn earlier_root_paths_are_the_module_items() {
    assert!(same::<rex::AttemptOutcome, rex::attempt_log::AttemptOutcome>());
    assert!(same::<rex::AttemptRecord, rex::attempt_log::AttemptRecord>());
    assert!(same::<rex::AttemptSummary, rex::attempt_log::AttemptSummary>());
    assert!(same::<rex::CoalesceStats, rex::coalesce::CoalesceStats>());
    assert!(same::<rex::Coalescer<rex::MemoryStorage>, rex::coalesce::Coalescer<rex::MemoryStorage>>());
    assert!(same::<rex::HistoryBucket, rex::history::HistoryBucket>());
    assert!(same::<rex::CancelOutcome, rex::query::CancelOutcome>());
    assert!(same::<rex::Retention, rex::query::Retention>());
    assert!(same::<rex::StateCounts, rex::query::StateCounts>());
    assert!(same::<rex::Unreadable, rex::query::Unreadable>());
    assert!(same::<rex::WorkerInfo, rex::query::WorkerInfo>());
    assert!(same::<rex::ClaimPlan, rex::queue::ClaimPlan>());
    assert!(same::<rex::QueueInfo, rex::queue::QueueInfo>());
    assert!(same::<rex::QueueLimits, rex::queue::QueueLimits>());
    assert!(same::<rex::QueueSet, rex::queue::QueueSet>());
    assert!(same::<rex::QueueShare, rex::queue::QueueShare>());
    assert!(same::<rex::RateLimit, rex::queue::RateLimit>());
    assert!(same::<rex::BackoffFn, rex::retry::BackoffFn>());
    assert!(same::<rex::CustomBackoff, rex::retry::CustomBackoff>());
    let parse: fn(&str) -> rex::Result<std::time::Duration> = rex::parse_duration;
    assert_eq!(parse("2s").ok(), rex::retry::parse_duration("2s").ok());

    assert_eq!(rex::MAX_ATTEMPT_LOG, rex::attempt_log::MAX_ATTEMPT_LOG);
    assert_eq!(rex::MAX_ERROR_LEN, rex::attempt_log::MAX_ERROR_LEN);
    assert_eq!(rex::DEFAULT_MAX_PAYLOAD, rex::client::DEFAULT_MAX_PAYLOAD);
    assert_eq!(rex::SUBMIT_BATCH, rex::client::SUBMIT_BATCH);
    assert_eq!(rex::MAX_ID_LEN, rex::id::MAX_ID_LEN);
    assert_eq!(rex::MAX_NAMESPACE_LEN, rex::id::MAX_NAMESPACE_LEN);
    assert_eq!(rex::DEFAULT_RETRY_LIMIT, rex::options::DEFAULT_RETRY_LIMIT);
    assert_eq!(rex::MAX_RETRY_LIMIT, rex::options::MAX_RETRY_LIMIT);
    assert_eq!(rex::MAX_PAGE_SIZE, rex::query::MAX_PAGE_SIZE);
    assert_eq!(rex::DEFAULT_QUEUE, rex::queue::DEFAULT_QUEUE);
    assert_eq!(rex::MAX_CONCURRENCY_LIMIT, rex::queue::MAX_CONCURRENCY_LIMIT);
    assert_eq!(rex::MAX_PRIORITY, rex::queue::MAX_PRIORITY);
    assert_eq!(rex::MAX_QUEUE_LEN, rex::queue::MAX_QUEUE_LEN);
    assert_eq!(rex::MAX_QUEUES, rex::queue::MAX_QUEUES);
    assert_eq!(rex::MAX_RATE_PER, rex::queue::MAX_RATE_PER);
    assert_eq!(rex::MAX_RATE_STARTS, rex::queue::MAX_RATE_STARTS);
    assert_eq!(rex::MAX_WEIGHT, rex::queue::MAX_WEIGHT);
    assert_eq!(rex::DEFAULT_SUBMIT_PAUSE, rex::resend::DEFAULT_SUBMIT_PAUSE);
    assert_eq!(rex::DEFAULT_SUBMIT_TRIES, rex::resend::DEFAULT_SUBMIT_TRIES);
    assert_eq!(rex::DEFAULT_HORIZON, rex::tiered::DEFAULT_HORIZON);
    assert_eq!(rex::MAX_DURATION, rex::time::MAX_DURATION);
}

// The conformance macros' root paths expand as their `testing` paths do.
mod earlier_macro_paths {
    use reliable_executor::{MemoryStorage, Namespace, testing};

    async fn fresh() -> (MemoryStorage, Namespace) {
        (MemoryStorage::new(), testing::unique_namespace("earlier"))
    }

    async fn cleanup(storage: &MemoryStorage, ns: &Namespace) {
        storage.remove_namespace(ns);
    }

    reliable_executor::tier_conformance_tests!(fresh, cleanup);
}
