//! Ending attempts, the mechanism every SQL dialect shares: one statement
//! conditional on the fence per task, or one for a batch of completions,
//! and concurrent `finish` calls of one process sharing those batches
//! (group commit). No transaction: a worker stopped between two statements
//! holds no lock, so the reaper and other workers never wait on it. The
//! dialect writes the statements ([`FinishStatements`]).

use std::{
    collections::{HashMap, HashSet},
    future::Future,
};

use executor_core::{
    Error, Namespace, Result, TaskState,
    storage::{Finish, GroupCommit, Lease},
};

/// Below this many items a batch is cheaper as single statements.
const BATCH_MIN: usize = 3;
/// Most items in one batch statement.
const MAX_BATCH: usize = 1000;

/// The statements a dialect runs to end attempts, each retrying its own
/// lock conflicts; and who it wakes. Cheap to clone: the group-commit
/// batcher holds a clone (its connections and wake-up, not the storage), so
/// it ends when the last clone of the storage is dropped.
pub trait FinishStatements: Clone + Send + Sync + 'static {
    /// Ends one attempt as `finish` says, only while the task is `RUNNING`
    /// with the lease's fence (a worker that lost its lease cannot overwrite
    /// a newer attempt); a retry also appends the attempt to the log.
    /// Returns the rows changed: 0 when the lease is stale.
    fn finish(
        &self,
        ns: &Namespace,
        lease: &Lease,
        finish: &Finish,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Completes every lease in one statement conditional on each fence;
    /// returns the rows changed.
    fn complete_batch(&self, ns: &Namespace, leases: &[&Lease]) -> impl Future<Output = Result<u64>> + Send;

    /// The id, fence and state of each of the tasks of `leases` that exists.
    fn read_batch(
        &self,
        ns: &Namespace,
        leases: &[&Lease],
    ) -> impl Future<Output = Result<Vec<(String, u64, String)>>> + Send;

    /// Wakes idle claimers of this process after attempts of `ns` ended in
    /// `state`s (a task back to waiting; a freed slot of a limited queue,
    /// where the dialect has no notification that tells other processes).
    fn woken(&self, ns: &Namespace, states: &[TaskState]);
}

/// Where concurrent finishes of one process queue to share a batch.
pub type FinishGroup = GroupCommit<(Lease, Finish), TaskState>;

/// Concurrent finishes of this process share one batch (group commit): an
/// idle process sends each at once, a busy one sends every finish that
/// arrived while the previous batch was in flight. Each caller gets its own
/// answer; one bad finish fails only its caller.
///
/// # Errors
/// As [`finish_many`] for this item.
pub async fn finish<S: FinishStatements>(
    group: &FinishGroup,
    statements: &S,
    ns: &Namespace,
    lease: &Lease,
    finish: Finish,
) -> Result<TaskState> {
    let batcher = statements.clone();
    let start = move || {
        move |ns: Namespace, items: Vec<(Lease, Finish)>| {
            let statements = batcher.clone();
            async move { finish_many(&statements, &ns, items).await }
        }
    };
    match group.call(ns, (lease.clone(), finish), start) {
        Ok(answer) => answer.await,
        // No runtime to batch on (it is shutting down): send it alone,
        // boxed so this rare branch does not size every finish future.
        Err((lease, finish)) => Box::pin(finish_one(statements, ns, &lease, finish)).await,
    }
}

/// Ends one attempt. No row changed means the lease is stale: the task
/// moved on, or is gone (deleted, trimmed); either way this worker's write
/// is refused.
async fn finish_one<S: FinishStatements>(
    s: &S,
    ns: &Namespace,
    lease: &Lease,
    finish: Finish,
) -> Result<TaskState> {
    finish.validate()?;
    if s.finish(ns, lease, &finish).await? == 0 {
        return Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence });
    }
    let target = finish.target();
    s.woken(ns, &[target]);
    Ok(target)
}

/// Ends many attempts; each item gets its own answer and no item can fail
/// another:
///
/// - each item is validated first; an invalid one is refused alone;
/// - the completions of tasks named once go in one statement conditional on
///   every item's fence; when it changes fewer rows than items, one read
///   tells which landed;
/// - every other item (a retry, a failure, a task named twice) is its own
///   statement, in the order given;
/// - when a batch statement fails for any reason, its items are sent one
///   by one, so the one that cannot be written gets the error alone.
///
/// # Errors
/// None of its own: every item's error is in its answer.
pub async fn finish_many<S: FinishStatements>(
    s: &S,
    ns: &Namespace,
    items: Vec<(Lease, Finish)>,
) -> Result<Vec<Result<TaskState>>> {
    let mut out: Vec<Option<Result<TaskState>>> = Vec::with_capacity(items.len());
    let mut named: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for (lease, _) in &items {
        *named.entry(lease.id.as_str()).or_default() += 1;
    }
    let mut batch: Vec<usize> = Vec::new();
    let mut singles: Vec<usize> = Vec::new();
    for (i, (lease, f)) in items.iter().enumerate() {
        match f.validate() {
            Err(e) => out.push(Some(Err(e))),
            Ok(()) => {
                out.push(None);
                if matches!(f, Finish::Completed) && named.get(lease.id.as_str()) == Some(&1) {
                    batch.push(i);
                } else {
                    singles.push(i);
                }
            }
        }
    }
    if batch.len() < BATCH_MIN {
        singles.append(&mut batch);
        singles.sort_unstable();
    }
    for chunk in batch.chunks(MAX_BATCH) {
        let leases: Vec<&Lease> = chunk.iter().map(|&i| &items[i].0).collect();
        match complete_batch(s, ns, &leases).await {
            Ok(answers) => {
                for (&i, answer) in chunk.iter().zip(answers) {
                    match answer {
                        // Still current but not written (cannot happen
                        // unless the row changed under the statement): alone.
                        Landed::Retry => singles.push(i),
                        Landed::Yes => out[i] = Some(Ok(TaskState::Completed)),
                        Landed::Stale => {
                            let lease = &items[i].0;
                            out[i] =
                                Some(Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence }));
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, items = chunk.len(), "batch finish failed; finishing its items one by one");
                singles.extend_from_slice(chunk);
            }
        }
    }
    singles.sort_unstable();
    for i in singles {
        let (lease, f) = &items[i];
        out[i] = Some(finish_one(s, ns, lease, f.clone()).await);
    }
    let ended: Vec<TaskState> = out.iter().filter_map(|r| r.as_ref()?.as_ref().ok().copied()).collect();
    if !ended.is_empty() {
        s.woken(ns, &ended);
    }
    Ok(out
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| Err(Error::storage(std::io::Error::other("finish got no answer"), true)))
        })
        .collect())
}

/// Whether one completion of a batch landed.
enum Landed {
    Yes,
    Stale,
    Retry,
}

/// Completes every lease in one statement conditional on each fence. When
/// it changed every row, each landed; otherwise one read by primary key
/// tells: `COMPLETED` with the lease's fence landed (now, or by an earlier
/// finish of the same lease, which is the same outcome), `RUNNING` with the
/// fence is still current, anything else (or no row) is stale.
async fn complete_batch<S: FinishStatements>(
    s: &S,
    ns: &Namespace,
    leases: &[&Lease],
) -> Result<Vec<Landed>> {
    if s.complete_batch(ns, leases).await? == leases.len() as u64 {
        return Ok(leases.iter().map(|_| Landed::Yes).collect());
    }
    let current: HashMap<String, (u64, String)> =
        s.read_batch(ns, leases).await?.into_iter().map(|(id, fence, state)| (id, (fence, state))).collect();
    let mut seen = HashSet::new();
    Ok(leases
        .iter()
        .map(|lease| match current.get(lease.id.as_str()) {
            Some((fence, state)) if *fence == lease.fence && seen.insert(&lease.id) => {
                if state == TaskState::Completed.as_str() {
                    Landed::Yes
                } else if state == TaskState::Running.as_str() {
                    Landed::Retry
                } else {
                    Landed::Stale
                }
            }
            _ => Landed::Stale,
        })
        .collect())
}
