//! Housekeeping leadership: `leader_acquire.lua`, `leader_release.lua`,
//! `leader_get.lua` on the namespace's `leader` hash and token sequence; and
//! the workers' announcements the leader compares (`workers.lua`).

use executor_core::storage::Presence;
use std::time::Duration;

use executor_core::{Error, Namespace, Result, Timestamp, WorkerId, query::WorkerInfo, storage::Leadership};
use fred::types::Value;

use crate::{
    RedisStorage,
    error::shape,
    record::{array, text},
};

fn term(v: Value) -> Result<Option<Leadership>> {
    if matches!(v, Value::Null) {
        return Ok(None);
    }
    let items = array(v)?;
    let field = |i: usize| items.get(i).and_then(text).ok_or_else(|| shape("a leadership term"));
    let worker = WorkerId::new(field(0)?)?;
    let token = field(1)?.parse().map_err(|_| shape("a leadership token"))?;
    let until = Timestamp::from_millis(field(2)?.parse().map_err(|_| shape("a leadership expiry"))?);
    Ok(Some(Leadership::new(worker, token, until)))
}

impl RedisStorage {
    pub(crate) async fn acquire_leadership(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        ttl: Duration,
    ) -> Result<Option<Leadership>> {
        let keys = self.inner.layout.leader(ns).to_vec();
        let ttl = crate::args::duration_ms("leadership ttl", ttl)?;
        let args = vec![Value::from(worker.as_str()), Value::from(ttl)];
        term(self.run(&self.inner.scripts.leader_acquire, keys, args).await?)
    }

    pub(crate) async fn release_leadership(&self, ns: &Namespace, term: &Leadership) -> Result<()> {
        let keys = self.inner.layout.leader(ns).to_vec();
        let args = vec![Value::from(term.token.to_string())];
        self.run(&self.inner.scripts.leader_release, keys, args).await.map(drop)
    }

    pub(crate) async fn leader(&self, ns: &Namespace) -> Result<Option<Leadership>> {
        let keys = self.inner.layout.leader(ns).to_vec();
        term(self.run(&self.inner.scripts.leader_get, keys, Vec::new()).await?)
    }
}

impl Presence for RedisStorage {
    async fn announce(
        &self,
        ns: &Namespace,
        worker: &WorkerId,
        names: &[String],
        ttl: Duration,
    ) -> Result<()> {
        let ttl = crate::args::duration_ms("announce ttl", ttl)?;
        let names =
            serde_json::to_string(names).map_err(|e| Error::invalid("handler names", e.to_string()))?;
        let args =
            vec![Value::from("announce"), Value::from(worker.as_str()), Value::from(ttl), Value::from(names)];
        self.run(&self.inner.scripts.workers, vec![self.inner.layout.workers(ns)], args).await.map(drop)
    }

    /// The unlapsed announcements; one that does not parse is left out.
    async fn workers(&self, ns: &Namespace) -> Result<Vec<WorkerInfo>> {
        let reply = self
            .run(&self.inner.scripts.workers, vec![self.inner.layout.workers(ns)], vec![Value::from("list")])
            .await?;
        let items = array(reply)?;
        let mut workers = Vec::with_capacity(items.len() / 2);
        for pair in items.chunks(2) {
            let [worker, value] = pair else { continue };
            let (Some(worker), Some(value)) = (text(worker), text(value)) else { continue };
            let Some((until, names)) = value.split_once(' ') else { continue };
            let (Ok(worker), Ok(until), Ok(names)) =
                (WorkerId::new(worker), until.parse(), serde_json::from_str::<Vec<String>>(names))
            else {
                continue;
            };
            workers.push(WorkerInfo::new(worker, names, Timestamp::from_millis(until)));
        }
        Ok(workers)
    }
}
