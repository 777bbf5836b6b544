//! Cancel, requeue, run now and delete: `cancel.lua`, `requeue.lua`,
//! `run_now.lua`, `delete.lua`.

use executor_core::storage::RunNow;
use executor_core::{Error, Namespace, Result, TaskId, TaskState, query::CancelOutcome};
use fred::types::Value;

use crate::{
    RedisStorage,
    error::shape,
    record::{array, text},
    scripts::Lua,
};

impl RedisStorage {
    /// `{word, state?}` replies of cancel, requeue and run now;
    /// `{'corrupt', reason}` becomes [`Error::Corrupt`].
    async fn by_id(&self, ns: &Namespace, id: &TaskId, lua: &Lua) -> Result<(String, Option<TaskState>)> {
        let keys = self.keys(ns, self.inner.layout.partition_of(id));
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

    pub(crate) async fn cancel(&self, ns: &Namespace, id: &TaskId) -> Result<CancelOutcome> {
        match self.by_id(ns, id, &self.inner.scripts.cancel).await? {
            (w, _) if w == "cancelled" => Ok(CancelOutcome::Cancelled),
            (w, _) if w == "requested" => Ok(CancelOutcome::Requested),
            (w, _) if w == "missing" => Err(Error::NotFound(id.clone())),
            (_, Some(state)) => Err(Error::IllegalTransition { id: id.clone(), state, action: "cancel" }),
            (w, None) => Err(shape(&format!("cancel answered `{w}`"))),
        }
    }

    pub(crate) async fn requeue(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        match self.by_id(ns, id, &self.inner.scripts.requeue).await? {
            (w, _) if w == "ok" => self.poke(ns).await,
            (w, _) if w == "missing" => Err(Error::NotFound(id.clone())),
            (_, Some(state)) => Err(Error::IllegalTransition { id: id.clone(), state, action: "requeue" }),
            (w, None) => Err(shape(&format!("requeue answered `{w}`"))),
        }
    }

    /// Deletes one task whatever its key holds (`delete.lua`).
    pub(crate) async fn delete(&self, ns: &Namespace, id: &TaskId) -> Result<bool> {
        let keys = self.keys(ns, self.inner.layout.partition_of(id));
        let reply = self.run_in(&self.inner.scripts.delete, &keys, vec![Value::from(id.as_str())]).await?;
        Ok(reply.as_u64() == Some(1))
    }
}

impl RunNow for RedisStorage {
    async fn run_now(&self, ns: &Namespace, id: &TaskId) -> Result<()> {
        match self.by_id(ns, id, &self.inner.scripts.run_now).await? {
            (w, _) if w == "ok" => self.poke(ns).await,
            (w, _) if w == "missing" => Err(Error::NotFound(id.clone())),
            (_, Some(state)) => Err(Error::IllegalTransition { id: id.clone(), state, action: "run now" }),
            (w, None) => Err(shape(&format!("run_now answered `{w}`"))),
        }
    }
}
