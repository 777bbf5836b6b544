//! The Lua scripts, one per state change, loaded from `lua/*.lua` and run
//! with `EVALSHA`; a `NOSCRIPT` reply (after a restart or failover emptied the
//! script cache) loads them again and repeats the call once.

use fred::{
    clients::Client,
    interfaces::LuaInterface,
    prelude::ClientLike,
    types::{MultipleKeys, Value, config::Options, scripts::Script},
};

use crate::error::storage;

macro_rules! with_common {
    ($file:literal) => {
        concat!(include_str!("../lua/common.lua"), "\n", include_str!(concat!("../lua/", $file)))
    };
}

/// One script: its source and SHA-1.
#[derive(Debug)]
pub(crate) struct Lua {
    pub(crate) name: &'static str,
    script: Script,
}

impl Lua {
    fn new(name: &'static str, source: &'static str) -> Self {
        Self { name, script: Script::from_lua(source) }
    }

    /// Runs the script on one client of the pool. fred resends a command whose
    /// connection dropped mid-flight (`max_command_attempts`); every script is
    /// written so that a resend answers like the first execution (nonces).
    pub(crate) async fn run(
        &self,
        client: &Client,
        options: &Options,
        keys: impl Into<MultipleKeys>,
        args: Vec<Value>,
    ) -> executor_core::Result<Value> {
        let keys: MultipleKeys = keys.into();
        let sha = self.script.sha1().clone();
        match client
            .with_options(options)
            .evalsha::<Value, _, _, _>(sha.clone(), keys.clone(), args.clone())
            .await
        {
            Err(e) if e.details().starts_with("NOSCRIPT") => {
                tracing::debug!(script = self.name, "script cache was empty; loading the scripts again");
                self.script.load(client).await.map_err(storage)?;
                client.with_options(options).evalsha(sha, keys, args).await.map_err(storage)
            }
            other => other.map_err(storage),
        }
    }
}

/// Every script of the storage.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) submit: Lua,
    pub(crate) submit_one: Lua,
    pub(crate) claim: Lua,
    pub(crate) heartbeat: Lua,
    pub(crate) finish: Lua,
    pub(crate) cancel: Lua,
    pub(crate) requeue: Lua,
    pub(crate) run_now: Lua,
    pub(crate) reap: Lua,
    pub(crate) trim: Lua,
    pub(crate) list: Lua,
    pub(crate) peek: Lua,
    pub(crate) leader_acquire: Lua,
    pub(crate) leader_release: Lua,
    pub(crate) leader_get: Lua,
    pub(crate) purge: Lua,
    pub(crate) tier_now: Lua,
    pub(crate) due_before: Lua,
    pub(crate) import: Lua,
    pub(crate) remove: Lua,
    pub(crate) delete: Lua,
    pub(crate) workers: Lua,
    pub(crate) schedule: Lua,
    pub(crate) queues: Lua,
    pub(crate) pause: Lua,
    pub(crate) limits: Lua,
    pub(crate) limits_tidy: Lua,
    pub(crate) history: Lua,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Self {
            submit: Lua::new("submit", with_common!("submit.lua")),
            submit_one: Lua::new("submit_one", include_str!("../lua/submit_one.lua")),
            claim: Lua::new("claim", with_common!("claim.lua")),
            heartbeat: Lua::new("heartbeat", with_common!("heartbeat.lua")),
            finish: Lua::new("finish", with_common!("finish.lua")),
            cancel: Lua::new("cancel", with_common!("cancel.lua")),
            requeue: Lua::new("requeue", with_common!("requeue.lua")),
            run_now: Lua::new("run_now", with_common!("run_now.lua")),
            reap: Lua::new("reap", with_common!("reap.lua")),
            trim: Lua::new("trim", with_common!("trim.lua")),
            list: Lua::new("list", with_common!("list.lua")),
            peek: Lua::new("peek", with_common!("peek.lua")),
            leader_acquire: Lua::new("leader_acquire", with_common!("leader_acquire.lua")),
            leader_release: Lua::new("leader_release", with_common!("leader_release.lua")),
            leader_get: Lua::new("leader_get", with_common!("leader_get.lua")),
            purge: Lua::new("purge", include_str!("../lua/purge.lua")),
            tier_now: Lua::new("tier_now", include_str!("../lua/tier_now.lua")),
            due_before: Lua::new("due_before", with_common!("due_before.lua")),
            import: Lua::new("import", with_common!("import.lua")),
            remove: Lua::new("remove", with_common!("remove.lua")),
            delete: Lua::new("delete", with_common!("delete.lua")),
            workers: Lua::new("workers", with_common!("workers.lua")),
            schedule: Lua::new("schedule", with_common!("schedule.lua")),
            queues: Lua::new("queues", with_common!("queues.lua")),
            pause: Lua::new("pause", include_str!("../lua/pause.lua")),
            limits: Lua::new("limits", with_common!("limits.lua")),
            limits_tidy: Lua::new("limits_tidy", with_common!("limits_tidy.lua")),
            history: Lua::new("history", with_common!("history.lua")),
        }
    }

    fn all(&self) -> [&Lua; 28] {
        [
            &self.submit,
            &self.submit_one,
            &self.claim,
            &self.heartbeat,
            &self.finish,
            &self.cancel,
            &self.requeue,
            &self.run_now,
            &self.reap,
            &self.trim,
            &self.list,
            &self.peek,
            &self.leader_acquire,
            &self.leader_release,
            &self.leader_get,
            &self.purge,
            &self.tier_now,
            &self.due_before,
            &self.import,
            &self.remove,
            &self.delete,
            &self.workers,
            &self.schedule,
            &self.queues,
            &self.pause,
            &self.limits,
            &self.limits_tidy,
            &self.history,
        ]
    }

    /// Loads every script on every primary, so the first calls need no reload.
    pub(crate) async fn load(&self, client: &Client) -> executor_core::Result<()> {
        for lua in self.all() {
            lua.script.load(client).await.map_err(storage)?;
        }
        Ok(())
    }
}
