//! Group commit for storage backends: concurrent calls of one kind (finish,
//! submit) of one namespace share one store call. A call that finds its
//! namespace idle is sent at once from the caller's own task (one round
//! trip, no hop through another task). Calls that arrive while another is in
//! flight queue, and a sender task sends them as batches (at most
//! [`MAX_GROUP`] per store call), one after another, until none is waiting.
//! So an idle process pays one round trip per call, and under load a batch
//! holds every call that arrived during one round trip, so a no-op task
//! costs a fraction of a store call. Queued calls never wait for the caller
//! that went first: a caller that stops polling its future holds up nobody.
//! (Several batches of one namespace in flight at once were tried for MySQL:
//! no faster than one, so the sender sends one at a time.)
//! Each item keeps its own answer (a duplicate id, a stale fence), exactly
//! as if it had been sent alone.

use std::{
    collections::HashMap,
    fmt,
    future::Future,
    sync::{Arc, Mutex, PoisonError},
};

use tokio::{
    runtime::Handle,
    sync::{Notify, oneshot},
};

use crate::{Error, Namespace, Result};

/// Calls in one batch, at most.
pub const MAX_GROUP: usize = 500;

/// One waiting call: its item and where its answer goes.
struct Request<I, O> {
    item: I,
    reply: oneshot::Sender<Result<O>>,
}

/// How long a new sender waits for the leading caller's call to return
/// before it sends the queue anyway: normally the leader returns within a
/// round trip and the calls that queued meanwhile go as one batch; a leader
/// whose future is no longer polled holds them up this long, once.
const LEADER_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// One namespace's state; a namespace absent from the map is idle.
struct Lane<I, O> {
    /// A caller is sending its own call.
    leading: bool,
    /// Told when the leading caller's call returns.
    led: Arc<Notify>,
    /// A sender task is sending the queue.
    sending: bool,
    /// Calls waiting for the sender.
    queue: Vec<Request<I, O>>,
}

type Lanes<I, O> = Arc<Mutex<HashMap<Namespace, Lane<I, O>>>>;

/// A queue of one kind of store call whose concurrent calls share one
/// batch call (group commit). A backend keeps one per kind of call, in the
/// state its clones share. Nothing runs in the background while no call is
/// waiting: a task that sends the waiting batches starts when a call returns
/// with others queued behind it, and ends when none is left.
///
/// ```
/// use reliable_executor::{Namespace, Result, storage::GroupCommit};
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
    lanes: Lanes<I, O>,
}

impl<I, O> Default for GroupCommit<I, O> {
    fn default() -> Self {
        Self { lanes: Arc::default() }
    }
}

impl<I, O> fmt::Debug for GroupCommit<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl<I: Send + 'static, O: Send + 'static> GroupCommit<I, O> {
    /// An empty queue.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends `item`, alone or in a batch, and returns the future of its own
    /// answer. When `ns` is idle, the returned future sends it itself (one
    /// store call, in the caller's task); otherwise it queues, and a sender
    /// task sends it in the next batch. `start` returns the batch call, which
    /// gets items of one namespace (at most [`MAX_GROUP`]) and answers each,
    /// in order; it is called when this call leads, or starts the sender. An
    /// error of the whole batch call becomes every item's error. Queued calls
    /// never wait for the leading caller's future: dropped or never polled
    /// again, it holds up no one.
    ///
    /// The batch call must not keep the backend alive (hold a `Weak`), or
    /// the task that sends queued batches keeps it past its last user.
    ///
    /// # Errors
    /// Gives the item back when there is no tokio runtime to run queued
    /// batches on (e.g. during shutdown); the caller then sends it alone.
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
        let Ok(runtime) = Handle::try_current() else { return Err(item) };
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        let lane = lanes.entry(ns.clone()).or_insert_with(|| Lane {
            leading: false,
            led: Arc::default(),
            sending: false,
            queue: Vec::new(),
        });
        let lead = if !lane.leading && !lane.sending && lane.queue.is_empty() {
            lane.leading = true;
            drop(lanes);
            let mut run = start();
            // Boxed: the caller's future holds this call, and a batch call
            // (a whole store round trip) is large; every caller that awaits
            // this future (an attempt's finish) would copy it on each move.
            let call = Box::pin(run(ns.clone(), vec![item]));
            let (lanes, ns) = (Arc::clone(&self.lanes), ns.clone());
            let handoff = Handoff(Some(Box::new(move || {
                let mut all = lanes.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(lane) = all.get_mut(&ns) {
                    lane.leading = false;
                    lane.led.notify_one();
                    if !lane.sending && lane.queue.is_empty() {
                        all.remove(&ns);
                    }
                }
            })));
            Ok((handoff, call))
        } else {
            let (reply, answer) = oneshot::channel();
            lane.queue.push(Request { item, reply });
            if !lane.sending {
                lane.sending = true;
                let led = lane.leading.then(|| Arc::clone(&lane.led));
                drop(lanes);
                runtime.spawn(send_waiting(Arc::clone(&self.lanes), ns.clone(), led, start()));
            }
            Err(answer)
        };
        Ok(async move {
            match lead {
                Err(answer) => {
                    answer.await.unwrap_or_else(|_| Err(Error::storage("the batch call was dropped", true)))
                }
                Ok((handoff, call)) => {
                    let result = call.await;
                    drop(handoff);
                    match result {
                        Ok(mut answers) if answers.len() == 1 => {
                            answers.pop().unwrap_or_else(|| Err(Error::storage("no answer", false)))
                        }
                        Ok(answers) => Err(Error::storage(
                            format!("the batch call gave {} answers for 1 item", answers.len()),
                            false,
                        )),
                        Err(e) => Err(e),
                    }
                }
            }
        })
    }
}

/// Held by the caller sending its own call; dropped (the call returned or
/// was cancelled), it marks the namespace free for the next caller to lead.
struct Handoff(Option<Box<dyn FnOnce() + Send>>);

impl Drop for Handoff {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

/// The next batch of `ns`'s queue, at most [`MAX_GROUP`] calls; `None` when
/// it is empty, and then the sender is marked gone (and the lane idle
/// unless a caller leads).
fn take_waiting<I, O>(lanes: &Lanes<I, O>, ns: &Namespace) -> Option<Vec<Request<I, O>>> {
    let mut all = lanes.lock().unwrap_or_else(PoisonError::into_inner);
    let lane = all.get_mut(ns)?;
    if lane.queue.is_empty() {
        lane.sending = false;
        if !lane.leading {
            all.remove(ns);
        }
        return None;
    }
    let rest = lane.queue.split_off(lane.queue.len().min(MAX_GROUP));
    Some(std::mem::replace(&mut lane.queue, rest))
}

/// Sends the queued calls of `ns` as batches until none is waiting.
async fn send_waiting<I, O, R, Fut>(lanes: Lanes<I, O>, ns: Namespace, led: Option<Arc<Notify>>, mut run: R)
where
    R: FnMut(Namespace, Vec<I>) -> Fut,
    Fut: Future<Output = Result<Vec<Result<O>>>>,
{
    // Dropped before the queue is empty (the runtime shuts down): the sender
    // is marked gone and the calls still queued get a retryable error
    // instead of waiting for ever.
    struct Release<'a, I, O> {
        lanes: &'a Lanes<I, O>,
        ns: &'a Namespace,
        done: bool,
    }
    impl<I, O> Drop for Release<'_, I, O> {
        fn drop(&mut self) {
            if self.done {
                return;
            }
            let mut all = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(lane) = all.get_mut(self.ns) {
                lane.sending = false;
                lane.queue.clear();
                if !lane.leading {
                    all.remove(self.ns);
                }
            }
        }
    }
    let mut release = Release { lanes: &lanes, ns: &ns, done: false };
    if let Some(led) = led
        && tokio::time::timeout(LEADER_WAIT, led.notified()).await.is_err()
    {
        // The leading caller's future is slow or no longer polled: no
        // sender waits for it again.
        if let Some(lane) = lanes.lock().unwrap_or_else(PoisonError::into_inner).get_mut(&ns) {
            lane.leading = false;
        }
    }
    loop {
        let mut batch = take_waiting_or_yield(&lanes, &ns).await;
        let Some(requests) = batch.take() else { break };
        let (items, replies): (Vec<I>, Vec<_>) = requests.into_iter().map(|r| (r.item, r.reply)).unzip();
        answer(run(ns.clone(), items).await, replies);
    }
    release.done = true;
}

/// The next batch; when the queue is empty, first lets the callers just
/// answered call again (so their calls join this sender's next batch
/// instead of each leading a call of its own), then looks once more.
async fn take_waiting_or_yield<I, O>(lanes: &Lanes<I, O>, ns: &Namespace) -> Option<Vec<Request<I, O>>> {
    let empty = || {
        let all = lanes.lock().unwrap_or_else(PoisonError::into_inner);
        all.get(ns).is_none_or(|lane| lane.queue.is_empty())
    };
    // A few turns of the scheduler: the answered callers run on either
    // worker thread of a busy runtime.
    for _ in 0..4 {
        if !empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    take_waiting(lanes, ns)
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

    /// A batch call that answers each item with the id of the tokio task it
    /// ran on; item 0 never returns.
    fn task_ids() -> impl FnMut(Namespace, Vec<u32>) -> BoxedAnswers + Send + 'static {
        |_ns: Namespace, items: Vec<u32>| {
            Box::pin(async move {
                if items.contains(&0) {
                    std::future::pending::<()>().await;
                }
                let id = tokio::task::try_id().map(|id| id.to_string()).unwrap_or_default();
                Ok(items.iter().map(|_| Ok(id.clone())).collect())
            })
        }
    }
    type BoxedAnswers = std::pin::Pin<Box<dyn Future<Output = Result<Vec<Result<String>>>> + Send>>;

    #[tokio::test]
    async fn a_lone_call_is_sent_from_the_callers_task_each_time() -> Result<()> {
        let queue: Arc<GroupCommit<u32, String>> = Arc::new(GroupCommit::new());
        for round in 0..3 {
            let queue = Arc::clone(&queue);
            let caller = tokio::spawn(async move {
                let ns = Namespace::new("lone")?;
                let answer = queue.call(&ns, 1, task_ids).map_err(|_| Error::storage("no runtime", false))?;
                let ran_on = answer.await?;
                Ok::<_, Error>((ran_on, tokio::task::id().to_string()))
            });
            let (ran_on, caller) = caller.await.map_err(|e| Error::Runtime(e.to_string()))??;
            assert_eq!(ran_on, caller, "round {round}: the lone call went through another task");
        }
        Ok(())
    }

    #[tokio::test]
    async fn calls_queued_behind_a_cancelled_call_are_still_sent() -> Result<()> {
        let queue: Arc<GroupCommit<u32, String>> = Arc::new(GroupCommit::new());
        let ns = Namespace::new("cancel")?;
        // Item 0 leads and never returns; 1..=20 queue behind it.
        let lead = queue.call(&ns, 0, task_ids).map_err(|_| Error::storage("no runtime", false))?;
        let leader = tokio::spawn(lead);
        tokio::task::yield_now().await;
        let mut queued = Vec::new();
        for i in 1..=20 {
            queued.push(queue.call(&ns, i, task_ids).map_err(|_| Error::storage("no runtime", false))?);
        }
        leader.abort();
        for answer in queued {
            tokio::time::timeout(std::time::Duration::from_secs(5), answer)
                .await
                .map_err(|_| Error::storage("a queued call was never sent", false))??;
        }
        // The lane is idle again: the next call leads and is sent inline.
        let answer = queue.call(&ns, 7, task_ids).map_err(|_| Error::storage("no runtime", false))?;
        tokio::time::timeout(std::time::Duration::from_secs(5), answer)
            .await
            .map_err(|_| Error::storage("the lane stayed busy", false))??;
        Ok(())
    }

    #[tokio::test]
    async fn a_leader_never_polled_again_holds_up_no_one() -> Result<()> {
        let queue: Arc<GroupCommit<u32, String>> = Arc::new(GroupCommit::new());
        let ns = Namespace::new("stalled")?;
        // Leads (the namespace was idle) and is then neither polled nor
        // dropped, as a future kept in a struct and forgotten.
        let stalled = queue.call(&ns, 1, task_ids).map_err(|_| Error::storage("no runtime", false))?;
        let mut queued = Vec::new();
        for i in 2..=30 {
            queued.push(queue.call(&ns, i, task_ids).map_err(|_| Error::storage("no runtime", false))?);
        }
        for answer in queued {
            tokio::time::timeout(std::time::Duration::from_secs(5), answer)
                .await
                .map_err(|_| Error::storage("a queued call waited for the stalled leader", false))??;
        }
        drop(stalled);
        let answer = queue.call(&ns, 31, task_ids).map_err(|_| Error::storage("no runtime", false))?;
        tokio::time::timeout(std::time::Duration::from_secs(5), answer)
            .await
            .map_err(|_| Error::storage("the lane stayed busy", false))??;
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
