//! Group commit for storage backends: concurrent calls of one kind (finish,
//! submit) are gathered by a background task and sent as one store call per
//! namespace while the previous call is in flight. An idle process sends
//! each call at once; under load a batch holds every call that arrived
//! during one round trip, so a no-op task costs a fraction of a store call.
//! (Several batches in flight at once were tried for MySQL: no faster than
//! one, so there is one.)
//! Each item keeps its own answer (a duplicate id, a stale fence), exactly
//! as if it had been sent alone.

use std::{
    collections::HashMap,
    fmt,
    future::Future,
    sync::{Mutex, PoisonError},
};

use tokio::sync::{mpsc, oneshot};

use crate::{Error, Namespace, Result};

/// Calls in one batch, at most.
pub const MAX_GROUP: usize = 500;

/// One waiting call: its namespace, its item and where its answer goes.
struct Request<I, O> {
    ns: Namespace,
    item: I,
    reply: oneshot::Sender<Result<O>>,
}

/// The items of one namespace in a batch, and where their answers go.
type Group<I, O> = (Vec<I>, Vec<oneshot::Sender<Result<O>>>);

/// A queue of one kind of store call whose concurrent calls share one
/// batch call (group commit). A backend keeps one per kind of call, in the
/// state its clones share; the background task that sends the batches
/// starts on first use (and again if the tokio runtime it ran on has shut
/// down) and ends when the `GroupCommit` is dropped.
///
/// ```
/// use executor_core::{Namespace, Result, storage::GroupCommit};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<()> {
/// let doubles: GroupCommit<u32, u32> = GroupCommit::new();
/// let ns = Namespace::new("demo")?;
/// // The batch call: here it doubles every item; a backend sends one
/// // script or statement for the whole batch and answers each item.
/// let answer = doubles.call(&ns, 21, || {
///     |_ns: Namespace, items: Vec<u32>| async move { Ok(items.into_iter().map(|i| Ok(i * 2)).collect()) }
/// });
/// match answer {
///     Ok(answer) => assert_eq!(answer.await?, 42),
///     Err(_item) => unreachable!("a runtime is running"),
/// }
/// # Ok(())
/// # }
/// ```
pub struct GroupCommit<I, O> {
    queue: Mutex<Option<mpsc::UnboundedSender<Request<I, O>>>>,
}

impl<I, O> Default for GroupCommit<I, O> {
    fn default() -> Self {
        Self { queue: Mutex::new(None) }
    }
}

impl<I, O> fmt::Debug for GroupCommit<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl<I: Send + 'static, O: Send + 'static> GroupCommit<I, O> {
    /// An empty queue; no task runs until the first call.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `item` for the next batch of `ns` and returns the future of
    /// its own answer. `start` is called only when no batcher runs yet: it
    /// returns the batch call, which gets the items of one namespace (at
    /// most [`MAX_GROUP`]) and answers each, in order. An error of the whole
    /// batch call becomes every item's error.
    ///
    /// The batch call must not keep the backend alive (hold a `Weak`), or
    /// the batcher never ends.
    ///
    /// # Errors
    /// Gives the item back when there is no tokio runtime to run a batcher
    /// on (e.g. during shutdown); the caller then sends it alone.
    pub fn call<S, R, Fut>(
        &self,
        ns: &Namespace,
        item: I,
        start: S,
    ) -> std::result::Result<impl Future<Output = Result<O>> + use<I, O, S, R, Fut>, I>
    where
        S: FnOnce() -> R,
        R: FnMut(Namespace, Vec<I>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Vec<Result<O>>>> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let request = Request { ns: ns.clone(), item, reply };
        let sender = {
            let mut slot = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            match slot.as_ref() {
                Some(tx) if !tx.is_closed() => tx.clone(),
                _ => {
                    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                        return Err(request.item);
                    };
                    let (tx, rx) = mpsc::unbounded_channel();
                    runtime.spawn(run_batches(rx, start()));
                    *slot = Some(tx.clone());
                    tx
                }
            }
        };
        sender.send(request).map_err(|e| e.0.item)?;
        Ok(async move { answer.await.unwrap_or_else(|_| Err(Error::storage("the batcher stopped", true))) })
    }
}

async fn run_batches<I, O, R, Fut>(mut requests: mpsc::UnboundedReceiver<Request<I, O>>, mut run: R)
where
    R: FnMut(Namespace, Vec<I>) -> Fut,
    Fut: Future<Output = Result<Vec<Result<O>>>>,
{
    let mut batch = Vec::with_capacity(MAX_GROUP);
    while requests.recv_many(&mut batch, MAX_GROUP).await > 0 {
        let mut by_ns: HashMap<Namespace, Group<I, O>> = HashMap::new();
        for Request { ns, item, reply } in batch.drain(..) {
            let entry = by_ns.entry(ns).or_insert_with(|| (Vec::new(), Vec::new()));
            entry.0.push(item);
            entry.1.push(reply);
        }
        for (ns, (items, replies)) in by_ns {
            answer(run(ns, items).await, replies);
        }
    }
}

/// Sends each item its answer; an error of the whole call to every item.
fn answer<O>(result: Result<Vec<Result<O>>>, replies: Vec<oneshot::Sender<Result<O>>>) {
    match result {
        Ok(results) => {
            for (reply, result) in replies.into_iter().zip(results) {
                let _ = reply.send(result);
            }
        }
        Err(e) => {
            // Every item gets a copy; a store error keeps its own text
            // instead of being wrapped in a second "storage error".
            let (text, retryable) = match &e {
                Error::Storage { source, retryable } => (source.to_string(), *retryable),
                other => (other.to_string(), other.is_retryable()),
            };
            for reply in replies {
                let _ = reply.send(Err(Error::storage(text.clone(), retryable)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    #[tokio::test]
    async fn concurrent_calls_share_batches_and_keep_their_answers() -> Result<()> {
        let calls = Arc::new(AtomicUsize::new(0));
        let queue: Arc<GroupCommit<u32, u32>> = Arc::new(GroupCommit::new());
        let ns = Namespace::new("group")?;
        let mut waiting = Vec::new();
        for i in 0..200u32 {
            let counter = Arc::clone(&calls);
            let answer = queue.call(&ns, i, move || {
                move |_ns: Namespace, items: Vec<u32>| {
                    counter.fetch_add(1, Ordering::Relaxed);
                    async move {
                        tokio::task::yield_now().await;
                        Ok(items
                            .into_iter()
                            .map(|i| {
                                if i % 7 == 0 {
                                    Err(Error::Invalid { what: "item", reason: "seven".into() })
                                } else {
                                    Ok(i + 1)
                                }
                            })
                            .collect())
                    }
                }
            });
            waiting.push((i, answer.map_err(|_| Error::storage("no runtime", false))?));
        }
        for (i, answer) in waiting {
            match answer.await {
                Ok(v) => assert_eq!(v, i + 1),
                Err(e) => assert!(i % 7 == 0, "item {i} got {e}"),
            }
        }
        let batches = calls.load(Ordering::Relaxed);
        assert!(batches < 200, "200 calls queued at once took {batches} batch calls");
        Ok(())
    }

    #[tokio::test]
    async fn a_failed_batch_call_fails_every_item() -> Result<()> {
        let queue: GroupCommit<u32, u32> = GroupCommit::new();
        let ns = Namespace::new("group")?;
        let start = || |_ns: Namespace, _items: Vec<u32>| async { Err(Error::storage("store down", true)) };
        let answer = queue.call(&ns, 1, start).map_err(|_| Error::storage("no runtime", false))?;
        match answer.await {
            Err(e) => {
                assert!(e.is_retryable() && e.to_string() == "storage error (retryable): store down", "{e}")
            }
            Ok(v) => panic!("expected an error, got {v}"),
        }
        Ok(())
    }

    #[test]
    fn without_a_runtime_the_item_comes_back() -> Result<()> {
        let queue: GroupCommit<u32, u32> = GroupCommit::new();
        let ns = Namespace::new("group")?;
        let start = || |_ns: Namespace, _items: Vec<u32>| async { Ok(vec![]) };
        assert!(matches!(queue.call(&ns, 5, start), Err(5)));
        Ok(())
    }
}
