//! Durable, retried, delayable background tasks for Rust services that
//! already run Redis or MySQL/MariaDB. (Tutorial below once the runtime lands.)

#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate self as executor_core;

mod client;
mod context;
mod error;
mod executor;
mod id;
mod listener;
mod memory;
pub mod metrics;
mod options;
mod registry;
mod retry;
mod state;
mod storage;
mod task;
#[cfg(feature = "testing")]
pub mod testing;
mod time;

pub use client::{Client, DEFAULT_MAX_PAYLOAD, Submit, TaskBuilder};
pub use context::{Action, IntoTaskResult, TaskContext, TaskError};
pub use error::{BoxError, Error, Result};
pub use executor::*;
pub use id::{MAX_ID_LEN, MAX_NAMESPACE_LEN, Namespace, TaskId, WorkerId};
pub use listener::Listener;
pub use memory::*;
pub use options::{DEFAULT_RETRY_LIMIT, MAX_RETRY_LIMIT, TaskOptions};
pub use registry::{BoxFuture, Handler, InvokeFn, Registry, TaskRegistration, decode};
pub use retry::{BackoffFn, CustomBackoff, RetryPolicy, parse_duration};
pub use state::{TaskState, Transition};
pub use storage::{
    CancelOutcome, Heartbeat, Leadership, ListQuery, Page, Reaped, Retention, StateCounts, Storage,
};
pub use task::{Debounce, Due, Finish, Lease, NewTask, SubmitMode, SubmitOutcome, Submitted, TaskRecord};
pub use time::Timestamp;

pub use executor_macros::reliable_task;

/// Everything a handler module needs: `use executor_core::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Client, Handler, RetryPolicy, Submit, TaskContext, TaskError, TaskId, TaskOptions, TaskState,
        reliable_task,
    };
    pub use serde::{Deserialize, Serialize};
    pub use std::time::Duration;
}

/// Used by the code `#[reliable_task]` generates. Not a public API: it may
/// change in any release.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use serde;
    pub use serde_json;

    pub use crate::{
        BoxFuture, IntoTaskResult, RetryPolicy, Submit, TaskBuilder, TaskContext, TaskError, TaskId,
        TaskOptions, TaskRegistration, decode,
    };
}
