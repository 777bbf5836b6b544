//! Public types are `Send + Sync` (checked at compile time), so they can be
//! shared across tokio tasks and held across `.await`.

use reliable_executor::{
    Client, Error, Executor, ExecutorBuilder, Handler, MemoryStorage, Namespace, Page, Registry, RetryPolicy,
    RunningExecutor, Submitted, TaskBuilder, TaskContext, TaskError, TaskId, TaskOptions, TaskRecord,
    TaskState, Timestamp, WorkerId,
    coalesce::Coalescer,
    query::{CancelOutcome, Retention, StateCounts},
    storage::{Finish, Heartbeat, Leadership, Lease, NewTask, Reaped},
};

const fn send_sync<T: Send + Sync>() {}

#[test]
fn public_types_are_send_and_sync() {
    send_sync::<Client<MemoryStorage>>();
    send_sync::<Executor<MemoryStorage>>();
    send_sync::<ExecutorBuilder<MemoryStorage>>();
    send_sync::<RunningExecutor>();
    send_sync::<Coalescer<Client<MemoryStorage>>>();
    send_sync::<MemoryStorage>();
    send_sync::<Handler>();
    send_sync::<Registry>();
    send_sync::<TaskContext>();
    send_sync::<TaskError>();
    send_sync::<Error>();
    send_sync::<TaskBuilder<u64>>();
    send_sync::<(TaskId, Namespace, WorkerId, Timestamp, TaskState)>();
    send_sync::<(TaskRecord, NewTask, Submitted, Lease, Finish, TaskOptions, RetryPolicy)>();
    send_sync::<(CancelOutcome, Heartbeat, Leadership, Page, Reaped, Retention, StateCounts)>();
}
