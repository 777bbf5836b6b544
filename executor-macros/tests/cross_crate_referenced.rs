//! Handlers defined in another crate are found when the binary references
//! that crate. `use linked_handlers as _;` is all it takes: nothing else from
//! the crate is used here.
//!
//! A test binary of its own, not a module of `tests/it`: it expects exactly
//! `linked-handlers`' two handlers in the registry, and referencing that crate
//! would link it into `it`, whose `cross_crate_unreferenced` checks it is dropped.

use reliable_executor::{Executor, MemoryStorage, Registry};

use linked_handlers as _;

#[test]
fn a_referenced_crate_registers_its_handlers() -> Result<(), reliable_executor::Error> {
    let registry = Registry::collect([])?;
    assert_eq!(registry.names(), ["linked.cleanup", "linked.ping"]);
    let ping = registry.get("linked.ping").map(|h| h.default_options().max_attempts());
    assert_eq!(ping, Some(2));
    Ok(())
}

#[tokio::test]
async fn an_executor_expecting_them_starts() -> Result<(), reliable_executor::Error> {
    let executor = Executor::builder(MemoryStorage::new())
        .namespace("macros-linked")
        .expect_handlers(["linked.ping", "linked.cleanup"])
        .build()
        .await?;
    assert_eq!(executor.registry().len(), 2);
    Ok(())
}
