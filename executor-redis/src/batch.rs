//! Group commit: concurrent `submit` and `finish` calls of one process are
//! gathered by a background task per kind and sent as one script call per
//! namespace while the previous call is in flight. An idle process sends
//! each call at once; under load a batch holds every call that arrived
//! during one round trip, so a no-op task costs a fraction of a script call
//! to submit and to finish. Each item keeps its own answer (a duplicate id,
//! a stale fence), exactly as if it had been sent alone.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, Mutex, PoisonError, Weak},
};

use executor_core::{Error, Finish, Lease, Namespace, NewTask, Result, Submitted, TaskState};
use tokio::sync::{mpsc, oneshot};

use crate::{RedisStorage, error::shape, storage::Inner};

/// Calls in one batch, at most.
const MAX_BATCH: usize = 500;

/// One waiting call: its namespace, its item and where its answer goes.
#[derive(Debug)]
pub(crate) struct Request<I, O> {
    ns: Namespace,
    item: I,
    reply: oneshot::Sender<Result<O>>,
}

/// The queue of one kind of call; the batcher task is started on first use
/// (and again if the tokio runtime it ran on has shut down).
pub(crate) type Queue<I, O> = Mutex<Option<mpsc::UnboundedSender<Request<I, O>>>>;

pub(crate) type FinishItem = (Lease, Finish);

/// The items of one namespace in a batch, and where their answers go.
type Group<I, O> = (Vec<I>, Vec<oneshot::Sender<Result<O>>>);

impl RedisStorage {
    pub(crate) async fn finish_one(
        &self,
        ns: &Namespace,
        lease: &Lease,
        finish: Finish,
    ) -> Result<TaskState> {
        match enqueue(&self.inner, |i| &i.finishes, ns, (lease.clone(), finish), run_finishes) {
            Ok(answer) => answer.await,
            // The batcher's runtime is gone (it shut down): send it alone.
            Err(item) => {
                self.finish_leases(ns, vec![item]).await?.pop().unwrap_or_else(|| Err(shape("no answer")))
            }
        }
    }

    pub(crate) async fn submit_one(&self, ns: &Namespace, task: NewTask) -> Result<Submitted> {
        match enqueue(&self.inner, |i| &i.submits, ns, task, run_submits) {
            Ok(answer) => answer.await,
            Err(task) => {
                self.submit_tasks(ns, vec![task]).await?.pop().unwrap_or_else(|| Err(shape("no answer")))
            }
        }
    }
}

async fn run_finishes(
    storage: RedisStorage,
    ns: Namespace,
    items: Vec<FinishItem>,
) -> Result<Vec<Result<TaskState>>> {
    storage.finish_leases(&ns, items).await
}

async fn run_submits(
    storage: RedisStorage,
    ns: Namespace,
    items: Vec<NewTask>,
) -> Result<Vec<Result<Submitted>>> {
    storage.submit_tasks(&ns, items).await
}

/// Queues one call; gives the item back when the batcher cannot take it.
fn enqueue<I, O, F, Fut>(
    inner: &Arc<Inner>,
    queue: fn(&Inner) -> &Queue<I, O>,
    ns: &Namespace,
    item: I,
    run: F,
) -> std::result::Result<impl Future<Output = Result<O>> + use<I, O, F, Fut>, I>
where
    I: Send + 'static,
    O: Send + 'static,
    F: Fn(RedisStorage, Namespace, Vec<I>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Vec<Result<O>>>> + Send + 'static,
{
    let (reply, answer) = oneshot::channel();
    let request = Request { ns: ns.clone(), item, reply };
    let sender = {
        let mut slot = queue(inner).lock().unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref() {
            Some(tx) if !tx.is_closed() => tx.clone(),
            _ => {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(run_batches(Arc::downgrade(inner), rx, run));
                *slot = Some(tx.clone());
                tx
            }
        }
    };
    sender.send(request).map_err(|e| e.0.item)?;
    Ok(async move { answer.await.unwrap_or_else(|_| Err(Error::storage("the batcher stopped", true))) })
}

async fn run_batches<I, O, F, Fut>(
    inner: Weak<Inner>,
    mut requests: mpsc::UnboundedReceiver<Request<I, O>>,
    run: F,
) where
    F: Fn(RedisStorage, Namespace, Vec<I>) -> Fut,
    Fut: Future<Output = Result<Vec<Result<O>>>>,
{
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while requests.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let Some(inner) = inner.upgrade() else { return };
        let mut by_ns: HashMap<Namespace, Group<I, O>> = HashMap::new();
        for Request { ns, item, reply } in batch.drain(..) {
            let entry = by_ns.entry(ns).or_default();
            entry.0.push(item);
            entry.1.push(reply);
        }
        for (ns, (items, replies)) in by_ns {
            match run(RedisStorage { inner: Arc::clone(&inner) }, ns, items).await {
                Ok(results) => {
                    for (reply, result) in replies.into_iter().zip(results) {
                        let _ = reply.send(result);
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(Error::storage(e.to_string(), e.is_retryable())));
                    }
                }
            }
        }
    }
}
