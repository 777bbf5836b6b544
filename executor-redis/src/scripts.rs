//! The Lua scripts, one per state change, in `lua/*.lua`. On a server with
//! Redis Functions (Redis 7) they are loaded as one library, whose shared
//! definitions (the prelude, `PRELUDE`) run once at load instead of at
//! every call, and called with `FCALL`; elsewhere (an older server, or an
//! ACL that denies `FUNCTION`) each is a script of its own, the prelude
//! prepended, run with `EVALSHA`. Either way an answer saying the code is gone (a
//! restart or failover emptied the function library or the script cache)
//! loads it again and repeats the call once.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use fred::{
    clients::Client,
    error::ErrorKind,
    interfaces::{FunctionInterface, LuaInterface},
    prelude::ClientLike,
    types::{MultipleKeys, Value, config::Options, scripts::Script},
};

use crate::error::storage;

/// The prelude the scripts share, in parts (`lua/common/*.lua`), in the
/// one order they are assembled in: each part uses only parts before it
/// (its opening comment names them). The files' numbers follow this order
/// (a test checks), so tools outside the crate (the Lua bench, the
/// integration tests) assemble the same prelude from the files in name
/// order.
const PRELUDE: [(&str, &str); 7] = [
    ("01_values", include_str!("../lua/common/01_values.lua")),
    ("02_keys", include_str!("../lua/common/02_keys.lua")),
    ("03_counts", include_str!("../lua/common/03_counts.lua")),
    ("04_attempt_log", include_str!("../lua/common/04_attempt_log.lua")),
    ("05_limits", include_str!("../lua/common/05_limits.lua")),
    ("06_records", include_str!("../lua/common/06_records.lua")),
    ("07_begin", include_str!("../lua/common/07_begin.lua")),
];

/// The prelude's parts joined in their order.
fn prelude() -> String {
    PRELUDE.iter().map(|(_, source)| *source).collect()
}

/// The scripts that only read: registered with the `no-writes` flag, so
/// they keep answering when the server is out of memory.
const READ_ONLY: [&str; 6] = ["due_before", "leader_get", "list", "peek", "queues", "tier_now"];

/// The function library: its code and whether this server runs it.
#[derive(Debug)]
struct Library {
    code: String,
    /// False once the server refused `FUNCTION LOAD`: scripts then.
    functions: AtomicBool,
}

impl Library {
    /// Loads the library (again). A library of the same name is this very
    /// code (the name is its hash), so `already exists` is success; and
    /// Redis answers it before compiling anything, so after a restart the
    /// many calls of many processes that find the library gone cost the
    /// server one compile (about 3 ms), not one each.
    async fn load(&self, client: &Client) -> Result<(), fred::error::Error> {
        match client.function_load_cluster::<Value, _>(false, self.code.as_str()).await {
            // Redis answers it with the generic `ERR` code: the words
            // after it are the only thing that tells this refusal apart.
            Err(e) if e.details().contains("already exists") => Ok(()),
            other => other.map(drop),
        }
    }
}

/// One script: its source and SHA-1, and its function in the library.
#[derive(Debug)]
pub(crate) struct Lua {
    pub(crate) name: &'static str,
    script: Script,
    function: String,
    library: Arc<Library>,
}

impl Lua {
    fn new(
        name: &'static str,
        prelude: Option<&str>,
        source: &'static str,
        library: &Arc<Library>,
        prefix: &str,
    ) -> Self {
        let script = match prelude {
            Some(prelude) => Script::from_lua(format!("{prelude}\n{source}")),
            None => Script::from_lua(source),
        };
        Self { name, script, function: format!("{prefix}_{name}"), library: Arc::clone(library) }
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
        if self.library.functions.load(Ordering::Relaxed) {
            let name = self.function.as_str();
            return match client
                .with_options(options)
                .fcall::<Value, _, _, _>(name, keys.clone(), args.clone())
                .await
            {
                // A generic `ERR` reply: its words are the only signal.
                Err(e) if e.details().contains("Function not found") => {
                    tracing::debug!(script = self.name, "function library was gone; loading it again");
                    self.library.load(client).await.map_err(storage)?;
                    client.with_options(options).fcall(name, keys, args).await.map_err(storage)
                }
                other => other.map_err(storage),
            };
        }
        let sha = self.script.sha1().clone();
        match client
            .with_options(options)
            .evalsha::<Value, _, _, _>(sha.clone(), keys.clone(), args.clone())
            .await
        {
            // The reply's first word is its error code (the protocol's
            // only type for errors).
            Err(e) if e.details().starts_with("NOSCRIPT") => {
                tracing::debug!(script = self.name, "script cache was empty; loading the scripts again");
                self.script.load(client).await.map_err(storage)?;
                client.with_options(options).evalsha(sha, keys, args).await.map_err(storage)
            }
            other => other.map_err(storage),
        }
    }
}

/// The library's code and name: the prelude once, then each script as the
/// body of a function that takes the call's keys and arguments as `KEYS` and
/// `ARGV` (locals of the library, so a script reads as it does under
/// `EVAL`) and, for the scripts that use it, resets the prelude's per-call
/// state first (`begin`). The name carries a hash of the code, so processes
/// of different versions that share a server each call their own functions.
fn library_code(prelude: &str, sources: &[(&'static str, bool, &'static str)]) -> (String, String) {
    let build = |library: &str| {
        let mut body = format!("local KEYS, ARGV = {{}}, {{}}\n{prelude}\n");
        for (name, common, source) in sources {
            let enter = if *common { "KEYS, ARGV = keys, args; begin()" } else { "KEYS, ARGV = keys, args" };
            let flags = if READ_ONLY.contains(name) { "'no-writes'" } else { "" };
            body.push_str(&format!(
                "redis.register_function{{function_name = '{library}_{name}', flags = {{{flags}}}, \
                 callback = function(keys, args)\n{enter}\n{source}\nend}}\n"
            ));
        }
        body
    };
    let hash = Script::from_lua(build("").as_str()).sha1().to_string();
    let library = format!("reliable_executor_{}", hash.get(..16).unwrap_or(&hash));
    let code = format!("#!lua name={library}\n{}", build(&library));
    (library, code)
}

/// The scripts, by field name: `true` for those that take the prelude.
macro_rules! scripts {
    ($($name:ident: $common:literal),* $(,)?) => {
        /// Every script of the storage.
        #[derive(Debug)]
        pub(crate) struct Scripts {
            $(pub(crate) $name: Lua,)*
            library: Arc<Library>,
        }

        impl Scripts {
            pub(crate) fn new() -> Self {
                let prelude = prelude();
                let sources = [$((stringify!($name), $common, include_str!(concat!("../lua/", stringify!($name), ".lua"))),)*];
                let (name, code) = library_code(&prelude, &sources);
                let library = Arc::new(Library { code, functions: AtomicBool::new(true) });
                Self {
                    $($name: Lua::new(
                        stringify!($name),
                        $common.then_some(prelude.as_str()),
                        include_str!(concat!("../lua/", stringify!($name), ".lua")),
                        &library,
                        &name,
                    ),)*
                    library,
                }
            }

            fn all(&self) -> Vec<&Lua> {
                vec![$(&self.$name),*]
            }
        }
    };
}

scripts! {
    submit: true,
    submit_one: false,
    claim: true,
    heartbeat: true,
    finish: true,
    cancel: true,
    requeue: true,
    run_now: true,
    reap: true,
    trim: true,
    list: true,
    peek: true,
    leader_acquire: true,
    leader_release: true,
    leader_get: true,
    purge: false,
    tier_now: false,
    due_before: true,
    import: true,
    remove: true,
    delete: true,
    workers: true,
    schedule: true,
    queues: true,
    pause: false,
    limits: true,
    limits_tidy: true,
    history: true,
}

impl Scripts {
    /// Loads the function library on every primary, so the first calls need
    /// no reload. A server that refuses it (no Redis Functions: before Redis
    /// 7, or an ACL or proxy that denies `FUNCTION`) gets the scripts
    /// instead, with a warning, as does every server when `functions` is
    /// false; a connection that fails is an error.
    pub(crate) async fn load(&self, client: &Client, functions: bool) -> executor_core::Result<()> {
        if functions {
            match self.library.load(client).await {
                Ok(()) => {
                    self.library.functions.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) if matches!(e.kind(), ErrorKind::IO | ErrorKind::Timeout | ErrorKind::Canceled) => {
                    return Err(storage(e));
                }
                Err(e) => tracing::warn!(
                    error = %e,
                    "the server refused the function library (FUNCTION LOAD): running the scripts with EVALSHA, \
                     which re-runs their shared definitions at every call"
                ),
            }
        }
        self.library.functions.store(false, Ordering::Relaxed);
        for lua in self.all() {
            lua.script.load(client).await.map_err(storage)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::PRELUDE;

    #[test]
    fn the_prelude_is_its_files_in_the_order_of_their_names() -> std::io::Result<()> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/lua/common");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".lua") {
                files.push(stem.to_owned());
            }
        }
        files.sort();
        let parts: Vec<&str> = PRELUDE.iter().map(|(name, _)| *name).collect();
        assert_eq!(files, parts, "every file of lua/common is a part, in the order of the file names");
        Ok(())
    }
}
