//! Handlers that live in a crate of their own, as a user's `my_handlers`
//! crate would. A binary finds them only if it references this crate
//! (`use linked_handlers as _;`): the linker drops a crate nothing
//! references, and its registrations with it.

use executor_core::prelude::*;

/// The payload of [`fn@ping`].
#[derive(Debug, Serialize, Deserialize)]
pub struct Ping {
    /// Echoed nowhere; it only has to travel.
    pub seq: u64,
}

/// A public handler with a payload, defined outside the binary.
#[reliable_task(name = "linked.ping", retry_limit = 1, timeout = "5s")]
pub async fn ping(ping: Ping) -> Result<(), TaskError> {
    if ping.seq == u64::MAX {
        return Err(TaskError::abort("sequence exhausted"));
    }
    Ok(())
}

/// A private handler: registered just the same, but only this crate can
/// submit it through its typed helpers.
#[reliable_task(name = "linked.cleanup")]
async fn cleanup() {}

/// The names this crate registers, for `ExecutorBuilder::expect_handlers`.
pub const NAMES: [&str; 2] = [ping::NAME, cleanup::NAME];
