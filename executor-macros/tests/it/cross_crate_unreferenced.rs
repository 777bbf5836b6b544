//! The failure the remedy exists for: `linked-handlers` is a dependency of
//! this test binary (as a handler crate is of a user's binary), but nothing
//! here references it, so the linker drops it and its `#[reliable_task]`
//! registrations with it. `tests/cross_crate_referenced.rs` is a binary of
//! its own with `use linked_handlers as _;`. Nothing in this test binary may
//! reference `linked_handlers`.

use reliable_executor::{Executor, MemoryStorage, Registry};

#[test]
fn an_unreferenced_crate_registers_nothing() -> Result<(), reliable_executor::Error> {
    let registry = Registry::collect([])?;
    let linked: Vec<&str> = registry.names().into_iter().filter(|n| n.starts_with("linked.")).collect();
    assert!(linked.is_empty(), "{linked:?}");
    Ok(())
}

#[tokio::test]
async fn an_executor_told_what_to_expect_says_what_is_missing_and_how_to_fix_it() {
    // The data the handlers of data.rs take, which register here too.
    let built = crate::data::with_their_data(Executor::builder(MemoryStorage::new()))
        .namespace("macros-unlinked")
        .expect_handlers(["linked.ping"])
        .build()
        .await;
    assert!(
        matches!(&built, Err(reliable_executor::Error::UnknownTask(name)) if name == "linked.ping"),
        "{built:?}"
    );
    let err = built.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("no handler is registered for task name `linked.ping`"), "{err}");
    assert!(err.contains("use my_handlers as _;"), "{err}");
}
