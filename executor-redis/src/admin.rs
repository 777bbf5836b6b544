//! Cancel, requeue, delete, reads and housekeeping: `cancel.lua`,
//! `requeue.lua`, `delete.lua`, `reap.lua`, `trim.lua`, plain
//! `HMGET`/`HGETALL` for reads.

use executor_core::{
    CancelOutcome, Error, Namespace, Reaped, Result, Retention, StateCounts, TaskId, TaskRecord, TaskState,
};
use fred::{interfaces::HashesInterface, prelude::ClientLike, types::Value};

use crate::{
    RedisStorage,
    args::clamped_ms,
    error::{shape, storage},
    lease::{ids, log_aside},
    record::{self, FIELDS, array, text},
};

impl RedisStorage {
    /// `{word, state?}` replies of cancel and requeue; `{'corrupt', reason}`
    /// becomes [`Error::Corrupt`].
    async fn by_id(&self, ns: &Namespace, id: &TaskId, cancel: bool) -> Result<(String, Option<TaskState>)> {
        let keys = self.keys(ns, self.inner.layout.partition_of(id));
        let lua = if cancel { &self.inner.scripts.cancel } else { &self.inner.scripts.requeue };
        let args = vec![Value::from(id.as_str()), Value::from(self.nonce())];
        let reply = array(self.run_in(lua, &keys, args).await?)?;
        let word = reply.first().and_then(text).unwrap_or_default();
        if word == "corrupt" {
            let reason = reply.get(1).and_then(text).unwrap_or_default();
            return Err(Error::Corrupt { id: id.clone(), reason });
        }
        let state = reply.get(1).and_then(text).and_then(|s| s.parse().ok());
        Ok((word, state))
    }

    pub(crate) async fn cancel_task(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        match self.by_id(ns, id, true).await? {
            (w, _) if w == "cancelled" => Ok(CancelOutcome::Cancelled),
            (w, _) if w == "requested" => Ok(CancelOutcome::Requested),
            (w, _) if w == "missing" => Err(Error::NotFound(id.clone())),
            (_, Some(state)) => Err(Error::IllegalTransition { id: id.clone(), state, action: "cancel" }),
            (w, None) => Err(shape(&format!("cancel answered `{w}`"))),
        }
    }

    pub(crate) async fn requeue_task(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        match self.by_id(ns, id, false).await? {
            (w, _) if w == "ok" => self.poke(ns).await,
            (w, _) if w == "missing" => Err(Error::NotFound(id.clone())),
            (_, Some(state)) => Err(Error::IllegalTransition { id: id.clone(), state, action: "requeue" }),
            (w, None) => Err(shape(&format!("requeue answered `{w}`"))),
        }
    }

    pub(crate) async fn get_task(&self, ns: &Namespace, id: &TaskId) -> Result<Option<TaskRecord>> {
        let key = self.keys(ns, self.inner.layout.partition_of(id)).task(id.as_str());
        let client = self.client()?.with_options(&self.inner.options);
        let values = match client.hmget::<Value, _, _>(key, FIELDS.to_vec()).await {
            Ok(values) => array(values)?,
            Err(e) if e.details().starts_with("WRONGTYPE") => {
                let reason = "the key holds a value that is not a task hash (edited by hand?); \
                              `delete` removes it";
                return Err(Error::Corrupt { id: id.clone(), reason: reason.to_owned() });
            }
            Err(e) => return Err(storage(e)),
        };
        if values.iter().all(|v| matches!(v, Value::Null)) {
            return Ok(None);
        }
        record::parse(id.as_str(), &values).map(Some)
    }

    /// Deletes one task whatever its key holds (`delete.lua`).
    pub(crate) async fn delete_task(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        let keys = self.keys(ns, self.inner.layout.partition_of(id));
        let reply = self.run_in(&self.inner.scripts.delete, &keys, vec![Value::from(id.as_str())]).await?;
        Ok(reply.as_u64() == Some(1))
    }

    pub(crate) async fn count_states(&self, ns: &Namespace) -> Result<StateCounts> {
        let mut totals = std::collections::BTreeMap::<TaskState, i64>::new();
        for p in 0..self.partitions() {
            let client = self.client()?.with_options(&self.inner.options);
            let pairs: std::collections::HashMap<String, String> =
                client.hgetall(self.keys(ns, p).counts()).await.map_err(storage)?;
            for (state, n) in pairs {
                if let (Ok(state), Ok(n)) = (state.parse::<TaskState>(), n.parse::<i64>()) {
                    *totals.entry(state).or_default() += n;
                }
            }
        }
        Ok(StateCounts(
            totals
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| (s, u64::try_from(n).unwrap_or(0)))
                .collect(),
        ))
    }

    pub(crate) async fn reap_leases(&self, ns: &Namespace, limit: usize) -> Result<Reaped> {
        let mut out = Reaped::default();
        for p in 0..self.partitions() {
            let left = limit.saturating_sub(out.len());
            if left == 0 {
                break;
            }
            let args = vec![Value::from(crate::args::count(left, crate::lease::MAX_CLAIM))];
            let reply = array(self.run_in(&self.inner.scripts.reap, &self.keys(ns, p), args).await?)?;
            let mut reply = reply.into_iter();
            out.retried.extend(ids(reply.next())?);
            out.failed.extend(ids(reply.next())?);
            out.timed_out.extend(ids(reply.next())?);
            log_aside("reap", reply.next());
        }
        if !out.retried.is_empty() {
            self.poke(ns).await?;
        }
        Ok(out)
    }

    pub(crate) async fn trim_finished(
        &self,
        ns: &Namespace,
        retention: &Retention,
        limit: usize,
    ) -> Result<u64> {
        let mut removed = 0u64;
        for p in 0..self.partitions() {
            let left = u64::try_from(limit).unwrap_or(u64::MAX).saturating_sub(removed);
            if left == 0 {
                break;
            }
            // Retention past 1,000 years keeps as much as 1,000 years does.
            let args = vec![
                Value::from(clamped_ms(retention.completed)),
                Value::from(retention.dead_letter.map(clamped_ms).unwrap_or_default()),
                Value::from(left.min(10_000).to_string()),
            ];
            let reply = self.run_in(&self.inner.scripts.trim, &self.keys(ns, p), args).await?;
            removed += reply.as_u64().unwrap_or(0);
        }
        Ok(removed)
    }
}
