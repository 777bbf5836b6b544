//! Housekeeping leadership: `leader_acquire.lua`, `leader_release.lua`,
//! `leader_get.lua` on the namespace's `leader` hash and token sequence.

use std::time::Duration;

use executor_core::{Namespace, Result, Timestamp, WorkerId, storage::Leadership};
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
