//! Group commit of finishes: concurrent `finish` calls of one process are
//! gathered by a background task and sent as one `finish.lua` call per
//! namespace, while the previous call is in flight. Under load a batch holds
//! as many finishes as attempts ended during one round trip, so a no-op task
//! costs a fraction of a script call to finish; an idle process sends each
//! finish at once. Each item keeps its own answer (new state or stale fence).

use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, Weak},
};

use executor_core::{Error, Finish, Lease, Namespace, Result, TaskState};
use tokio::sync::{mpsc, oneshot};

use crate::{RedisStorage, storage::Inner};

/// Finishes in one batch, at most.
const MAX_BATCH: usize = 500;

/// One waiting `finish` call.
#[derive(Debug)]
pub(crate) struct FinishRequest {
    ns: Namespace,
    lease: Lease,
    finish: Finish,
    reply: oneshot::Sender<Result<TaskState>>,
}

impl RedisStorage {
    pub(crate) async fn finish_one(
        &self,
        ns: &Namespace,
        lease: &Lease,
        finish: Finish,
    ) -> Result<TaskState> {
        let (reply, answer) = oneshot::channel();
        let request = FinishRequest { ns: ns.clone(), lease: lease.clone(), finish: finish.clone(), reply };
        if self.finisher().send(request).is_ok()
            && let Ok(result) = answer.await
        {
            return result;
        }
        // The batcher's runtime is gone (it shut down): finish directly.
        let mut out = self.finish_leases(ns, vec![(lease.clone(), finish)]).await?;
        out.pop().unwrap_or_else(|| Err(crate::error::shape("finish gave no answer")))
    }

    fn finisher(&self) -> mpsc::UnboundedSender<FinishRequest> {
        let mut slot = self.inner.finisher.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = slot.as_ref()
            && !tx.is_closed()
        {
            return tx.clone();
        }
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run_batches(Arc::downgrade(&self.inner), rx));
        *slot = Some(tx.clone());
        tx
    }
}

async fn run_batches(inner: Weak<Inner>, mut requests: mpsc::UnboundedReceiver<FinishRequest>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while requests.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let Some(inner) = inner.upgrade() else { return };
        let storage = RedisStorage { inner };
        let mut by_ns: HashMap<Namespace, Vec<FinishRequest>> = HashMap::new();
        for request in batch.drain(..) {
            by_ns.entry(request.ns.clone()).or_default().push(request);
        }
        for (ns, requests) in by_ns {
            let items = requests.iter().map(|r| (r.lease.clone(), r.finish.clone())).collect();
            match storage.finish_leases(&ns, items).await {
                Ok(results) => {
                    for (request, result) in requests.into_iter().zip(results) {
                        let _ = request.reply.send(result);
                    }
                }
                Err(e) => {
                    for request in requests {
                        let _ = request.reply.send(Err(Error::storage(e.to_string(), e.is_retryable())));
                    }
                }
            }
        }
    }
}
