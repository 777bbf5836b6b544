//! The storage conformance suite on `MemoryStorage`: runs under a plain
//! `cargo test -p executor-core` (the crate enables its own `testing`
//! feature for its tests).

use executor_core::{MemoryStorage, Namespace, testing};

async fn fresh() -> (MemoryStorage, Namespace) {
    (MemoryStorage::new(), testing::unique_namespace("mem"))
}

async fn cleanup(storage: &MemoryStorage, ns: &Namespace) {
    storage.remove_namespace(ns);
}

executor_core::storage_conformance_tests!(fresh, cleanup);
executor_core::tier_conformance_tests!(fresh, cleanup);
executor_core::schedule_conformance_tests!(fresh, cleanup);
executor_core::history_conformance_tests!(fresh, cleanup);
executor_core::attempt_log_conformance_tests!(fresh, cleanup);
executor_core::run_now_conformance_tests!(fresh, cleanup);
executor_core::queue_conformance_tests!(fresh, cleanup);
executor_core::queue_limit_conformance_tests!(fresh, cleanup);

/// The whole suite again on a `TieredStorage` of two memory stores.
mod tiered {
    use executor_core::{MemoryStorage, Namespace, TieredStorage, testing};

    async fn fresh() -> (TieredStorage<MemoryStorage, MemoryStorage>, Namespace) {
        (TieredStorage::new(MemoryStorage::new(), MemoryStorage::new()), testing::unique_namespace("tier"))
    }

    async fn cleanup(storage: &TieredStorage<MemoryStorage, MemoryStorage>, ns: &Namespace) {
        storage.hot().remove_namespace(ns);
        storage.cold().remove_namespace(ns);
    }

    executor_core::storage_conformance_tests!(fresh, cleanup);
    executor_core::schedule_conformance_tests!(fresh, cleanup);
    executor_core::history_conformance_tests!(fresh, cleanup);
    executor_core::attempt_log_conformance_tests!(fresh, cleanup);
    executor_core::run_now_conformance_tests!(fresh, cleanup);
    executor_core::queue_conformance_tests!(fresh, cleanup);
    executor_core::queue_limit_conformance_tests!(fresh, cleanup);
}
