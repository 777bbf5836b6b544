//! Records: what a task is and what the layers above exchange about it: the
//! task and its states, ids, instants, queues, schedules, retry policies and
//! options, the answers of queries, the attempt log and the throughput
//! history, each with its limits and checks. Records depend on nothing but
//! each other and the crate's [`Error`](crate::Error); the public `schedule`
//! module also shows the API's handle on schedules, beside their records.

pub mod attempt_log;
pub mod history;
pub mod id;
pub mod options;
pub mod query;
pub mod queue;
pub mod retry;
pub mod schedule;
pub(crate) mod state;
pub(crate) mod task;
pub mod time;
