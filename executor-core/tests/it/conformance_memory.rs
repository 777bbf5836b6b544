//! The storage conformance suite on `MemoryStorage`: runs under a plain
//! `cargo test -p reliable-executor-core` (the crate enables its own `testing`
//! feature for its tests).

use reliable_executor::{MemoryStorage, Namespace, testing};

async fn fresh() -> (MemoryStorage, Namespace) {
    (MemoryStorage::new(), testing::unique_namespace("mem"))
}

async fn cleanup(storage: &MemoryStorage, ns: &Namespace) {
    storage.remove_namespace(ns);
}

reliable_executor::testing::storage_conformance_tests!(fresh, cleanup);
reliable_executor::testing::tier_conformance_tests!(fresh, cleanup);
reliable_executor::testing::schedule_conformance_tests!(fresh, cleanup);
reliable_executor::testing::history_conformance_tests!(fresh, cleanup);
reliable_executor::testing::attempt_log_conformance_tests!(fresh, cleanup);
reliable_executor::testing::run_now_conformance_tests!(fresh, cleanup);
reliable_executor::testing::queue_conformance_tests!(fresh, cleanup);
reliable_executor::testing::queue_limit_conformance_tests!(fresh, cleanup);

/// The whole suite again on a `TieredStorage` of two memory stores.
mod tiered {
    use reliable_executor::{MemoryStorage, Namespace, TieredStorage, testing};

    async fn fresh() -> (TieredStorage<MemoryStorage, MemoryStorage>, Namespace) {
        (TieredStorage::new(MemoryStorage::new(), MemoryStorage::new()), testing::unique_namespace("tier"))
    }

    async fn cleanup(storage: &TieredStorage<MemoryStorage, MemoryStorage>, ns: &Namespace) {
        storage.hot().remove_namespace(ns);
        storage.cold().remove_namespace(ns);
    }

    reliable_executor::testing::storage_conformance_tests!(fresh, cleanup);
    reliable_executor::testing::schedule_conformance_tests!(fresh, cleanup);
    reliable_executor::testing::history_conformance_tests!(fresh, cleanup);
    reliable_executor::testing::attempt_log_conformance_tests!(fresh, cleanup);
    reliable_executor::testing::run_now_conformance_tests!(fresh, cleanup);
    reliable_executor::testing::queue_conformance_tests!(fresh, cleanup);
    reliable_executor::testing::queue_limit_conformance_tests!(fresh, cleanup);
}
