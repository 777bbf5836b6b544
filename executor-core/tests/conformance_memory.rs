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
