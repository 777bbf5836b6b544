//! Pausing and resuming a queue, on every dialect.

use executor_core::{Namespace, QueueName, Result};

use crate::{
    Dialect,
    stmt::{Value, execute},
};

/// Pauses or resumes `queue`: a row in the queues table while it is paused
/// or has limits, none otherwise. Every claim statement reads it, so a
/// pause holds for every process from the next claim on. Resuming deletes
/// a row that holds no limits and clears the flag of one that does, then
/// announces the work the pause held back ([`Dialect::announce_work`]).
pub(crate) async fn pause<D: Dialect>(d: &D, ns: &Namespace, queue: &QueueName, paused: bool) -> Result<()> {
    let args = [("ns", Value::Text(ns.as_str())), ("queue", Value::Text(queue.as_str()))];
    if paused {
        execute(d, &D::SQL.queues_pause, &args).await?;
        return Ok(());
    }
    execute(d, &D::SQL.queues_resume_delete, &args).await?;
    execute(d, &D::SQL.queues_resume, &args).await?;
    d.announce_work(ns).await
}
