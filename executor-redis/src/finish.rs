//! Finishing attempts: `finish.lua`. A single `finish` goes through group
//! commit, as `submit` does (see `submit.rs`): concurrent calls of one
//! process share one script call per namespace.

use std::sync::Arc;

use executor_core::{
    Error, Namespace, Result, TaskState,
    storage::{Finish, Lease},
};
use fred::types::Value;

use crate::{
    RedisStorage,
    args::duration_ms,
    error::shape,
    keys::PartitionKeys,
    record::{array, text},
    storage::upgrade,
};

/// Items per finish call.
const FINISH_CHUNK: usize = 500;

/// The script's outcome code, retry delay and error text of a finish, after
/// checking it at the store's entry point: one bad item is refused alone
/// (no neighbour harm).
fn finish_code(finish: &Finish) -> Result<(&'static str, String, String)> {
    finish.validate()?;
    Ok(match finish {
        Finish::Completed => ("C", String::new(), String::new()),
        Finish::Retry { delay, error } => ("R", duration_ms("retry delay", *delay)?, error.clone()),
        Finish::Failed { error } => ("F", String::new(), error.clone()),
        Finish::TimedOut { error } => ("T", String::new(), error.clone()),
        Finish::Errored { error } => ("E", String::new(), error.clone()),
        Finish::Cancelled => ("X", String::new(), String::new()),
        Finish::Released => ("L", String::new(), String::new()),
        Finish::Postponed { delay, error } => ("P", duration_ms("postpone delay", *delay)?, error.clone()),
        other => return Err(Error::unsupported("finish", format!("{other:?} is newer than this store"))),
    })
}

impl RedisStorage {
    pub(crate) async fn finish(&self, ns: &Namespace, lease: &Lease, finish: Finish) -> Result<TaskState> {
        let weak = Arc::downgrade(&self.inner);
        let start = move || {
            move |ns: Namespace, items: Vec<(Lease, Finish)>| {
                let storage = upgrade(&weak);
                async move { storage?.finish_many(&ns, items).await }
            }
        };
        match self.inner.finishes.call(ns, (lease.clone(), finish), start) {
            Ok(answer) => answer.await,
            // No runtime to batch on (it is shutting down): send it alone,
            // boxed so this rare branch does not size every finish future.
            Err(item) => Box::pin(self.finish_many(ns, vec![item]))
                .await?
                .pop()
                .unwrap_or_else(|| Err(shape("no answer"))),
        }
    }

    pub(crate) async fn finish_many(
        &self,
        ns: &Namespace,
        items: Vec<(Lease, Finish)>,
    ) -> Result<Vec<Result<TaskState>>> {
        let mut results: Vec<Option<Result<TaskState>>> = (0..items.len()).map(|_| None).collect();
        let mut groups: Vec<Vec<(usize, Lease, [String; 3])>> =
            vec![Vec::new(); usize::from(self.partitions())];
        for (i, (lease, finish)) in items.into_iter().enumerate() {
            match finish_code(&finish) {
                Ok((code, delay, error)) => {
                    let p = usize::from(self.inner.layout.partition_of(&lease.id));
                    groups[p].push((i, lease, [code.to_owned(), delay, error]));
                }
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        let mut reached = false;
        let mut woke = false;
        for (p, group) in groups.into_iter().enumerate() {
            let keys = self.keys(ns, u16::try_from(p).unwrap_or(0));
            for chunk in group.chunks(FINISH_CHUNK) {
                let mut args = Vec::with_capacity(chunk.len() * 6);
                for (_, lease, [code, delay, error]) in chunk {
                    args.extend([
                        Value::from(lease.id.as_str()),
                        Value::from(lease.fence.to_string()),
                        Value::from(code.as_str()),
                        Value::from(delay.as_str()),
                        Value::from(error.as_str()),
                        Value::from(self.nonce()),
                    ]);
                }
                match self.finish_chunk(&keys, chunk.len(), args).await {
                    Ok(states) => {
                        reached = true;
                        for ((i, lease, _), state) in chunk.iter().zip(states) {
                            woke |= state == "PENDING";
                            results[*i] = Some(match state.as_str() {
                                "STALE" => {
                                    Err(Error::StaleFence { id: lease.id.clone(), fence: lease.fence })
                                }
                                "INVALID" => Err(Error::invalid("retry delay", "not a whole number of ms")),
                                _ => state.parse::<TaskState>(),
                            });
                        }
                    }
                    Err(e) if !reached => return Err(e),
                    Err(e) => {
                        for (i, _, _) in chunk {
                            results[*i] = Some(Err(Error::storage(e.to_string(), e.is_retryable())));
                        }
                    }
                }
            }
        }
        if woke {
            self.poke(ns).await?;
        }
        Ok(results.into_iter().map(|r| r.unwrap_or_else(|| Err(shape("an item got no answer")))).collect())
    }

    /// One `finish.lua` call; the new state (or `STALE`) per item.
    pub(crate) async fn finish_chunk(
        &self,
        keys: &PartitionKeys,
        n: usize,
        items: Vec<Value>,
    ) -> Result<Vec<String>> {
        let mut args = Vec::with_capacity(items.len() + 1);
        args.push(Value::from(n.to_string()));
        args.extend(items);
        let reply = array(self.run_in(&self.inner.scripts.finish, keys, args).await?)?;
        let states: Vec<String> = array(reply.into_iter().nth(1).unwrap_or(Value::Null))?
            .iter()
            .map(|v| text(v).unwrap_or_default())
            .collect();
        if states.len() != n {
            return Err(shape("finish answered for a different number of items"));
        }
        Ok(states)
    }
}
