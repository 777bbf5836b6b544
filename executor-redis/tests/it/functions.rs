//! The storage's Lua as a Redis Functions library (the default) and as
//! plain scripts (`functions(false)`, or a server that refuses `FUNCTION`):
//! the conformance suite on the scripts too, the library as loaded, a
//! server whose ACL denies `FUNCTION`, code emptied from the server while in
//! use (`FUNCTION FLUSH`, `SCRIPT FLUSH`), and processes of both kinds on one
//! namespace.

use std::time::Duration;

use executor_core::{
    TaskState, WorkerId,
    queue::ClaimPlan,
    storage::{Finish, Storage},
    testing,
};
use fred::{
    interfaces::{ClientLike, FunctionInterface, LuaInterface},
    types::{ClusterHash, CustomCommand, Value},
};
use reliable_executor_redis::RedisStorage;

use crate::common::{self, server::Server};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn fresh_scripts() -> (RedisStorage, executor_core::Namespace) {
    let url = common::url();
    let storage = common::connect_with(RedisStorage::builder(&url).functions(false), &url).await;
    (storage, testing::unique_namespace("redis-eval"))
}

/// The conformance suites on plain scripts (`EVALSHA`, the prelude run at
/// every call) instead of the library.
mod scripts {
    use super::fresh_scripts;
    use crate::common::cleanup;

    executor_core::testing::storage_conformance_tests!(fresh_scripts, cleanup);
    executor_core::testing::queue_limit_conformance_tests!(fresh_scripts, cleanup);
}

/// `INFO commandstats` of the server behind `storage`: calls of `command`
/// (`fcall`, `function|load`, ..) and how many of them failed.
async fn stats(storage: &RedisStorage, command: &str) -> Result<(u64, u64), fred::error::Error> {
    let info: String = storage
        .pool()
        .next()
        .custom(CustomCommand::new_static("INFO", ClusterHash::FirstKey, false), vec!["commandstats"])
        .await?;
    let prefix = format!("cmdstat_{command}:");
    let Some(line) = info.lines().find_map(|l| l.strip_prefix(prefix.as_str())) else { return Ok((0, 0)) };
    let field = |name: &str| {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("calls"), field("failed_calls")))
}

async fn calls(storage: &RedisStorage, command: &str) -> Result<u64, fred::error::Error> {
    Ok(stats(storage, command).await?.0)
}

/// One task through submit, claim and finish: what every storage must do.
async fn one_task(storage: &RedisStorage, ns: &executor_core::Namespace, id: &str) -> TestResult {
    let worker = WorkerId::generate();
    storage.submit(ns, testing::new_task(id)).await?;
    let claimed = testing::wait_for(Duration::from_secs(5), "the task claimed", || async {
        storage
            .claim(ns, &worker, &ClaimPlan::default_queue(10), Duration::from_secs(60))
            .await
            .ok()
            .filter(|c| !c.is_empty())
    })
    .await;
    assert_eq!(claimed.len(), 1, "one task claimed: {claimed:?}");
    let lease = claimed[0].lease().ok_or("a claimed task has a lease")?;
    storage.finish(ns, &lease, Finish::Completed).await?;
    let record = storage.get(ns, &lease.id).await?.ok_or("the task is kept")?;
    assert_eq!(record.state, TaskState::Completed);
    Ok(())
}

/// The library's functions on the server, with their flags.
async fn library_of(
    storage: &RedisStorage,
) -> Result<Vec<(String, Vec<String>)>, Box<dyn std::error::Error>> {
    let list: Value = storage.pool().next().function_list(Some("reliable_executor_*"), false).await?;
    let mut out = Vec::new();
    // [[library_name, n, engine, LUA, functions, [[name, n, description, d, flags, [..]]..]]..]
    let Value::Array(libraries) = list else { return Err(format!("FUNCTION LIST: {list:?}").into()) };
    for lib in libraries {
        let Value::Array(fields) = lib else { continue };
        let Some(Value::Array(functions)) = fields.get(5) else { continue };
        for f in functions {
            let Value::Array(f) = f else { continue };
            let name = f.get(1).and_then(Value::as_string).unwrap_or_default();
            let flags = match f.get(5) {
                Some(Value::Array(flags)) => flags.iter().filter_map(Value::as_string).collect(),
                _ => Vec::new(),
            };
            out.push((name, flags));
        }
    }
    Ok(out)
}

/// The library of this very build is on the server: a library that does
/// not compile (say, the prelude reading a global such as `string` at its
/// top, which a library may not) is refused by `FUNCTION LOAD`, and the
/// storage would quietly run the scripts instead, with every other test
/// still green.
#[tokio::test]
async fn the_library_of_this_build_loads() -> TestResult {
    let (storage, ns) = common::fresh().await;
    one_task(&storage, &ns, "this-build").await?;
    let list: Value = storage.pool().next().function_list(Some("reliable_executor_*"), true).await?;
    let Value::Array(libraries) = list else { return Err(format!("FUNCTION LIST: {list:?}").into()) };
    let prelude = common::prelude();
    let claim_lua = include_str!("../../lua/claim.lua");
    let loaded = libraries.iter().any(|lib| match lib {
        // [library_name, name, engine, LUA, functions, [..], library_code, code]
        Value::Array(fields) => fields
            .get(7)
            .and_then(Value::as_string)
            .is_some_and(|code| code.contains(prelude) && code.contains(claim_lua)),
        _ => false,
    });
    assert!(loaded, "no library on the server holds this build's prelude and claim.lua");
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn the_library_holds_every_script_and_flags_the_readers() -> TestResult {
    let (storage, ns) = common::fresh().await;
    one_task(&storage, &ns, "via-the-library").await?;
    let functions = library_of(&storage).await?;
    for script in ["submit", "submit_one", "claim", "finish", "reap", "trim", "history", "limits_tidy"] {
        assert!(
            functions.iter().any(|(name, flags)| name.ends_with(&format!("_{script}")) && flags.is_empty()),
            "a function for {script}, which writes: {functions:?}"
        );
    }
    for script in ["list", "peek", "leader_get", "queues", "due_before", "tier_now"] {
        assert!(
            functions
                .iter()
                .any(|(name, flags)| name.ends_with(&format!("_{script}"))
                    && flags == &["no-writes".to_owned()]),
            "a no-writes function for {script}, which only reads: {functions:?}"
        );
    }
    common::cleanup(&storage, &ns).await;
    Ok(())
}

#[tokio::test]
async fn a_server_that_denies_function_gets_scripts() -> TestResult {
    let acl = ["--user", "default", "on", "nopass", "~*", "&*", "+@all", "-function"];
    let server = Server::started("functions-acl", &acl).await;
    let storage = RedisStorage::builder(&server.url()).connect().await?;
    let ns = testing::unique_namespace("acl");
    one_task(&storage, &ns, "via-evalsha").await?;
    assert!(calls(&storage, "evalsha").await? >= 3, "submit, claim and finish ran as scripts");
    assert_eq!(calls(&storage, "fcall").await?, 0, "no function was called");
    Ok(())
}

#[tokio::test]
async fn code_emptied_from_the_server_is_loaded_again() -> TestResult {
    let server = Server::started("functions-flush", &[]).await;
    let library = RedisStorage::builder(&server.url()).connect().await?;
    let scripts = RedisStorage::builder(&server.url()).functions(false).connect().await?;
    let ns = testing::unique_namespace("flush");
    one_task(&library, &ns, "before").await?;
    one_task(&scripts, &ns, "before-scripts").await?;
    assert!(calls(&library, "fcall").await? >= 3, "the library was called");

    // As after a restart without persistence, or a failover to a replica
    // that never had them: neither the library nor the scripts are there.
    library.pool().next().function_flush::<()>(false).await?;
    library.pool().next().script_flush(false).await?;
    one_task(&library, &ns, "after").await?;
    one_task(&scripts, &ns, "after-scripts").await?;
    assert_eq!(library_of(&library).await?.len(), 28, "the library is back, whole");

    // Every call in flight finds it gone at once: each loads it, and the
    // server compiles it once (the others are refused as `already exists`
    // before compiling).
    library.pool().next().function_flush::<()>(false).await?;
    let _: () = library
        .pool()
        .next()
        .custom(CustomCommand::new_static("CONFIG", ClusterHash::FirstKey, false), vec!["RESETSTAT"])
        .await?;
    // (Claims: concurrent submits would share a call.)
    let mut claims = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let (storage, ns) = (library.clone(), ns.clone());
        claims.spawn(async move {
            storage
                .claim(&ns, &WorkerId::generate(), &ClaimPlan::default_queue(1), Duration::from_secs(60))
                .await
        });
    }
    while let Some(claim) = claims.join_next().await {
        claim??;
    }
    let (loads, refused) = stats(&library, "function|load").await?;
    eprintln!("32 claims after FUNCTION FLUSH: {loads} FUNCTION LOADs, {refused} refused as already there");
    assert!(loads > 1, "several calls found the library gone at once: {loads}");
    assert_eq!(loads - refused, 1, "compiled once: {loads} loads, {refused} refused");
    Ok(())
}

#[tokio::test]
async fn library_and_script_processes_share_a_namespace() -> TestResult {
    let (library, ns) = common::fresh().await;
    let (scripts, _) = fresh_scripts().await;
    let worker = WorkerId::generate();
    for i in 0..20 {
        let by = if i % 2 == 0 { &library } else { &scripts };
        by.submit(&ns, testing::new_task(&format!("t{i}"))).await?;
    }
    // Each claims and finishes the other's submits, and the counts agree.
    let mut done = 0;
    while done < 20 {
        let by = if done % 4 == 0 { &library } else { &scripts };
        let claimed = by.claim(&ns, &worker, &ClaimPlan::default_queue(3), Duration::from_secs(60)).await?;
        assert!(!claimed.is_empty(), "tasks were left to claim after {done}");
        for task in &claimed {
            let lease = task.lease().ok_or("a lease")?;
            let other = if std::ptr::eq(by, &library) { &scripts } else { &library };
            other.finish(&ns, &lease, Finish::Completed).await?;
            done += 1;
        }
    }
    let counts = library.counts(&ns).await?;
    assert_eq!(counts.get(TaskState::Completed), 20, "{counts:?}");
    assert_eq!(scripts.counts(&ns).await?.get(TaskState::Completed), 20);
    common::cleanup(&library, &ns).await;
    Ok(())
}
